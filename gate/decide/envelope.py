"""MC1 envelope: seal and verify, whole-buffer and streaming.

Format (see docs/mc1.md and docs/decisions/0002-the-mc1-envelope.md)::

    MC1 <len> <sha256>\\n<body>

``<len>`` is the decimal byte count of ``<body>`` (no sign, no leading zero,
at most 10 digits); ``<sha256>`` is 64 lowercase hex digits of SHA-256 over
``<body>``; the body is exactly ``<len>`` bytes, ends with ``\\nEND\\n`` and
nothing follows it. The content is ``body[:-5]`` and must be strict UTF-8.

:func:`verify` reads the header as :class:`StreamVerifier` does and then checks
the body in place, without copying it: one SHA-256 pass over a memoryview, one
``bytes.isascii`` scan (ASCII is UTF-8: no decode), and a UTF-8 decode only when
the content is not ASCII. The content it returns is a read-only view of the
input (a ``bytes`` input is immutable, so what was checked is what is read;
any other buffer is first copied once into ``bytes``). :func:`verify_text`
returns the content as ``str``: that decode is the one copy, and for a
non-ASCII content it is also the UTF-8 check. Both paths raise through the
same checks in the same order (:func:`_judge`), so the streaming and
whole-buffer answers are the same function of the bytes, whatever the
chunking. Every deviation raises a specific :class:`~gate.errors.EnvelopeError`.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from gate.errors import (
    BadEncoding,
    BadHeader,
    DigestMismatch,
    EnvelopeError,
    LengthMismatch,
    MissingHeader,
    MissingSentinel,
    SizeLimitExceeded,
    TrailingBytes,
)

MAGIC = b"MC1 "
SENTINEL = b"\nEND\n"
MAX_LEN_DIGITS = 10
#: "MC1 " + 10 digits + " " + 64 hex + "\n"
MAX_HEADER_BYTES = len(MAGIC) + MAX_LEN_DIGITS + 1 + 64 + 1
#: Default bound on a body the gate is willing to hold in memory (16 MiB).
DEFAULT_MAX_SIZE = 16 * 1024 * 1024

_HEADER_RE = re.compile(rb"MC1 (0|[1-9][0-9]{0,9}) ([0-9a-f]{64})\n\Z")
#: Slice size for the UTF-8 check of a non-ASCII content that is not wanted as str.
#: A slice's str (at most 4 bytes a character) stays under glibc's 128 KiB mmap
#: threshold, so its memory is reused from slice to slice instead of faulted in
#: again: measured 1.2-2x the hash for 64 MiB of prose, against 3-5x at 1 MiB.
UTF8_SLICE = 16 * 1024
MAX_UTF8_SEQUENCE = 4


@dataclass(frozen=True)
class Envelope:
    """A verified envelope: its content and the digests that identify it.

    ``content`` is a read-only view: of the input itself for :func:`verify`
    (no copy), of the joined body for :class:`StreamVerifier`.
    """

    content: memoryview
    body_length: int
    body_sha256: str
    envelope_sha256: str  # SHA-256 of header + body ("" when verified as a stream)
    #: The content as str when verification already decoded it (non-ASCII content).
    _decoded: str | None = field(default=None, repr=False, compare=False)

    def text(self) -> str:
        """The content as ``str``: one decode (the UTF-8 was checked), or none if made."""
        return self._decoded if self._decoded is not None else str(self.content, "utf-8")


def seal(content: bytes) -> bytes:
    """Return the MC1 envelope of ``content`` (the sentinel is appended)."""
    if not isinstance(content, bytes | bytearray | memoryview):
        raise TypeError("seal() takes bytes")
    body = bytes(content) + SENTINEL
    digest = hashlib.sha256(body).hexdigest()
    return b"MC1 %d %s\n" % (len(body), digest.encode("ascii")) + body


def sealed_json(envelope: bytes | None) -> dict[str, Any] | None:
    """A sealed envelope as a certificate keeps it (digest, length, base64), or None: what
    the certificate and each ``agreement`` answer record, so it can be verified again."""
    if envelope is None:
        return None
    return {
        "sha256": hashlib.sha256(envelope).hexdigest(),
        "length": len(envelope),
        "base64": base64.b64encode(envelope).decode("ascii"),
    }


def verify(raw: bytes, *, max_size: int | None = None) -> memoryview:
    """Verify a whole MC1 envelope and return its content, a read-only view of ``raw``.

    No copy of a ``bytes`` input is made (``str(view, "utf-8")`` or
    :func:`verify_text` makes the one the caller needs). Raises a specific
    :class:`~gate.errors.EnvelopeError` on any deviation.
    """
    return _verify_whole(raw, max_size, decode=False).content


def verify_text(raw: bytes, *, max_size: int | None = None) -> str:
    """Like :func:`verify`, but return the content as ``str`` in one decode."""
    return _verify_whole(raw, max_size, decode=True).text()


def verify_envelope(raw: bytes, *, max_size: int | None = None) -> Envelope:
    """Like :func:`verify_text`, but return the content with its digests.

    ``envelope_sha256`` (header and body, for the certificate) costs a second
    hash pass over the whole envelope, which :func:`verify` does not make.
    A non-ASCII content is decoded once, and :meth:`Envelope.text` returns that.
    """
    owned = _owned(raw)
    env = _verify_whole(owned, max_size, decode=True)
    return Envelope(
        content=env.content,
        body_length=env.body_length,
        body_sha256=env.body_sha256,
        envelope_sha256=hashlib.sha256(owned).hexdigest(),
        _decoded=env._decoded,
    )


def _owned(raw: bytes) -> bytes:
    """``raw`` itself when it is ``bytes`` (immutable), else one copy of it.

    A ``bytearray`` or a writable memoryview could change between the checks
    and the read of the content; a ``bytes`` subclass could answer
    ``isascii`` its own way. The copy is made before any check.
    """
    return raw if type(raw) is bytes else bytes(raw)


def _sha256_hex(data: memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def _first_bad_utf8(view: memoryview) -> int | None:
    """Offset of the first byte of ``view`` that is not strict UTF-8, or None.

    One decode, in slices (no copy of the bytes, no ``str`` larger than a
    slice; an incomplete sequence at a slice's end is decoded again with the
    next slice), so the first error is the one a decoder fed the whole
    content would report.
    """
    start, size = 0, len(view)
    step = max(UTF8_SLICE, MAX_UTF8_SEQUENCE)  # a slice holds one whole sequence: progress
    while True:
        end = min(start + step, size)
        try:
            _, used = codecs.utf_8_decode(view[start:end], "strict", end == size)
        except UnicodeDecodeError as err:
            return start + err.start
        start += used
        if end == size:
            return None


def _trailing(declared: int) -> TrailingBytes:
    return TrailingBytes(f"trailing bytes: more than the declared {declared} body bytes arrived")


def _judge(
    declared: int, received: int, digest_hex: str, actual: str, tail_ok: bool, bad_utf8: int | None
) -> None:
    """Raise the first failing check, in the order every path reports them.

    Length, then digest, then sentinel, then encoding. ``actual`` is only
    looked at when the length matches; ``bad_utf8`` (an offset in the body)
    only when everything before it holds.
    """
    if received != declared:
        raise LengthMismatch(
            f"length mismatch: header declares {declared} bytes, received {received}",
            declared=declared,
            received=received,
        )
    if actual != digest_hex:
        raise DigestMismatch(
            f"digest mismatch: header says {digest_hex[:12]}..., body hashes to {actual[:12]}..."
        )
    if not tail_ok or declared < len(SENTINEL):
        raise MissingSentinel("missing END sentinel: the body must end with \\nEND\\n")
    if bad_utf8 is not None:
        raise BadEncoding(f"bad encoding: content is not UTF-8 at byte {bad_utf8}")


def _verify_whole(raw: bytes, max_size: int | None, *, decode: bool) -> Envelope:
    """Verify one buffer: the header as a stream would, then the body in place.

    The body is hashed once, as a memoryview, and ``raw`` scanned once for
    ASCII (the header is ASCII once it parsed, so that is the content's scan).
    Only a non-ASCII content is decoded: whole when ``decode`` (the caller
    wants the ``str``: that decode is the check), else in slices of
    :data:`UTF8_SLICE` (no full-size ``str``). Nothing is copied unless ``raw``
    is not ``bytes`` (:func:`_owned`). Errors are raised in the streaming order
    (:func:`_judge`), and the content is not decoded unless every earlier
    check holds.
    """
    raw = _owned(raw)
    verifier = StreamVerifier(max_size=max_size)
    view = memoryview(raw)
    body = verifier._feed_header(view) if view else view
    declared = verifier.declared
    if declared is None:
        verifier.finish()  # raises: the response is empty, or cut before the newline
        raise AssertionError("finish() accepted an envelope without a header")
    if len(body) > declared:
        raise _trailing(declared)
    tail_ok = len(body) == declared and body[-len(SENTINEL) :] == SENTINEL
    actual = _sha256_hex(body) if len(body) == declared else ""
    _judge(declared, len(body), verifier._digest_hex, actual, tail_ok, None)
    content = body[: declared - len(SENTINEL)]
    decoded, bad_utf8 = None, None
    if not raw.isascii():
        if decode:
            try:
                decoded = str(content, "utf-8")
            except UnicodeDecodeError as err:
                bad_utf8 = err.start
        else:
            bad_utf8 = _first_bad_utf8(content)
    _judge(declared, declared, verifier._digest_hex, actual, tail_ok, bad_utf8)
    return Envelope(
        content=content,
        body_length=declared,
        body_sha256=actual,
        envelope_sha256="",
        _decoded=decoded,
    )


def _check_header_prefix(prefix: bytes) -> None:
    """Raise if ``prefix`` (no newline yet) cannot start a valid header.

    Depends only on the bytes, so the first failing byte position and the
    error raised are the same for any chunking.
    """
    head = prefix[: len(MAGIC)]
    if MAGIC[: len(head)] != head:
        first_bad = next(i for i, byte in enumerate(head) if byte != MAGIC[i])
        if first_bad == 0 and head[0] == 0xEF:
            raise MissingHeader(
                "missing MC1 header: the response starts with byte 0xef (a UTF-8 BOM?)"
            )
        raise MissingHeader(
            f"missing MC1 header: the response starts with {head[: first_bad + 1]!r}, "
            "expected b'MC1 <len> <sha256>\\n'"
        )
    rest = prefix[len(MAGIC) :]
    if not rest:
        return
    length_part, sep, digest_part = rest.partition(b" ")
    if length_part[:1] == b"":
        raise BadHeader("bad MC1 header: the length field is empty")
    if not length_part.isdigit():
        bad = length_part.lstrip(b"0123456789")[:1]
        if bad == b"\r":
            raise BadHeader(
                "bad MC1 header: CR before the newline (the header must end with LF only)"
            )
        raise BadHeader(f"bad MC1 header: length field has a non-digit {bad!r}")
    if len(length_part) > 1 and length_part[:1] == b"0":
        raise BadHeader("bad MC1 header: length has a leading zero")
    if len(length_part) > MAX_LEN_DIGITS:
        raise BadHeader(f"bad MC1 header: length has more than {MAX_LEN_DIGITS} digits")
    if not sep:
        return
    for index, byte in enumerate(digest_part):
        if index >= 64:
            if byte == 0x0D:
                raise BadHeader(
                    "bad MC1 header: CR before the newline (the header must end with LF only)"
                )
            raise BadHeader("bad MC1 header: digest is longer than 64 hex digits")
        if byte not in b"0123456789abcdef":
            if byte in b"ABCDEF":
                raise BadHeader("bad MC1 header: digest must be lowercase hex")
            raise BadHeader(f"bad MC1 header: digest has a non-hex byte {bytes([byte])!r}")


class StreamVerifier:
    """Verify an MC1 envelope fed in chunks, with bounded memory.

    With ``keep_body=False`` (a relay that only needs to know the bytes are
    whole) it keeps O(1) memory and checks header, length, digest and
    sentinel, but not the content's encoding: whoever decodes the content
    must verify with ``keep_body=True`` (the default), as the gate does.

    ``feed()`` raises as soon as the bytes seen so far cannot be a valid
    envelope (a bad header, a declared size over ``max_size``, bytes past the
    declared length); ``finish()`` gives the final answer. Once an error has
    been raised, every later call raises the same error.
    """

    def __init__(self, *, max_size: int | None = None, keep_body: bool = True) -> None:
        self.max_size = DEFAULT_MAX_SIZE if max_size is None else max_size
        self._keep = keep_body
        self._header = bytearray()
        self._declared: int | None = None
        self._digest_hex = ""
        self._sha = hashlib.sha256()
        self._parts: list[bytes] = []
        self._received = 0
        self._tail = b""
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self._utf8_fed = 0
        self._utf8_bad: int | None = None  # offset in the body of the first non-UTF-8 byte
        self._error: EnvelopeError | None = None
        self._done: Envelope | None = None

    @property
    def received(self) -> int:
        """Body bytes received so far (header excluded)."""
        return self._received

    @property
    def declared(self) -> int | None:
        """The body length declared by the header, once it is known."""
        return self._declared

    def _fail(self, error: EnvelopeError) -> EnvelopeError:
        self._error = error
        return error

    def feed(self, chunk: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._done is not None:
            raise self._fail(TrailingBytes("bytes fed after finish()"))
        if not chunk:
            return
        if self._declared is None:
            rest = self._feed_header(memoryview(chunk))
            if self._declared is None or not rest:
                return
            self._feed_body(bytes(rest))
        else:
            # Immutable bytes are kept by reference: no copy until finish().
            self._feed_body(chunk if type(chunk) is bytes else bytes(chunk))

    def _feed_header(self, data: memoryview) -> memoryview:
        room = MAX_HEADER_BYTES - len(self._header)
        window = bytes(data[:room])
        newline = window.find(b"\n")
        part = window if newline < 0 else window[:newline]
        self._header += part
        try:
            _check_header_prefix(bytes(self._header))
        except EnvelopeError as err:
            raise self._fail(err) from None
        if newline < 0:
            if len(self._header) >= MAX_HEADER_BYTES:
                raise self._fail(BadHeader("bad MC1 header: no newline within the header"))
            return data[len(data) :]
        line = bytes(self._header) + b"\n"
        match = _HEADER_RE.match(line)
        if match is None:
            raise self._fail(
                BadHeader(
                    f"bad MC1 header: {line[:MAX_HEADER_BYTES]!r} is not 'MC1 <len> <sha256>'"
                )
            )
        declared = int(match.group(1))
        if declared > self.max_size:
            raise self._fail(
                SizeLimitExceeded(
                    f"envelope declares {declared} bytes, over the limit of {self.max_size}; "
                    "raise the maximum response size if this is expected"
                )
            )
        self._declared = declared
        self._digest_hex = match.group(2).decode("ascii")
        return data[newline + 1 :]

    def _feed_body(self, data: bytes) -> None:
        assert self._declared is not None
        room = self._declared - self._received
        if len(data) > room:
            raise self._fail(_trailing(self._declared))
        self._sha.update(data)
        self._received += len(data)
        if self._keep:
            self._parts.append(data)
        self._tail = (self._tail + data[-len(SENTINEL) :])[-len(SENTINEL) :]
        if self._keep:
            self._check_utf8(data, final=False)

    def _check_utf8(self, data: bytes, *, final: bool) -> None:
        """Track the first invalid UTF-8 byte; reported only after length and digest."""
        if self._utf8_bad is not None:
            return
        if not final and data.isascii() and not self._utf8.getstate()[0]:
            self._utf8_fed += len(data)
            return
        view, at = memoryview(data), 0
        while True:  # in slices of UTF8_SLICE, as _first_bad_utf8 does, and for its reason
            piece = view[at : at + UTF8_SLICE]
            at += len(piece)
            pending = len(self._utf8.getstate()[0])
            try:
                self._utf8.decode(piece, final and at == len(view))
            except UnicodeDecodeError as err:
                self._utf8_bad = self._utf8_fed - pending + err.start
                return
            self._utf8_fed += len(piece)
            if at == len(view):
                return

    def _content(self) -> bytes:
        """Join the body parts without the sentinel, copying the bytes once."""
        parts, owed = self._parts, len(SENTINEL)
        self._parts = []
        while owed and parts:
            last = parts.pop()
            if len(last) > owed:
                parts.append(last[:-owed])
                owed = 0
            else:
                owed -= len(last)
        return b"".join(parts)

    def finish(self) -> Envelope:
        """Return the verified envelope or raise the specific error."""
        if self._error is not None:
            raise self._error
        if self._done is not None:
            return self._done
        if self._declared is None:
            if not self._header:
                raise self._fail(MissingHeader("missing MC1 header: the response is empty"))
            raise self._fail(
                BadHeader(f"bad MC1 header: cut before the newline ({len(self._header)} bytes)")
            )
        actual = self._sha.hexdigest() if self._received == self._declared else ""
        tail_ok = self._tail == SENTINEL
        if self._keep:
            self._check_utf8(b"", final=True)
        try:
            _judge(
                self._declared, self._received, self._digest_hex, actual, tail_ok, self._utf8_bad
            )
        except EnvelopeError as err:
            raise self._fail(err) from None
        content = memoryview(self._content() if self._keep else b"")
        self._done = Envelope(
            content=content,
            body_length=self._declared,
            body_sha256=actual,
            envelope_sha256="",
        )
        return self._done
