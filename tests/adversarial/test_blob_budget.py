"""Class: work done for bytes the review can never hold, and the wrong end of the change.

Cause (budget): for files GitHub sent no patch for, up to 300 files x 1 MB of blobs were
fetched before ``max_diff_bytes`` threw almost all of it away: 12 patchless 990 KB files
with ``max_diff_bytes: 20000`` made 47 GitHub requests and fetched 23.7 MB, then reviewed
nothing. Cause (merge base): the rebuild read the old side at the base *tip*, where the
patches and the file list are relative to the merge base, so a base that moved on was
shown "reverted" by the pull request.

Fix (:mod:`gate.action.blobfetch`): sizes and modes come from the merge base's and head's
trees before anything is fetched; a file the filters leave out, or whose added/removed
bytes alone cannot fit in what is left of the budget, is never fetched; blob bytes and
GitHub requests are held to a stated bound (:func:`~gate.action.blobfetch.request_bound`,
:func:`~gate.action.blobfetch.byte_bound`, docs/action.md); the old side is read at the
comparison's ``merge_base_commit``.

Variants: file counts, sizes, statuses and budgets, through the fake GitHub (checked
against GitHub's OpenAPI description), counting the requests it served; a base moved on
after the merge base, for added, modified and renamed files.
"""

from __future__ import annotations

import hashlib

import pytest

from gate.action.blobdiff import section_from_blobs
from gate.action.blobfetch import FetchBudget, byte_bound, request_bound
from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.diff import SkipWhy, select
from tests.fakes.github import FakeGitHub

BASE, HEAD, MERGE_BASE = "b" * 40, "d" * 40, "e" * 40


def _client(fake: FakeGitHub) -> GitHubClient:
    return GitHubClient(
        GitHubSettings(
            repository=fake.repository, api_url=fake.api_url, token=fake.token,
            throttle=False, timeout=5.0, backoff=0.0,
        )
    )  # fmt: skip


def _oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _blob(size: int, seed: int) -> bytes:
    line = b"x = %d  # filler line of a generated file\n" % seed
    return (line * (size // len(line) + 1))[:size]


@pytest.mark.parametrize("size", [990_000, 60_000, 3_000])
@pytest.mark.parametrize("budget", [20_000, 200_000, 4_000_000])
@pytest.mark.parametrize("status", ["added", "modified", "removed"])
def test_fetching_is_driven_by_the_budget(
    fake_github: FakeGitHub, size: int, budget: int, status: str
) -> None:
    fake = fake_github
    files = []
    for i in range(12):
        path = f"gen/data{i:02}.py"
        old, new = _blob(size, i), _blob(size, i).replace(b"x = ", b"y = ", 1)
        if status != "added":
            fake.set_file(MERGE_BASE, path, old)
        if status != "removed":
            fake.set_file(HEAD, path, new)
        entry = {"filename": path, "status": status}
        if status != "removed":
            entry["sha"] = _oid(new)
        files.append(entry)
    fake.add_compare(BASE, HEAD, b"", files, refuse_diff=True)
    fake.merge_bases[f"{BASE}...{HEAD}"] = MERGE_BASE
    limit = FetchBudget(max_bytes=budget)
    fetch = _client(fake).compare_diff(BASE, HEAD, budget=limit)
    blobs = [r for r in fake.requests if r.operation == "git/get-blob"]
    rebuild = [r for r in fake.requests if r.operation in ("git/get-blob", "git/get-tree")]
    assert len(rebuild) <= request_bound(len(files))
    assert fetch.rebuild is not None
    assert fetch.rebuild.bytes <= byte_bound(limit)
    assert fetch.rebuild.requests >= len(rebuild)
    selected = select(fetch.sections, max_bytes=budget)
    if status != "modified" and size > budget:
        # not one of these can fit: nothing is fetched, every file is a named gap
        assert blobs == [], (len(blobs), status, size, budget)
        assert {s.why for s in selected.coverage.skipped} == {SkipWhy.NO_PATCH}
    # every file fetched was kept: no blob is read only for its bytes to be thrown away
    rebuilt = [s for s in fetch.sections if not s.no_patch]
    dropped = [s for s in selected.coverage.skipped if s.why is SkipWhy.OVER_BYTE_LIMIT]
    assert not dropped or status == "modified", dropped
    assert len(blobs) <= 2 * len(rebuilt) + 2 * len(dropped)


@pytest.mark.parametrize("status", ["added", "modified", "renamed"])
def test_the_old_side_is_the_merge_base(fake_github: FakeGitHub, status: str) -> None:
    fake = fake_github
    lines = b"".join(b"line %d\n" % i for i in range(40))
    old = lines
    moved = lines.replace(b"line 5\n", b"base moved on 5\n")  # the base tip, later
    new = lines.replace(b"line 30\n", b"pull request 30\n")
    before = "src/old_app.py" if status == "renamed" else "src/app.py"
    if status != "added":
        fake.set_file(MERGE_BASE, before, old)
        fake.set_file(BASE, before, moved)
    fake.set_file(HEAD, "src/app.py", new)
    entry = {"filename": "src/app.py", "status": status, "sha": _oid(new)}
    if status == "renamed":
        entry["previous_filename"] = before
    fake.add_compare(BASE, HEAD, b"", [entry], refuse_diff=True)
    fake.merge_bases[f"{BASE}...{HEAD}"] = MERGE_BASE
    fetch = _client(fake).compare_diff(BASE, HEAD, budget=FetchBudget(max_bytes=10**6))
    (section,) = fetch.sections
    expected = section_from_blobs(
        "src/app.py",
        None if status == "added" else old,
        new,
        old_path=before if status == "renamed" else "",
    )
    assert section.data == expected.data
    assert b"base moved on" not in section.data
    assert not [r for r in fake.requests if r.path.endswith(f"/trees/{BASE}")]
