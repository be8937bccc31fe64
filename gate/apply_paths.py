"""Where an apply may write: the --root, the confinement of agent paths, the work-tree top.

This module owns :func:`confine` (an agent's path, relative to ``--root``,
stays inside it: no absolute paths, no ``..``, no ``.git``/``.apply``, no
symlink out), :func:`resolve_root` and :func:`state_top`, the folder whose
``.apply/`` holds the lock and the incomplete marker: the git work-tree top,
where the pre-commit hook and the action look, whatever folder ``--root`` is.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from gate.apply_parse import refuse
from gate.errors import UsageError

MARKER_DIR = ".apply"
RESERVED_TOP = frozenset({".git", MARKER_DIR})


def confine(root: Path, rel: str, *, follow_final: bool) -> tuple[str, Path]:
    """Return (normalized relative path, absolute target) or raise a refusal.

    ``root`` must already be resolved. Absolute paths, ``..`` components,
    the reserved top-level folders (``.git``, ``.apply``) and symlinks that
    lead out of ``root`` are refused. ``follow_final`` resolves a symlink
    in the last component too (writes go through it; deletes remove the link).
    """
    if not rel or "\x00" in rel:
        raise refuse("bad_path", "path is empty or contains a NUL byte")
    pure = PurePosixPath(rel)
    if pure.is_absolute():
        raise refuse("absolute_path", f"path {rel!r} is absolute; give it relative to --root")
    if ".." in pure.parts:
        raise refuse("parent_traversal", f"path {rel!r} contains '..'; paths stay inside --root")
    if not pure.parts:
        raise refuse("bad_path", f"path {rel!r} names the root itself")
    norm = pure.as_posix()
    if pure.parts[0].lower() in RESERVED_TOP:
        raise refuse(
            "reserved_path", f"path {rel!r} is inside {pure.parts[0]}/, which agents may not touch"
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
    inside = target.relative_to(root).parts
    if inside and inside[0].lower() in RESERVED_TOP:
        raise refuse("reserved_path", f"path {rel!r} leads into {inside[0]}/ through a symlink")
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
            inside = root.relative_to(folder).parts
            if inside and inside[0].lower() in RESERVED_TOP:
                raise UsageError(
                    f"--root {root} is inside {folder / inside[0]}, which agents may not touch; "
                    "give a folder of the work tree"
                )
            return folder
    return root
