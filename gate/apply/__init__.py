"""Verified apply for agent write tools: the decision table and its one entry point.

An agent's write tool result is applied only when it is provably whole. This
module owns the decision table of docs/apply.md (``ok`` / ``incomplete`` /
``corrupt`` / ``refused``), the :class:`ApplyResult` it reports (hint lines,
log line, JSON record), and :func:`apply_tool_result`, which strings the
parts together: parsing (:mod:`gate.apply.parse`), confinement
(:mod:`gate.apply.paths`), the verified write (:mod:`gate.apply.write`) and
the incomplete marker with the delete refusal it implies
(:mod:`gate.apply.marker`).

Length and digest are checked on the decoded bytes before the disk is
touched, so a partial or corrupt payload never creates a temporary file; the
canonical path changes only through the rename. Every call is serialized by
an ``flock`` on ``.apply/lock`` at the work-tree top holding the root, and on
the one of each nested work tree or marker it touches below that, beside the
marker, taken outermost first.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from gate.apply.marker import (
    MARKER_NAME,
    MarkerEntry,
    adopt,
    clear,
    clear_above,
    locked,
    locked_all,
    marker_key,
    marker_path,
    markers_over,
    pending_over,
    read_marker,
    record,
)
from gate.apply.parse import DeletePath, WriteFile, parse_tool_result
from gate.apply.paths import (
    MARKER_DIR,
    confine,
    home_of,
    reserved_inside,
    resolve_root,
    state_top,
    too_long,
)
from gate.apply.write import WRITE_CHUNK, Writer, decode, disk_sha, write_verified
from gate.decide.attempt import EndReason
from gate.errors import ApplyError, AtomicWriteError, ExitCode
from gate.safe.atomic import fsync_dir, sha256_hex

__all__ = [
    "WRITE_CHUNK",
    "ApplyResult",
    "DeletePath",
    "MarkerEntry",
    "Outcome",
    "WriteFile",
    "apply_tool_result",
    "parse_tool_result",
    "read_marker",
]

HINT_FORBIDDEN = "forbidden_tools=delete_path,git_rm"
HINT_REQUIRED = "required_next=retry_apply_or_abort"


class Outcome(StrEnum):
    """The four answers of the apply decision table."""

    OK = "ok"
    INCOMPLETE = "incomplete"
    CORRUPT = "corrupt"
    REFUSED = "refused"


EXIT_CODES: Mapping[Outcome, ExitCode] = {
    Outcome.OK: ExitCode.PASS,
    Outcome.INCOMPLETE: ExitCode.FAIL,
    Outcome.CORRUPT: ExitCode.FAIL,
    Outcome.REFUSED: ExitCode.BLOCKED,
}


def _one_token(value: object) -> str:
    """``value`` as one log-line token, whatever a path holds (``-`` for unknown)."""
    if value is None:
        return "-"
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if not text or not text.isprintable() or re.search(r"[\s=\"\\]", text):
        return json.dumps(text)
    return text


@dataclass(frozen=True)
class ApplyResult:
    """What one apply did, with the evidence behind it."""

    tool: str
    path: str | None
    apply_id: str | None
    outcome: Outcome
    reason: str  # stable code: applied, deleted, length_short, digest_mismatch, ...
    detail: str  # one sentence naming the cause (and the fix, where there is one)
    promised_length: int | None = None
    received_length: int | None = None
    bytes_written: int = 0
    sha256_promised: str | None = None
    sha256_received: str | None = None
    sha256_disk: str | None = None
    stream_end_reason: str | None = None
    marker: str | None = None  # the marker file, when it names this apply's path

    @property
    def digest_ok(self) -> bool:
        return self.sha256_promised is not None and self.sha256_received == self.sha256_promised

    @property
    def flags(self) -> dict[str, bool]:
        return {f"apply.{outcome}": self.outcome is outcome for outcome in Outcome}

    @property
    def exit_code(self) -> ExitCode:
        return EXIT_CODES[self.outcome]

    def hints(self) -> tuple[str, ...]:
        """The lines an agent loop should inject into the model's next turn."""
        if self.outcome is Outcome.OK:
            return ("apply.ok=true",)
        if self.outcome is Outcome.REFUSED:
            lines = ("apply.refused=true", f"apply.reason={self.reason}")
            if self.reason in ("incomplete_pending", "marker_unreadable"):
                return (*lines, HINT_FORBIDDEN, HINT_REQUIRED)
            return lines
        return (f"apply.{self.outcome}=true", HINT_FORBIDDEN, HINT_REQUIRED)

    def log_line(self) -> str:
        """The one stderr line of an apply: the issue's fields first, then the verdict."""
        incomplete = self.outcome in (Outcome.INCOMPLETE, Outcome.CORRUPT)
        fields = {
            "path": self.path,
            "promised": self.promised_length,
            "written": self.bytes_written,
            "end": self.stream_end_reason or "none",
            "incomplete": incomplete,
            "digest_ok": self.digest_ok if self.sha256_promised is not None else None,
            "received": self.received_length,
            "outcome": str(self.outcome),
            "reason": self.reason,
        }
        return "apply " + " ".join(f"{key}={_one_token(value)}" for key, value in fields.items())

    def detail_line(self) -> str:
        """``apply.detail=<the cause, one line>`` for stdout, after the hint lines."""
        text = self.detail if self.detail.isprintable() else json.dumps(self.detail)
        return f"apply.detail={text}"

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "path": self.path,
            "apply_id": self.apply_id,
            "outcome": str(self.outcome),
            "reason": self.reason,
            "detail": self.detail,
            "promised_length": self.promised_length,
            "received_length": self.received_length,
            "bytes_written": self.bytes_written,
            "sha256_promised": self.sha256_promised,
            "sha256_received": self.sha256_received,
            "sha256_disk": self.sha256_disk,
            "digest_ok": self.digest_ok,
            "stream_end_reason": self.stream_end_reason,
            "marker": self.marker,
            **self.flags,
            "hints": list(self.hints()),
        }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _chain(top: Path, target: Path) -> tuple[Path, ...]:
    """The folders from ``target``'s up to ``top``: where a marker naming it may be cleared."""
    return tuple(folder for folder in target.parents if folder.is_relative_to(top))


def _apply_write(root: Path, top: Path, req: WriteFile, writer: Writer) -> ApplyResult:
    norm, target = confine(root, req.path, follow_final=True)
    home = home_of(top, target)
    marked = tuple(f for f in _chain(top, target) if os.path.lexists(marker_path(f)))
    with locked_all(tuple(f for f in (home, *marked) if f != top)):
        return _write_locked(root, top, home, marked, norm, target, req, writer)


def _listing(home: Path, target: Path) -> Path | None:
    """The first marker (from ``home`` up) that lists ``target``; a marker that cannot be
    read counts as listing it (never reported as clean)."""
    for folder in dict.fromkeys((home, *markers_over(target))):
        try:
            listed = any(e.path == marker_key(folder, target) for e in read_marker(folder))
        except ApplyError:
            listed = True
        if listed:
            return marker_path(folder)
    return None


def _file_in_the_way(root: Path, target: Path) -> str | None:
    """The nearest existing ancestor of ``target`` when it is a file (relative to ``root``)."""
    ancestor = target.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    return None if ancestor.is_dir() else ancestor.relative_to(root).as_posix()


def _write_locked(
    root: Path,
    top: Path,
    home: Path,
    marked: tuple[Path, ...],
    norm: str,
    target: Path,
    req: WriteFile,
    writer: Writer,
) -> ApplyResult:
    """The write of :func:`_apply_write`, under the locks of ``top``, ``home`` and ``marked``.

    An incomplete or corrupt write is recorded in ``home``'s marker (the
    nearest work tree holding the target: its hook and its ``git status``
    see it); a whole one clears the target's entry from every marker between
    it and ``top``, whichever root recorded it.
    """
    data, problem = decode(req)
    received = len(data)
    digest = sha256_hex(data)
    promised = req.content_length

    def result(outcome: Outcome, reason: str, detail: str, written: int = 0) -> ApplyResult:
        if outcome in (Outcome.INCOMPLETE, Outcome.CORRUPT):
            key = marker_key(home, target)
            entry = MarkerEntry(apply_id=req.apply_id, path=key, reason=reason, time=_now())
            detail += record(home, entry)
        elif outcome is Outcome.OK:
            for folder in dict.fromkeys((home, *marked)):
                detail += clear(folder, marker_key(folder, target))
            detail += clear_above(top, target)
        listing = _listing(home, target)
        return ApplyResult(
            tool="write_file",
            path=norm,
            apply_id=req.apply_id,
            outcome=outcome,
            reason=reason,
            detail=detail,
            promised_length=promised,
            received_length=received,
            bytes_written=written,
            sha256_promised=req.sha256,
            sha256_received=digest,
            sha256_disk=disk_sha(target),
            stream_end_reason=req.stream_end_reason,
            marker=str(listing) if listing is not None else None,
        )

    keep = "nothing was written; the target keeps its old bytes"
    if req.stream_end_reason not in (None, str(EndReason.TRAILER)):
        return result(
            Outcome.INCOMPLETE,
            "stream_not_trailer",
            f"the stream ended by {req.stream_end_reason}, not its trailer; {keep}",
        )
    if problem in ("bad_utf8", "bad_base64"):
        return result(Outcome.CORRUPT, problem, f"content is not valid {req.encoding}; {keep}")
    if received < promised:
        cut = " (the base64 text is cut mid-group)" if problem else ""
        return result(
            Outcome.INCOMPLETE,
            "length_short",
            f"received {received} of {promised} promised bytes{cut}; {keep}",
        )
    if problem or received > promised:
        return result(
            Outcome.CORRUPT,
            "length_long" if not problem else "bad_base64",
            f"received {received} bytes, {promised} were promised; {keep}",
        )
    if digest != req.sha256:
        return result(
            Outcome.CORRUPT,
            "digest_mismatch",
            f"SHA-256 of the decoded bytes is {digest[:12]}..., promised {req.sha256[:12]}...; "
            f"{keep}",
        )
    if target.is_dir():
        return result(Outcome.REFUSED, "is_directory", f"{norm} is a folder, not a file")
    if (blocker := _file_in_the_way(root, target)) is not None:
        return result(Outcome.REFUSED, "not_a_directory", f"{blocker} is a file, not a folder")
    report = write_verified(target, data, req.sha256, writer)
    if report.reason == "write_error":
        return result(Outcome.INCOMPLETE, report.reason, report.detail, report.bytes_written)
    if report.reason:
        return result(Outcome.CORRUPT, report.reason, report.detail, report.bytes_written)
    return result(Outcome.OK, "applied", f"wrote {received} bytes, read back", report.bytes_written)


def _apply_delete(root: Path, top: Path, req: DeletePath) -> ApplyResult:
    norm, target = confine(root, req.path, follow_final=False)
    home = home_of(top, target)
    with locked_all((home,) if home != top else ()):
        return _delete_locked(norm, target, req)


def _delete_locked(norm: str, target: Path, req: DeletePath) -> ApplyResult:
    """The delete of :func:`_apply_delete`, under the locks of the state top and the home.

    Refused while any marker above the target (up to the file-system root:
    a nested work tree's, the outer one's, any root's) or inside it names
    it or a path below it, and for a folder that holds a ``.git`` or
    ``.apply`` at any depth (a nested work tree, a submodule, apply state),
    in any spelling a file system folds to them.
    """

    def result(
        outcome: Outcome, reason: str, detail: str, marker: Path | None = None
    ) -> ApplyResult:
        return ApplyResult(
            tool="delete_path",
            path=norm,
            apply_id=req.apply_id,
            outcome=outcome,
            reason=reason,
            detail=detail,
            sha256_disk=disk_sha(target),
            marker=str(marker) if marker is not None else None,
        )

    def pending(folder: Path, entry: MarkerEntry) -> ApplyResult:
        return result(
            Outcome.REFUSED,
            "incomplete_pending",
            f"{entry.path} (listed in {marker_path(folder)}) has an incomplete apply "
            f"(apply_id={entry.apply_id}, {entry.reason}); deleting {norm} would destroy it; "
            "retry that write until apply.ok=true, or abort, but do not delete it",
            marker_path(folder),
        )

    try:
        found = pending_over(target)
    except ApplyError as err:
        return result(Outcome.REFUSED, err.reason, err.message)
    if found is not None:
        return pending(*found)
    if not os.path.lexists(target):
        return result(Outcome.REFUSED, "not_found", f"{norm} does not exist")
    is_folder = target.is_dir() and not target.is_symlink()
    if is_folder:
        try:
            inside = reserved_inside(target)
            for hit in inside:
                holder = (target / hit).parent
                if PurePosixPath(hit).name == MARKER_DIR and os.path.lexists(
                    target / hit / MARKER_NAME
                ):
                    entries = read_marker(holder)
                    if entries:
                        return pending(holder, entries[0])
        except ApplyError as err:
            return result(Outcome.REFUSED, err.reason, err.message)
        if inside:
            return result(
                Outcome.REFUSED,
                "reserved_inside",
                f"{norm} holds {norm}/{inside[0]} (a git work tree, a submodule or apply state); "
                "agents may not delete a folder that holds .git or .apply at any depth; delete "
                "the files in it one by one, or have a human remove it",
            )
    try:
        if is_folder:
            shutil.rmtree(target)
        else:
            target.unlink()
    except OSError as err:
        return result(Outcome.REFUSED, "delete_error", f"cannot delete {norm}: {err}")
    fsync_dir(target.parent)
    return result(Outcome.OK, "deleted", f"deleted {norm}")


def apply_tool_result(
    raw: bytes, root: str | os.PathLike[str], *, writer: Writer = os.write
) -> ApplyResult:
    """Apply one tool result under ``root`` and say what happened.

    Paths are confined to ``root``; the lock and the marker live in
    ``.apply/`` at the work-tree top holding ``root`` (:func:`state_top`),
    and marker entries name paths relative to that top, as git does. Raises
    :class:`UsageError` only when ``root`` is not a usable folder; every
    other problem is an :class:`ApplyResult` with the outcome and reason.
    """
    base = resolve_root(root)
    top = state_top(base)
    try:
        req = parse_tool_result(raw)
    except ApplyError as err:
        return _refused_unparsed(raw, err)
    try:
        with locked(top):
            adopt(top, base)
            if isinstance(req, DeletePath):
                return _apply_delete(base, top, req)
            return _apply_write(base, top, req, writer)
    except ApplyError as err:
        return _refused_parsed(req, err.reason, err.message)
    except OSError as err:
        if err.errno != errno.ENAMETOOLONG:
            return _unwritable(req, top, err)
        refusal = too_long(req.path, err)
        return _refused_parsed(req, refusal.reason, refusal.message)
    except AtomicWriteError as err:
        return _unwritable(req, top, err)


def _unwritable(req: WriteFile | DeletePath, top: Path, err: Exception) -> ApplyResult:
    return _refused_parsed(
        req,
        "apply_dir_unwritable",
        f"cannot prepare {MARKER_DIR}/ (lock and marker) in {top} or a work tree below it: "
        f"{err}; it must be writable",
    )


def _refused_parsed(req: WriteFile | DeletePath, reason: str, detail: str) -> ApplyResult:
    write = req if isinstance(req, WriteFile) else None
    return ApplyResult(
        tool="write_file" if write else "delete_path",
        path=req.path,
        apply_id=req.apply_id,
        outcome=Outcome.REFUSED,
        reason=reason,
        detail=detail,
        promised_length=write.content_length if write else None,
        sha256_promised=write.sha256 if write else None,
        stream_end_reason=write.stream_end_reason if write else None,
    )


def _refused_unparsed(raw: bytes, err: ApplyError) -> ApplyResult:
    """A refusal for a result that did not parse; report what can be read of it."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        doc = None
    known = doc if isinstance(doc, dict) else {}

    def pick(key: str, kind: type) -> Any:
        value = known.get(key)
        return value if isinstance(value, kind) and not isinstance(value, bool) else None

    tool = pick("tool", str)
    return ApplyResult(
        tool=tool if tool in ("write_file", "delete_path") else "unknown",
        path=pick("path", str),
        apply_id=pick("apply_id", str),
        outcome=Outcome.REFUSED,
        reason=err.reason,
        detail=err.message,
        promised_length=pick("content_length", int),
        sha256_promised=pick("sha256", str),
        stream_end_reason=pick("stream_end_reason", str),
    )
