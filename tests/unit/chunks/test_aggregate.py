"""The chunk table (gate/decide/chunk_table.py), against a model of the table written out plainly.

Hypothesis draws lists of per-chunk decisions (each state and status, some missing) and
checks the one result the issue's table allows; a pass needs every chunk's pass.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.chunk_table import aggregate
from gate.decide.decision import Binding, Decision, State, Status
from gate.decide.verdict import Verdict

BINDING = Binding("a" * 64, "1")


def _decision(state: State, status: Status, n: int, confidence: float) -> Decision:
    verdict = None
    if state in (State.PASS, State.FAIL):
        verdict = Verdict(
            "pass" if state is State.PASS else "fail",
            (f"reason {n}",),
            confidence,
            f"{n:064x}",
            "1",
        )
    return Decision(state, status, f"r{n}", f"{state}: d{n}", f"detail {n}", verdict)


_ROWS = {
    State.PASS: Status.SUCCESS,
    State.FAIL: Status.FAILURE,
    State.NEEDS_HUMAN: Status.ERROR,
    State.INCOMPLETE: Status.ERROR,
}


@st.composite
def rows(draw: st.DrawFn) -> list[tuple[str, Decision | None]]:
    count = draw(st.integers(min_value=1, max_value=8))
    out: list[tuple[str, Decision | None]] = []
    for n in range(count):
        if draw(st.integers(0, 9)) == 0:
            out.append((str(n + 1), None))
            continue
        state = draw(st.sampled_from(list(_ROWS)))
        status = draw(st.sampled_from([_ROWS[state], Status.FAILURE, Status.ERROR]))
        confidence = draw(st.floats(min_value=0, max_value=1))
        out.append((str(n + 1), _decision(state, status, n, confidence)))
    return out


@settings(max_examples=400, deadline=None)
@given(rows())
def test_the_table(chunks: list[tuple[str, Decision | None]]) -> None:
    got = aggregate(chunks, binding=BINDING)
    present = [d for _, d in chunks if d is not None]
    if len(chunks) == 1 and present:
        assert got is present[0]
        return
    fails = [d for d in present if d.state is State.FAIL]
    if fails:
        assert (got.state, got.status, got.reason) == (State.FAIL, Status.FAILURE, fails[0].reason)
        assert all(d.detail in got.detail for d in fails)
        return
    humans = [d for d in present if d.state is State.NEEDS_HUMAN]
    if humans:  # decided by an answer: an outage or a missing chunk beside it never hides it
        assert (got.state, got.reason) == (State.NEEDS_HUMAN, humans[0].reason)
        return
    if len(present) < len(chunks):
        assert (got.state, got.reason) == (State.INCOMPLETE, "missing_chunk")
        return
    if any(d.state is State.INCOMPLETE for d in present):
        first = next(d for d in present if d.state is State.INCOMPLETE)
        assert (got.state, got.status, got.reason) == (State.INCOMPLETE, Status.ERROR, first.reason)
        return
    passes = [d for d in present if d.state is State.PASS and d.status is Status.SUCCESS]
    if len(passes) < len(present):
        assert got.state is State.NEEDS_HUMAN
        assert got.status is not Status.SUCCESS
        return
    assert (got.state, got.status) == (State.PASS, Status.SUCCESS)
    assert got.verdict is not None
    assert got.verdict.confidence == min(d.verdict.confidence for d in passes if d.verdict)
    assert len(got.verdict.reasons) == len(passes)
    assert got.verdict.diff_sha == BINDING.diff_sha


def test_an_empty_plan_is_never_a_pass() -> None:
    assert aggregate([], binding=BINDING).state is State.INCOMPLETE


def test_a_missing_chunk_is_never_a_pass() -> None:
    ok = _decision(State.PASS, Status.SUCCESS, 1, 0.9)
    assert aggregate([("1", ok), ("2", None)], binding=BINDING).reason == "missing_chunk"
    assert aggregate([("1", None)], binding=BINDING).state is State.INCOMPLETE
