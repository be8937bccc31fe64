"""The cases a backtest asks about: from a git repository's history, or a labelled file.

From history (:func:`from_history`): the newest ``last`` first-parent merges and squash
merges of the branch at ``HEAD`` (or those of ``A..B``), each planned as its pull request's
diff: a merge's second parent against the merge base (``git diff P1...P2``), a squash
merge (a one-parent commit whose subject ends ``(#N)``, as GitHub writes it) against its
parent. A change that a later commit reverts (``This reverts commit <sha>``: the merge,
the squash commit or a commit of the pull request) is labelled ``block``; every other one
is *presumed* ``allow`` (merged changes are what the team accepted; the report says so).
Planning reads git alone: the diffs are made when each case is asked (:meth:`Case.load`),
so memory stays flat in the number of cases.

From a file (:func:`from_file`): JSON Lines, one object a line: ``id``, ``label``
(``block`` or ``allow``), ``diff`` (inline text when it holds a newline, else a path
relative to the file, inside its folder: never absolute, no ``..`` or link out of it)
and an optional ``source``. Every malformed line is reported at once, with its line
number, before anything is asked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.errors import UsageError

#: the largest diff a case is read up to; past it the case is a coverage row (too_large)
MAX_CASE_DIFF_BYTES = 64 * 1024 * 1024
#: seconds one git command may take
GIT_TIMEOUT_S = 120.0
LABELS = ("block", "allow")
_SQUASH = re.compile(r"\(#\d+\)\s*\Z")
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,64})")
_CASE_KEYS = frozenset({"id", "label", "diff", "source"})


class CaseTooLarge(Exception):
    """A case's diff is over :data:`MAX_CASE_DIFF_BYTES` (a coverage row, never a crash)."""


@dataclass(frozen=True)
class Case:
    """One change to ask about: its id, label, whether the label is presumed, its diff."""

    id: str
    label: str
    presumed: bool
    source: str
    #: the diff itself (inline in a cases file), or None
    text: bytes | None = None
    #: a diff file, or None
    path: Path | None = None
    #: a git repository and the ``git diff`` arguments that make the diff, or None
    repo: Path | None = None
    revs: tuple[str, ...] = ()
    #: the commit time (seconds since the epoch) of a change from history, else 0
    time: int = 0

    @property
    def head(self) -> str | None:
        """The commit the change ends at (what ``context: files`` reads its files at): a
        merge's second parent, a squash commit; None for a case from a file."""
        if self.repo is None or not self.revs:
            return None
        return self.revs[-1].split("...")[-1]

    def load(self) -> bytes:
        """The diff's bytes; :class:`CaseTooLarge` past :data:`MAX_CASE_DIFF_BYTES`, a
        UsageError when the file or the git command cannot give it."""
        if self.text is not None:
            data = self.text
        elif self.path is not None:
            try:
                with self.path.open("rb") as handle:
                    data = handle.read(MAX_CASE_DIFF_BYTES + 1)
            except OSError as err:
                raise UsageError(f"case {self.id}: cannot read {self.path}: {err}") from err
        else:
            assert self.repo is not None
            data = git_bytes(self.repo, ["diff", *DIFF_FLAGS, *self.revs], MAX_CASE_DIFF_BYTES)
        if len(data) > MAX_CASE_DIFF_BYTES:
            raise CaseTooLarge(f"{len(data)} bytes or more")
        return data


#: ``git diff`` as GitHub shows a pull request: no colour, no external or text-conversion
#: driver, the a/ and b/ prefixes whatever the user's config says
DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/")


@dataclass(frozen=True)
class Plan:
    """The cases, in order, and the history's merge rate (None for a cases file)."""

    cases: tuple[Case, ...]
    source: str
    merges_per_30_days: float | None = None


# --- git ---------------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    """The caller's environment without a pager or a prompt (no GIT_DIR from outside)."""
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    env.update(GIT_PAGER="cat", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return env


def git_bytes(repo: Path, args: Sequence[str], limit: int | None = None) -> bytes:
    """``git -C repo ARGS``'s output (at most ``limit + 1`` bytes); a UsageError naming the
    command when git fails or takes longer than :data:`GIT_TIMEOUT_S`."""
    command = ["git", "-C", str(repo), *args]
    try:
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_git_env()
        ) as proc:
            assert proc.stdout is not None
            assert proc.stderr is not None
            out = proc.stdout.read() if limit is None else proc.stdout.read(limit + 1)
            if limit is not None and len(out) > limit:
                proc.kill()
                return out
            err = proc.stderr.read()
            code = proc.wait(timeout=GIT_TIMEOUT_S)
    except FileNotFoundError as error:
        raise UsageError("git is not installed; install git to plan a backtest") from error
    except subprocess.TimeoutExpired as error:
        raise UsageError(f"git {' '.join(args[:3])} took over {GIT_TIMEOUT_S:g}s") from error
    if code != 0:
        said = err.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git {' '.join(args[:4])} failed in {repo}: {' '.join(said)[:300]}")
    return out


def _git(repo: Path, *args: str) -> str:
    return git_bytes(repo, args).decode("utf-8", "replace")


def check_repository(repo: Path) -> None:
    """A UsageError unless ``repo`` is a git repository with a commit at HEAD that is not a
    shallow clone (whose merges have no merge base to diff against)."""
    if not repo.is_dir():
        raise UsageError(f"--repo {str(repo)!r} is not a folder; pass a git repository")
    try:
        _git(repo, "rev-parse", "--git-dir")
    except UsageError as err:
        raise UsageError(
            f"--repo {str(repo)!r} is not a git repository; pass the folder of a clone"
        ) from err
    if _git(repo, "rev-parse", "--is-shallow-repository").strip() == "true":
        raise UsageError(
            f"--repo {str(repo)!r} is a shallow clone: its merges have no merge base to "
            "diff against; run git fetch --unshallow there (or clone without --depth)"
        )
    try:
        _git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    except UsageError as err:
        raise UsageError(f"--repo {str(repo)!r} has no commit at HEAD") from err


def _log(repo: Path, revs: str) -> Iterator[tuple[str, list[str], int, str]]:
    """(sha, parents, commit time, subject) of each first-parent commit of ``revs``,
    newest first, read as git writes them (stopped early by the caller)."""
    fmt = "--format=%H %P%x1f%ct%x1f%s%x1e"
    command = ["git", "-C", str(repo), "log", "--first-parent", fmt, revs, "--"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_git_env()
    ) as proc:
        assert proc.stdout is not None
        pending = b""
        try:
            while block := proc.stdout.read(1 << 16):
                pending += block
                *records, pending = pending.split(b"\x1e")
                for record in records:
                    shas, when, subject = record.decode("utf-8", "replace").strip().split("\x1f")
                    sha, *parents = shas.split()
                    yield sha, parents, int(when), subject
        finally:
            proc.kill()


def _reverted(repo: Path) -> set[str]:
    """Every commit id (as written: full or abbreviated) a revert commit names."""
    text = _git(repo, "log", "HEAD", "-F", "--grep=This reverts commit", "--format=%B%x1e")
    return set(_REVERTS.findall(text))


def _named(sha: str, targets: set[str]) -> str | None:
    return next((t for t in targets if sha.startswith(t)), None)


def from_history(repo: Path, *, last: int | None = None, revs: str | None = None) -> Plan:
    """The plan of a repository's merges (module docstring); a UsageError for a path that
    is not a repository, a shallow clone, or a history with no merge to ask about."""
    check_repository(repo)
    span = revs or "HEAD"
    if revs is not None:
        try:
            _git(repo, "rev-list", "-n", "1", revs, "--")
        except UsageError as err:
            raise UsageError(
                f"--range {revs!r} is not a range of {repo}: {err.message}; pass e.g. "
                "--range v1.0..main"
            ) from err
    found: list[tuple[str, tuple[str, ...], int, str, bool]] = []
    for sha, parents, when, subject in _log(repo, span):
        if len(parents) >= 2:
            found.append((sha, (f"{parents[0]}...{parents[1]}",), when, subject, True))
        elif len(parents) == 1 and _SQUASH.search(subject):
            found.append((sha, (parents[0], sha), when, subject, False))
        if last is not None and len(found) >= last:
            break
    if not found:
        where = f"the range {revs}" if revs else f"the history of HEAD in {repo}"
        raise UsageError(
            f"{where} has no merge and no squash merge (a commit whose subject ends (#N)) to "
            "ask about; pass another --range, or a --cases file"
        )
    targets = _reverted(repo)
    cases = [
        _case(repo, sha, diff_revs, when, subject, merge, targets)
        for sha, diff_revs, when, subject, merge in found
    ]
    times = [c.time for c in cases]
    rate = None
    if len(times) > 1 and max(times) > min(times):
        rate = (len(times) - 1) * 30 * 86400 / (max(times) - min(times))
    return Plan(tuple(cases), f"git {repo} {span}", rate)


def _case(
    repo: Path,
    sha: str,
    revs: tuple[str, ...],
    when: int,
    subject: str,
    merge: bool,
    targets: set[str],
) -> Case:
    """One merge or squash merge, labelled ``block`` when a revert names it or (for a
    merge) a commit of its pull request."""
    hit = _named(sha, targets)
    if hit is None and merge and targets:
        first, second = revs[0].split("...")
        inside = _git(repo, "rev-list", f"{first}..{second}").split()
        hit = next((t for c in inside if (t := _named(c, targets)) is not None), None)
    kind = "merge" if merge else "squash"
    source = f"{kind} {sha[:12]}: {subject[:120]}"
    if hit is not None:
        source += f" (reverted: This reverts commit {hit[:12]})"
    return Case(
        id=sha[:12],
        label="block" if hit is not None else "allow",
        presumed=hit is None,
        source=source,
        repo=repo,
        revs=revs,
        time=when,
    )


# --- a cases file ------------------------------------------------------------------------


def from_file(path: Path) -> Plan:
    """The labelled cases of a JSON Lines file (module docstring); every problem at once,
    ``FILE:LINE: what``, as one UsageError."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"--cases {str(path)!r} cannot be read: {err}") from err
    cases: list[Case] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        case, problem = _line(path, line, seen)
        if problem is not None:
            problems.append(f"{path}:{number}: {problem}")
        elif case is not None:
            seen.add(case.id)
            cases.append(case)
    if problems:
        raise UsageError(
            f"--cases {path} has {len(problems)} malformed lines (each line is one JSON "
            'object: {"id": ..., "label": "block" or "allow", "diff": PATH or text, '
            '"source": ...}):\n' + "\n".join(problems),
            reason="config_cases",
        )
    if not cases:
        raise UsageError(f"--cases {path} holds no case; add one JSON object a line")
    return Plan(tuple(cases), f"cases {path}")


def _line(path: Path, line: str, seen: set[str]) -> tuple[Case | None, str | None]:
    """One line's case, or what is wrong with it."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        return None, f"not JSON ({err.msg} at column {err.colno})"
    if not isinstance(obj, dict):
        return None, "not a JSON object"
    unknown = sorted(set(obj) - _CASE_KEYS)
    if unknown:
        return None, f"unknown key {unknown[0]!r}; the keys are id, label, diff, source"
    ident, label, diff = obj.get("id"), obj.get("label"), obj.get("diff")
    source = obj.get("source", "")
    if not isinstance(ident, str) or not ident.strip():
        return None, "id is missing or not a non-empty string"
    if ident in seen:
        return None, f"id {ident!r} is used twice"
    if label not in LABELS:
        return None, f"label {label!r} is not block or allow"
    if not isinstance(diff, str) or not diff:
        return None, "diff is missing: give a path relative to the file, or the diff's text"
    if not isinstance(source, str):
        return None, "source is not a string"
    if "\n" in diff:
        return Case(ident, label, False, source, text=diff.encode("utf-8")), None
    folder = path.parent.resolve()
    where = (folder / diff).resolve()
    if not where.is_relative_to(folder):  # an absolute path, a .. or a link out of it
        return None, f"diff file {diff!r} is outside {path.parent}; name a file inside it"
    if not where.is_file():
        return None, f"diff file {diff!r} does not exist (relative to {path.parent})"
    return Case(ident, label, False, source, path=where), None
