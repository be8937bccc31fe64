"""The incomplete marker ``.apply/incomplete`` and the lock that serializes applies.

This module owns the marker's format (JSON, one entry per path), reading it
(an unreadable marker is an :class:`ApplyError`, never "no marker"),
recording and clearing entries atomically, and the ``flock`` under which
every apply reads and changes it. The marker is never git-ignored: it shows
in ``git status`` as untracked, by design.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gate.apply.parse import refuse
from gate.apply.paths import MARKER_DIR
from gate.errors import ApplyError, AtomicWriteError
from gate.safe import strictjson
from gate.safe.atomic import atomic_write, fsync_dir

MARKER_NAME = "incomplete"
MARKER_VERSION = 1
LOCK_NAME = "lock"
LOCK_WAIT_S = 30.0
#: ``.apply/.gitignore``: the lock (and this file) never show in ``git status``;
#: the marker always does, so ``git add -A`` stages it and, past a
#: ``--no-verify``, the action's head-tree guard sees it.
IGNORE_TEXT = (
    b"# written by review-gate apply: ignore the lock, never the marker (incomplete),\n"
    b"# which must show in git status and block the commit and the pull request\n"
    b"/lock\n/.gitignore\n"
)


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


def marker_path(root: Path) -> Path:
    return root / MARKER_DIR / MARKER_NAME


def marker_key(base: Path, target: Path) -> str:
    """The path an entry names: ``target`` (resolved by :func:`confine`) relative to ``base``.

    Entries name what the disk action touches, never the spelling the agent
    used, so ``link/x.py`` and ``real/x.py`` (``link -> real``) are one entry.
    """
    return target.relative_to(base).as_posix()


def pending_under(base: Path, target: Path, entries: tuple[MarkerEntry, ...]) -> MarkerEntry | None:
    """The entry a delete of ``target`` would destroy: ``target`` is it or one of its folders.

    Compared by resolved path, then by identity (device and inode) of the
    entry's file and each of its folders, so no alias (a symlinked folder, a
    case-insensitive spelling, a bind mount) gets around it. A symlink as
    ``target`` is only the link: removing it never touches what it names.
    """
    key = marker_key(base, target)
    for entry in entries:
        if entry.path == key or entry.path.startswith(key + "/"):
            return entry
    try:
        info = target.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return None
    for entry in entries:
        listed = base / entry.path
        while listed != base and listed.is_relative_to(base):
            try:
                seen = listed.lstat()
            except OSError:
                seen = None
            if seen is not None and (seen.st_dev, seen.st_ino) == (info.st_dev, info.st_ino):
                return entry
            listed = listed.parent
    return None


def markers_over(target: Path) -> tuple[Path, ...]:
    """Every folder above ``target``, up to the file-system root, holding a marker.

    Nearest first. A marker names paths relative to its own folder, and any
    root at any level (a nested work tree's top, the outer one's, a root
    outside any work tree, an older version's) may have written one that
    names ``target``, so a delete consults them all.
    """
    return tuple(folder for folder in target.parents if os.path.lexists(marker_path(folder)))


def pending_over(target: Path) -> tuple[Path, MarkerEntry] | None:
    """The first entry, in any marker above ``target``, that a delete of it would destroy.

    Returned with the folder of its marker. Raises :class:`ApplyError`
    (``marker_unreadable``) for a marker that cannot be read: it might name
    ``target``.
    """
    for folder in markers_over(target):
        entry = pending_under(folder, target, read_marker(folder))
        if entry is not None:
            return folder, entry
    return None


def read_marker(root: Path) -> tuple[MarkerEntry, ...]:
    """Entries of ``.apply/incomplete`` (empty when absent); ApplyError if unreadable."""
    path = marker_path(root)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as err:
        raise refuse("marker_unreadable", f"cannot read {path}: {err.strerror}") from err
    try:
        doc = strictjson.loads(raw, what="the marker", error=ApplyError)
        entries = tuple(
            MarkerEntry(
                apply_id=str(item["apply_id"]),
                path=str(item["path"]),
                reason=str(item["reason"]),
                time=str(item["time"]),
            )
            for item in doc["entries"]
        )
    except (ApplyError, ValueError, KeyError, TypeError) as err:
        raise refuse(
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


def record(root: Path, entry: MarkerEntry) -> str:
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


def adopt(top: Path, root: Path) -> None:
    """Move the entries of a marker at ``root`` (older versions kept it there) to ``top``.

    Their paths, relative to ``root``, become relative to ``top``; the top
    marker is written before the old one goes, so a crash in between leaves
    both, never neither. Raises :class:`ApplyError` (``marker_unreadable``)
    when either marker cannot be read or the move fails: the apply is then
    refused, and a human looks at the marker.
    """
    if root == top or not os.path.lexists(marker_path(root)):
        return
    prefix = root.relative_to(top).as_posix()
    moved = tuple(
        MarkerEntry(entry.apply_id, f"{prefix}/{entry.path}", entry.reason, entry.time)
        for entry in read_marker(root)
    )
    paths = {entry.path for entry in moved}
    kept = tuple(entry for entry in read_marker(top) if entry.path not in paths)
    try:
        _write_marker(top, (*kept, *moved))
        _write_marker(root, ())
    except (OSError, AtomicWriteError) as err:
        raise refuse(
            "marker_unreadable",
            f"cannot move {marker_path(root)} to {marker_path(top)}: {err}; "
            "move its entries by hand",
        ) from err


def clear_above(top: Path, target: Path) -> str:
    """Clear ``target``'s entries from markers above ``top``; return a note for the detail.

    Such a marker was left by an apply whose root held this one's work tree
    (an older version kept markers at the root; a root outside any work tree
    keeps its own). Its lock is taken without waiting, since this apply
    already holds locks below it: a busy one is left as it is, and still
    refuses deletes, and the note says so.
    """
    notes = ""
    for folder in markers_over(target):
        key = marker_key(folder, target)
        try:
            if folder.is_relative_to(top) or all(e.path != key for e in read_marker(folder)):
                continue
        except ApplyError:
            continue  # unreadable: it refuses deletes until a human looks at it
        try:
            with locked(folder, wait_s=0):
                notes += clear(folder, key)
        except (ApplyError, OSError, AtomicWriteError) as err:
            notes += f"; the entry in {marker_path(folder)} was left: {err}"
    return notes


def clear(root: Path, key: str) -> str:
    """Remove the entry for ``key`` (a :func:`marker_key`); return a note for the detail."""
    try:
        entries = read_marker(root)
    except ApplyError as err:
        return f"; the marker could not be cleared: {err.message}"
    kept = tuple(entry for entry in entries if entry.path != key)
    if kept != entries:
        try:
            _write_marker(root, kept)
        except AtomicWriteError as err:
            return f"; clearing the marker failed: {err.message}"
    return ""


@contextlib.contextmanager
def locked_all(folders: tuple[Path, ...]) -> Iterator[None]:
    """Hold the apply locks of ``folders``, taken outermost first.

    Every apply takes its locks from its state top down a path towards its
    target, so the global order is by depth and two applies never wait on
    each other in a cycle.
    """
    with contextlib.ExitStack() as stack:
        for folder in sorted(set(folders), key=lambda path: (len(path.parts), str(path))):
            stack.enter_context(locked(folder))
        yield


@contextlib.contextmanager
def locked(root: Path, *, wait_s: float | None = None) -> Iterator[None]:
    """Hold the apply lock of ``root`` (bounded wait, then a ``busy`` refusal); the wait is
    :data:`LOCK_WAIT_S` unless given, read when called (not when this was defined)."""
    wait_s = LOCK_WAIT_S if wait_s is None else wait_s
    folder = root / MARKER_DIR
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    try:
        current = ignore.read_bytes()
    except FileNotFoundError:
        current = b""
    if current != IGNORE_TEXT:  # also replaces the "*" of older versions, which hid the marker
        atomic_write(ignore, IGNORE_TEXT)
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as err:
                if time.monotonic() >= deadline:
                    raise refuse(
                        "busy", f"another apply held {folder / LOCK_NAME} for {wait_s:.0f}s"
                    ) from err
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
