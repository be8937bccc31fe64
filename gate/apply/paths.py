"""Where an apply may write: the --root, the confinement of agent paths, the work-tree top.

This module owns :func:`confine` (an agent's path, relative to ``--root``,
stays inside it: no absolute paths, no ``..``, no ``.git``/``.apply`` at any
depth or in any spelling a file system folds to them, no symlink out, no name
over NAME_MAX or path over PATH_MAX), :func:`reserved_component`,
:func:`reserved_inside` (a folder that holds a work tree or apply state),
:func:`resolve_root`, :func:`state_top`, the folder whose ``.apply/`` holds the
lock: the git work-tree top, where the pre-commit hook and the action look,
whatever folder ``--root`` is, and :func:`home_of`, the folder whose
``.apply/incomplete`` records an incomplete write of a path: the nearest work
tree holding that path (a nested work tree has its own, which its own hook
reads), else the state top.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path, PurePosixPath

from gate.apply.parse import refuse
from gate.errors import ApplyError, UsageError
from gate.safe.atomic import TEMP_NAME_EXTRA

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


#: Used where the file system does not say (``pathconf`` fails): Linux's values.
FALLBACK_NAME_MAX = 255
FALLBACK_PATH_MAX = 4096
_SHOWN = 40


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def _limit(folder: str, name: str, fallback: int) -> int:
    try:
        value = os.pathconf(folder, name)
    except (OSError, ValueError):
        return fallback
    return value if value > 0 else fallback


def too_long(rel: str, err: OSError | None = None) -> ApplyError:
    """The ``path_too_long`` refusal for an ``ENAMETOOLONG`` the checks below did not foresee."""
    detail = f" ({err.strerror})" if err is not None else ""
    return refuse(
        "path_too_long",
        f"path {_shown(rel)} is too long for the file system{detail}; "
        "use shorter names or a shorter path",
    )


def check_lengths(root: Path, rel: str, target: Path, *, temp_beside: bool) -> None:
    """Refuse (``path_too_long``) a name over NAME_MAX or a path over PATH_MAX.

    Counted in bytes of the file-system encoding, as the kernel counts: each
    component of ``target`` below ``root`` against NAME_MAX, the absolute
    ``target`` against PATH_MAX (which counts the final NUL). :func:`confine`
    checks the path as spelt and again once symlinks are resolved.
    With ``temp_beside`` (a write), the temporary file written beside the
    target must fit too: its name is :data:`TEMP_NAME_EXTRA` bytes longer.
    The limits are the file system's, asked of the deepest existing folder.
    """
    folder = str(target.parent)
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    name_max = _limit(folder, "PC_NAME_MAX", FALLBACK_NAME_MAX)
    path_max = _limit(folder, "PC_PATH_MAX", FALLBACK_PATH_MAX)
    for part in target.relative_to(root).parts:
        size = len(os.fsencode(part))
        if size > name_max:
            raise refuse(
                "path_too_long",
                f"path {_shown(rel)} has a name of {size} bytes ({_shown(part)}), over the "
                f"file system's limit of {name_max} bytes per name (NAME_MAX); "
                "use a shorter name",
            )
    extra = TEMP_NAME_EXTRA if temp_beside else 0
    final = len(os.fsencode(target.name))
    if final + extra > name_max:
        raise refuse(
            "path_too_long",
            f"the file name {_shown(target.name)} is {final} bytes; apply writes it through a "
            f"temporary file beside it whose name is {extra} bytes longer, over the file "
            f"system's limit of {name_max} bytes per name (NAME_MAX); use a shorter name (at "
            f"most {name_max - extra} bytes)",
        )
    size = len(os.fsencode(str(target))) + extra
    if size >= path_max:
        via = f" (with the {extra} bytes of the temporary file's name)" if extra else ""
        raise refuse(
            "path_too_long",
            f"path {_shown(rel)} is {size} bytes as an absolute path{via}, over the limit of "
            f"{path_max - 1} bytes (PATH_MAX); use a shorter path, or move the work tree to "
            "a shorter folder",
        )


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
    check_lengths(root, norm, candidate, temp_beside=follow_final)
    try:
        target = (
            candidate.resolve() if follow_final else candidate.parent.resolve() / candidate.name
        )
    except (OSError, RuntimeError) as err:
        if isinstance(err, OSError) and err.errno == errno.ENAMETOOLONG:
            raise too_long(rel, err) from err
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
    check_lengths(root, norm, target, temp_beside=follow_final)
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


def is_work_tree_top(folder: Path) -> bool:
    """Whether ``folder`` has a ``.git`` folder with ``HEAD`` or a ``gitdir:`` file (git's test)."""
    dot_git = folder / ".git"
    return (dot_git / "HEAD").is_file() or _is_gitfile(dot_git)


def home_of(top: Path, target: Path) -> Path:
    """The folder whose ``.apply/incomplete`` records an incomplete write of ``target``.

    That is the nearest work-tree top holding ``target`` at or below ``top``
    (the :func:`state_top` of the root): a nested work tree (its own
    repository, a submodule, a linked work tree) is committed by its own git,
    whose hook reads its own top, and whose ``git status`` shows the marker
    there. Outside any nested work tree it is ``top``.
    """
    for folder in target.parents:
        if folder == top or not folder.is_relative_to(top):
            break
        if is_work_tree_top(folder):
            return folder
    return top


def reserved_inside(folder: Path) -> tuple[str, ...]:
    """Every entry at any depth of ``folder`` whose name folds to ``.git`` or ``.apply``.

    Relative to ``folder``, in walk order; the walk does not descend into
    them. A folder holding one is a work tree (or a submodule) or holds apply
    state (a marker): deleting it would delete history or the record of an
    incomplete write. Symlinks are not followed (deleting a folder removes a
    link, not what it names). A folder that cannot be read raises
    :class:`ApplyError` (``delete_error``): what cannot be searched is not
    deleted.
    """

    def fail(err: OSError) -> None:
        raise refuse(
            "delete_error",
            f"cannot search {err.filename} for .git and .apply before deleting it "
            f"({err.strerror}); nothing was deleted",
        )

    hits: list[str] = []
    for here, dirs, files in os.walk(folder, onerror=fail):
        for name in sorted((*dirs, *files)):
            if reserved_component(name) is not None:
                hits.append(Path(here, name).relative_to(folder).as_posix())
        dirs[:] = sorted(name for name in dirs if reserved_component(name) is None)
    return tuple(hits)


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
        if is_work_tree_top(folder):
            hit = _reserved_in(root.relative_to(folder).parts)
            if hit is not None:
                raise UsageError(
                    f"--root {root} is inside a {hit[1]}/ folder ({hit[0]!r}), which agents may "
                    "not touch; give a folder of the work tree"
                )
            return folder
    return root
