"""Binary assets in the diff GitHub sent: each one's first bytes, read from its blob.

The diff media type says only ``Binary files a/logo.png and b/logo.png differ``. For a
binary section whose name has a listed extension (:mod:`gate.assets`), the blob is read:
its id is the full one the commit's tree holds at that path, and it must start with the
abbreviated id the diff's own ``index`` line names (so the bytes judged are the bytes the
diff changed, not another version of the file), it must be a regular file there, and
:meth:`gate.action.github.pull.PullReader.blob` checks the bytes against that id. The head's
blob for an added or changed file, the base's for a deleted one, and both for a rename or
a copy: one whose old side is no asset (a script git paired with a PNG holding its bytes)
is no asset, since its one binary line hides the old file's removal.

Within the fetch budget: at most :data:`MAX_ASSET_FILES` blobs per run, each at most
:data:`MAX_ASSET_BYTES`. A file beyond the budget, a blob too large, an id that does not
match, or a read that failed leaves the section a plain ``binary`` one: it blocks as
before (partial coverage), it is never taken for an asset on its name alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from gate.action.github.client import GitHubClient
from gate.assets import asset_kind, listed_type
from gate.diff import FileSection
from gate.errors import GitHubError

#: blobs read per run to tell assets by their bytes (the rest block as plain binaries)
MAX_ASSET_FILES = 50
#: the largest blob read for that (GitHub's blobs API sends the whole blob)
MAX_ASSET_BYTES = 16 * 1024 * 1024
#: regular, non-executable files only: a symlink or a submodule is no asset, and neither is
#: an executable file (``\x89PNG\r\n`` has no NUL before its first line break, so a shell
#: runs a ``.png`` of mode 100755 as a script; a hook or a run-parts directory would)
_FILE_MODES = frozenset({"100644"})
_INDEX = re.compile(rb"index ([0-9a-f]{7,64})\.\.([0-9a-f]{7,64})(?: [0-7]{6})?\r?\n")
_MARKERS = (b"Binary files ", b"GIT binary patch", b"--- ", b"@@")


def index_ids(data: bytes) -> tuple[str, str] | None:
    """The abbreviated (old, new) blob ids of a section's ``index`` header line, or None."""
    for line in data.splitlines(keepends=True)[1:]:
        if line.startswith(_MARKERS):
            return None
        found = _INDEX.fullmatch(line)
        if found is not None:
            return found.group(1).decode("ascii"), found.group(2).decode("ascii")
    return None


def mark_assets(
    gh: GitHubClient, sections: Sequence[FileSection], *, base: str, head: str
) -> list[FileSection]:
    """``sections`` with each binary asset marked (``FileSection.asset``), its bytes read
    within the budget; every other section unchanged."""
    out: list[FileSection] = []
    budget = MAX_ASSET_FILES
    for sec in sections:
        if not sec.binary or sec.asset or listed_type(sec.path) is None or budget <= 0:
            out.append(sec)
            continue
        budget -= 1
        kind = asset_kind(sec.path, _first_bytes(gh, sec, base, head))
        if kind and _renamed(sec):
            budget -= 1  # the old side's blob is read too
            if not _old_side_is_asset(gh, sec, base):
                kind = ""  # a code file renamed or copied into an image: its removal is unseen
        out.append(replace(sec, asset=kind))
    return out


def _renamed(sec: FileSection) -> bool:
    """The section pairs two names (a rename or a copy), not an added or deleted file."""
    ids = index_ids(sec.data)
    return (
        bool(sec.old_path)
        and sec.old_path != sec.path
        and ids is not None
        and (set(ids[0]) != {"0"} and set(ids[1]) != {"0"})
    )


def _old_side_is_asset(gh: GitHubClient, sec: FileSection, base: str) -> bool:
    """A rename or copy is an asset only when its old side was one too (its name and the
    bytes of the old id): git pairs a deleted script with an added PNG that holds its
    bytes in a text chunk, and the section's one binary line hides the script's removal."""
    return bool(asset_kind(sec.old_path, _side_bytes(gh, sec, base, old_side=True)))


def _first_bytes(gh: GitHubClient, sec: FileSection, base: str, head: str) -> bytes | None:
    ids = index_ids(sec.data)
    deleted = ids is not None and set(ids[1]) == {"0"}
    return _side_bytes(gh, sec, base if deleted else head, old_side=deleted)


def _side_bytes(gh: GitHubClient, sec: FileSection, ref: str, *, old_side: bool) -> bytes | None:
    """The bytes of one side of ``sec`` at ``ref``: the old id at the old name, or the new
    id at the new name; None when they cannot be shown to be those bytes."""
    ids = index_ids(sec.data)
    if ids is None:
        return None
    old, new = ids
    path, short = (sec.old_path or sec.path, old) if old_side else (sec.path, new)
    try:
        tree = gh.tree_paths(ref)
        full = tree.objects.get(path)
        if full is None or not full.startswith(short) or tree.modes.get(path) not in _FILE_MODES:
            return None
        return gh.blob(full, limit=MAX_ASSET_BYTES)
    except GitHubError:
        return None  # unread bytes are no asset: the file blocks as any binary
