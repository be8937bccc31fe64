"""The git pre-commit guard for incomplete agent writes: its text, install and check.

The installed hook is a POSIX ``sh`` script, so the refusal never depends on
review-gate (or any Python) being importable where git runs it: if an
``.apply/incomplete`` exists anywhere in the work tree (``review-gate apply``
keeps it at the top of the work tree holding the path, a nested one's
included; one below is from an apply outside a work tree that later became
part of one, or from an older version), or the search for one fails, the
commit is refused, full stop. A marker in a folder *above* the work tree
(an apply whose root held this work tree nested in another) refuses the
commit when it names a path of this work tree, or, without Python to read
it, always. To say *which* apply and path block, and to refuse staged
deletions of listed paths by name, the hook runs :data:`CHECK_PY` (standard
library only) with the absolute path of the interpreter that installed it,
falling back to ``python3`` on ``PATH``, and to a generic refusal without one.

An existing ``pre-commit`` hook is never overwritten: it is renamed to
``pre-commit.review-gate-chained`` and run by the guard after the check
passes. ``review-gate hooks check`` runs the same :data:`CHECK_PY`, for the
pre-commit framework (``.pre-commit-hooks.yaml``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from gate.errors import UsageError
from gate.safe.atomic import atomic_write

HOOK_NAME = "pre-commit"
CHAINED_NAME = "pre-commit.review-gate-chained"
HOOK_MARK = "# review-gate apply guard v1"
GIT_TIMEOUT_S = 60.0

#: The check, standard library only. argv[1] is the work-tree top. Exit 0 when
#: no ``.apply/incomplete`` exists anywhere in the work tree, 1 (after naming
#: every marker, apply id and path) when one does or the search fails.
CHECK_PY = r"""
import json, os, subprocess, sys

top = sys.argv[1]
say = lambda line: print("review-gate: " + line, file=sys.stderr)
markers, failed = [], []
top_marker = os.path.join(top, ".apply", "incomplete")
if os.path.lexists(top_marker):
    markers.append(top_marker)
for here, dirs, files in os.walk(top, onerror=failed.append):
    dirs[:] = sorted(d for d in dirs if d != ".git")
    marker = os.path.join(here, ".apply", "incomplete")
    if here != top and (".apply" in dirs or ".apply" in files) and os.path.lexists(marker):
        markers.append(marker)
real_top = os.path.realpath(top)
above, folder = [], real_top
while os.path.dirname(folder) != folder:
    folder = os.path.dirname(folder)
    marker = os.path.join(folder, ".apply", "incomplete")
    if os.path.lexists(marker):
        above.append(marker)
for err in failed:
    say("cannot search %s for .apply/incomplete (%s); make it readable or move it out of"
        " the work tree" % (getattr(err, "filename", "?"), err.strerror or err))
if not markers and not above and not failed:
    sys.exit(0)
listed, blocking = {}, list(markers)
for marker in markers + above:
    holder = os.path.dirname(os.path.dirname(marker))
    try:
        with open(marker, "rb") as handle:
            doc = json.loads(handle.read().decode("utf-8"))
        entries = [{k: str(item[k]) for k in ("apply_id", "path", "reason", "time")}
                   for item in doc["entries"]]
    except Exception as err:
        say("%s is unreadable (%s); inspect it before anything else" % (marker, err))
        if marker not in blocking:
            blocking.append(marker)
        continue
    for e in entries:
        where = os.path.normpath(os.path.join(holder, e["path"]))
        if marker in above and not where.startswith(real_top + os.sep):
            continue  # a marker above the work tree, for a path outside it
        path = os.path.relpath(where, real_top if marker in above else top)
        path = path.replace(os.sep, "/")
        listed[path] = e
        if marker not in blocking:
            blocking.append(marker)
        say("commit refused: incomplete apply apply_id=%s path=%s reason=%s time=%s"
            % (e["apply_id"], path, e["reason"], e["time"]))
if not blocking and not failed:
    sys.exit(0)
try:
    staged = subprocess.run(
        ["git", "-C", top, "diff", "--cached", "--name-status", "--no-renames",
         "--diff-filter=D", "-z"],
        capture_output=True, timeout=60, check=True,
    ).stdout.split(b"\0")
except Exception as err:
    staged = []
    say("cannot list staged deletions (%s)" % err)
for status, name in zip(staged[0::2], staged[1::2]):
    path = os.fsdecode(name)
    if status == b"D" and path in listed:
        say("staged deletion refused: path=%s apply_id=%s is an incomplete apply; restore it"
            " with: git restore --staged --worktree -- %s" % (path, listed[path]["apply_id"], path))
for marker in blocking:
    say("commit refused while %s exists: an agent write was not applied whole." % marker)
say("fix: retry the write until 'review-gate apply' prints apply.ok=true (that clears the entry),"
    " or restore the file from git and remove the marker.")
sys.exit(1)
"""


def render_hook(python: str) -> str:
    """The ``pre-commit`` script; ``python`` is tried first for the detailed check."""
    return f"""#!/bin/sh
{HOOK_MARK}: installed by 'review-gate hooks install', removed by 'review-gate hooks uninstall'.
# Refuses a commit while an .apply/incomplete exists anywhere in the work tree (an agent
# write was not applied whole), or one in a folder above it names a file of this work tree
# (an apply whose --root was above a nested work tree), and names every listed apply id,
# path and staged deletion of one. Needs no review-gate. A search that fails refuses too.
top=$(git rev-parse --show-toplevel) || exit 1
found=$(find "$top" -name .git -prune -o -path '*/.apply/incomplete' -print) || found="$found
(the search for .apply/incomplete failed)"
above=
dir=$top
while [ -n "$dir" ]; do
    dir=${{dir%/*}}
    if [ -e "$dir/.apply/incomplete" ] || [ -L "$dir/.apply/incomplete" ]; then
        above="$above
$dir/.apply/incomplete"
    fi
done
py={shlex.quote(python)}
[ -x "$py" ] || py=$(command -v python3 2>/dev/null) || py=
check() {{
    "$py" - "$top" <<'REVIEW_GATE_CHECK'
{CHECK_PY.strip()}
REVIEW_GATE_CHECK
}}
if [ -n "$found" ] || [ -e "$top/.apply/incomplete" ] || [ -L "$top/.apply/incomplete" ]; then
    status=0
    if [ -n "$py" ]; then
        check
        status=$?
    fi
    if [ "$status" -eq 0 ]; then
        echo "review-gate: commit refused while this exists (an agent write was not applied" \
            "whole; retry it until apply.ok=true, or restore the file and remove the marker):" >&2
        echo "${{found:-$top/.apply/incomplete}}" >&2
    fi
    exit 1
fi
if [ -n "$above" ]; then
    if [ -z "$py" ]; then
        echo "review-gate: commit refused: without python this hook cannot tell whether these" \
            "markers above the work tree name its files; inspect them:$above" >&2
        exit 1
    fi
    check || exit 1
fi
chained="$(dirname "$0")/{CHAINED_NAME}"
if [ -x "$chained" ]; then
    exec "$chained" "$@"
fi
exit 0
"""


@dataclass(frozen=True)
class InstallReport:
    """Where the guard went and what happened to a hook that was there before."""

    hook: Path
    chained: Path | None  # the earlier hook, now run after the guard
    action: str  # installed | updated


@dataclass(frozen=True)
class CheckReport:
    """The check's verdict and the lines it printed."""

    blocked: bool
    messages: tuple[str, ...]


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise UsageError(f"cannot run git in {root}: {err}") from err
    if done.returncode != 0:
        raise UsageError(
            f"git {' '.join(args)} failed in {root}: {done.stderr.strip() or done.returncode}; "
            "--root must be inside a git work tree"
        )
    return done.stdout.rstrip("\n")


def worktree_top(root: str | os.PathLike[str]) -> Path:
    return Path(_git(Path(root), "rev-parse", "--show-toplevel"))


def hooks_dir(top: Path) -> Path:
    """The folder git runs hooks from (honours ``core.hooksPath``)."""
    try:
        configured = _git(top, "config", "--get", "core.hooksPath")
    except UsageError:
        configured = ""
    if configured:
        return (top / Path(configured).expanduser()).resolve()
    return (top / _git(top, "rev-parse", "--git-path", "hooks")).resolve()


def _is_ours(path: Path) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and HOOK_MARK in path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def install(root: str | os.PathLike[str], *, python: str = sys.executable) -> InstallReport:
    """Install the guard as ``pre-commit``, chaining (never overwriting) an existing hook."""
    top = worktree_top(root)
    folder = hooks_dir(top)
    folder.mkdir(parents=True, exist_ok=True)
    hook = folder / HOOK_NAME
    chained = folder / CHAINED_NAME
    action = "installed"
    if _is_ours(hook):
        action = "updated"
    elif os.path.lexists(hook):
        if os.path.lexists(chained):
            raise UsageError(
                f"{hook} exists and so does {chained}; refusing to overwrite either. "
                f"Merge them by hand (or move one away) and run 'review-gate hooks install' again"
            )
        os.rename(hook, chained)
    atomic_write(hook, render_hook(python).encode("utf-8"), mode=0o755)
    return InstallReport(
        hook=hook, chained=chained if os.path.lexists(chained) else None, action=action
    )


def uninstall(root: str | os.PathLike[str]) -> InstallReport:
    """Remove the guard and put a chained hook back where it was."""
    top = worktree_top(root)
    folder = hooks_dir(top)
    hook = folder / HOOK_NAME
    chained = folder / CHAINED_NAME
    if not _is_ours(hook):
        raise UsageError(f"{hook} was not installed by review-gate; leaving it alone")
    hook.unlink()
    restored = None
    if os.path.lexists(chained):
        os.rename(chained, hook)
        restored = hook
    return InstallReport(hook=hook, chained=restored, action="uninstalled")


def check(root: str | os.PathLike[str]) -> CheckReport:
    """Run :data:`CHECK_PY` against the work tree of ``root``."""
    top = worktree_top(root)
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHECK_PY, str(top)],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return CheckReport(True, (f"review-gate: the check timed out after {GIT_TIMEOUT_S:.0f}s",))
    lines = tuple(done.stderr.splitlines())
    return CheckReport(blocked=done.returncode != 0, messages=lines)
