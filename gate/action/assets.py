"""Binary assets in the diff GitHub sent: each one's first bytes, read from its blob.

The diff media type says only ``Binary files a/logo.png and b/logo.png differ``. For a
binary section whose name has a listed extension (:mod:`gate.assets`), the blob is read:
its id is the full one the commit's tree holds at that path, and it must start with the
abbreviated id the diff's own ``index`` line names (so the bytes judged are the bytes the
diff changed, not another version of the file), and :meth:`gate.action.github.pull.PullReader.blob`
checks the bytes against that id; the mode is the one the tree holds there. The head's
blob for an added or changed file, the base's for a deleted one, and both for a rename or
a copy. Whether those facts make an asset is :func:`gate.assets.change_kind`'s to say
(the rule the command line applies too): a regular, non-executable file whose name and
first bytes agree, and for a rename or copy an old side that is one too.

Within the fetch budget: at most :data:`MAX_ASSET_FILES` blobs per run, each at most
:data:`MAX_ASSET_BYTES`. A file beyond the budget, a blob too large, an id that does not
match, or a read that failed leaves the section a plain ``binary`` one: it blocks as
before (partial coverage), it is never taken for an asset on its name alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gate.action.github.client import GitHubClient
from gate.assets import ASSET_MODE, Side, change_kind, listed_type, read_header, renames
from gate.diff import FileSection
from gate.errors import GitHubError

#: blobs read per run to tell assets by their bytes (the rest block as plain binaries)
MAX_ASSET_FILES = 50
#: the largest blob read for that (GitHub's blobs API sends the whole blob)
MAX_ASSET_BYTES = 16 * 1024 * 1024


def mark_assets(
    gh: GitHubClient, sections: Sequence[FileSection], *, base: str, head: str
) -> list[FileSection]:
    """``sections`` with each binary asset marked (``FileSection.asset``), its bytes read
    within the budget; every other section unchanged."""
    out: list[FileSection] = []
    budget = MAX_ASSET_FILES
    for sec in sections:
        header = read_header(sec.data)
        if (
            not sec.binary
            or sec.asset
            or listed_type(sec.path) is None
            or header is None
            or budget <= 0
        ):
            out.append(sec)
            continue
        budget -= 1
        new = None if header.deleted else _side(gh, sec.path, header.new_id, head)
        old: Side | None = None
        if header.deleted:
            old = _side(gh, sec.old_path or sec.path, header.old_id, base)
        elif not header.added and renames(sec.old_path, sec.path):
            budget -= 1  # the old side's blob is read too
            old = _side(gh, sec.old_path, header.old_id, base)
        out.append(replace(sec, asset=change_kind(new, old)))
    return out


def _side(gh: GitHubClient, path: str, short: str, ref: str) -> Side:
    """The file ``path`` at ``ref``: its tree mode, and its bytes when the tree's blob id
    starts with ``short`` (the diff's ``index`` line); unread bytes are None (no asset)."""
    try:
        tree = gh.tree_paths(ref)
        full = tree.objects.get(path)
        mode = tree.modes.get(path)
        if full is None or not full.startswith(short) or mode != ASSET_MODE:
            return Side(path, mode, None)  # no read: these bytes could make no asset
        return Side(path, mode, gh.blob(full, limit=MAX_ASSET_BYTES))
    except GitHubError:
        return Side(path, None, None)  # unread bytes are no asset: the file blocks as any binary
