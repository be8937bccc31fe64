"""Class: work superlinear in what a hostile peer sends (sibling of test_glob_redos.py).

Cause: :class:`gate.reviewers.sse.SSEParser` searched its whole buffer for a line
ending on every chunk. A reviewer, or a proxy in between, that sends one long line in
tiny chunks (TCP delivers whatever it likes) made each chunk cost the length of the
line so far: time quadratic in the line's length (1-byte chunks of a 256 KiB line took
1 s; the 4 MiB response limit would allow about 4 minutes of CPU, all inside the
deadline but spent for nothing).

Fix: the parser remembers how much of the buffer is already known to hold no CR or LF
and searches only the bytes after it, so each byte is searched once.

Variants: lines of several lengths cut into chunks of 1 to 7 bytes, with CR, LF and
CRLF endings and BOMs; the bytes the parser searches are counted (a bytearray that
counts what ``find`` looks at) and must stay within a constant factor of the bytes fed,
and the events must equal those of the same bytes fed whole.

Second member: :func:`gate.safe.strictjson.nesting_depth`, run on every JSON text before it
is parsed (the verdict, every provider event, tool results, certificates, payloads),
skipped strings with ``"[^"\\]*(?:\\.[^"\\]*)*"``. An unterminated string made that
match fail, and the scan tried again from every later quote inside it: ``"`` followed by
``\"`` 16,000 times took 13 s, quadratic, in one regular expression call that holds the
GIL, so the deadline watchdog could not even run. A reviewer answering with such a fence
(or an event with such data) held the job for days. Fix: the string alternative is
possessive and closed by the end of the text, so no match fails and none is retried.
Property checked without timing: every quote lies in exactly one string match (no
attempt from a quote ever fails), and on every text JSON accepts the depth is exact.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.reviewers.sse import SSEParser
from gate.safe.strictjson import _STRING_OR_BRACKET, nesting_depth


class CountingBuffer(bytearray):
    """A bytearray that counts the bytes each ``find`` call may look at."""

    searched = 0

    def find(self, sub: Any, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        first = 0 if start is None else start
        last = len(self) if end is None else min(end, len(self))
        CountingBuffer.searched += max(0, last - first)
        return super().find(sub, first, last)


def _feed(chunks: list[bytes]) -> tuple[list[Any], int]:
    parser = SSEParser()
    parser._buf = CountingBuffer()  # the buffer is what is measured
    CountingBuffer.searched = 0
    events = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events, CountingBuffer.searched


def _chunks(data: bytes, sizes: list[int]) -> list[bytes]:
    out, at, i = [], 0, 0
    while at < len(data):
        size = sizes[i % len(sizes)]
        out.append(data[at : at + size])
        at, i = at + size, i + 1
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([2_000, 20_000, 60_000]),
    st.lists(st.integers(1, 7), min_size=1, max_size=5),
    st.sampled_from([b"\n", b"\r", b"\r\n"]),
    st.booleans(),
)
def test_a_long_line_in_small_chunks_is_searched_once(
    length: int, sizes: list[int], ending: bytes, bom: bool
) -> None:
    body = b"data: " + b"x" * length + ending + ending
    data = (b"\xef\xbb\xbf" if bom else b"") + b": comment" + ending + body
    events, searched = _feed(_chunks(data, sizes))
    whole, _ = _feed([data])
    assert events == whole
    assert len(events) == 1
    assert events[0].data == "x" * length
    # each byte is searched for LF and for CR a bounded number of times
    assert searched <= 4 * len(data) + 64, (searched, len(data))


# --- nesting_depth: one pass over any text -------------------------------------------

PIECES = ['"', "\\", '\\"', "[", "]", "{", "}", "a", ",", ":", "\n", '"x"', "1"]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)
families = st.builds(
    lambda head, unit, count, tail: head + unit * count + tail,
    st.sampled_from(['"', '["', '{"a":"', ""]),
    st.sampled_from(['\\"', '"\\', "\\", '\\"[', '"[']),
    st.integers(1, 300),
    st.sampled_from(["", "\\", '"', "]"]),
)


def _quote_starts(text: str) -> list[int]:
    return [i for i, ch in enumerate(text) if ch == '"']


@settings(max_examples=500, deadline=None)
@given(texts | families)
def test_every_quote_is_in_one_string_match(text: str) -> None:
    """No match attempt from a quote fails: none is retried from a later quote (linear)."""
    covered = set()
    for match in _STRING_OR_BRACKET.finditer(text):
        if match.group().startswith('"'):
            covered.update(range(match.start(), match.end()))
    assert [i for i in _quote_starts(text) if i not in covered] == []


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.lists(st.sampled_from(PIECES), max_size=4).map("".join), inner, max_size=3
        )
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(json_values)
def test_the_depth_of_valid_json_is_exact(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert nesting_depth(text) == _depth(value)
