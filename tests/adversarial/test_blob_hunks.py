"""Class: a rebuilt section coarser than git's, so a change that fits becomes ``too_large``.

Cause: above the diff-work limit (old lines x new lines of the changed middle over
``MAX_DIFF_WORK``) the blob rebuild wrote the whole middle as one hunk: a change to the
first and last lines of a 290 KB file became a 584 KB single hunk (``too_large``,
blocked) where git's diff is 1.4 KB in two hunks.

Fix: a large span is anchored on the lines unique on both sides (patience diff) and the
gaps between anchors aligned again with bounded work
(:func:`gate.action.blobdiff._align`), so hunks keep git's granularity.

Variants: files of 2,000 to 9,000 lines with 1 to 6 small edits at random places (the
first and last lines always among them), seeded; the oracle is ``git diff --no-index``:
the same hunks (count and line ranges), about the same bytes, and a chunk limit that
holds git's largest hunk never makes the rebuilt section ``too_large``.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from gate.action.blobdiff import section_from_blobs
from gate.diff import select, split_diff
from gate.review.chunks import plan, section_header
from tests.gitrepo import git_env

RANGES = re.compile(rb"^@@ -(\S+) \+(\S+) @@", re.MULTILINE)


def _git_diff(tmp: Path, old: bytes, new: bytes) -> bytes:
    import subprocess

    (tmp / "a").mkdir(exist_ok=True)
    (tmp / "b").mkdir(exist_ok=True)
    (tmp / "a" / "f.py").write_bytes(old)
    (tmp / "b" / "f.py").write_bytes(new)
    done = subprocess.run(
        ["git", "diff", "--no-index", "a/f.py", "b/f.py"],
        cwd=tmp, capture_output=True, timeout=60, env=git_env(tmp),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    return done.stdout


@pytest.mark.parametrize("seed", range(12))
def test_hunks_keep_gits_granularity(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(2_000, 9_000)
    lines = [b"value_%05d = compute(%d)  # a line of a large file\n" % (i, i) for i in range(count)]
    new = lines[:]
    places = {0, count - 1} | {rng.randrange(count) for _ in range(rng.randint(0, 4))}
    for place in sorted(places, reverse=True):
        kind = rng.choice(["edit", "insert", "delete"]) if 0 < place < count - 1 else "edit"
        if kind == "edit":
            new[place] = b"changed_%d = 1\n" % place
        elif kind == "insert":
            new[place:place] = [b"inserted_%d = 2\n" % place, b"inserted_%d = 3\n" % place]
        else:
            del new[place]
    old_bytes, new_bytes = b"".join(lines), b"".join(new)
    ours = section_from_blobs("f.py", old_bytes, new_bytes)
    git = _git_diff(tmp_path, old_bytes, new_bytes)
    print(f"seed={seed} lines={count} places={sorted(places)}")
    assert RANGES.findall(ours.data) == RANGES.findall(git)
    _, hunks = section_header(git)
    assert len(ours.data) <= len(git) + 200
    # a chunk that holds git's largest hunk holds ours: never too_large
    limit = 2 * max(len(h) for h in hunks) + 200
    selected = select(split_diff(ours.data))
    assert plan(selected.data, selected.coverage, max_chunk_bytes=limit).too_large == ()
