"""Shared HTTP streaming machinery for every reviewer dialect.

:func:`perform` sends one POST with httpx and streams the answer to a dialect's
parser, under every limit: connect and read timeouts, a total deadline the
gate enforces itself (httpx has none: a watchdog shuts the socket down when
the deadline passes, and the deadline is also checked between chunks), and a
maximum response size. It keeps the body bytes exactly as received (after
chunked decoding; ``Accept-Encoding: identity`` is requested and any other
content coding is refused) and records the HTTP framing evidence: the body is
complete only when its ``Content-Length`` was met or its terminal chunk was
seen (h11 raises otherwise). A close-delimited body (neither) is refused,
because its end cannot be told from a cut.

:class:`Reply` is the one typed result every dialect returns (raw bytes,
content, normalized and verbatim finish reason, end reason, usage, byte
counts, request id, timings); :class:`Parser` is what a dialect provides.
The SSE dialects share :mod:`gate.reviewers.stream`.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx

from gate import __version__
from gate.attempt import Attempt, EndReason, FinishReason
from gate.errors import GateError
from gate.redact import redact
from gate.reviewers.settings import ReviewerSettings

USER_AGENT = f"review-gate/{__version__}"
#: How much of a non-2xx body is read to find the provider's error message.
ERROR_BODY_LIMIT = 64 * 1024
DETAIL_LIMIT = 400


# --- small helpers -------------------------------------------------------------


def one_line(text: str, secret: str | None = None, limit: int = DETAIL_LIMIT) -> str:
    """Redact the secrets in use (and ``secret``), collapse whitespace, bound the length.

    Redaction comes first: a secret cut by the bound would no longer be found whole.
    """
    text = redact(text, secret)
    text = " ".join(text.split()).encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        with contextlib.suppress(ValueError):
            value = float(millis) / 1000.0
            if value >= 0 and value == value and value != float("inf"):
                return value
    text = (headers.get("retry-after") or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        return value if 0 <= value < float("inf") else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


# --- the typed reply -----------------------------------------------------------


@dataclass(frozen=True)
class HttpRequest:
    """What a dialect asks :func:`perform` to send (headers may hold the key)."""

    url: str
    headers: Mapping[str, str] = field(repr=False)
    body: bytes = field(repr=False)


@dataclass(frozen=True)
class Reply:
    """What one attempt produced, the same shape for every dialect."""

    provider: str
    complete: bool
    reason: str
    detail: str
    end_reason: EndReason
    finish_reason: FinishReason = FinishReason.NONE
    provider_finish_reason: str | None = None
    http_status: int | None = None
    raw: bytes = field(default=b"", repr=False)
    content: str = field(default="", repr=False)
    envelope: bytes | None = field(default=None, repr=False)
    usage: Mapping[str, int] = field(default_factory=dict)
    request_id: str | None = None
    elapsed_s: float = 0.0
    first_byte_s: float | None = None
    retryable: bool = False
    retry_after: float | None = None

    @classmethod
    def from_exchange(
        cls,
        exchange: Exchange,
        *,
        provider: str,
        reason: str,
        detail: str,
        end: EndReason,
        secret: str | None,
        request_id: str | None,
        retry: bool = False,
        envelope: bytes | None = None,
        content: str = "",
        finish: FinishReason = FinishReason.NONE,
        provider_finish: str | None = None,
        usage: Mapping[str, int] | None = None,
    ) -> Reply:
        """The reply of one attempt: the dialect's verdict on the bytes plus the exchange's facts.

        ``complete`` is true exactly when an envelope was sealed.
        """
        return cls(
            provider=provider,
            complete=envelope is not None,
            reason=reason,
            detail=one_line(detail, secret),
            end_reason=end,
            finish_reason=finish,
            provider_finish_reason=provider_finish,
            http_status=exchange.status,
            raw=exchange.raw,
            content=content,
            envelope=envelope,
            usage=dict(usage or {}),
            request_id=request_id,
            elapsed_s=exchange.elapsed_s,
            first_byte_s=exchange.first_byte_s,
            retryable=retry,
            retry_after=exchange.retry_after,
        )

    @property
    def raw_sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def to_attempt(self, number: int) -> Attempt:
        return Attempt(
            number=number,
            provider=self.provider,
            complete=self.complete,
            reason=self.reason,
            detail=self.detail,
            end_reason=self.end_reason,
            finish_reason=self.finish_reason,
            provider_finish_reason=self.provider_finish_reason,
            http_status=self.http_status,
            bytes_received=len(self.raw),
            raw_sha256=self.raw_sha256,
            usage=dict(self.usage),
            request_id=self.request_id,
            elapsed_s=self.elapsed_s,
            retryable=self.retryable,
        )


@dataclass(frozen=True)
class Exchange:
    """The HTTP side of one attempt: status, headers, body bytes, framing evidence."""

    status: int | None
    headers: Mapping[str, str]
    raw: bytes = field(repr=False)
    framing: str  # "content_length" | "chunked" | "close" | "" (no response)
    failure: str  # "" when the body arrived whole and within limits, else a reason code
    failure_detail: str
    end_reason: EndReason
    retryable: bool
    elapsed_s: float
    first_byte_s: float | None
    sink_error: GateError | None = None  # the parser refused the bytes and reading stopped

    @property
    def ok(self) -> bool:
        return not self.failure and self.sink_error is None

    @property
    def retry_after(self) -> float | None:
        return parse_retry_after(self.headers)

    def header(self, *names: str) -> str | None:
        for name in names:
            value = self.headers.get(name)
            if value:
                return value
        return None


# --- the deadline watchdog -----------------------------------------------------


class _Watchdog:
    """Shut the connection's socket down when the total deadline passes.

    httpx only has per-operation timeouts; a server trickling a byte just
    inside the read timeout would hold the gate forever. The socket is learnt
    through httpx's public ``trace`` extension as soon as it is connected.
    """

    _SOCKET_EVENTS = frozenset(
        f"{layer}.{step}.complete"
        for layer in ("connection", "proxy", "socks")
        for step in ("connect_tcp", "start_tls")
    )

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.fired = False
        self._armed = True
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disarm()
        self._timer.join()

    def disarm(self) -> None:
        """The exchange is over: a later deadline means nothing."""
        with self._lock:
            self._armed = False
        self._timer.cancel()

    def trace(self, name: str, info: Mapping[str, Any]) -> None:
        if name not in self._SOCKET_EVENTS:
            return
        stream = info.get("return_value")
        getter = getattr(stream, "get_extra_info", None)
        sock = getter("socket") if getter is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sock = sock
            if self.fired:
                self._shutdown()

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self.fired = True
            self._shutdown()

    def _shutdown(self) -> None:
        if self._sock is not None:
            # the plain socket method, so a TLS socket's state is left to its reader
            with contextlib.suppress(OSError):
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)


_SSL_CONTEXT: ssl.SSLContext | None = None
_SSL_LOCK = threading.Lock()


def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process (building one per attempt is slow)."""
    global _SSL_CONTEXT
    with _SSL_LOCK:
        if _SSL_CONTEXT is None:
            _SSL_CONTEXT = httpx.create_ssl_context(trust_env=True)
        return _SSL_CONTEXT


def _framing(headers: Mapping[str, str]) -> str:
    coding = headers.get("transfer-encoding", "").lower()
    if "chunked" in coding:
        return "chunked"
    if "content-length" in headers:
        return "content_length"
    return "close"


def _error_message(body: bytes) -> str:
    """The provider's error message from a JSON error body, else the text."""
    text = redact(body.decode("utf-8", errors="replace"))[:2000]  # redacted before the cut
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict):
        error = value.get("error", value)
        if isinstance(error, dict):
            kind = error.get("type") or error.get("status") or error.get("code") or ""
            message = error.get("message") or ""
            return f"{kind}: {message}" if kind and message else str(message or kind)
        if isinstance(error, str):
            return error
    return text


_STATUS_ADVICE = {
    400: "the provider rejected the request; check model, max_tokens and the prompt size",
    401: "the API key was refused; check the key variable",
    403: "the API key may not use this model or endpoint; check its permissions",
    404: "nothing at this URL; check base_url and the model name",
    408: "the provider timed out the request; retryable",
    413: "the request is too large; lower max_diff_bytes or split the change",
    422: "the provider rejected the request body; check model and max_tokens",
    429: "rate limited or out of quota; retryable after the server's Retry-After",
}


def _status_advice(status: int) -> str:
    if status in _STATUS_ADVICE:
        return _STATUS_ADVICE[status]
    if status >= 500:
        return "the provider failed; retryable"
    if 300 <= status < 400:
        return "the reviewer redirected; set base_url to the final URL"
    return "unexpected HTTP status; check base_url"


def retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def perform(
    settings: ReviewerSettings,
    request: HttpRequest,
    sink: Callable[[bytes], None],
) -> Exchange:
    """Send ``request`` and stream a 2xx body to ``sink``; never raises for network trouble.

    ``sink`` may raise :class:`GateError` to refuse the bytes; reading stops
    and the error is kept in :attr:`Exchange.sink_error`.
    """
    secret = settings.api_key
    start = time.monotonic()
    deadline_at = start + settings.deadline
    raw = bytearray()
    status: int | None = None
    headers: dict[str, str] = {}
    framing = ""
    first_byte: float | None = None
    failure = ""
    detail = ""
    end = EndReason.TRAILER
    retryable = False
    timed_out = False
    sink_error: GateError | None = None
    limit = settings.max_response_bytes
    bound = min(settings.read_timeout, settings.deadline)
    connect_s = min(settings.connect_timeout, settings.deadline)
    timeout = httpx.Timeout(connect=connect_s, read=bound, write=bound, pool=connect_s)
    send_headers = {
        "user-agent": USER_AGENT,
        "accept-encoding": "identity",
        "content-type": "application/json",
        **request.headers,
    }
    watchdog = _Watchdog(settings.deadline)

    def fail(code: str, text: str, reason: EndReason, *, retry: bool) -> None:
        nonlocal failure, detail, end, retryable
        failure, detail, end, retryable = code, text, reason, retry

    try:
        with (
            watchdog,
            httpx.Client(
                timeout=timeout, verify=_ssl_context(), follow_redirects=False, trust_env=True
            ) as client,
            client.stream(
                "POST",
                request.url,
                headers=send_headers,
                content=request.body,
                extensions={"trace": watchdog.trace},
            ) as response,
        ):
            first_byte = time.monotonic() - start
            status = response.status_code
            headers = {key.lower(): value for key, value in response.headers.items()}
            framing = _framing(headers)
            if not 200 <= status < 300:
                for chunk in response.iter_raw():
                    raw += chunk[: ERROR_BODY_LIMIT - len(raw)]
                    if len(raw) >= ERROR_BODY_LIMIT or time.monotonic() > deadline_at:
                        break
                message = one_line(_error_message(bytes(raw)), secret, limit=200)
                fail(
                    f"http_{status}",
                    f"HTTP {status} {response.reason_phrase}"
                    + (f" ({message})" if message else "")
                    + f"; {_status_advice(status)}",
                    EndReason.HTTP_ERROR,
                    retry=retryable_status(status),
                )
            elif headers.get("content-encoding", "identity").lower() not in ("identity", ""):
                fail(
                    "content_encoding",
                    f"the reviewer compressed its answer ({headers['content-encoding']}) although "
                    "identity was asked for; configure the server or proxy not to compress",
                    EndReason.HTTP_ERROR,
                    retry=False,
                )
            elif framing == "content_length" and _declared_over(headers, limit):
                fail(
                    "size_limit",
                    f"the reviewer declared {headers['content-length']} bytes, over "
                    f"max_response_bytes={limit}; raise it or lower max_tokens",
                    EndReason.SIZE_LIMIT,
                    retry=False,
                )
            else:
                for chunk in response.iter_raw():
                    if watchdog.fired or time.monotonic() > deadline_at:
                        timed_out = True
                        break
                    room = limit - len(raw)
                    if len(chunk) > room:
                        raw += chunk[:room]
                        fail(
                            "size_limit",
                            f"the answer passed max_response_bytes={limit} and was cut off "
                            "by the gate; raise max_response_bytes or lower max_tokens",
                            EndReason.SIZE_LIMIT,
                            retry=False,
                        )
                        break
                    raw += chunk
                    try:
                        sink(chunk)
                    except GateError as err:
                        sink_error = err
                        break
                if not failure and sink_error is None and framing == "close":
                    fail(
                        "close_delimited",
                        "the reviewer sent a body with neither Content-Length nor chunked "
                        "encoding, so its end cannot be told from a cut; serve the reviewer "
                        "with HTTP/1.1 framing (or put a framing proxy in front of it)",
                        EndReason.SOCKET_CLOSE,
                        retry=False,
                    )
            watchdog.disarm()
    except httpx.ConnectTimeout as err:
        fail(
            "connect_timeout",
            f"could not connect within {connect_s:g}s ({one_line(str(err), secret, 120)}); "
            "check base_url and the network",
            EndReason.TIMEOUT,
            retry=True,
        )
    except httpx.TimeoutException:
        if watchdog.fired or time.monotonic() > deadline_at:
            timed_out = True
        else:
            fail(
                "timeout",
                f"no bytes for read_timeout={bound:g}s after {len(raw)} bytes; "
                "the reviewer stalled; retryable (raise read_timeout for slow models)",
                EndReason.TIMEOUT,
                retry=True,
            )
    except httpx.ConnectError as err:
        fail(
            "connect_error",
            f"cannot connect to {settings.base_url} ({one_line(str(err), secret, 120)}); "
            "check base_url and that the reviewer is running",
            EndReason.SOCKET_CLOSE,
            retry=True,
        )
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as err:
        if not watchdog.fired:
            where = "before the response" if status is None else f"after {len(raw)} body bytes"
            fail(
                "connection_cut",
                f"the connection closed {where}, before the HTTP message ended "
                f"({one_line(str(err), secret, 120)}); the answer is cut; retryable",
                EndReason.SOCKET_CLOSE,
                retry=True,
            )
    except httpx.InvalidURL as err:
        fail(
            "bad_base_url",
            f"the request URL is invalid ({one_line(str(err), secret, 120)}); check base_url",
            EndReason.HTTP_ERROR,
            retry=False,
        )
    except httpx.HTTPError as err:
        fail(
            "network_error",
            f"HTTP client error {type(err).__name__}: {one_line(str(err), secret, 160)}; "
            "check base_url and any proxy settings",
            EndReason.SOCKET_CLOSE,
            retry=True,
        )
    except (OSError, ssl.SSLError) as err:
        if not watchdog.fired:
            fail(
                "network_error",
                f"network error {type(err).__name__}: {one_line(str(err), secret, 160)}",
                EndReason.SOCKET_CLOSE,
                retry=True,
            )
    elapsed = time.monotonic() - start
    if watchdog.fired or timed_out:
        sink_error = None
        fail(
            "deadline",
            f"the answer took longer than deadline={settings.deadline:g}s "
            f"({len(raw)} bytes arrived); the gate stopped waiting; retryable "
            "(raise deadline for slow models)",
            EndReason.TIMEOUT,
            retry=True,
        )
    return Exchange(
        status=status,
        headers=headers,
        raw=bytes(raw),
        framing=framing,
        failure=failure,
        failure_detail=detail,
        end_reason=end,
        retryable=retryable,
        elapsed_s=elapsed,
        first_byte_s=first_byte,
        sink_error=sink_error,
    )


def _declared_over(headers: Mapping[str, str], limit: int) -> bool:
    value = headers.get("content-length", "").strip()
    return value.isdigit() and int(value) > limit


class Parser(Protocol):
    """What a dialect gives :func:`perform` (``feed``) and then asks (``conclude``)."""

    def feed(self, chunk: bytes) -> None: ...

    def conclude(self, exchange: Exchange) -> Reply: ...
