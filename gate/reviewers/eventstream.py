"""AWS event-stream framing (``application/vnd.amazon.eventstream``), decoded strictly.

Amazon Bedrock's ``ConverseStream`` answers with binary frames, each::

    total_length   uint32 BE   whole frame, these 4 bytes and the final CRC included
    headers_length uint32 BE
    prelude_crc    uint32 BE   CRC32 of the 8 bytes above
    headers        headers_length bytes: (name_len u8, name, type u8, value)*
    payload        total_length - headers_length - 16 bytes
    message_crc    uint32 BE   CRC32 of every byte of the frame before it

:class:`EventStreamDecoder` takes the body in chunks of any size and returns
each frame only once its message CRC has been checked; the answer depends on
the bytes, never on how they were chunked. Anything else is a typed
:class:`~gate.errors.TransportError` with a stable reason: a CRC mismatch
(``eventstream_crc``), lengths that cannot describe a frame, an unknown header
type, a duplicate header, a header block that does not end where the prelude
says, or a name or string that is not UTF-8 (``eventstream_malformed``), and
bytes left over when the body ends, i.e. a cut inside a frame
(``eventstream_cut``). The limits are botocore's (128 KiB of headers, 24 MiB of
payload), so nothing botocore accepts is refused for size. The tests use
botocore's own decoder as the oracle (same frames, same verdict, every cut).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gate.errors import TransportError

PRELUDE_LENGTH = 12
CRC_LENGTH = 4
#: The smallest frame: a prelude, no headers, no payload, the message CRC.
MIN_FRAME = PRELUDE_LENGTH + CRC_LENGTH
MAX_HEADERS_LENGTH = 128 * 1024
MAX_PAYLOAD_LENGTH = 24 * 1024 * 1024

HeaderValue = bool | int | bytes | str | datetime | uuid.UUID
#: the event-stream timestamp's zero (type 8: milliseconds since it, a signed 64-bit int)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_millis(value: datetime) -> int:
    """Whole milliseconds since :data:`EPOCH`, in integers (``timestamp() * 1000`` is a
    float: 8344.354 s became 8344353 ms); a naive datetime is taken as UTC."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return (aware - EPOCH) // timedelta(milliseconds=1)


# type code -> fixed width of the value (None: a 2-byte length prefix follows)
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
_INTS = {2: ">b", 3: ">h", 4: ">i", 5: ">q"}


@dataclass(frozen=True)
class Frame:
    """One verified frame: its headers (name -> typed value) and payload bytes."""

    headers: Mapping[str, HeaderValue]
    payload: bytes

    def header(self, name: str) -> str | None:
        """A string header's value, or None when absent or of another type."""
        value = self.headers.get(name)
        return value if isinstance(value, str) else None

    @property
    def message_type(self) -> str | None:
        return self.header(":message-type")

    @property
    def event_type(self) -> str | None:
        return self.header(":event-type")

    @property
    def exception_type(self) -> str | None:
        return self.header(":exception-type")


def _malformed(text: str) -> TransportError:
    return TransportError(f"malformed event-stream frame: {text}", reason="eventstream_malformed")


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed(f"{what} is not UTF-8") from None


def parse_headers(block: bytes) -> dict[str, HeaderValue]:
    """The header block of one frame; it must be consumed exactly."""
    headers: dict[str, HeaderValue] = {}
    pos, end = 0, len(block)
    while pos < end:
        name_len = block[pos]
        pos += 1
        if name_len == 0 or pos + name_len + 1 > end:
            raise _malformed("a header name runs past the header block")
        name = _utf8(block[pos : pos + name_len], "a header name")
        pos += name_len
        kind = block[pos]
        pos += 1
        width = _FIXED.get(kind)
        if width is None:
            if kind not in (6, 7):
                raise _malformed(f"header {name!r} has unknown type {kind}")
            if pos + 2 > end:
                raise _malformed(f"header {name!r} length runs past the header block")
            width = int.from_bytes(block[pos : pos + 2], "big")
            pos += 2
        if pos + width > end:
            raise _malformed(f"header {name!r} value runs past the header block")
        raw = block[pos : pos + width]
        pos += width
        if name in headers:
            raise _malformed(f"duplicate header {name!r}")
        headers[name] = _value(kind, raw, name)
    return headers


def _value(kind: int, raw: bytes, name: str) -> HeaderValue:
    if kind in (0, 1):
        return kind == 0
    if kind in _INTS:
        value: int = struct.unpack(_INTS[kind], raw)[0]
        return value
    if kind == 6:
        return bytes(raw)
    if kind == 7:
        return _utf8(raw, f"header {name!r}")
    if kind == 8:
        millis = int.from_bytes(raw, "big", signed=True)
        try:
            return EPOCH + timedelta(milliseconds=millis)  # exact: no float on the way
        except (OverflowError, OSError, ValueError):
            raise _malformed(f"header {name!r} is a timestamp out of range") from None
    return uuid.UUID(bytes=bytes(raw))


class EventStreamDecoder:
    """Incremental, strict decoder: :meth:`feed` bytes, :meth:`close` at end of body."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.frames_seen = 0

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame held back."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame]:
        """Every frame completed by ``data``, each CRC-checked; raises on the first fault."""
        self._buffer += data
        frames: list[Frame] = []
        while True:
            frame = self._next()
            if frame is None:
                return frames
            frames.append(frame)

    def close(self) -> None:
        """The body ended: a partial frame left over is a cut."""
        if self._buffer:
            raise TransportError(
                f"the event stream ended inside a frame ({len(self._buffer)} bytes of an "
                "unfinished frame): the answer was cut",
                reason="eventstream_cut",
            )

    def _next(self) -> Frame | None:
        buf = self._buffer
        if len(buf) < PRELUDE_LENGTH:
            return None
        total, headers_length, prelude_crc = struct.unpack_from(">III", buf, 0)
        if zlib.crc32(bytes(buf[:8])) != prelude_crc:
            raise TransportError(
                "event-stream prelude CRC mismatch: the frame's lengths were altered in transit",
                reason="eventstream_crc",
            )
        if headers_length > MAX_HEADERS_LENGTH:
            raise _malformed(f"header block of {headers_length} bytes is over the limit")
        if total < MIN_FRAME + headers_length:
            raise _malformed(f"frame length {total} cannot hold {headers_length} header bytes")
        if total - MIN_FRAME - headers_length > MAX_PAYLOAD_LENGTH:
            raise _malformed(
                f"payload of {total - MIN_FRAME - headers_length} bytes is over the limit"
            )
        if len(buf) < total:
            return None
        body = bytes(buf[:total])
        (message_crc,) = struct.unpack_from(">I", body, total - CRC_LENGTH)
        if zlib.crc32(body[: total - CRC_LENGTH]) != message_crc:
            raise TransportError(
                "event-stream message CRC mismatch: the frame was altered in transit",
                reason="eventstream_crc",
            )
        headers = parse_headers(body[PRELUDE_LENGTH : PRELUDE_LENGTH + headers_length])
        payload = body[PRELUDE_LENGTH + headers_length : total - CRC_LENGTH]
        del buf[:total]
        self.frames_seen += 1
        return Frame(headers=headers, payload=payload)


def encode_frame(headers: Mapping[str, HeaderValue], payload: bytes) -> bytes:
    """One frame with correct CRCs (the simulator's and the tests' encoder).

    Strings become type 7, bytes type 6, booleans types 0/1, ints type 4 (or 5
    when they do not fit 32 bits), datetimes type 8 and UUIDs type 9.
    """
    block = bytearray()
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        block += bytes([len(raw_name)]) + raw_name
        if isinstance(value, bool):
            block += bytes([0 if value else 1])
        elif isinstance(value, int):
            if -(2**31) <= value < 2**31:
                block += bytes([4]) + struct.pack(">i", value)
            else:
                block += bytes([5]) + struct.pack(">q", value)
        elif isinstance(value, bytes):
            block += bytes([6]) + len(value).to_bytes(2, "big") + value
        elif isinstance(value, str):
            raw = value.encode("utf-8")
            block += bytes([7]) + len(raw).to_bytes(2, "big") + raw
        elif isinstance(value, datetime):
            block += bytes([8]) + struct.pack(">q", to_millis(value))
        else:
            block += bytes([9]) + value.bytes
    total = MIN_FRAME + len(block) + len(payload)
    prelude = struct.pack(">II", total, len(block))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + bytes(block) + payload
    return message + struct.pack(">I", zlib.crc32(message))
