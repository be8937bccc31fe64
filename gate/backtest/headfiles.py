"""The changed files' text at a commit, read from a local git repository: what
``context: files`` shows in ``review-gate review`` (``--repo``, ``--commit``) and in a
backtest (each case's head: a merge's second parent, a squash commit).

One ``git ls-tree`` names every file's mode, object and size at the commit; only then are
the blobs read (``git cat-file blob``), planned from those sizes by
:func:`gate.review.context.fetch_plan`, each checked by the rule at input
(:func:`gate.review.context.file_text`). A path that is no regular file there (absent, a
symbolic link, a submodule) is left out and named, never followed.
"""

from __future__ import annotations

from pathlib import Path

from gate.backtest.cases import git_bytes
from gate.config.model import Config
from gate.errors import UsageError
from gate.review.context import (
    MAX_FILE_BYTES,
    REGULAR,
    FileText,
    HeadFiles,
    fetch_plan,
    file_text,
    paths_to_fetch,
)

#: paths named on one ``git ls-tree`` command line
PATHS_PER_CALL = 200


def head_files(repo: Path, rev: str, diff: bytes, config: Config) -> HeadFiles | None:
    """The text at ``rev`` of each file of ``diff`` that ``context: files`` may show, or
    None with ``context: diff``. A ``rev`` git cannot read is a UsageError naming it."""
    if config.context != "files":
        return None
    paths = paths_to_fetch(diff, config)
    source = f"git {rev}"
    if not paths:
        return HeadFiles(source)
    try:
        commit = git_bytes(repo, ["rev-parse", "--verify", "-q", f"{rev}^{{commit}}"])
    except UsageError as err:
        raise UsageError(
            f"context: files reads the changed files at {rev!r}, which is no commit of "
            f"{repo}: {err.message}; pass the head the diff is of"
        ) from err
    sha = commit.decode("ascii", "replace").strip()
    listing = _ls_tree(repo, sha, paths)
    fetch, left = fetch_plan([(p, listing[p][1] if p in listing else None) for p in paths])
    got: dict[str, FileText] = {t.path: t for t in left}
    for path in fetch:
        oid = listing[path][0]
        data = git_bytes(repo, ["cat-file", "blob", oid], MAX_FILE_BYTES)
        got[path] = file_text(path, data)
    return HeadFiles(f"git {sha}", tuple(got[p] for p in paths))


def _ls_tree(repo: Path, sha: str, paths: list[str]) -> dict[str, tuple[str, int]]:
    """(object id, size) of each regular file among ``paths`` at ``sha``; a path that is
    not a regular file there has none. Asked :data:`PATHS_PER_CALL` paths at a time."""
    out = b""
    for start in range(0, len(paths), PATHS_PER_CALL):
        some = paths[start : start + PATHS_PER_CALL]
        args = ["--literal-pathspecs", "ls-tree", "-z", "-l", "--full-tree", sha, "--", *some]
        out += git_bytes(repo, args)
    found: dict[str, tuple[str, int]] = {}
    for row in out.split(b"\0"):
        if not row:
            continue
        meta, _, name = row.partition(b"\t")
        fields = meta.decode("ascii", "replace").split()
        if len(fields) != 4 or fields[0] not in REGULAR or not fields[3].isdigit():
            continue
        path = name.decode("utf-8", "surrogateescape")
        found[path] = (fields[2], int(fields[3]))
    return found
