"""Class: chunk boundaries and chunk binding (a large pull request reviewed in chunks).

Cause. Once a diff is reviewed in several requests, two new holes open. (1) Binding: a
verdict is checked against a digest, and with many chunks there are many valid digests
in play (every chunk's, the whole diff's, the manifest's); an answer carrying any digest
but its own chunk's (a neighbour's, the whole diff's, two chunks swapped) would let one
chunk's pass stand for bytes that reviewer never judged. (2) Boundaries: a cut in the
wrong place (inside a hunk, or between a header and its hunks) shows the reviewer a chunk
that parses as other files than it holds, e.g. an added line ``+diff --git a/x b/x``
landing at the start of a chunk would read as a file header.

Fix. Each chunk's prompt carries the SHA-256 of exactly its bytes, and each answer is
decided against that digest only (:mod:`gate.review.chunked`), so any other digest is
``diff_sha_mismatch`` (needs_human) and the table (:mod:`gate.decide.chunk_table`) never passes;
the chunker (:mod:`gate.review.chunks`) cuts only at section or hunk boundaries counted as
``split_diff`` counts them, and repeats the header, so every chunk parses as exactly the
files (and parts) it holds.

Variants: every (chunk, wrong digest) pair over the digests in play, plus swapped answers,
through the simulator (real sockets); and Hypothesis diffs whose content imitates headers.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import Binding, State
from gate.diff import select, split_diff
from gate.lab.demo import answer, request_text
from gate.lab.sim import ReviewerSimulator
from gate.review.chunks import Plan, plan
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from gate.review.scope import select_diff

MAX_CHUNK = 1024


def _diff(files: int = 5) -> bytes:
    out = b""
    for i in range(files):
        name = f"pkg/mod{i}.py"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
        out += b"@@ -1 +1,20 @@\n-old\n"
        out += b"".join(f"+def f{j}(): return {i} + {j}\n".encode() for j in range(20))
    return out


DIFF = _diff()


def _plan() -> Plan:
    selected = select_diff(DIFF, Config(max_chunk_bytes=MAX_CHUNK))
    return plan(selected.data, selected.coverage, max_chunk_bytes=MAX_CHUNK)


def _wrong_digests(chunks: Plan, index: int) -> list[tuple[str, str]]:
    """Every digest in play that is not chunk ``index``'s own, with a name."""
    own = chunks.chunks[index]
    out = [(f"chunk {j + 1}", c.sha) for j, c in enumerate(chunks.chunks) if j != index]
    out.append(("whole diff", hashlib.sha256(DIFF).hexdigest()))
    out.append(("manifest", chunks.manifest()["sha256"]))
    flipped = own.sha[:-1] + ("0" if own.sha[-1] != "0" else "1")
    out.append(("one nibble flipped", flipped))
    if index + 1 < len(chunks.chunks):
        joined = own.data + chunks.chunks[index + 1].data
        out.append(("with the next chunk", hashlib.sha256(joined).hexdigest()))
    bodies = b"".join(p.body for p in own.pieces)
    if bodies != own.data:
        out.append(("without repeated headers", hashlib.sha256(bodies).hexdigest()))
    return out


PLAN = _plan()
VARIANTS = [
    (index, name, digest)
    for index in range(len(PLAN.chunks))
    for name, digest in _wrong_digests(PLAN, index)
]


def _config(sim: ReviewerSimulator) -> Config:
    reviewer = ReviewerConfig(provider="openai", model="sim-model", base_url=sim.base_url)
    return Config(reviewer=reviewer, max_chunk_bytes=MAX_CHUNK, concurrency=4)


def _run(sim: ReviewerSimulator) -> Any:
    config = _config(sim)
    selected = select_diff(DIFF, config)
    return review_diff(
        selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
    )


def test_the_plan_has_several_chunks() -> None:
    assert len(PLAN.chunks) >= 3
    assert len(VARIANTS) >= 20


@pytest.mark.parametrize(("index", "name", "digest"), VARIANTS)
def test_an_answer_bound_to_another_digest_never_passes(
    sim_factory: Callable[..., ReviewerSimulator], index: int, name: str, digest: str
) -> None:
    target = PLAN.chunks[index].sha

    def responder(body: dict[str, Any]) -> str:
        binding = binding_in(request_text(body))
        assert binding is not None
        if binding.diff_sha == target:
            return answer("pass", Binding(digest, binding.policy_version))
        return answer("pass", binding)

    result = _run(sim_factory(responder))
    assert result.decision.state is State.NEEDS_HUMAN, name
    assert result.decision.reason == "diff_sha_mismatch"
    assert result.chunks[index].state == "needs_human"


@pytest.mark.parametrize(
    ("first", "second"), list(itertools.combinations(range(len(PLAN.chunks)), 2))
)
def test_swapped_answers_never_pass(
    sim_factory: Callable[..., ReviewerSimulator], first: int, second: int
) -> None:
    shas = [c.sha for c in PLAN.chunks]
    swap = {shas[first]: shas[second], shas[second]: shas[first]}

    def responder(body: dict[str, Any]) -> str:
        binding = binding_in(request_text(body))
        assert binding is not None
        sha = swap.get(binding.diff_sha, binding.diff_sha)
        return answer("pass", Binding(sha, binding.policy_version))

    result = _run(sim_factory(responder))
    assert result.decision.state is State.NEEDS_HUMAN
    assert {result.chunks[first].state, result.chunks[second].state} == {"needs_human"}


_TRICKY = st.sampled_from(
    [
        "diff --git a/evil b/evil",
        "@@ -1,3 +1,3 @@",
        "--- a/evil",
        "+++ b/evil",
        "new file mode 100644",
        "x = 1",
        "",
    ]
)


@st.composite
def _tricky_diff(draw: st.DrawFn) -> bytes:
    out = b""
    for i in range(draw(st.integers(min_value=1, max_value=5))):
        name = f"f{i}.txt"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
        for h in range(draw(st.integers(min_value=1, max_value=5))):
            lines = draw(st.lists(st.tuples(st.sampled_from("+- "), _TRICKY), min_size=1))
            old = sum(1 for k, _ in lines if k in "- ")
            new = sum(1 for k, _ in lines if k in "+ ")
            out += f"@@ -{h * 50 + 1},{old} +{h * 50 + 1},{new} @@\n".encode()
            out += "".join(f"{k}{t}\n" for k, t in lines).encode()
    return out


@settings(max_examples=150, deadline=None)
@given(_tricky_diff(), st.integers(min_value=60, max_value=600))
def test_every_chunk_parses_as_exactly_its_pieces(data: bytes, max_bytes: int) -> None:
    selected = select(split_diff(data), max_bytes=10**9)
    result = plan(selected.data, selected.coverage, max_chunk_bytes=max_bytes)
    for chunk in result.chunks:
        parsed = split_diff(chunk.data)
        assert [s.path for s in parsed] == [p.path for p in chunk.pieces]
        assert [s.data for s in parsed] == [p.data for p in chunk.pieces]
