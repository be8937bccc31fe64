"""Where an apply may write: the --root, the confinement of agent paths, the work-tree top.

This module owns :func:`confine` (an agent's path, relative to ``--root``,
stays inside it: no absolute paths, no ``..``, no ``.git``/``.apply`` at any
depth or in any spelling a file system folds to them, no symlink out),
:func:`reserved_component`, :func:`resolve_root` and :func:`state_top`, the folder whose
``.apply/`` holds the lock and the incomplete marker: the git work-tree top,
where the pre-commit hook and the action look, whatever folder ``--root`` is.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from gate.apply.parse import refuse
from gate.errors import UsageError

MARKER_DIR = ".apply"
RESERVED = {".git": ".git", "git~1": ".git", MARKER_DIR: MARKER_DIR, "apply~1": MARKER_DIR}
# Code points HFS+ ignores in names (git's is_hfs_dotgit list): ".g\u200cit" is ".git" there.
_IGNORABLE = frozenset(
    chr(c) for c in (*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF)
)


def reserved_component(part: str) -> str | None:
    """The reserved folder (``.git`` or ``.apply``) a path component names, or None.

    Compared the way file systems fold names: case-insensitively, without
    the code points HFS+ ignores, without an NTFS stream suffix
    (``.git::$INDEX_ALLOCATION``), without trailing dots and spaces (Windows
    drops them: ``.git.`` and ``.git `` are ``.git``), and with the NTFS
    8.3 short names ``GIT~1`` and ``APPLY~1``.
    """
    name = "".join(ch for ch in part if ch not in _IGNORABLE)
    name = name.split(":", 1)[0].rstrip(". ").casefold()
    return RESERVED.get(name)


def _reserved_in(parts: tuple[str, ...]) -> tuple[str, str] | None:
    for part in parts:
        name = reserved_component(part)
        if name is not None:
            return part, name
    return None


def _is_unicode(text: str) -> bool:
    """Whether ``text`` holds Unicode scalar values only (a JSON ``"\\ud800"`` does not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def confine(root: Path, rel: str, *, follow_final: bool) -> tuple[str, Path]:
    """Return (normalized relative path, absolute target) or raise a refusal.

    ``root`` must already be resolved. Absolute paths, ``..`` components,
    a reserved folder (``.git``, ``.apply``: see :func:`reserved_component`)
    as any component, before or after resolving symlinks, and symlinks that
    lead out of ``root`` are refused. ``follow_final`` resolves a symlink
    in the last component too (writes go through it; deletes remove the link).
    """
    if not rel or "\x00" in rel:
        raise refuse("bad_path", "path is empty or contains a NUL byte")
    if not _is_unicode(rel):
        raise refuse(
            "bad_path",
            f"path {rel!r} holds an unpaired surrogate escape (\\ud800-\\udfff): it is not "
            "Unicode text and names no file",
        )
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise refuse("absolute_path", f"path {rel!r} is absolute; give it relative to --root")
    if ".." in pure.parts:
        raise refuse("parent_traversal", f"path {rel!r} contains '..'; paths stay inside --root")
    if not pure.parts:
        raise refuse("bad_path", f"path {rel!r} names the root itself")
    norm = pure.as_posix()
    hit = _reserved_in(pure.parts)
    if hit is not None:
        raise refuse(
            "reserved_path",
            f"path {rel!r} has the component {hit[0]!r}, which names {hit[1]}/; "
            "agents may not write or delete there at any depth",
        )
    candidate = root / norm
    try:
        target = (
            candidate.resolve() if follow_final else candidate.parent.resolve() / candidate.name
        )
    except (OSError, RuntimeError) as err:
        raise refuse("symlink_loop", f"path {rel!r} cannot be resolved: {err}") from err
    if not target.is_relative_to(root) or target == root:
        raise refuse("symlink_escape", f"path {rel!r} leads out of --root through a symlink")
    hit = _reserved_in(target.relative_to(root).parts)
    if hit is not None:
        raise refuse(
            "reserved_path",
            f"path {rel!r} leads through a symlink to the component {hit[0]!r}, "
            f"which names {hit[1]}/; agents may not write or delete there",
        )
    return norm, target


def resolve_root(root: str | os.PathLike[str]) -> Path:
    try:
        resolved = Path(root).resolve(strict=True)
    except (OSError, RuntimeError) as err:
        raise UsageError(f"--root {os.fspath(root)!r} does not exist") from err
    if not resolved.is_dir():
        raise UsageError(f"--root {os.fspath(root)!r} is not a folder")
    return resolved


def _is_gitfile(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(7) == b"gitdir:"
    except OSError:
        return False


def state_top(root: Path) -> Path:
    """The folder whose ``.apply/`` holds the lock and the marker (``root`` must be resolved).

    That is the git work-tree top holding ``root``: the nearest folder, from
    ``root`` up, with a ``.git`` folder (holding ``HEAD``) or a ``.git`` file
    (``gitdir: ...``, as in linked work trees and submodules), which is how
    git itself finds it. git is not run: it may be missing where the agent
    runs, or refuse a repository owned by another user (``safe.directory``),
    and a marker in the wrong folder is one the hook does not see. Outside
    any work tree it is ``root``. A ``root`` inside ``.git/`` or ``.apply/``
    of the work tree is a usage error.
    """
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if (dot_git / "HEAD").is_file() or _is_gitfile(dot_git):
            hit = _reserved_in(root.relative_to(folder).parts)
            if hit is not None:
                raise UsageError(
                    f"--root {root} is inside a {hit[1]}/ folder ({hit[0]!r}), which agents may "
                    "not touch; give a folder of the work tree"
                )
            return folder
    return root
