"""The question ledger's entries (gate/memory/ledger.py): read strictly, never guessed."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gate.errors import LedgerError
from gate.memory.ledger import (
    MAX_ENTRY_BYTES,
    check_root,
    check_shard,
    entry_for,
    name_of,
    parse,
    shard_of,
    supersedes,
)
from gate.memory.question import QuestionKey
from gate.memory.record import Record

KEY = QuestionKey("a" * 64, "strict", "c" * 64, "sim-model", "d" * 64, fallback_models=("fb",))
FAIL = Record(
    time="2026-01-01T00:00:00+00:00", base_sha="2" * 40, head_sha="1" * 40,
    diff_sha=KEY.diff_sha, policy_version="strict", config_sha=KEY.config_sha,
    provider="openai", model="sim-model", prompt_sha=KEY.prompt_sha, state="fail",
    status="failure", verdict="fail", confidence=0.9, reason="model_fail", source="model",
    fresh=False, certificate_sha="e" * 64, run_url="https://example/run/1", answers="fail=1",
)  # fmt: skip
PASS = replace(FAIL, state="pass", status="success", verdict="pass", reason="pass", answers=None)
MALFORMED = replace(FAIL, state="needs_human", status="error", verdict=None, reason="no_fence")


def _doc(**change: object) -> bytes:
    doc = json.loads(entry_for(KEY, FAIL).encode())
    doc.update(change)
    return json.dumps(doc).encode()


def test_an_entry_reads_back_as_itself() -> None:
    entry = entry_for(KEY, FAIL)
    assert parse(entry.encode(), KEY) == entry
    assert entry.family == "rejected"
    by_fallback = replace(FAIL, model="fb")  # a fallback's answer is the same question
    assert parse(entry_for(KEY, by_fallback).encode(), KEY).record == by_fallback


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b"[]",
        _doc(extra=1),
        _doc(schema="review-gate.ledger/2"),
        _doc(key="b" * 64),
        _doc(family="pass"),
        _doc(record={**FAIL.to_json(), "state": "maybe"}),
        _doc(record={**FAIL.to_json(), "diff_sha": "f" * 64}),  # another question's record
        _doc(record={**FAIL.to_json(), "model": "someone-else"}),
        _doc(record={**FAIL.to_json(), "question_tag": "0" * 16}),
        b'{"schema":"review-gate.ledger/1","schema":"x"}',
        b" " * (MAX_ENTRY_BYTES + 1),
    ],
)
def test_an_entry_that_is_not_exactly_the_gates_is_refused(data: bytes) -> None:
    with pytest.raises(LedgerError):
        parse(data, KEY)


def test_the_tree_is_the_gates_shape_or_refused() -> None:
    shard = shard_of(KEY.id)
    check_root([(shard, "040000", "tree")], truncated=False)
    check_shard(shard, [(name_of(KEY.id), "100644", "blob")], truncated=False)
    for bad in (
        [("README.md", "100644", "blob")],
        [(shard, "100644", "blob")],
        [("abc", "040000", "tree")],
        [(shard, "160000", "commit")],
    ):
        with pytest.raises(LedgerError):
            check_root(bad, truncated=False)
    with pytest.raises(LedgerError):
        check_root([(shard, "040000", "tree")], truncated=True)
    other = "f" * 64 if not KEY.id.startswith("f") else "0" * 64
    for bad in (
        [(f"{other}.json", "100644", "blob")],  # a name of another folder
        [(name_of(KEY.id), "100755", "blob")],
        [(name_of(KEY.id), "040000", "tree")],
        [(KEY.id, "100644", "blob")],
    ):
        with pytest.raises(LedgerError):
            check_shard(shard, bad, truncated=False)


def test_a_block_gives_way_only_to_a_writers_fresh_review() -> None:
    block, passed = entry_for(KEY, FAIL), entry_for(KEY, PASS)
    assert supersedes(FAIL, None)
    assert supersedes(PASS, None)
    assert supersedes(MALFORMED, passed)  # an answer-derived block over a pass
    assert supersedes(FAIL, passed)
    assert not supersedes(PASS, block)
    assert not supersedes(FAIL, block)  # what it shows: no write
    assert not supersedes(PASS, passed)
    assert supersedes(replace(PASS, fresh=True), block)
    outage = replace(FAIL, state="incomplete", status="error", verdict=None, answers=None,
                     reason="unreachable", source="gate")  # fmt: skip
    assert not supersedes(outage, None)  # an outage decides nothing about the question
