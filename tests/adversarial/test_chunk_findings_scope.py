"""Class: a finding placed outside what its reviewer saw. In a review in chunks each
chunk's reviewer sees its own files only, but each chunk's reasons were placed against
the *whole* reviewed diff: a failing chunk's reviewer could put ``::error`` annotations
(and, with ``review-comments``, review comments) on the lines of files another chunk's
reviewer passed, and a passing chunk's reviewer warnings on files it never read. The
annotation then read as a finding on code the reviewer had not seen.

Now each chunk's reasons are placed against that chunk's own bytes: a reason naming a
line of another chunk's file is kept in the summary as not on the reviewed diff, never
anchored. Variants: every chunk as the speaker, every file (its own and the others')
and line as the target, each verdict.
"""

from __future__ import annotations

import itertools

import pytest

from gate.action.findings_report import findings_of
from gate.decide.attempt import ReviewOutcome
from gate.decide.decision import Decision, State, Status
from gate.decide.verdict import Verdict
from gate.diff import Coverage
from gate.findings import right_side
from gate.review.chunks import Chunk, plan
from gate.review.result import ChunkReview

FILES = 4
LINES = 6


def _diff() -> bytes:
    out = b""
    for i in range(FILES):
        path = f"src/f{i}.py"
        body = b"".join(b"+line %d of %d\n" % (j, i) for j in range(LINES))
        out += (
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1 +1,{LINES} @@\n-pass\n"
        ).encode() + body
    return out


DIFF = _diff()
CHUNKS = plan(
    DIFF,
    Coverage(reviewed=(), skipped=(), diff_bytes=len(DIFF), diff_sha=""),
    max_chunk_bytes=len(DIFF) // FILES + 8,
).chunks


def _review(chunk: Chunk, verdict: str, reasons: tuple[str, ...]) -> ChunkReview:
    state = State.PASS if verdict == "pass" else State.FAIL
    status = Status.SUCCESS if verdict == "pass" else Status.FAILURE
    decision = Decision(
        state, status, f"reviewer_{verdict}", verdict, "",
        verdict=Verdict(verdict, reasons, 0.9, chunk.sha, "p"),
    )  # fmt: skip
    return ChunkReview(chunk, len(CHUNKS), "", ReviewOutcome((), None), decision)


def test_the_plan_puts_each_file_in_its_own_chunk() -> None:
    assert len(CHUNKS) == FILES
    assert [len(right_side(c.data)) for c in CHUNKS] == [1] * FILES


@pytest.mark.parametrize("speaker", range(FILES))
@pytest.mark.parametrize("verdicts", ["fail", "pass", "mixed"])
def test_a_chunk_reviewer_annotates_only_its_own_files(speaker: int, verdicts: str) -> None:
    reasons = tuple(
        f"src/f{target}.py:{line}: finding"
        for target, line in itertools.product(range(FILES), range(1, LINES + 1))
    )
    reviews = []
    for index, chunk in enumerate(CHUNKS):
        verdict = verdicts if verdicts != "mixed" else ("fail" if index == speaker else "pass")
        said = reasons if index == speaker else ()
        reviews.append(_review(chunk, verdict, said))
    total = next(r for r in reviews if r.chunk is CHUNKS[speaker]).decision
    assert total is not None
    found = findings_of(total, DIFF, reviews)
    assert len(found) == len(reasons)  # every reason kept (summary or annotation)
    own = set(right_side(CHUNKS[speaker].data))
    anchored = [f for f in found if f.anchored]
    assert anchored, "the speaker's own lines are anchored"
    assert {f.path for f in anchored} <= own, [f.location for f in anchored]
    assert len(anchored) == LINES * len(own)
