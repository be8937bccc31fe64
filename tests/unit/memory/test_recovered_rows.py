"""A row recovered from the gate's own tagged failure on an earlier head (gate.action.earlier):
it answers exactly the question its tag names, stands, reads back strictly, and is no run."""

from __future__ import annotations

import pytest

from gate.memory import record, standing, stats
from gate.memory.question import QuestionKey
from gate.memory.record import Record, RecordError

KEY = QuestionKey("a" * 64, "1", "b" * 64, "sim-model", "c" * 64)
OTHER = QuestionKey("d" * 64, "1", "b" * 64, "sim-model", "c" * 64)


def row(tag: str, state: str = "fail") -> Record:
    return Record(
        time="2026-12-01T09:00:00+00:00", base_sha="2" * 40, head_sha="1" * 40, diff_sha=None,
        policy_version="", config_sha=None, provider="", model="", prompt_sha=None,
        state=state, status="failure", verdict=None, confidence=None,
        reason="earlier_head_failure", source="cached", fresh=False, certificate_sha=None,
        run_url=None, question_tag=tag,
    )  # fmt: skip


@pytest.mark.parametrize("state", ["fail", "needs_human"])
def test_a_recovered_row_answers_its_tag_only_and_stands(state: str) -> None:
    found = row(KEY.tag_hex, state)
    assert KEY.answered_by(found)
    assert not OTHER.answered_by(found)
    assert standing.stands(found)
    assert standing.decisive([found], KEY) == (found, None)
    assert standing.decisive([found], OTHER) == (None, None)


def test_a_recovered_row_reads_back_and_is_never_dropped() -> None:
    rows = [row(f"{i:016x}") for i in range(20)]
    block = standing.history_block(rows)
    assert record.parse_history(block) == rows
    more = [row(f"{i:016x}") for i in range(record.MAX_RECORDS + 1)]
    with pytest.raises(RecordError):  # a standing row is never evicted: the comment is kept
        standing.history_block(more)


@pytest.mark.parametrize("tag", ["ABCDEF0123456789", "0" * 15, "0" * 17, "g" * 16, ""])
def test_a_malformed_tag_is_refused(tag: str) -> None:
    with pytest.raises(RecordError):
        record.check(row(tag))


def test_a_record_without_a_tag_is_written_as_before() -> None:
    plain = Record(**{**row("0" * 16).__dict__, "question_tag": None})
    assert "question_tag" not in plain.to_json()
    assert record.from_json(plain.to_json()) == plain


def test_a_recovered_row_is_not_a_run() -> None:
    assert stats.run_of_record(row(KEY.tag_hex).to_json()) is None
