"""The SSE parser: WHATWG line rules, and the same events for any chunking."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.errors import TransportError
from gate.reviewers.sse import SSEEvent, SSEParser

STREAM = (
    b"\xef\xbb\xbf: a comment\n"
    b"event: message_start\r\n"
    b'data: {"a": 1}\r\n'
    b"\r\n"
    b"data:no space\rdata:  two spaces\r\r"
    b"id: 7\n"
    b"event: x\n"
    b"data\n"
    b"\n"
    b"event: only-event\n\n"
    b"data: caf\xc3\xa9\n\n"
)
EXPECTED = [
    SSEEvent(event="message_start", data='{"a": 1}'),
    SSEEvent(event="", data="no space\n two spaces"),  # unnamed stays unnamed
    SSEEvent(event="x", data="", id="7"),
    SSEEvent(event="only-event", data=None, id="7"),  # a named event without data is dispatched
    SSEEvent(event="", data="café", id="7"),
]


def feed_all(chunks: list[bytes]) -> tuple[list[SSEEvent], SSEParser]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events, parser


def test_whole_stream() -> None:
    events, parser = feed_all([STREAM])
    assert events == EXPECTED
    assert parser.comments == 1
    assert not parser.pending


def test_every_single_split_gives_the_same_events() -> None:
    for cut in range(len(STREAM) + 1):
        events, parser = feed_all([STREAM[:cut], STREAM[cut:]])
        assert events == EXPECTED, cut
        assert not parser.pending


def test_byte_at_a_time() -> None:
    events, _ = feed_all([bytes([b]) for b in STREAM])
    assert events == EXPECTED


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    events, _ = feed_all(chunks)
    assert events == EXPECTED


def test_crlf_split_between_cr_and_lf_is_one_line_end() -> None:
    events, _ = feed_all([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"])
    assert [e.data for e in events] == ["a", "b"]


def test_an_event_without_its_blank_line_is_not_dispatched() -> None:
    events, parser = feed_all([b"data: one\n\ndata: two\n"])
    assert [e.data for e in events] == ["one"]
    assert parser.pending  # bytes of "two" wait for a blank line that never came


def test_a_half_line_is_pending() -> None:
    _, parser = feed_all([b"data: one\n\ndata: tw"])
    assert parser.pending


def test_invalid_utf8_is_a_malformed_event() -> None:
    with pytest.raises(TransportError) as caught:
        feed_all([b"data: \xff\xfe\n\n"])
    assert caught.value.reason == "malformed_event"


def test_a_bom_split_across_chunks_is_stripped() -> None:
    events, _ = feed_all([b"\xef", b"\xbb", b"\xbfdata: x\n\n"])
    assert events == [SSEEvent(event="", data="x")]
