"""The gate's mark (gate/action/github/mark.py): written to fit, read back exactly, never
read from words."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.action.github import mark
from gate.action.github.mark import KINDS, SHADOW_KINDS, Mark
from gate.decide.decision import MAX_DESCRIPTION

tags = st.none() | st.text(alphabet="0123456789abcdef", min_size=16, max_size=16)
marks = st.builds(Mark, st.sampled_from(KINDS), tags, st.integers(1, 1000))


@settings(max_examples=300)
@given(words=st.text(max_size=400), marked=marks)
def test_a_stamped_description_fits_and_reads_back(words: str, marked: Mark) -> None:
    text = mark.stamp(words, marked, limit=MAX_DESCRIPTION)
    assert len(text) <= MAX_DESCRIPTION
    assert mark.of_status(text) == marked
    assert mark.plain(text) == text[: text.rindex(" [rg:")]


@given(marked=marks, status=st.sampled_from(["success", "failure", "error", "neutral"]))
def test_a_check_runs_external_id_reads_back(marked: Mark, status: str) -> None:
    """A shadow kind reads back only as ``neutral``, and ``neutral`` only with one: a
    check run that says a shadow's words under a decision's conclusion is nobody's."""
    found = mark.of_check(mark.check_external_id(status, marked))
    if (status == "neutral") == (marked.kind in SHADOW_KINDS):
        assert found == (status, Mark(marked.kind, marked.tag))
    else:
        assert found is None


@given(marked=st.builds(Mark, st.sampled_from(SHADOW_KINDS), tags, st.integers(1, 1000)))
def test_a_shadow_mark_decides_nothing(marked: Mark) -> None:
    """What a ``mode: shadow`` run posts reads back as its own kind, which no reader takes
    for a pass (:func:`gate.action.earlier.decisive`) or a block."""
    from gate.action.earlier import decisive

    text = mark.stamp("would pass: pass: looks right", marked, limit=MAX_DESCRIPTION)
    read = mark.of_status(text)
    assert read == marked
    assert not read.decides_pass
    assert not decisive("success", read.kind)
    assert mark.kind_for("success", "pass", "") not in SHADOW_KINDS


@given(
    words=st.sampled_from(
        ["overridden by @alice", "superseded by 1234567: pass: confidence 0.9", "pass (kept)"]
    )
)
def test_words_are_never_a_kind(words: str) -> None:
    assert mark.of_status(words).kind is None
    assert not mark.of_status(words).decides_pass
    superseded = mark.stamp("superseded by 1234567: overridden by @bob", Mark("override", None, 3),
                            limit=MAX_DESCRIPTION)  # fmt: skip
    assert mark.of_status(superseded).kind == "override"


def test_an_older_gates_failure_tag_is_still_read() -> None:
    older = mark.of_status("rejected: fail: eval [q:0123456789abcdef]")
    assert (older.kind, older.tag, older.count) == (None, "0123456789abcdef", None)
    assert mark.of_check("review-gate:failure:q:0123456789abcdef") == (
        "failure",
        Mark(None, "0123456789abcdef"),
    )
    assert mark.of_check("review-gate:success") == ("success", Mark(None, None))
    assert mark.of_check("another-tool:success") is None


def test_kinds_follow_the_decision() -> None:
    assert mark.kind_for("success", "pass", "override") == "override"
    assert mark.kind_for("success", "pass", "cached_pass") == "pass"
    assert mark.kind_for("failure", "fail", "reviewer_fail") == "fail"
    assert mark.kind_for("error", "needs_human", "no_fence") == "needs_human"
    assert mark.kind_for("pending", "skipped", "draft") == "skipped"
    assert mark.kind_for("error", "", "") == "incomplete"
