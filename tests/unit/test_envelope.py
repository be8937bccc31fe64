"""MC1 envelope: every truncation, every flip, every header deviation is refused."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import errors
from gate.decide.envelope import (
    SENTINEL,
    StreamVerifier,
    seal,
    verify,
    verify_envelope,
    verify_text,
)

CONTENT = b'Looks fine.\n```json\n{"verdict": "fail", "reasons": ["x"]}\n```\n'


def reseal_without_sentinel(content: bytes) -> bytes:
    body = content  # no sentinel
    return b"MC1 %d %s\n" % (len(body), hashlib.sha256(body).hexdigest().encode()) + body


def test_seal_then_verify_round_trips() -> None:
    raw = seal(CONTENT)
    assert raw.startswith(b"MC1 %d " % (len(CONTENT) + 5))
    assert raw.endswith(SENTINEL)
    assert verify(raw) == CONTENT
    env = verify_envelope(raw)
    assert env.body_length == len(CONTENT) + 5
    assert env.envelope_sha256 == hashlib.sha256(raw).hexdigest()


def test_empty_content_is_valid() -> None:
    assert verify(seal(b"")) == b""


@pytest.mark.parametrize("content", [CONTENT, b"", "ünïcode ✓\n".encode()])
def test_every_truncation_is_refused_with_the_right_error(content: bytes) -> None:
    raw = seal(content)
    header_len = raw.index(b"\n") + 1
    for cut in range(len(raw)):
        with pytest.raises(errors.EnvelopeError) as info:
            verify(raw[:cut])
        err = info.value
        if cut == 0:
            assert isinstance(err, errors.MissingHeader)
        elif cut < header_len:
            assert isinstance(err, errors.BadHeader), (cut, err)
        else:
            assert isinstance(err, errors.LengthMismatch), (cut, err)
            assert err.declared == len(raw) - header_len
            assert err.received == cut - header_len
            assert f"declares {err.declared} bytes, received {err.received}" in str(err)


def test_every_single_byte_flip_is_refused() -> None:
    raw = seal(CONTENT)
    for offset in range(len(raw)):
        for value in range(256):
            if value == raw[offset]:
                continue
            mutated = bytearray(raw)
            mutated[offset] = value
            with pytest.raises(errors.EnvelopeError):
                verify(bytes(mutated))


def test_body_flip_is_a_digest_mismatch() -> None:
    raw = bytearray(seal(CONTENT))
    raw[-10] ^= 0x01
    with pytest.raises(errors.DigestMismatch, match="digest mismatch"):
        verify(bytes(raw))


def test_sentinel_removed_and_resealed_is_refused() -> None:
    with pytest.raises(errors.MissingSentinel):
        verify(reseal_without_sentinel(CONTENT))


def test_sentinel_must_be_exact() -> None:
    for tail in (b"\nEND", b"END\n", b"\nend\n", b"\nEND\r\n", b"\nEND\n\n", b"\nEN\n"):
        body = b"no newline at the end" + tail
        raw = b"MC1 %d %s\n" % (len(body), hashlib.sha256(body).hexdigest().encode()) + body
        with pytest.raises(errors.MissingSentinel):
            verify(raw)


@pytest.mark.parametrize(
    ("raw", "error", "text"),
    [
        (b"", errors.MissingHeader, "empty"),
        (b"\xef\xbb\xbf" + seal(b"x"), errors.MissingHeader, "BOM"),
        (b"mc1 6 " + b"0" * 64 + b"\nx\nEND\n", errors.MissingHeader, "missing MC1 header"),
        (b"MC2 6 " + b"0" * 64 + b"\nx\nEND\n", errors.MissingHeader, "missing MC1 header"),
        (b"MC1  6 " + b"0" * 64 + b"\n", errors.BadHeader, "length field is empty"),
        (b"MC1 +6 " + b"0" * 64 + b"\n", errors.BadHeader, "non-digit"),
        (b"MC1 06 " + b"0" * 64 + b"\n", errors.BadHeader, "leading zero"),
        (b"MC1 " + b"9" * 30 + b" " + b"0" * 64 + b"\n", errors.BadHeader, "more than 10 digits"),
        (b"MC1 6 " + b"A" * 64 + b"\n", errors.BadHeader, "lowercase"),
        (b"MC1 6 " + b"0" * 63 + b"\n", errors.BadHeader, "is not 'MC1"),
        (b"MC1 6 " + b"0" * 65 + b"\n", errors.BadHeader, "longer than 64"),
        (b"MC1 6 " + b"0" * 64 + b"\r\n", errors.BadHeader, "CR before the newline"),
        (b"MC1 6 " + b"0" * 64, errors.BadHeader, "cut before the newline"),
    ],
)
def test_header_deviations(raw: bytes, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        verify(raw)


def test_crlf_header_of_a_real_envelope_is_refused() -> None:
    raw = seal(CONTENT)
    with pytest.raises(errors.BadHeader, match="CR"):
        verify(raw.replace(b"\n", b"\r\n", 1))


def test_trailing_bytes_are_refused() -> None:
    with pytest.raises(errors.TrailingBytes):
        verify(seal(CONTENT) + b"x")
    with pytest.raises(errors.TrailingBytes):
        verify(seal(CONTENT) * 2)


def test_invalid_utf8_content_is_bad_encoding() -> None:
    with pytest.raises(errors.BadEncoding, match="not UTF-8 at byte 3"):
        verify(seal(b"abc\xff"))


def test_declared_size_over_limit_is_refused_before_the_body() -> None:
    verifier = StreamVerifier(max_size=100)
    with pytest.raises(errors.SizeLimitExceeded, match="over the limit of 100"):
        verifier.feed(b"MC1 101 " + b"0" * 64 + b"\n")
    # once failed, always failed with the same error
    with pytest.raises(errors.SizeLimitExceeded):
        verifier.feed(b"more")
    with pytest.raises(errors.SizeLimitExceeded):
        verifier.finish()


def test_stream_refuses_as_soon_as_bytes_exceed_declared_length() -> None:
    raw = seal(CONTENT)
    verifier = StreamVerifier()
    verifier.feed(raw)
    with pytest.raises(errors.TrailingBytes):
        verifier.feed(b"\x00")


def test_stream_memory_is_bounded_by_the_limit() -> None:
    verifier = StreamVerifier(max_size=1024)
    verifier.feed(b"MC1 1024 " + b"0" * 64 + b"\n")
    for _ in range(8):
        verifier.feed(b"a" * 128)
    with pytest.raises(errors.TrailingBytes):
        verifier.feed(b"a" * 10_000_000)
    assert verifier.received == 1024


def test_stream_without_body_buffer_still_verifies_digest_and_sentinel() -> None:
    raw = seal(CONTENT)
    verifier = StreamVerifier(keep_body=False)
    for index in range(0, len(raw), 3):
        verifier.feed(raw[index : index + 3])
    env = verifier.finish()
    assert env.content == b""
    assert env.body_sha256 == hashlib.sha256(CONTENT + SENTINEL).hexdigest()
    verifier = StreamVerifier(keep_body=False)
    verifier.feed(reseal_without_sentinel(CONTENT))
    with pytest.raises(errors.MissingSentinel):
        verifier.finish()


def _outcome(chunks: list[bytes]) -> str:
    verifier = StreamVerifier(max_size=4096)
    try:
        for chunk in chunks:
            verifier.feed(chunk)
        return "ok:" + verifier.finish().content.hex()
    except errors.EnvelopeError as err:
        return f"{type(err).__name__}:{err}"


def _chunk(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    pieces.append(data[start:])
    return pieces


def _mutations() -> st.SearchStrategy[bytes]:
    valid = st.binary(max_size=200).map(seal)
    return st.one_of(
        valid,
        st.tuples(valid, st.integers(0, 10_000)).map(lambda t: t[0][: t[1] % (len(t[0]) + 1)]),
        st.tuples(valid, st.integers(0, 10_000), st.integers(1, 255)).map(
            lambda t: bytes(b ^ t[2] if i == t[1] % len(t[0]) else b for i, b in enumerate(t[0]))
        ),
        st.binary(max_size=300),
        st.tuples(valid, st.binary(min_size=1, max_size=5)).map(lambda t: t[0] + t[1]),
    )


@settings(max_examples=400, deadline=None)
@given(_mutations(), st.lists(st.integers(0, 400), max_size=12))
def test_any_chunking_gives_the_whole_buffer_answer(raw: bytes, cuts: list[int]) -> None:
    assert _outcome(_chunk(raw, cuts)) == _outcome([raw])
    assert _outcome([bytes([b]) for b in raw]) == _outcome([raw])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 10_000), st.integers(1, 255))
def test_any_changed_byte_is_refused(content: bytes, position: int, xor: int) -> None:
    raw = bytearray(seal(content))
    raw[position % len(raw)] ^= xor
    with pytest.raises(errors.EnvelopeError):
        verify(bytes(raw))


def _verify_outcome(raw: bytes, wrap: type = bytes, how: str = "view") -> str:
    try:
        if how == "view":
            return "ok:" + verify(wrap(raw), max_size=4096).hex()
        if how == "text":
            return "ok:" + verify_text(wrap(raw), max_size=4096).encode().hex()
        return "ok:" + verify_envelope(wrap(raw), max_size=4096).text().encode().hex()
    except errors.EnvelopeError as err:
        return f"{type(err).__name__}:{err}"


def _utf8_slice_cases() -> st.SearchStrategy[bytes]:
    """Content around slice boundaries: multi-byte sequences, cut ones, stray bytes."""
    pieces = st.sampled_from(
        [b"a", b"\xc3\xa9", b"\xe2\x80\x94", b"\xf0\x9f\x98\x80", b"\xc3", b"\xe2\x80", b"\xff"]
    )
    return st.lists(pieces, max_size=40).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(_mutations(), _utf8_slice_cases().map(seal)),
    st.lists(st.integers(0, 400), max_size=12),
    st.sampled_from([1, 3, 7, 1 << 20]),
    st.sampled_from([bytes, bytearray, memoryview]),
    st.sampled_from(["view", "text", "envelope"]),
)
def test_whole_buffer_verify_answers_as_the_stream_does(
    raw: bytes, cuts: list[int], utf8_slice: int, wrap: type, how: str
) -> None:
    """Whole-buffer verify (view, str or envelope; any decode slice, any buffer) = the stream."""
    import gate.decide.envelope as envelope

    saved = envelope.UTF8_SLICE
    envelope.UTF8_SLICE = utf8_slice
    try:
        assert _verify_outcome(raw, wrap, how) == _outcome(_chunk(raw, cuts))
    finally:
        envelope.UTF8_SLICE = saved


def test_a_large_envelope_is_verified_in_place() -> None:
    content = "Grüße — 漢字\n".encode() * (1 << 19)
    raw = seal(content)
    assert verify(raw, max_size=len(raw)) == content
    assert verify_text(raw, max_size=len(raw)) == content.decode()
    bad = bytearray(raw)
    bad[-6] = 0xFF  # the last content byte, then resealed
    body = bytes(bad[raw.index(b"\n") + 1 :])
    resealed = b"MC1 %d %s\n" % (len(body), hashlib.sha256(body).hexdigest().encode()) + body
    for check in (verify, verify_text, verify_envelope):
        with pytest.raises(errors.BadEncoding, match=f"at byte {len(content) - 1}$"):
            check(resealed, max_size=len(raw))
    bad[-6] = ord("\n") ^ 0x01
    with pytest.raises(errors.DigestMismatch):
        verify(bytes(bad), max_size=len(raw))


@pytest.mark.parametrize("content", [CONTENT, b"", "ünïcode ✓\n".encode()])
def test_the_content_of_a_bytes_envelope_is_the_input_itself(content: bytes) -> None:
    """No copy: a read-only view into the (immutable) input, the sentinel left out."""
    raw = seal(content)
    for view in (verify(raw), verify_envelope(raw).content):
        assert view.obj is raw
        assert view.readonly
        assert view == content
    assert verify_envelope(raw).text() == content.decode()


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=300) | _utf8_slice_cases(),
    st.sampled_from([bytearray, memoryview, lambda b: memoryview(bytearray(b))]),
    st.integers(0, 10_000),
    st.integers(1, 255),
)
def test_a_mutable_buffer_is_copied_before_it_is_checked(
    content: bytes, wrap: type, position: int, xor: int
) -> None:
    """A buffer the caller can still change gives content that later changes cannot reach."""
    sealed = seal(content)
    buffer = wrap(sealed)
    try:
        got = verify(buffer, max_size=4096)
    except errors.BadEncoding:
        return  # not UTF-8: nothing handed out
    env = verify_envelope(buffer, max_size=4096)
    writable = buffer if isinstance(buffer, bytearray) else buffer.obj
    if isinstance(writable, bytearray):
        writable[position % len(writable)] ^= xor
    assert got == content
    assert env.content == content
    assert env.envelope_sha256 == hashlib.sha256(sealed).hexdigest()
