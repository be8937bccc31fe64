"""Server-sent events: an incremental parser that follows the WHATWG rules.

Bytes are fed in any chunking; events come out only when their blank line has
arrived, so an event cut in half is never dispatched (``pending`` says that
bytes of an undispatched event are waiting). Lines end with CRLF, LF or CR; a
line starting with ``:`` is a comment; ``data`` lines are joined with ``\\n``;
one leading space after the colon is removed. Lines must be strict UTF-8,
otherwise :class:`~gate.errors.TransportError` with reason ``malformed_event``.

One deliberate departure from WHATWG, which drops an event without a ``data``
line: an event that has a name is dispatched even without data (``data`` is
then None), as the official provider SDKs do, so ``event: error`` followed by a
blank line reaches the dialect and voids the answer instead of vanishing. An
event with neither name nor data (only ``id:`` or ``retry:``) carries nothing
and is not dispatched. An unnamed event keeps ``event == ""``; it is not renamed
``message``, so a dialect can tell a missing name from a given one.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.errors import TransportError


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event."""

    event: str  # the ``event:`` field; "" when the stream gave none
    data: str | None  # the ``data:`` lines joined with "\n"; None when there was none
    id: str | None = None


class SSEParser:
    """Feed bytes, collect complete events."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._clean = 0  # bytes at the start of _buf already searched: no CR or LF in them
        self._skip_lf = False
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._fields = False  # a field of the current event has been seen
        self.comments = 0

    @property
    def pending(self) -> bool:
        """Bytes of an event that has not been dispatched (no blank line yet)."""
        return bool(self._buf) or self._fields

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        if not chunk:
            return out
        data = bytes(chunk)
        if self._skip_lf:
            self._skip_lf = False
            if data[:1] == b"\n":
                data = data[1:]
        self._buf += data
        if not self._started:
            if len(self._buf) < 3 and b"\xef\xbb\xbf".startswith(bytes(self._buf)):
                return out
            self._started = True
            if self._buf.startswith(b"\xef\xbb\xbf"):
                del self._buf[:3]
        start = 0
        buf = self._buf
        size = len(buf)
        while start < size:
            # a line cut across chunks is searched once, not again with every chunk
            # (1-byte chunks of one long line would cost time quadratic in its length)
            scan = max(start, self._clean)
            lf = buf.find(b"\n", scan)
            cr = buf.find(b"\r", scan, lf if lf >= 0 else size)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < size:
                    if buf[nxt] == 0x0A:
                        nxt += 1
                else:
                    self._skip_lf = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            event = self._line(bytes(buf[start:end]))
            if event is not None:
                out.append(event)
            start = nxt
        del buf[:start]
        self._clean = len(buf)  # what is left holds no line ending
        return out

    def _line(self, raw: bytes) -> SSEEvent | None:
        try:
            line = raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError as err:
            raise TransportError(
                f"malformed event: a line is not UTF-8 at byte {err.start}; "
                "the stream is corrupt or not server-sent events",
                reason="malformed_event",
            ) from None
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            self.comments += 1
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        self._fields = True
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        event, data, ident = self._event, self._data, self._id
        self._event, self._data, self._fields = "", [], False
        if not data and not event:
            return None
        return SSEEvent(event=event, data="\n".join(data) if data else None, id=ident)
