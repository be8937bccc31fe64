"""Class: a request sized from an estimate of its prompt instead of the prompt itself.

Cause: ``max_cost`` approved a review in chunks from ``request_size``, which measured the
prompt around a chunk on an empty probe chunk (plus 256 bytes of slack). The real prompt
fences each chunk with one backtick more than its longest backtick run, twice, so chunks
of backtick runs sent about twice (toward three times at full-size chunks) the approved
bytes, and the run's own cost report exceeded ``max_cost``. The window budget shared the
under-count: such a chunk was sent although its prompt could not fit.

Fix: every request is sized from the prompt that is really sent
(:func:`gate.review.chunked.request_size`: fence, label, digits), for planned chunks and
overflow halves, in the cost estimate and the window check
(:func:`gate.review.chunked.fits_window`: a chunk that cannot fit is split before it is
sent, within ``max_cost``, else it blocks ``context_overflow``).

Variants (Hypothesis, seeds printed on failure): diffs whose lines hold backtick runs of
any length, chunk sizes, windows from roomy to tight; the bytes the reviewer really
received never exceed the estimate ``max_cost`` approved, and a chunk whose prompt does
not fit the window is never sent.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.config.model import Config, ModelPrice, ReviewerConfig
from gate.decide import envelope
from gate.decide.attempt import ReviewOutcome
from gate.decide.decision import State
from gate.lab.demo import answer
from gate.review.budget import input_window
from gate.review.chunks import estimate_tokens
from gate.review.cost import TOKEN_OVERHEAD, estimate, request_bytes
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from gate.review.scope import select_diff
from gate.reviewers.pool import PacedOutcome

PRICE = ModelPrice(model="sim-model", input=1.0, output=1.0)
MAX_TOKENS = 200

line = st.one_of(
    st.builds(lambda n, t: "`" * n + t, st.integers(0, 900), st.text("abc xyz", max_size=30)),
    st.text("abcdef(){} =", min_size=1, max_size=60),
)
files = st.lists(st.lists(line, min_size=1, max_size=12), min_size=2, max_size=6)


def _diff(contents: list[list[str]]) -> bytes:
    out = ""
    for index, lines in enumerate(contents):
        name = f"docs/page{index}.md"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
        out += f"@@ -1 +1,{len(lines)} @@\n-old\n" + "".join(f"+{text}\n" for text in lines)
    return out.encode()


def _config(max_chunk_bytes: int, window: int | None) -> Config:
    reviewer = ReviewerConfig(
        provider="openai", model="sim-model", base_url="http://127.0.0.1:9", attempts=1,
        max_tokens=MAX_TOKENS,
    )  # fmt: skip
    return Config(
        reviewer=reviewer, max_chunk_bytes=max_chunk_bytes, max_chunks=400, concurrency=1,
        pricing=(PRICE,), max_input_tokens=window,
    )  # fmt: skip


class Reviewer:
    """Stands in for the pool: records every prompt really sent, answers a bound pass."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def __call__(self, settings: Any, *, system: str, user: str, **_: Any) -> PacedOutcome:
        self.sent.append(len(system.encode()) + len(user.encode()))
        binding = binding_in(user)
        assert binding is not None
        sealed = envelope.seal(answer("pass", binding).encode())
        return PacedOutcome(ReviewOutcome(attempts=(), envelope=sealed))


@settings(max_examples=60, deadline=None, print_blob=True)
@given(files, st.integers(400, 6000), st.sampled_from([None, 4000, 2500, 1500]))
def test_what_is_sent_never_exceeds_what_max_cost_approved(
    contents: list[list[str]], max_chunk_bytes: int, window: int | None
) -> None:
    config = _config(max_chunk_bytes, window)
    selected = select_diff(_diff(contents), config)
    sizes = request_bytes(selected.data, config, selected.coverage)
    tokens_in, tokens_out, cost = estimate(selected.data, config, selected.coverage)
    assert cost is not None
    config = dataclasses.replace(config, max_cost=cost)
    reviewer = Reviewer()
    with mock.patch("gate.review.chunked.review_paced", reviewer):
        result = review_diff(
            selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
        )
    # every byte really sent (and the answer allowance of each request) was approved
    assert sum(reviewer.sent) + TOKEN_OVERHEAD * len(reviewer.sent) <= tokens_in
    assert MAX_TOKENS * len(reviewer.sent) <= tokens_out
    # no request was sent whose prompt cannot fit the window
    room = input_window(config) - MAX_TOKENS
    assert all(estimate_tokens(size) <= room for size in reviewer.sent), (reviewer.sent, room)
    if result.chunks and all(estimate_tokens(size) <= room for size in sizes):
        # nothing needed a split: exactly the approved requests were sent
        assert sorted(reviewer.sent) == sorted(sizes)
    if len(reviewer.sent) < len(sizes):
        assert result.decision.state is not State.PASS
