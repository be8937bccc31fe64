"""gate.reviewers.eventstream against botocore's decoder (the oracle): same frames, every cut.

botocore (a test-only dependency) is the official AWS implementation of the
event-stream framing. For generated streams, the gate's decoder must return
exactly botocore's frames; for every cut of the stream it must return the
frames botocore returns and refuse (``eventstream_cut``) exactly when botocore
is left holding a partial frame; for every single-byte change it must refuse,
as botocore does (CRC32 catches every burst of up to 32 bits).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.errors import TransportError
from gate.reviewers.eventstream import (
    EPOCH,
    EventStreamDecoder,
    Frame,
    encode_frame,
    parse_headers,
    to_millis,
)

botocore_es = pytest.importorskip("botocore.eventstream")

NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
VALUES = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.binary(max_size=40),
    st.text(max_size=40).filter(
        lambda s: len(s.encode("utf-8", "surrogatepass")) == len(s.encode("utf-8", "ignore"))
    ),
    st.uuids(),
    st.integers(0, 2**41).map(lambda ms: EPOCH + timedelta(milliseconds=ms)),
)
HEADERS = st.dictionaries(NAMES.filter(lambda n: len(n.encode()) < 256), VALUES, max_size=5)
FRAMES = st.lists(st.tuples(HEADERS, st.binary(max_size=200)), min_size=1, max_size=4)


def ours(data: bytes) -> tuple[list[Frame], str | None]:
    decoder = EventStreamDecoder()
    try:
        frames = decoder.feed(data)
        decoder.close()
    except TransportError as err:
        return [], err.reason
    return frames, None


def theirs(data: bytes) -> tuple[list[tuple[dict[str, object], bytes]], bool]:
    """botocore's frames and whether it holds a partial frame (or raised)."""
    buffer = botocore_es.EventStreamBuffer()
    buffer.add_data(data)
    out = []
    try:
        for message in buffer:
            out.append((dict(message.headers), bytes(message.payload)))
    except botocore_es.ParserError:
        return out, True
    return out, bool(buffer._data)


def normal(value: object) -> object:
    if isinstance(value, datetime):
        return to_millis(value)
    if isinstance(value, uuid.UUID):
        return value.bytes
    return value


def same(frames: list[Frame], boto: list[tuple[dict[str, object], bytes]]) -> bool:
    if len(frames) != len(boto):
        return False
    for frame, (headers, payload) in zip(frames, boto, strict=True):
        if frame.payload != payload:
            return False
        mine = {k: normal(v) for k, v in frame.headers.items()}
        other = {k: normal(v) for k, v in headers.items()}
        if mine != other:
            return False
    return True


def stream(frames: list[tuple[dict[str, object], bytes]]) -> bytes:
    return b"".join(encode_frame(h, p) for h, p in frames)  # type: ignore[arg-type]


@settings(max_examples=120, deadline=None)
@given(FRAMES)
def test_whole_stream_matches_botocore(frames: list[tuple[dict[str, object], bytes]]) -> None:
    data = stream(frames)
    mine, reason = ours(data)
    boto, partial = theirs(data)
    assert reason is None
    assert not partial
    assert same(mine, boto)


@settings(max_examples=25, deadline=None)
@given(FRAMES)
def test_every_cut_matches_botocore(frames: list[tuple[dict[str, object], bytes]]) -> None:
    data = stream(frames)
    for cut in range(len(data)):
        decoder = EventStreamDecoder()
        got = decoder.feed(data[:cut])
        boto, partial = theirs(data[:cut])
        assert same(got, boto), cut
        if partial:
            with pytest.raises(TransportError) as info:
                decoder.close()
            assert info.value.reason == "eventstream_cut"
        else:
            decoder.close()


@settings(max_examples=15, deadline=None)
@given(FRAMES, st.integers(1, 255))
def test_every_byte_change_is_refused_like_botocore(
    frames: list[tuple[dict[str, object], bytes]], mask: int
) -> None:
    data = stream(frames)
    for pos in range(len(data)):
        flipped = bytearray(data)
        flipped[pos] ^= mask
        _mine, reason = ours(bytes(flipped))
        _boto, partial = theirs(bytes(flipped))
        # the frames before the damaged one are delivered by both; the damaged one never
        assert reason is not None, pos
        assert partial, pos


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 13, 64])
def test_chunking_does_not_change_the_answer(chunk: int) -> None:
    data = stream([({":event-type": "contentBlockDelta"}, b'{"x":1}')] * 3)
    decoder = EventStreamDecoder()
    got: list[Frame] = []
    for start in range(0, len(data), chunk):
        got.extend(decoder.feed(data[start : start + chunk]))
    decoder.close()
    assert [f.event_type for f in got] == ["contentBlockDelta"] * 3


def raw_frame(block: bytes, payload: bytes = b"") -> bytes:
    """A frame with a hand-made header block and correct CRCs."""
    total = 16 + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + block + payload
    return message + struct.pack(">I", zlib.crc32(message))


@pytest.mark.parametrize(
    "block",
    [
        b"\x01a\x0a",  # unknown type 10
        b"\x01a\x07\x00\x05ab",  # string runs past the block
        b"\x05ab",  # name runs past the block
        b"\x00",  # empty name
        b"\x01a\x07\x00\x02\xff\xfe",  # string not UTF-8
        b"\x01a\x00\x01a\x01",  # duplicate header
        b"\x01a\x04\x00\x00",  # int32 cut short
    ],
)
def test_malformed_header_blocks_with_valid_crcs_are_refused(block: bytes) -> None:
    _mine, reason = ours(raw_frame(block))
    assert reason == "eventstream_malformed"
    with pytest.raises(TransportError):
        parse_headers(block)


@pytest.mark.parametrize(
    "prelude",
    [
        struct.pack(">II", 15, 0),  # shorter than the smallest frame
        struct.pack(">II", 20, 8),  # headers longer than the frame allows
        struct.pack(">II", 2**31, 200 * 1024),  # header block over the limit
        struct.pack(">II", 2**31, 0),  # payload over the limit
    ],
)
def test_impossible_lengths_are_refused(prelude: bytes) -> None:
    data = prelude + struct.pack(">I", zlib.crc32(prelude)) + b"\x00" * 16
    _mine, reason = ours(data)
    assert reason == "eventstream_malformed"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_anything_but_transport_error(data: bytes) -> None:
    ours(data)


@pytest.mark.parametrize("seed", range(3))
def test_timestamps_keep_every_millisecond(seed: int) -> None:
    """A timestamp header round-trips to the millisecond, as botocore reads it: integers
    all the way (``timestamp() * 1000`` turned 8,344,354 ms into 8,344,353)."""
    import random

    rng = random.Random(seed)
    values = [8_344_354, 0, 1, 999, 2**41, -1, -(2**40)] + [
        rng.randrange(2**43) for _ in range(3000)
    ]
    for millis in values:
        data = encode_frame({"t": EPOCH + timedelta(milliseconds=millis)}, b"")
        (frame,) = EventStreamDecoder().feed(data)
        decoded = frame.headers["t"]
        assert isinstance(decoded, datetime)
        assert to_millis(decoded) == millis
        (boto,), _partial = theirs(data)
        assert boto[0]["t"] == millis
