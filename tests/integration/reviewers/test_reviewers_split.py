"""Events split across TCP segments at every offset never change the answer.

For each dialect the simulator sends the same healthy response in two TCP
segments (``TCP_NODELAY``, a short pause between them) split at every byte
offset of the whole HTTP response, headers included; every split must give
the same complete, sealed content and the same raw body bytes. A second test
sends every byte as its own segment.
"""

from __future__ import annotations

import hashlib

import pytest

from gate.decide.envelope import verify_text
from gate.lab.sim import DIALECTS, ReviewerSimulator, SimResponse, render_events, wire_for
from gate.reviewers.transport import call_once

# a short answer keeps the walk bounded (a few hundred offsets per dialect) while it
# still spans several events, a multi-byte character and the end marker
ANSWER = 'ok é\n```json\n{"v": 1}\n```'
PIECE = 9


@pytest.mark.timeout(240)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_split_at_every_offset(dialect: str) -> None:
    shape = SimResponse(piece_size=PIECE)
    wire = wire_for(dialect, ANSWER, shape)
    body = b"".join(render_events(dialect, ANSWER, shape))
    expected_sha = hashlib.sha256(body).hexdigest()
    offsets = range(1, len(wire))
    assert len(wire) < 3000  # bounded walk
    script = [SimResponse(piece_size=PIECE, split_at=(k,), pause=0.002) for k in offsets]
    failures: list[tuple[int, str]] = []
    with ReviewerSimulator(dialect, lambda _r: ANSWER, script=script) as sim:
        settings = sim.settings(attempts=1, deadline=10.0)
        for k in offsets:
            reply = call_once(settings, system="s", user="u")
            ok = (
                reply.complete
                and reply.envelope is not None
                and verify_text(reply.envelope) == ANSWER
                and reply.raw_sha256 == expected_sha
            )
            if not ok:
                failures.append((k, reply.reason or "content differs"))
        assert sim.count == len(offsets)
    assert failures == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_byte_its_own_segment(dialect: str) -> None:
    shape = SimResponse(piece_size=PIECE, segment_size=1, pause=0.0005, chunk_size=3)
    with ReviewerSimulator(dialect, lambda _r: ANSWER, script=[shape]) as sim:
        reply = call_once(sim.settings(attempts=1), system="s", user="u")
    assert reply.complete, reply.detail
    assert reply.envelope is not None
    assert verify_text(reply.envelope) == ANSWER
    assert reply.raw == b"".join(render_events(dialect, ANSWER, shape))
