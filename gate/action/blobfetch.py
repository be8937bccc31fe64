"""Files GitHub sent no patch for, rebuilt from their blobs within the review's budget.

Above 300 files GitHub refuses the diff (406) and its file list leaves out the ``patch``
of large files. :func:`rebuild` rebuilds such a file from the two ends of the comparison
``base...head``: the tree of its **merge base** (every patch and the file list are
relative to it, so a base that moved on is never shown "reverted") and the tree of
``head``. Each side's object id, mode and size come from those trees (two requests, one
per tree), so a rebuilt section carries git's real modes and types
(:func:`gate.action.blobdiff.section_from_blobs`) and the fetching is planned from sizes
before any blob is read:

- a file the include/exclude globs leave out is never fetched (it is ``filtered``);
- a file whose section cannot fit in what is left of the diff budget (its added or
  removed bytes alone, ``|new size - old size|``, are more) is never fetched;
- a blob larger than :data:`MAX_BLOB_BYTES`, more than :data:`MAX_BLOB_FILES` files, or
  more blob bytes in all than :func:`byte_bound` allows: not fetched;
- a side missing from its tree, a truncated tree, a type change (file, symlink,
  submodule) or a head object other than the file list's: not rebuilt (it could not be
  rebuilt faithfully).

Every file not rebuilt stays ``no_patch``: unreviewed and named in the coverage manifest,
so coverage is partial and the review blocks unless partial coverage is allowed. The
GitHub requests are at most :func:`request_bound` (stated in docs/action.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gate.action.blobdiff import (
    FILE_MODES,
    SUBMODULE,
    file_type,
    section_from_blobs,
    submodule_text,
)
from gate.diff import FileSection, section_selected

#: files GitHub sent no patch for are rebuilt from their blobs, at most this many per run
MAX_BLOB_FILES = 300
#: and each blob at most this large (a larger one stays unreviewed: no_patch)
MAX_BLOB_BYTES = 1_000_000
#: requests made for the two trees (merge base and head), once per run
TREE_REQUESTS = 2


@dataclass(frozen=True)
class Side:
    """One end of a file: its object id, git mode and size in a commit's tree."""

    oid: str
    mode: str
    size: int


@dataclass(frozen=True)
class FetchBudget:
    """What the review can hold: ``max_bytes`` of diff (``max_diff_bytes``, or less when
    ``max_chunks`` chunks of ``max_chunk_bytes`` hold less) and the path filters."""

    max_bytes: int
    include: tuple[str, ...] = ("**",)
    exclude: tuple[str, ...] = ()

    @staticmethod
    def from_config(config: Any) -> FetchBudget:
        chunks = int(config.max_chunks) * int(config.max_chunk_bytes)
        return FetchBudget(
            max_bytes=min(int(config.max_diff_bytes), chunks),
            include=tuple(config.include),
            exclude=tuple(config.exclude),
        )


def byte_bound(budget: FetchBudget | None) -> int:
    """The most blob bytes one run fetches: twice the diff budget, and at least one
    file's two largest blobs (so a large file with a small change can still be shown)."""
    if budget is None:
        return MAX_BLOB_FILES * 2 * MAX_BLOB_BYTES
    return max(2 * budget.max_bytes, 2 * MAX_BLOB_BYTES)


def request_bound(patchless: int) -> int:
    """The most GitHub requests a rebuild makes for ``patchless`` files without a patch:
    the two trees, and two blobs for each file rebuilt (at most :data:`MAX_BLOB_FILES`)."""
    if patchless <= 0:
        return 0
    return TREE_REQUESTS + 2 * min(patchless, MAX_BLOB_FILES)


@dataclass
class FetchCount:
    """What a rebuild did: GitHub requests, blob bytes, files rebuilt, and why the
    others were not (``filtered``, ``over_budget``, ``not_faithful``, ...)."""

    requests: int = 0
    bytes: int = 0
    rebuilt: int = 0
    left: dict[str, int] = field(default_factory=dict)

    def leave(self, why: str) -> None:
        self.left[why] = self.left.get(why, 0) + 1


def rebuild(
    entries: Sequence[Mapping[str, Any]],
    sections: list[FileSection],
    *,
    trees: Callable[[], tuple[Mapping[str, Side] | None, Mapping[str, Side] | None]],
    blob: Callable[[str], bytes | None],
    budget: FetchBudget | None,
) -> FetchCount:
    """Rebuild, in place, the ``no_patch`` sections of ``entries`` (the file list, in
    order) that the budget can hold; ``trees()`` gives the merge base's and head's files
    (None for a truncated tree; asked once, only if a file needs it) and ``blob(oid)``
    a blob's verified bytes (None when over :data:`MAX_BLOB_BYTES`)."""
    count = FetchCount()
    used = sum(len(s.data) for s in sections if not s.no_patch and _wanted(s, budget))
    fetched = 0
    limit = byte_bound(budget)
    old_tree: Mapping[str, Side] | None = None
    new_tree: Mapping[str, Side] | None = None
    asked = False
    for index, (entry, section) in enumerate(zip(entries, sections, strict=True)):
        if not section.no_patch:
            continue
        if not _wanted(section, budget):
            count.leave("filtered")
            continue
        if count.rebuilt >= MAX_BLOB_FILES:
            count.leave("max_files")
            continue
        if not asked:
            old_tree, new_tree = trees()
            count.requests += TREE_REQUESTS
            asked = True
        sides = _sides(entry, old_tree, new_tree)
        if sides is None:
            count.leave("not_faithful")
            continue
        old, new = sides
        smallest = abs((new.size if new else 0) - (old.size if old else 0))
        if budget is not None and used + smallest > budget.max_bytes:
            count.leave("over_budget")
            continue
        blobs = [s for s in (old, new) if s is not None and s.mode != SUBMODULE]
        if any(s.size > MAX_BLOB_BYTES for s in blobs):
            count.leave("blob_too_large")
            continue
        if fetched + sum(s.size for s in blobs) > limit:
            count.leave("over_fetch_bytes")
            continue
        data: list[bytes | None] = []
        for side in (old, new):
            if side is None:
                data.append(None)
            elif side.mode == SUBMODULE:
                data.append(submodule_text(side.oid))
            else:
                count.requests += 1
                got = blob(side.oid)
                fetched += side.size
                data.append(got if got is not None and len(got) == side.size else None)
        if (old is not None and data[0] is None) or (new is not None and data[1] is None):
            count.leave("not_faithful")
            continue
        count.bytes = fetched
        path = str(entry["filename"])
        previous = str(entry.get("previous_filename") or path)
        rebuilt = section_from_blobs(
            path,
            data[0],
            data[1],
            old_path=previous if previous != path else "",
            old_mode=old.mode if old else new.mode if new else "",
            new_mode=new.mode if new else old.mode if old else "",
            copied=str(entry.get("status")) == "copied",
        )
        if rebuilt.no_patch:
            count.leave("not_faithful")
            continue
        sections[index] = rebuilt
        count.rebuilt += 1
        used += len(rebuilt.data)
    count.bytes = fetched
    return count


def _wanted(section: FileSection, budget: FetchBudget | None) -> bool:
    """Whether the path filters keep ``section`` (always, with no budget)."""
    return budget is None or section_selected(section, budget.include, budget.exclude)


def _sides(
    entry: Mapping[str, Any],
    old_tree: Mapping[str, Side] | None,
    new_tree: Mapping[str, Side] | None,
) -> tuple[Side | None, Side | None] | None:
    """The file's two ends, or None when they cannot be known faithfully."""
    if old_tree is None or new_tree is None:
        return None  # a truncated tree: no mode, no id to bind to
    path = str(entry.get("filename"))
    previous = str(entry.get("previous_filename") or path)
    status = str(entry.get("status", "modified"))
    old = None if status == "added" else old_tree.get(previous)
    new = None if status == "removed" else new_tree.get(path)
    if (status != "added" and old is None) or (status != "removed" and new is None):
        return None
    if any(side.mode not in FILE_MODES for side in (old, new) if side is not None):
        return None  # a mode git does not write for a file
    if old is not None and new is not None and file_type(old.mode) != file_type(new.mode):
        return None  # a type change: git shows a deletion and an addition
    head_id = entry.get("sha")
    if new is not None and new.mode != SUBMODULE and head_id and head_id != new.oid:
        return None  # the file list names another object than the head tree holds
    return old, new
