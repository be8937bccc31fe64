"""Class: a carried answer trusted without being decided again.

Incremental review carries a chunk's earlier answer instead of asking
(:mod:`gate.review.carry`). The hole this class names: a record that *says* a chunk
passed, for other bytes, another policy, another question, too few answers, or an
answer that never was a bound, confident pass, being carried as a pass. The fix lives
where the class lives: :func:`gate.review.carry.settle` decides every carried envelope
again with :func:`gate.decide.decision.decide` against this chunk's own binding, and
:func:`gate.review.chunked.carried_reviews` looks records up by the exact question.

Variants: every chunk of a plan x every way a record can differ from the one true
answer (another chunk's digest in the envelope, another policy, low confidence, no
reasons, a flipped byte, a cut envelope, a malformed verdict, another question, one
answer short or one too many with ``agreement: 2``, a fail, a short set: issue 33's
asking stops at a block). Only the true record carries a pass; a bound fail is carried
as a fail (it stands); nothing else is carried.
Before this issue nothing was carried at all, so this test did not exist to fail; it
fails on a ``settle`` that trusts a record's state or digest instead of deciding.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gate.config.model import Config
from gate.decide import envelope
from gate.decide.decision import Binding, State
from gate.diff import select, split_diff
from gate.lab.demo import answer, verdict_block
from gate.review.carry import Book, Carried
from gate.review.chunked import carried_reviews
from gate.review.chunks import Chunk, Plan, plan

QUESTION = "a" * 64
OTHER_QUESTION = "b" * 64
MALFORMED = '```json\n{"verdict": "pass"\n```\n'


def _diff(files: int = 6) -> bytes:
    out = b""
    for i in range(files):
        name = f"lib/part_{i}.py"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
        out += b"@@ -1 +1,9 @@\n-x\n"
        out += b"".join(f"+line_{i}_{j} = {j}\n".encode() for j in range(9))
    return out


SELECTED = select(split_diff(_diff()), max_bytes=10**9)
CHUNKS = plan(SELECTED.data, SELECTED.coverage, max_chunk_bytes=400).chunks


def _sealed(text: str) -> bytes:
    return envelope.seal(text.encode())


def _true(chunk: Chunk, mode: str = "pass", policy: str = "1") -> bytes:
    return _sealed(answer(mode, Binding(chunk.sha, policy)))


Variant = Callable[[Chunk, Chunk], tuple[str, tuple[bytes, ...]]]

#: each variant: (question it is filed under, its envelopes) for ``chunk``; ``other`` is
#: another chunk of the same plan
VARIANTS: dict[str, Variant] = {
    "another_chunks_digest": lambda c, o: (QUESTION, (_true(o),)),
    "another_policy": lambda c, o: (QUESTION, (_true(c, policy="2"),)),
    "low_confidence": lambda c, o: (
        QUESTION,
        (_sealed(verdict_block(Binding(c.sha, "1"), "pass", ["fine"], 0.3)),),
    ),
    "no_reasons": lambda c, o: (
        QUESTION,
        (_sealed(verdict_block(Binding(c.sha, "1"), "pass", [], 0.95)),),
    ),
    "flipped_byte": lambda c, o: (
        QUESTION,
        (_true(c)[:-20] + bytes([_true(c)[-20] ^ 1]) + _true(c)[-19:],),
    ),
    "cut_envelope": lambda c, o: (QUESTION, (_true(c)[:-7],)),
    "malformed_verdict": lambda c, o: (QUESTION, (_sealed('```json\n{"verdict": "pass"\n```\n'),)),
    "another_question": lambda c, o: (OTHER_QUESTION, (_true(c),)),
    "no_envelope_text": lambda c, o: (QUESTION, (_sealed("I approve."),)),
}


def plan_of() -> Plan:
    return plan(SELECTED.data, SELECTED.coverage, max_chunk_bytes=400)


@pytest.mark.parametrize("index", range(len(CHUNKS)))
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_record_that_is_not_the_true_answer_carries_no_pass(name: str, index: int) -> None:
    chunk = CHUNKS[index]
    other = CHUNKS[(index + 1) % len(CHUNKS)]
    question, envelopes = VARIANTS[name](chunk, other)
    done = carried_reviews(
        plan_of(), Config(), Book.of([Carried(question, chunk.sha, envelopes, "x")]), QUESTION
    )
    assert chunk.name not in done, name


@pytest.mark.parametrize("index", range(len(CHUNKS)))
def test_the_true_answer_carries_and_a_bound_fail_stands(index: int) -> None:
    chunk = CHUNKS[index]
    passed = carried_reviews(
        plan_of(), Config(), Book.of([Carried(QUESTION, chunk.sha, (_true(chunk),), "x")]), QUESTION
    )
    assert passed[chunk.name].decision is not None
    assert passed[chunk.name].decision.state is State.PASS
    failed = carried_reviews(
        plan_of(),
        Config(),
        Book.of([Carried(QUESTION, chunk.sha, (_true(chunk, "fail"),), "x")]),
        QUESTION,
    )
    assert failed[chunk.name].decision is not None
    assert failed[chunk.name].decision.state is State.FAIL


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("index", range(len(CHUNKS)))
def test_another_answer_count_than_agreement_carries_nothing(count: int, index: int) -> None:
    chunk = CHUNKS[index]
    envelopes = tuple(_true(chunk) for _ in range(count))
    done = carried_reviews(
        plan_of(),
        Config(agreement=2),
        Book.of([Carried(QUESTION, chunk.sha, envelopes, "x")]),
        QUESTION,
    )
    assert done == {}
    two = carried_reviews(
        plan_of(),
        Config(agreement=2),
        Book.of([Carried(QUESTION, chunk.sha, (_true(chunk), _true(chunk)), "x")]),
        QUESTION,
    )
    assert chunk.name in two


@pytest.mark.parametrize("index", range(len(CHUNKS)))
def test_a_short_answer_set_carries_its_fail_and_never_a_pass(index: int) -> None:
    """Issue 33: the asking stops at the answer that decides a block, so a chunk's record
    may hold fewer than ``agreement`` answers. Such a set carries a bound fail (it
    stands), never a pass (one pass of two is no agreement)."""
    chunk = CHUNKS[index]
    book = Book.of([Carried(QUESTION, chunk.sha, (_true(chunk, "fail"),), "x")])
    failed = carried_reviews(plan_of(), Config(agreement=3), book, QUESTION)
    assert failed[chunk.name].decision is not None
    assert failed[chunk.name].decision.state is State.FAIL
    for passes in (1, 2):
        book = Book.of([Carried(QUESTION, chunk.sha, (_true(chunk),) * passes, "x")])
        assert carried_reviews(plan_of(), Config(agreement=3), book, QUESTION) == {}
