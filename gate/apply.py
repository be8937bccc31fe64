"""Verified apply for agent write tools.

An agent's write tool result is applied only when it is provably whole. This
module owns: parsing a tool result (``write_file`` / ``delete_path``, strict,
no defaults), confining its path to a root, the decision table of DESIGN.md
(``ok`` / ``incomplete`` / ``corrupt`` / ``refused``), the verified write
(temporary file beside the target, fsync, read back, :func:`os.replace`,
fsync the folder, read back again), the incomplete marker
``.apply/incomplete`` and the delete refusal it implies.

Length and digest are checked on the decoded bytes before the disk is
touched, so a partial or corrupt payload never creates a temporary file; the
canonical path changes only through the rename. Every call is serialized per
root by an ``flock`` on ``.apply/lock``.
"""

from __future__ import annotations

import binascii
import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from gate.atomic import TEMP_SUFFIX, atomic_write, file_sha256, fsync_dir, sha256_hex, temp_path_for
from gate.attempt import EndReason
from gate.errors import ApplyError, AtomicWriteError, UsageError

MARKER_DIR = ".apply"
MARKER_NAME = "incomplete"
MARKER_VERSION = 1
LOCK_NAME = "lock"
LOCK_WAIT_S = 30.0
WRITE_CHUNK = 1 << 20
MAX_APPLY_ID = 200
RESERVED_TOP = frozenset({".git", MARKER_DIR})
END_REASONS = frozenset(str(reason) for reason in EndReason)
HINT_FORBIDDEN = "forbidden_tools=delete_path,git_rm"
HINT_REQUIRED = "required_next=retry_apply_or_abort"

_SHA_RE = re.compile(r"[0-9a-f]{64}\Z")
_WRITE_KEYS = frozenset(
    {"tool", "path", "content_length", "sha256", "encoding", "content"}
    | {"stream_end_reason", "apply_id"}
)
_DELETE_KEYS = frozenset({"tool", "path", "apply_id"})

#: ``writer(fd, chunk) -> bytes written``; :func:`os.write` unless a test injects a fault.
Writer = Callable[[int, memoryview], int]


class Outcome(StrEnum):
    """The four answers of the apply decision table."""

    OK = "ok"
    INCOMPLETE = "incomplete"
    CORRUPT = "corrupt"
    REFUSED = "refused"


EXIT_CODES: Mapping[Outcome, int] = {
    Outcome.OK: 0,
    Outcome.INCOMPLETE: 1,
    Outcome.CORRUPT: 1,
    Outcome.REFUSED: 3,
}


@dataclass(frozen=True)
class WriteFile:
    """A parsed ``write_file`` tool result (content still in its transfer encoding)."""

    path: str
    content_length: int
    sha256: str
    encoding: str
    content: str = field(repr=False)
    apply_id: str
    stream_end_reason: str | None


@dataclass(frozen=True)
class DeletePath:
    """A parsed ``delete_path`` tool result."""

    path: str
    apply_id: str


@dataclass(frozen=True)
class MarkerEntry:
    """One incomplete apply recorded in ``.apply/incomplete``."""

    apply_id: str
    path: str
    reason: str
    time: str

    def to_json(self) -> dict[str, str]:
        return {
            "apply_id": self.apply_id,
            "path": self.path,
            "reason": self.reason,
            "time": self.time,
        }


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
    def exit_code(self) -> int:
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
        def show(value: object) -> str:
            if value is None:
                return "-"
            text = str(value).lower() if isinstance(value, bool) else str(value)
            if not text or not text.isprintable() or re.search(r"[\s=\"\\]", text):
                return json.dumps(text)  # one line, whatever the path holds
            return text

        incomplete = self.outcome in (Outcome.INCOMPLETE, Outcome.CORRUPT)
        fields = {
            "path": self.path,
            "promised": self.promised_length,
            "received": self.received_length,
            "written": self.bytes_written,
            "end": self.stream_end_reason or "none",
            "incomplete": incomplete,
            "digest_ok": self.digest_ok if self.sha256_promised is not None else None,
            "outcome": str(self.outcome),
            "reason": self.reason,
        }
        return "apply " + " ".join(f"{key}={show(value)}" for key, value in fields.items())

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


# --- parsing ------------------------------------------------------------------


def _refuse(reason: str, message: str) -> ApplyError:
    return ApplyError(message, reason=reason)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _refuse("duplicate_key", f"tool result has the key {key!r} twice")
        seen[key] = value
    return seen


def _no_constant(name: str) -> Any:
    raise _refuse("not_json", f"tool result contains {name}, which is not JSON")


def _load(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _refuse("not_json", f"tool result is not UTF-8 (byte {err.start})") from err
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise _refuse(
            "not_json",
            f"tool result is not JSON ({err.msg} at line {err.lineno} column {err.colno}); "
            "a cut-off tool result is never applied",
        ) from err
    except RecursionError as err:
        raise _refuse("not_json", "tool result nests too deeply") from err
    if not isinstance(doc, dict):
        raise _refuse("not_object", f"tool result is a JSON {type(doc).__name__}, not an object")
    return doc


def _field(doc: Mapping[str, Any], key: str, kind: type, *, required: bool = True) -> Any:
    if key not in doc:
        if required:
            raise _refuse(
                "missing_field",
                f"tool result has no {key!r}; the worker applies nothing it cannot verify "
                "(no defaults): send path, content_length, sha256, encoding and content",
            )
        return None
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _refuse(
            "wrong_type",
            f"tool result field {key!r} is a JSON {_json_type(value)}, expected {_json_name(kind)}",
        )
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _json_name(kind: type) -> str:
    return {int: "an integer", str: "a string"}.get(kind, kind.__name__)


def parse_tool_result(raw: bytes) -> WriteFile | DeletePath:
    """Parse a tool result strictly; raise :class:`ApplyError` (a refusal) on any deviation."""
    doc = _load(raw)
    tool = _field(doc, "tool", str)
    if tool not in ("write_file", "delete_path"):
        raise _refuse("unknown_tool", f"tool {tool!r} is not write_file or delete_path")
    allowed = _WRITE_KEYS if tool == "write_file" else _DELETE_KEYS
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise _refuse(
            "unknown_field",
            f"{tool} tool result has unknown field(s) {', '.join(map(repr, unknown))}; "
            "a misspelt field could hide a missing one, so nothing is applied",
        )
    path = _field(doc, "path", str)
    apply_id = _field(doc, "apply_id", str, required=False)
    if apply_id is not None and (
        not apply_id or len(apply_id) > MAX_APPLY_ID or not apply_id.isprintable()
    ):
        raise _refuse("bad_value", f"apply_id must be 1..{MAX_APPLY_ID} printable characters")
    if apply_id is None:
        apply_id = "auto-" + sha256_hex(raw)[:12]
    if tool == "delete_path":
        return DeletePath(path=path, apply_id=apply_id)
    length = _field(doc, "content_length", int)
    if length < 0:
        raise _refuse("bad_value", f"content_length is {length}; it must be >= 0")
    digest = _field(doc, "sha256", str)
    if not _SHA_RE.match(digest):
        raise _refuse("bad_value", "sha256 must be 64 lowercase hex digits of the decoded bytes")
    encoding = _field(doc, "encoding", str)
    if encoding not in ("utf-8", "base64"):
        raise _refuse("bad_value", f"encoding {encoding!r} is not 'utf-8' or 'base64'")
    content = _field(doc, "content", str)
    end = _field(doc, "stream_end_reason", str, required=False)
    if end is not None and end not in END_REASONS:
        raise _refuse(
            "bad_value",
            f"stream_end_reason {end!r} is not one of {', '.join(sorted(END_REASONS))}",
        )
    return WriteFile(
        path=path,
        content_length=length,
        sha256=digest,
        encoding=encoding,
        content=content,
        apply_id=apply_id,
        stream_end_reason=end,
    )


# --- paths ----------------------------------------------------------------------


def confine(root: Path, rel: str, *, follow_final: bool) -> tuple[str, Path]:
    """Return (normalized relative path, absolute target) or raise a refusal.

    ``root`` must already be resolved. Absolute paths, ``..`` components,
    the reserved top-level folders (``.git``, ``.apply``) and symlinks that
    lead out of ``root`` are refused. ``follow_final`` resolves a symlink
    in the last component too (writes go through it; deletes remove the link).
    """
    if not rel or "\x00" in rel:
        raise _refuse("bad_path", "path is empty or contains a NUL byte")
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise _refuse("absolute_path", f"path {rel!r} is absolute; give it relative to --root")
    if ".." in pure.parts:
        raise _refuse("parent_traversal", f"path {rel!r} contains '..'; paths stay inside --root")
    if not pure.parts:
        raise _refuse("bad_path", f"path {rel!r} names the root itself")
    norm = pure.as_posix()
    if pure.parts[0].lower() in RESERVED_TOP:
        raise _refuse(
            "reserved_path", f"path {rel!r} is inside {pure.parts[0]}/, which agents may not touch"
        )
    candidate = root / norm
    try:
        target = (
            candidate.resolve() if follow_final else candidate.parent.resolve() / candidate.name
        )
    except (OSError, RuntimeError) as err:
        raise _refuse("symlink_loop", f"path {rel!r} cannot be resolved: {err}") from err
    if not target.is_relative_to(root) or target == root:
        raise _refuse("symlink_escape", f"path {rel!r} leads out of --root through a symlink")
    inside = target.relative_to(root).parts
    if inside and inside[0].lower() in RESERVED_TOP:
        raise _refuse("reserved_path", f"path {rel!r} leads into {inside[0]}/ through a symlink")
    return norm, target


def resolve_root(root: str | os.PathLike[str]) -> Path:
    try:
        resolved = Path(root).resolve(strict=True)
    except (OSError, RuntimeError) as err:
        raise UsageError(f"--root {os.fspath(root)!r} does not exist") from err
    if not resolved.is_dir():
        raise UsageError(f"--root {os.fspath(root)!r} is not a folder")
    return resolved


# --- the marker -------------------------------------------------------------------


def marker_path(root: Path) -> Path:
    return root / MARKER_DIR / MARKER_NAME


def read_marker(root: Path) -> tuple[MarkerEntry, ...]:
    """Entries of ``.apply/incomplete`` (empty when absent); ApplyError if unreadable."""
    path = marker_path(root)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as err:
        raise _refuse("marker_unreadable", f"cannot read {path}: {err.strerror}") from err
    try:
        doc = json.loads(raw.decode("utf-8"))
        entries = tuple(
            MarkerEntry(
                apply_id=str(item["apply_id"]),
                path=str(item["path"]),
                reason=str(item["reason"]),
                time=str(item["time"]),
            )
            for item in doc["entries"]
        )
    except (ValueError, KeyError, TypeError) as err:
        raise _refuse(
            "marker_unreadable",
            f"{path} is not a valid marker ({err}); inspect it, restore the listed files, "
            "then remove it",
        ) from err
    return entries


def _write_marker(root: Path, entries: tuple[MarkerEntry, ...]) -> None:
    path = marker_path(root)
    if entries:
        doc = {"version": MARKER_VERSION, "entries": [entry.to_json() for entry in entries]}
        atomic_write(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8"))
        return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        fsync_dir(path.parent)


def _record(root: Path, entry: MarkerEntry) -> str:
    """Add ``entry`` (replacing one for the same path); return a note for the detail."""
    try:
        kept = tuple(e for e in read_marker(root) if e.path != entry.path)
    except ApplyError as err:
        return f"; the marker was left as it is: {err.message}"
    try:
        _write_marker(root, (*kept, entry))
    except AtomicWriteError as err:
        return f"; recording the marker failed: {err.message}"
    return ""


def _clear(root: Path, norm: str) -> str:
    try:
        entries = read_marker(root)
    except ApplyError as err:
        return f"; the marker could not be cleared: {err.message}"
    kept = tuple(entry for entry in entries if entry.path != norm)
    if kept != entries:
        try:
            _write_marker(root, kept)
        except AtomicWriteError as err:
            return f"; clearing the marker failed: {err.message}"
    return ""


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    folder = root / MARKER_DIR
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        atomic_write(ignore, b"# written by review-gate apply; never commit this folder\n*\n")
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as err:
                if time.monotonic() > deadline:
                    raise _refuse(
                        "busy", f"another apply held {folder / LOCK_NAME} for {LOCK_WAIT_S:.0f}s"
                    ) from err
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


# --- writing --------------------------------------------------------------------


@dataclass(frozen=True)
class _WriteReport:
    bytes_written: int
    reason: str  # "" when the new bytes are in place and read back
    detail: str


def _decode(req: WriteFile) -> tuple[bytes, str]:
    """Decoded bytes and a problem code ("" | bad_utf8 | bad_base64 | cut_base64)."""
    if req.encoding == "utf-8":
        try:
            return req.content.encode("utf-8"), ""
        except UnicodeEncodeError:
            return b"", "bad_utf8"
    text = req.content.encode("ascii", errors="replace")
    try:
        return binascii.a2b_base64(text, strict_mode=True), ""
    except binascii.Error:
        pass
    cut = len(text) - len(text) % 4
    try:
        return binascii.a2b_base64(text[:cut], strict_mode=True), "cut_base64"
    except binascii.Error:
        return b"", "bad_base64"


def _remove_stale_temps(target: Path) -> None:
    """Remove temporaries of earlier applies of ``target`` killed mid-write (lock held)."""
    for stale in target.parent.glob(f".{target.name}.*{TEMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            stale.unlink()


def _make_parents(folder: Path) -> None:
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        created.mkdir()
        fsync_dir(created.parent)


def _write_verified(target: Path, data: bytes, expected: str, writer: Writer) -> _WriteReport:
    written = 0
    tmp: Path | None = None
    try:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = 0o644
        _make_parents(target.parent)
        _remove_stale_temps(target)
        fd, tmp = temp_path_for(target)
        try:
            view = memoryview(data)
            while written < len(data):
                count = writer(fd, view[written : written + WRITE_CHUNK])
                if count <= 0:
                    raise OSError(errno.EIO, "write() made no progress")
                written += count
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if file_sha256(tmp) != expected:
            tmp.unlink()
            return _WriteReport(
                written,
                "readback_mismatch",
                "the temporary file read back with a different SHA-256; the file system did not "
                "keep what was written, so the target was not touched",
            )
        os.replace(tmp, target)
        tmp = None
    except OSError as err:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return _WriteReport(
            written,
            "write_error",
            f"writing failed after {written} of {len(data)} bytes: {err.strerror or err}; "
            "the target was not touched",
        )
    fsync_dir(target.parent)
    try:
        actual = file_sha256(target)
    except OSError as err:
        return _WriteReport(written, "readback_mismatch", f"cannot read back: {err.strerror}")
    if actual != expected:
        return _WriteReport(
            written,
            "readback_mismatch",
            f"{target.name} read back as {actual[:12]}... after the rename, expected "
            f"{expected[:12]}...; restore it from version control",
        )
    return _WriteReport(written, "", "")


def _disk_sha(path: Path) -> str | None:
    try:
        return file_sha256(path) if path.is_file() else None
    except OSError:
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _apply_write(root: Path, req: WriteFile, writer: Writer) -> ApplyResult:
    norm, target = confine(root, req.path, follow_final=True)
    data, problem = _decode(req)
    received = len(data)
    digest = sha256_hex(data)
    promised = req.content_length

    def result(outcome: Outcome, reason: str, detail: str, written: int = 0) -> ApplyResult:
        if outcome in (Outcome.INCOMPLETE, Outcome.CORRUPT):
            entry = MarkerEntry(apply_id=req.apply_id, path=norm, reason=reason, time=_now())
            detail += _record(root, entry)
        elif outcome is Outcome.OK:
            detail += _clear(root, norm)
        try:
            listed = any(entry.path == norm for entry in read_marker(root))
        except ApplyError:
            listed = True
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
            sha256_disk=_disk_sha(target),
            stream_end_reason=req.stream_end_reason,
            marker=str(marker_path(root)) if listed else None,
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
    ancestor = target.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        blocker = ancestor.relative_to(root).as_posix()
        return result(Outcome.REFUSED, "not_a_directory", f"{blocker} is a file, not a folder")
    report = _write_verified(target, data, req.sha256, writer)
    if report.reason == "write_error":
        return result(Outcome.INCOMPLETE, report.reason, report.detail, report.bytes_written)
    if report.reason:
        return result(Outcome.CORRUPT, report.reason, report.detail, report.bytes_written)
    return result(Outcome.OK, "applied", f"wrote {received} bytes, read back", report.bytes_written)


def _apply_delete(root: Path, req: DeletePath) -> ApplyResult:
    norm, target = confine(root, req.path, follow_final=False)

    def result(outcome: Outcome, reason: str, detail: str) -> ApplyResult:
        return ApplyResult(
            tool="delete_path",
            path=norm,
            apply_id=req.apply_id,
            outcome=outcome,
            reason=reason,
            detail=detail,
            sha256_disk=_disk_sha(target),
            marker=str(marker_path(root)) if reason == "incomplete_pending" else None,
        )

    try:
        entries = read_marker(root)
    except ApplyError as err:
        return result(Outcome.REFUSED, err.reason, err.message)
    for entry in entries:
        if entry.path == norm or entry.path.startswith(norm + "/"):
            return result(
                Outcome.REFUSED,
                "incomplete_pending",
                f"{entry.path} has an incomplete apply (apply_id={entry.apply_id}, "
                f"{entry.reason}); retry that write until apply.ok=true, or abort, "
                "but do not delete it",
            )
    if not os.path.lexists(target):
        return result(Outcome.REFUSED, "not_found", f"{norm} does not exist")
    try:
        if target.is_dir() and not target.is_symlink():
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

    Raises :class:`UsageError` only when ``root`` is not a folder; every
    other problem is an :class:`ApplyResult` with the outcome and reason.
    """
    base = resolve_root(root)
    try:
        req = parse_tool_result(raw)
    except ApplyError as err:
        return _refused_unparsed(raw, err)
    try:
        with _locked(base):
            if isinstance(req, DeletePath):
                return _apply_delete(base, req)
            return _apply_write(base, req, writer)
    except ApplyError as err:
        return _refused_parsed(req, err.reason, err.message)
    except (OSError, AtomicWriteError) as err:
        return _refused_parsed(
            req,
            "apply_dir_unwritable",
            f"cannot prepare {base / MARKER_DIR} (lock and marker): {err}; --root must be writable",
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
