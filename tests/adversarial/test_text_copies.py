"""Class: text copies that disagree. A stream that repeats its text must repeat it exactly.

Cause: the OpenAI Responses stream carries the model's text five times: as
``response.output_text.delta`` events, then whole in ``output_text.done``,
``content_part.done``, ``output_item.done`` and the terminal event's
``response.output`` (from which the official SDK builds its final response).
The reader sealed the deltas and ignored the copies, so a byte flipped inside a
copy (found by ``review-gate demo --provider openai-responses``: the flip-sha
case passed) left a sealed answer that differs from what a client reading the
final response shows.

Fix: :mod:`gate.reviewers.openai_responses` keeps the deltas per item and
content part and requires every whole copy to equal them; any difference is
``malformed_event`` (final, never sealed).

Variants: every character of every copy changed in turn (a flipped bit), every
copy dropped to empty, one delta dropped, each through a real socket and the
whole transport, plus the unchanged stream, which must still be sealed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gate.lab.sim import ReviewerSimulator, SimResponse, render_events
from gate.reviewers.transport import review

pytestmark = pytest.mark.timeout(120)

TEXT = "ok: a1b2"
COPIES = (
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
)


def healthy() -> list[bytes]:
    return render_events("openai-responses", TEXT, SimResponse(piece_size=3))


def _kind(event: bytes) -> str:
    return event.split(b"\n", 1)[0].removeprefix(b"event: ").decode()


def _data(event: bytes) -> dict[str, object]:
    value = json.loads(event.split(b"\ndata: ", 1)[1])
    assert isinstance(value, dict)
    return value


def _event(kind: str, data: object) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def variants() -> Iterator[tuple[str, bytes]]:
    events = healthy()
    for index, event in enumerate(events):
        kind = _kind(event)
        if kind not in COPIES:
            continue
        raw = json.dumps(_data(event))
        needle = json.dumps(TEXT)
        at = raw.index(needle) + 1  # the text inside its quotes
        for offset in range(len(TEXT)):
            changed = raw[: at + offset] + chr(ord(raw[at + offset]) ^ 1) + raw[at + offset + 1 :]
            body = [*events[:index], _event(kind, json.loads(changed)), *events[index + 1 :]]
            yield f"{kind}-char{offset}", b"".join(body)
        emptied = raw.replace(needle, '""', 1)
        body = [*events[:index], _event(kind, json.loads(emptied)), *events[index + 1 :]]
        yield f"{kind}-emptied", b"".join(body)
    deltas = [i for i, e in enumerate(events) if _kind(e) == "response.output_text.delta"]
    for index in deltas:
        yield f"delta{index}-dropped", b"".join(events[:index] + events[index + 1 :])


VARIANTS = list(variants())


def test_every_copy_that_differs_is_refused() -> None:
    assert len(VARIANTS) == len(COPIES) * (len(TEXT) + 1) + 3
    with ReviewerSimulator("openai-responses") as sim:
        for _label, body in VARIANTS:
            sim.queue(SimResponse(body=body))
        outcomes = [
            review(sim.settings(attempts=1), system="S", user="U") for _ in range(len(VARIANTS))
        ]
    wrong = [
        (label, outcome.last.reason if outcome.last else None)
        for (label, _), outcome in zip(VARIANTS, outcomes, strict=True)
        if outcome.envelope is not None
        or outcome.last is None
        or outcome.last.reason != "malformed_event"
    ]
    assert wrong == [], f"{len(wrong)} of {len(VARIANTS)}: {wrong[:6]}"


def test_the_unchanged_stream_is_still_sealed() -> None:
    with ReviewerSimulator("openai-responses") as sim:
        sim.queue(SimResponse(body=b"".join(healthy())))
        outcome = review(sim.settings(attempts=1), system="S", user="U")
    assert outcome.envelope is not None, outcome.last
