"""``context: files`` in the action: the changed files' text at the head SHA, fetched
through the GitHub API within a budget, as blob rebuilds are (:mod:`gate.action.blobfetch`).

The head's tree is listed once (``GET /repos/{owner}/{repo}/git/trees/{head}?recursive=1``,
the listing blob rebuilds and the asset rule already ask for, cached per commit): it names
each file's mode, blob and size, so :func:`gate.review.context.fetch_plan` decides what to
read from sizes before any blob is asked for (at most :data:`~gate.review.context.MAX_FILES`
blobs of at most :data:`~gate.review.context.MAX_FILE_BYTES`, at most
:data:`~gate.review.context.MAX_FETCH_BYTES` in all). Each blob is read by its id and
checked against it (:meth:`gate.action.github.pull.PullReader.blob`). The requests are at
most :func:`request_bound`.

Fail closed means the review still runs on the diff: a file GitHub cannot give (absent
or no regular file at the head, a truncated tree, too large, a failed request) is left
out and named in the certificate (``context.reviewer_context``, ``partial``); it never
blocks, because the verdict covers the diff alone (docs/decisions/0047-reviewer-context.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gate.config.model import Config
from gate.errors import GitHubError
from gate.review.context import (
    MAX_FILE_BYTES,
    MAX_FILES,
    NOT_A_FILE,
    REGULAR,
    FileText,
    HeadFiles,
    fetch_plan,
    file_text,
    paths_to_fetch,
)

if TYPE_CHECKING:
    from gate.action.github.client import GitHubClient


def request_bound() -> int:
    """The most GitHub requests one run makes for context: the head's tree, one blob a file."""
    return 1 + MAX_FILES


def fetch(gh: GitHubClient, head: str, diff: bytes, config: Config) -> HeadFiles | None:
    """The text at ``head`` of each file of the selected ``diff`` that ``context: files``
    may show; None with ``context: diff``. Never raises for GitHub: a file it cannot give
    is left out, named."""
    if config.context != "files":
        return None
    paths = paths_to_fetch(diff, config)
    source = f"github {head}"
    if not paths:
        return HeadFiles(source)
    try:
        listing = gh.tree_paths(head)
    except GitHubError as err:
        why = f"the head's tree could not be read: {err.reason}"
        return HeadFiles(source, tuple(file_text(p, None, missing=why) for p in paths))
    sizes = [(p, listing.sizes.get(p) if listing.modes.get(p) in REGULAR else None) for p in paths]
    wanted, left = fetch_plan(sizes)
    got: dict[str, FileText] = {t.path: t for t in left}
    if listing.truncated:  # absence cannot be read from a truncated listing
        for path in got:
            if got[path].detail == NOT_A_FILE:
                got[path] = file_text(path, None, missing="the head's tree listing is truncated")
    for path in wanted:
        try:
            data = gh.blob(listing.objects[path], limit=MAX_FILE_BYTES)
        except GitHubError as err:
            got[path] = file_text(path, None, missing=f"the blob could not be read: {err.reason}")
            continue
        got[path] = file_text(path, data, missing="the blob is larger than GitHub gives")
    return HeadFiles(source, tuple(got[p] for p in paths))
