"""Class: a replay that compares one digest for a question asked in many chunks.

Cause: a certificate of a review in chunks records chunk 1's prompt digest as its
``inputs.prompt``; ``replay`` compared it with the prompt of the whole diff in one request,
so a chunked certificate was never replayable, and the hint blamed ``--config``
(instructions) whatever differed.

Fix (:func:`gate.memory.replay.chunk_prompts_differ`): a chunked record is planned again
(the run's selection and its halvings) and compared chunk by chunk, each recorded chunk's
prompt digest against the re-planned chunk's; the hint names what differs (the plan, or
a chunk's prompt).

Variants: 2 to 6 chunks, with and without files the selection left out (listed in every
chunk's prompt); the same config replays ``stable``; other instructions or another chunk
size are ``unreplayable`` with the matching hint.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from unittest import mock

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide import envelope
from gate.decide.attempt import ReviewOutcome
from gate.lab.demo import answer
from gate.memory.replay import Outcome, from_certificate, replay_one
from gate.review import certificate
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from gate.review.scope import select_diff
from gate.reviewers.pool import PacedOutcome


def _diff(files: int, vendored: bool) -> bytes:
    out = ""
    names = [f"src/m{i}.py" for i in range(files)] + (["vendor/lib.py"] if vendored else [])
    for name in names:
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1 +1,30 @@\n-old\n"
        out += "".join(f"+value_{j} = {j}  # {name}\n" for j in range(30))
    return out.encode()


def _respond(settings: Any, *, system: str, user: str, **_: Any) -> PacedOutcome:
    binding = binding_in(user)
    assert binding is not None
    sealed = envelope.seal(answer("pass", binding).encode())
    return PacedOutcome(ReviewOutcome(attempts=(), envelope=sealed))


@pytest.mark.parametrize("files", [4, 8, 12])
@pytest.mark.parametrize("vendored", [False, True])
def test_a_chunked_certificate_replays_chunk_by_chunk(files: int, vendored: bool) -> None:
    reviewer = ReviewerConfig(provider="openai", model="m", base_url="http://127.0.0.1:9")
    config = Config(
        reviewer=reviewer, max_chunk_bytes=2500, concurrency=1,
        exclude=("vendor/**",), min_confidence=0.5,
    )  # fmt: skip
    diff = _diff(files, vendored)
    selected = select_diff(diff, config)
    with mock.patch("gate.review.chunked.review_paced", _respond):
        result = review_diff(
            selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
        )
        assert len(result.chunks) >= 2
        recorded = from_certificate(certificate.dumps(result.certificate), "cert.json")
        row = replay_one(recorded, diff, config, api_key="k", sleep=lambda _s: None)
        assert row.outcome is Outcome.STABLE, row
        other = dataclasses.replace(config, instructions="Reject every change.")
        row = replay_one(recorded, diff, other, api_key="k", sleep=lambda _s: None)
        assert row.outcome is Outcome.UNREPLAYABLE
        assert "chunk 1's prompt differs" in row.note, row.note
        smaller = dataclasses.replace(config, max_chunk_bytes=1200)
        row = replay_one(recorded, diff, smaller, api_key="k", sleep=lambda _s: None)
        assert row.outcome is Outcome.UNREPLAYABLE
        assert "max_chunk_bytes" in row.note, row.note
