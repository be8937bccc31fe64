"""Class: a chunk dropped from the table when a chunk record is decided again.

Cause: ``gate.review.chunked.redecide`` (``review-gate verify --from-certificate --diff``)
re-cuts the diff and decides each recorded chunk's envelope; a chunk the record marks
``split`` is replaced by its halves. When the record marked a chunk ``split`` that cannot
be halved (one hunk), or named as split a chunk the plan does not have, the chunk was
left out of the table altogether: neither decided nor counted missing, so the other
chunks' passes passed the record.

Fix: a ``split`` chunk without halves (or unknown to the plan) is a missing chunk
(``None`` row), which the table never passes.

Variants: for every chunk of a plan whose chunks are one hunk each, the record with that
chunk marked split (its review kept, or removed), and records naming an unknown chunk as
split; plus the untouched record, which passes.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from typing import Any

import pytest

from gate.decide import envelope
from gate.decide.decision import Binding, State
from gate.diff import select, split_diff
from gate.lab.demo import answer
from gate.review.chunked import redecide
from gate.review.chunks import plan
from tests.adversarial.test_chunk_binding import _diff

DIFF = _diff(4)
POLICY = "v1"
SECTION = max(len(s.data) for s in split_diff(DIFF))


def _record() -> dict[str, Any]:
    selected = select(split_diff(DIFF))
    cut = plan(selected.data, selected.coverage, max_chunk_bytes=SECTION)
    assert len(cut.chunks) == 4
    assert all(len(c.pieces) == 1 for c in cut.chunks)
    reviews = []
    for chunk in cut.chunks:
        sealed = envelope.seal(answer("pass", Binding(chunk.sha, POLICY)).encode())
        reviews.append(
            {
                "chunk": chunk.name,
                "diff_sha": chunk.sha,
                "split": False,
                "envelope": {
                    "sha256": hashlib.sha256(sealed).hexdigest(),
                    "length": len(sealed),
                    "base64": base64.b64encode(sealed).decode(),
                },
            }
        )
    return {"max_chunk_bytes": SECTION, "reviews": reviews, "manifest": cut.manifest()}


RECORD = _record()
COVERAGE = select(split_diff(DIFF)).coverage.to_json()


def _variants() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for index in range(len(RECORD["reviews"])):
        name = RECORD["reviews"][index]["chunk"]
        marked = copy.deepcopy(RECORD)
        marked["reviews"][index] = {"chunk": name, "split": True}
        out.append((f"chunk {name} marked split", marked))
        first = copy.deepcopy(marked)
        first["reviews"].insert(0, first["reviews"].pop(index))
        out.append((f"chunk {name} marked split, listed first", first))
        both = copy.deepcopy(RECORD)
        both["reviews"].append({"chunk": name, "split": True})
        out.append((f"chunk {name} reviewed and marked split", both))
    for name in ("9", "1.1", "0", "x", "1.", "", "-1", "1e3"):
        unknown = copy.deepcopy(RECORD)
        unknown["reviews"].append({"chunk": name, "split": True})
        out.append((f"unknown chunk {name} split", unknown))
    return out


VARIANTS = _variants()


def _decide(record: dict[str, Any]) -> State:
    return redecide(
        record, DIFF, policy_version=POLICY, min_confidence=0.5, coverage=COVERAGE
    ).state


def test_the_untouched_record_passes() -> None:
    assert _decide(RECORD) is State.PASS


@pytest.mark.parametrize(("name", "record"), VARIANTS, ids=[n for n, _ in VARIANTS])
def test_a_split_without_halves_is_missing(name: str, record: dict[str, Any]) -> None:
    assert _decide(record) is State.INCOMPLETE, name
