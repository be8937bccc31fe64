"""A heartbeat while the reviewer is silent: against the simulator, a stream that stops
sending after some bytes and holds the connection open gets a line at least every
``interval`` seconds of silence, naming the seconds and the bytes so far; a stream that
answers at once gets none. (The command line uses 15 s; the test shortens it.)"""

from __future__ import annotations

import re

import pytest

from gate.lab.sim import ReviewerSimulator, SimResponse
from gate.reviewers import transport
from gate.reviewers.base import open_streams
from gate.reviewers.heartbeat import INTERVAL, Heartbeat


@pytest.mark.parametrize("stall", [True, False])
def test_a_silent_stream_gets_a_line_at_least_every_interval(stall: bool) -> None:
    script = (SimResponse(stall_after=300),) if stall else ()
    lines: list[str] = []
    with ReviewerSimulator("openai", lambda _request: "reviewed. " * 100, script=script) as sim:
        settings = sim.settings(read_timeout=1.5, deadline=2.0, attempts=1, api_key="k")
        with Heartbeat(lines.append, interval=0.3, tick=0.05):
            outcome = transport.review(settings, system="s", user="u", sleep=lambda _s: None)
    assert open_streams() == []  # every stream is forgotten when it ends
    if not stall:
        assert outcome.last is not None
        assert outcome.last.complete
        assert lines == []
        return
    assert outcome.last is not None
    assert not outcome.last.complete
    assert len(lines) >= 2, lines  # 1.5 s of silence at 0.3 s apart
    sizes = set()
    for line in lines:
        found = re.fullmatch(r"waiting for the reviewer: (\d+) s, ([\d,]+) bytes so far", line)
        assert found, line
        sizes.add(int(found.group(2).replace(",", "")))
    assert len(sizes) == 1  # silent: the bytes so far do not move
    assert 0 < sizes.pop() <= 300


def test_the_command_line_waits_15_seconds() -> None:
    assert INTERVAL == 15.0


def test_keep_alive_comments_are_not_the_answer() -> None:
    """llama.cpp's server sends ``: ping`` every 15 s while a long prompt is read: those
    bytes must not keep the heartbeat quiet (issue 33), though they do reach the gate."""
    from gate.lab.sim import render_events, wire_for

    content = "reviewed. " * 100
    wire = wire_for("openai", content)
    first_event = render_events("openai", content)[0]
    # stall right after the first event's HTTP chunk: the pings that follow are chunks too
    stall = wire.index(first_event) + len(first_event) + len(b"\r\n")
    script = (SimResponse(stall_after=stall, ping_every=0.05),)
    lines: list[str] = []
    with ReviewerSimulator("openai", lambda _request: content, script=script) as sim:
        settings = sim.settings(read_timeout=1.5, deadline=1.5, attempts=1, api_key="k")
        with Heartbeat(lines.append, interval=0.3, tick=0.05):
            outcome = transport.review(settings, system="s", user="u", sleep=lambda _s: None)
    assert outcome.last is not None
    assert not outcome.last.complete
    sizes = [
        int(m.group(1).replace(",", ""))
        for m in (re.search(r"([\d,]+) bytes so far", line) for line in lines)
        if m
    ]
    assert len(sizes) >= 2, lines  # 1.5 s without an event, at 0.3 s apart
    assert sizes[-1] > stall - wire.index(b"\r\n\r\n") - 4, "the pings did arrive as bytes"
