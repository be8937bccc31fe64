"""gate.memory.record: the record format, written once and read back strictly, checked against
gate/schemas/record.schema.json (jsonschema is the oracle for the documented format)."""

from __future__ import annotations

import base64
import json
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError, validators

from gate.config.schema import schema_regex
from gate.memory import record, standing
from gate.memory.question import key_of_record
from gate.memory.record import Record, RecordError

HEX = st.text("0123456789abcdef", min_size=64, max_size=64)
SHA = st.text("0123456789abcdef", min_size=40, max_size=40)
TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30)


def schema() -> dict[str, Any]:
    text = resources.files("gate").joinpath("schemas/record.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _pattern(validator: Any, pattern: str, instance: Any, _schema: Any) -> Any:
    # JSON Schema patterns are ECMA-262: "$" is the very end (gate.config.schema.schema_regex)
    if validator.is_type(instance, "string") and not schema_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


ECMA = validators.extend(Draft202012Validator, {"pattern": _pattern})


records = st.builds(
    Record,
    time=st.just("2026-12-01T09:00:00+00:00"),
    base_sha=SHA,
    head_sha=SHA,
    diff_sha=st.none() | HEX,
    policy_version=TEXT,
    config_sha=st.none() | HEX,
    provider=TEXT,
    model=TEXT,
    prompt_sha=st.none() | HEX,
    state=st.sampled_from(record.STATES),
    status=st.sampled_from(record.STATUSES),
    verdict=st.sampled_from(["pass", "fail", None]),
    confidence=st.none() | st.floats(0, 1),
    reason=TEXT,
    source=st.sampled_from(record.SOURCES),
    fresh=st.booleans(),
    certificate_sha=st.none() | HEX,
    run_url=st.none() | TEXT,
    chunks_sha=st.none() | HEX,
    answers=st.none() | st.sampled_from(["pass=1", "pass=2,fail=1", "fail=3", "incomplete=1"]),
    question_tag=st.none() | st.text("0123456789abcdef", min_size=16, max_size=16),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(records, max_size=record.MAX_RECORDS + 5))
def test_the_history_block_reads_back_and_matches_the_schema(recs: list[Record]) -> None:
    try:
        block = standing.history_block(recs)
    except RecordError:
        # only when the standing blocks alone do not fit: nothing decisive is dropped
        kept = [r for r in standing.compact(recs) if standing.stands(r)]
        with pytest.raises(RecordError):
            record.encode_block(kept)
        return
    assert len(block) <= record.MAX_BLOCK_CHARS
    assert "--" not in block[4:-3]  # nothing closes the HTML comment early
    back = record.parse_history(f"text before\n{block}\ntext after")
    rest = iter(recs)
    assert all(any(r is x or r == x for x in rest) for r in back)  # a subsequence, in order
    for rec in recs:  # every question's standing block survives
        key = key_of_record(rec)
        if key is not None and standing.decisive(recs, key)[0] is not None:
            assert standing.decisive(back, key)[0] == standing.decisive(recs, key)[0]
    raw = base64.b64decode(block.split()[2])
    assert list(ECMA(schema()).iter_errors(json.loads(raw))) == []


def _block(doc: Any) -> str:
    raw = json.dumps(doc).encode() if not isinstance(doc, bytes) else doc
    return f"<!-- review-gate:history {base64.b64encode(raw).decode()} -->"


GOOD = Record(
    time="2026-12-01T09:00:00+00:00", base_sha="2" * 40, head_sha="1" * 40, diff_sha="a" * 64,
    policy_version="1", config_sha="b" * 64, provider="openai", model="m", prompt_sha="c" * 64,
    state="fail", status="failure", verdict="fail", confidence=0.9, reason="reviewer_fail",
    source="model", fresh=False, certificate_sha=None, run_url=None,
)  # fmt: skip


def _mutations() -> list[tuple[str, Any]]:
    good = GOOD.to_json()
    return [
        ("unknown key", {**good, "extra": 1}),
        ("missing key", {k: v for k, v in good.items() if k != "source"}),
        ("bad source", {**good, "source": "human"}),
        ("bad state", {**good, "state": "PASS"}),
        ("short sha", {**good, "diff_sha": "a" * 63}),
        ("upper hex", {**good, "diff_sha": "A" * 64}),
        ("newline in sha", {**good, "diff_sha": "a" * 64 + "\n"}),
        ("confidence > 1", {**good, "confidence": 1.5}),
        ("confidence bool", {**good, "confidence": True}),
        ("fresh as string", {**good, "fresh": "false"}),
        ("control char", {**good, "reason": "a\x07b"}),
        ("too long", {**good, "model": "m" * 201}),
        ("wrong schema", {**good, "schema": "review-gate.record/2"}),
        ("null state", {**good, "state": None}),
    ]


@pytest.mark.parametrize(("name", "row"), _mutations(), ids=[m[0] for m in _mutations()])
def test_a_malformed_record_is_refused_by_both_the_parser_and_the_schema(name, row) -> None:
    doc = {"schema": record.HISTORY_SCHEMA, "records": [row]}
    with pytest.raises(RecordError):
        record.parse_history(_block(doc))
    assert list(ECMA(schema()).iter_errors(doc)), name


@pytest.mark.parametrize(
    "raw",
    [
        b'{"schema": "review-gate.history/1", "records": [], "records": []}',  # duplicate
        b'{"schema": "review-gate.history/1", "records": [NaN]}',
        b"\xff\xfe",
        b"[]",
        b'{"schema": "review-gate.history/1", "records": {}}',
    ],
)
def test_a_malformed_block_is_refused(raw: bytes) -> None:
    with pytest.raises(RecordError):
        record.parse_history(_block(raw))


def test_two_blocks_are_refused_and_none_is_no_history() -> None:
    block = record.encode_block([GOOD])
    with pytest.raises(RecordError):
        record.parse_history(block + block)
    assert record.parse_history("no block here") == []
    assert record.strip_history(f"visible\n\n{block}\n") == "visible"
