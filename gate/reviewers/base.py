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
because its end cannot be told from a cut; a head with both is refused unread
(RFC 9112 section 6.3: the end is ambiguous, the mark of request smuggling).
Only a 200 carries an answer: any other status, 2xx included, is a failure
whose message is read from the error body (``error`` objects and ``detail``).

The steps are small functions around one :class:`_Progress`: the head is
checked, then the error body or the success body is read; a transport exception
is mapped to its :class:`Problem` by the table ``_TRANSPORT_RULES``; and the
deadline, when it passed, outweighs every other outcome.

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
from enum import StrEnum
from typing import Protocol
from urllib.parse import urlsplit

import httpx

from gate import USER_AGENT
from gate.decide.attempt import Attempt, EndReason, FinishReason
from gate.decide.signature import Signature
from gate.errors import GateError, Interrupted
from gate.reviewers.limits import classify
from gate.reviewers.settings import ReviewerSettings, shown_url
from gate.safe import tls
from gate.safe.redact import redact
from gate.safe.watchdog import Watchdog

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
    #: MC1: the mc1-signature header as received (gate.reviewers.signed reads it) ...
    signature_header: str | None = field(default=None, repr=False)
    #: ... and the signature the attempt records
    signature: Signature | None = None

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
            signature=self.signature,
        )


class Framing(StrEnum):
    """How the end of a response body is told (RFC 9112 section 6.3)."""

    NONE = ""  # no response arrived
    CONTENT_LENGTH = "content_length"  # the declared length was met (h11 raises otherwise)
    CHUNKED = "chunked"  # the terminal chunk was seen (h11 raises otherwise)
    CLOSE = "close"  # neither: the end cannot be told from a cut, so it is refused
    AMBIGUOUS = "ambiguous"  # both: RFC 9112 section 6.3 calls it an error (smuggling)


class Failure(StrEnum):
    """Why an exchange did not deliver a whole body within limits; the value is the reason code.

    :attr:`HTTP_STATUS` is reported as ``http_<status>`` (:attr:`Exchange.reason`).
    """

    NONE = ""
    HTTP_STATUS = "http_status"
    CONTENT_ENCODING = "content_encoding"
    SIZE_LIMIT = "size_limit"
    CLOSE_DELIMITED = "close_delimited"
    AMBIGUOUS_FRAMING = "ambiguous_framing"
    CONNECT_TIMEOUT = "connect_timeout"
    TIMEOUT = "timeout"
    CONNECT_ERROR = "connect_error"
    CONNECTION_CUT = "connection_cut"
    BAD_BASE_URL = "bad_base_url"
    PLAIN_HTTP = "plain_http"
    NETWORK_ERROR = "network_error"
    DEADLINE = "deadline"
    QUOTA = "quota_exhausted"  # a billing or quota stop (gate.reviewers.limits): not retried


#: failures before the request reached a provider (no connection, no TLS session, a URL
#: that was never asked): no provider saw it, so none can bill it (gate.review.cost)
NEVER_SENT = frozenset(
    {Failure.CONNECT_ERROR, Failure.CONNECT_TIMEOUT, Failure.BAD_BASE_URL, Failure.PLAIN_HTTP}
)


@dataclass(frozen=True)
class Problem:
    """One failure of an exchange: its kind, a line naming cause and fix, and what follows."""

    failure: Failure
    detail: str
    end: EndReason
    retryable: bool


@dataclass(frozen=True)
class Exchange:
    """The HTTP side of one attempt: status, headers, body bytes, framing evidence."""

    status: int | None
    headers: Mapping[str, str]
    raw: bytes = field(repr=False)
    framing: Framing
    failure: Failure  # NONE when the body arrived whole and within limits
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
    def head_refused(self) -> bool:
        """The status line or the headers were refused: no body reached the parser."""
        return (
            self.status is not None and self.status != 200
        ) or self.failure == Failure.AMBIGUOUS_FRAMING

    @property
    def reason(self) -> str:
        """The failure's reason code: ``http_<status>`` for a status, else the failure's value."""
        if self.failure == Failure.HTTP_STATUS:
            return f"http_{self.status}"
        return str(self.failure)

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


# --- reading one exchange --------------------------------------------------------


def _framing(headers: Mapping[str, str]) -> Framing:
    if "transfer-encoding" in headers and "content-length" in headers:
        return Framing.AMBIGUOUS
    coding = headers.get("transfer-encoding", "").lower()
    if "chunked" in coding:
        return Framing.CHUNKED
    if "content-length" in headers:
        return Framing.CONTENT_LENGTH
    return Framing.CLOSE


def _error_message(body: bytes) -> str:
    """The provider's error message from a JSON error body, else the text."""
    text = redact(body.decode("utf-8", errors="replace"))[:2000]  # redacted before the cut
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict) and value.get("error") is None and "detail" in value:
        return _detail_text(value["detail"])  # FastAPI, vLLM, LiteLLM: {"detail": ...}
    if isinstance(value, dict):
        error = value.get("error", value)
        if isinstance(error, dict):
            kind = error.get("type") or error.get("status") or error.get("code") or ""
            message = error.get("message") or ""
            return f"{kind}: {message}" if kind and message else str(message or kind)
        if isinstance(error, str):
            return error
    return text


def _detail_text(detail: object) -> str:
    """The words of a ``{"detail": ...}`` error: a string, or FastAPI's list of problems."""
    if isinstance(detail, str):
        return detail
    items = detail if isinstance(detail, list) else [detail]
    words = []
    for item in items[:5]:
        if isinstance(item, dict) and isinstance(item.get("msg") or item.get("message"), str):
            where = item.get("loc")
            place = ".".join(map(str, where)) + ": " if isinstance(where, list) else ""
            words.append(place + str(item.get("msg") or item.get("message")))
        else:
            words.append(json.dumps(item, ensure_ascii=False, default=str))
    return "; ".join(words)


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
    if 200 <= status < 300:
        return (
            "only a 200 carries a whole answer (206 is a part, 204 and 205 carry none); "
            "check base_url and any proxy in between; not retryable"
        )
    if status >= 500:
        return "the provider failed; retryable"
    if 300 <= status < 400:
        return "the reviewer redirected; set base_url to the final URL"
    return "unexpected HTTP status; check base_url"


def _not_found_advice(url: str, settings: ReviewerSettings) -> str:
    """A 404/405 names the URL requested and, where the path shows it, the mistake."""
    shown = one_line(shown_url(url), settings.api_key, limit=160)
    path = urlsplit(url).path
    advice = f"nothing at the requested URL {shown}"
    doubled = next((p for p in _ENDPOINT_PATHS if path.count(p) > 1), None)
    if doubled or "/v1/v1/" in path:
        what = doubled or "/v1"
        return f"{advice}: {what} is in it twice; set base_url without it (the gate adds it)"
    if settings.provider in _V1_PROVIDERS and "/v1" not in path:
        return (
            f"{advice}: OpenAI-compatible servers serve under /v1; try base_url "
            f"{one_line(shown_url(settings.base_url.rstrip('/')), settings.api_key, 120)}/v1"
        )
    return f"{advice}; check base_url and the model name"


#: the paths the dialects add to base_url (a base_url that already ends in one doubles it)
_ENDPOINT_PATHS = ("/chat/completions", "/responses", "/messages", "/converse-stream")
_V1_PROVIDERS = ("openai", "openai-responses")


def retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _connect_bound(settings: ReviewerSettings) -> float:
    return min(settings.connect_timeout, settings.deadline)


def _read_bound(settings: ReviewerSettings) -> float:
    return min(settings.read_timeout, settings.deadline)


@dataclass
class _Progress:
    """What one exchange has learnt so far: the readers add to it, :func:`perform` seals it."""

    start: float
    deadline_at: float
    raw: bytearray = field(default_factory=bytearray, repr=False)
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    framing: Framing = Framing.NONE
    first_byte_s: float | None = None
    problem: Problem | None = None
    sink_error: GateError | None = None
    timed_out: bool = False
    #: the dialect's count of what it read as the answer (None: the bytes stand for it)
    progress_of: Callable[[], int] | None = None

    def answer_progress(self) -> int:
        return self.progress_of() if self.progress_of is not None else len(self.raw)

    def expired(self) -> bool:
        return time.monotonic() > self.deadline_at

    def seal(self, settings: ReviewerSettings, *, deadline_fired: bool) -> Exchange:
        """The exchange as it ended; a passed deadline outweighs every other outcome."""
        problem, sink_error = self.problem, self.sink_error
        if deadline_fired or self.timed_out:
            sink_error = None
            problem = Problem(
                Failure.DEADLINE,
                f"the answer took longer than deadline={settings.deadline:g}s "
                f"({len(self.raw)} bytes arrived); the gate stopped waiting; retryable "
                "(raise deadline for slow models)",
                EndReason.TIMEOUT,
                retryable=True,
            )
        return Exchange(
            status=self.status,
            headers=self.headers,
            raw=bytes(self.raw),
            framing=self.framing,
            failure=problem.failure if problem else Failure.NONE,
            failure_detail=problem.detail if problem else "",
            end_reason=problem.end if problem else EndReason.TRAILER,
            retryable=problem.retryable if problem else False,
            elapsed_s=time.monotonic() - self.start,
            first_byte_s=self.first_byte_s,
            sink_error=sink_error,
        )


def _read_error_body(
    settings: ReviewerSettings, response: httpx.Response, progress: _Progress
) -> Problem:
    """Read the start of a non-200 body for the provider's message; the status is the failure."""
    raw = progress.raw
    for chunk in response.iter_raw():
        raw += chunk[: ERROR_BODY_LIMIT - len(raw)]
        if len(raw) >= ERROR_BODY_LIMIT or progress.expired():
            break
    status = response.status_code
    message = one_line(_error_message(bytes(raw)), settings.api_key, limit=200)
    said = f"HTTP {status} {response.reason_phrase}" + (f" ({message})" if message else "")
    refusal = classify(settings.provider, status, response.headers, bytes(raw))
    if refusal is None:
        advice = _status_advice(status)
        if status in (404, 405):  # a wrong path: show the URL that was requested
            advice = _not_found_advice(str(response.request.url), settings)
        return Problem(
            Failure.HTTP_STATUS,
            f"{said}; {advice}",
            EndReason.HTTP_ERROR,
            retryable=retryable_status(status),
        )
    return Problem(
        Failure.HTTP_STATUS if refusal.retryable else Failure.QUOTA,
        f"{said}; {refusal.advice(settings.provider)}",
        EndReason.HTTP_ERROR,
        retryable=refusal.retryable,
    )


def _refuse_head(settings: ReviewerSettings, progress: _Progress) -> Problem | None:
    """A 2xx head whose body the gate will not read: compressed, or declared over the limit."""
    headers, limit = progress.headers, settings.max_response_bytes
    if headers.get("content-encoding", "identity").lower() not in ("identity", ""):
        return Problem(
            Failure.CONTENT_ENCODING,
            f"the reviewer compressed its answer ({headers['content-encoding']}) although "
            "identity was asked for; configure the server or proxy not to compress",
            EndReason.HTTP_ERROR,
            retryable=False,
        )
    if progress.framing is Framing.CONTENT_LENGTH and _declared_over(headers, limit):
        return Problem(
            Failure.SIZE_LIMIT,
            f"the reviewer declared {headers['content-length']} bytes, over "
            f"max_response_bytes={limit}; raise it or lower max_tokens",
            EndReason.SIZE_LIMIT,
            retryable=False,
        )
    return None


def _read_success_body(
    settings: ReviewerSettings,
    response: httpx.Response,
    sink: Callable[[bytes], None],
    progress: _Progress,
    watchdog: Watchdog,
) -> Problem | None:
    """Stream a 2xx body to ``sink`` under the size limit and the deadline."""
    raw, limit = progress.raw, settings.max_response_bytes
    for chunk in response.iter_raw():
        if watchdog.fired or progress.expired():
            progress.timed_out = True
            return None
        room = limit - len(raw)
        if len(chunk) > room:
            raw += chunk[:room]
            return Problem(
                Failure.SIZE_LIMIT,
                f"the answer passed max_response_bytes={limit} and was cut off "
                "by the gate; raise max_response_bytes or lower max_tokens",
                EndReason.SIZE_LIMIT,
                retryable=False,
            )
        raw += chunk
        try:
            sink(chunk)
        except GateError as err:
            progress.sink_error = err
            return None
    if progress.framing is Framing.CLOSE:
        return Problem(
            Failure.CLOSE_DELIMITED,
            "the reviewer sent a body with neither Content-Length nor chunked "
            "encoding, so its end cannot be told from a cut; serve the reviewer "
            "with HTTP/1.1 framing (or put a framing proxy in front of it)",
            EndReason.SOCKET_CLOSE,
            retryable=False,
        )
    return None


def _read_response(
    settings: ReviewerSettings,
    response: httpx.Response,
    sink: Callable[[bytes], None],
    progress: _Progress,
    watchdog: Watchdog,
) -> Problem | None:
    """Record the head, then read the body the status calls for."""
    progress.first_byte_s = time.monotonic() - progress.start
    progress.status = response.status_code
    progress.headers = {key.lower(): value for key, value in response.headers.items()}
    progress.framing = _framing(progress.headers)
    if progress.framing is Framing.AMBIGUOUS:
        return Problem(
            Failure.AMBIGUOUS_FRAMING,
            "the reviewer's response has both Transfer-Encoding and Content-Length, so "
            "where its body ends is ambiguous (RFC 9112 section 6.3: a sign of request "
            "smuggling); nothing of it is read; fix the server or the proxy in between",
            EndReason.HTTP_ERROR,
            retryable=False,
        )
    if response.status_code != 200:
        return _read_error_body(settings, response, progress)
    refused = _refuse_head(settings, progress)
    if refused is not None:
        return refused
    return _read_success_body(settings, response, sink, progress, watchdog)


@dataclass(frozen=True)
class _TransportRule:
    """How one family of transport exceptions is reported (cf. httpx's exception mapping).

    ``detail`` is formatted with ``connect``/``read`` (the bounds in seconds),
    ``base_url``, ``where`` (how far the answer got), ``received`` (body bytes),
    ``kind`` (the exception's class) and ``error`` (its text, redacted, at most
    ``limit`` characters).
    """

    errors: tuple[type[Exception], ...]
    failure: Failure
    end: EndReason
    retryable: bool
    detail: str
    limit: int = 120


#: The first rule whose ``errors`` match is taken, so subclasses come before their bases.
_TRANSPORT_RULES = (
    _TransportRule(
        (httpx.ConnectTimeout,),
        Failure.CONNECT_TIMEOUT,
        EndReason.TIMEOUT,
        True,
        "could not connect within {connect:g}s ({error}); check base_url and the network",
    ),
    _TransportRule(
        (httpx.TimeoutException,),
        Failure.TIMEOUT,
        EndReason.TIMEOUT,
        True,
        "no bytes for read_timeout={read:g}s after {received} bytes; the reviewer stalled; "
        "retryable (raise read_timeout for slow models)",
    ),
    _TransportRule(
        (httpx.ConnectError,),
        Failure.CONNECT_ERROR,
        EndReason.SOCKET_CLOSE,
        True,
        "cannot connect to {base_url} ({error}); check base_url and that the reviewer is running",
    ),
    _TransportRule(
        (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError),
        Failure.CONNECTION_CUT,
        EndReason.SOCKET_CLOSE,
        True,
        "the connection closed {where}, before the HTTP message ended ({error}); "
        "the answer is cut; retryable",
    ),
    _TransportRule(
        (httpx.InvalidURL,),
        Failure.BAD_BASE_URL,
        EndReason.HTTP_ERROR,
        False,
        "the request URL is invalid ({error}); check base_url",
    ),
    _TransportRule(
        (httpx.HTTPError,),
        Failure.NETWORK_ERROR,
        EndReason.SOCKET_CLOSE,
        True,
        "HTTP client error {kind}: {error}; check base_url and any proxy settings",
        limit=160,
    ),
    _TransportRule(
        (OSError,),  # ssl.SSLError included
        Failure.NETWORK_ERROR,
        EndReason.SOCKET_CLOSE,
        True,
        "network error {kind}: {error}",
        limit=160,
    ),
)


#: OpenSSL's reasons for a handshake answered by something that is not TLS (a plain-HTTP
#: server answers "HTTP/1.1 400 ...": its first bytes are no TLS record header)
_NOT_TLS = frozenset(
    {"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "PACKET_LENGTH_TOO_LONG", "RECORD_LAYER_FAILURE"}
)


def _handshake_cut(err: BaseException) -> bool:
    """Whether ``err`` (or what it wraps) is a TLS handshake the server closed without a
    TLS answer (an EOF, a reset): what a plain-HTTP server does when the request line it
    waits for never comes (Python's http.server, the demo's reviewer). A TLS server that
    refuses a handshake sends an alert instead (a certificate problem is never this)."""
    seen: BaseException | None = err
    for _ in range(5):  # bounded: the wrapping chain is short
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLEOFError | ssl.SSLZeroReturnError | ConnectionResetError):
            return True
        if isinstance(seen, ssl.SSLError) and str(seen.reason) == "UNEXPECTED_EOF_WHILE_READING":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _plain_http(err: BaseException) -> bool:
    """Whether ``err`` (or what it wraps) is a TLS handshake that got a plain-HTTP answer."""
    seen: BaseException | None = err
    for _ in range(5):  # bounded: the wrapping chain is short
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError) and str(seen.reason) in _NOT_TLS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


#: how long the plain-HTTP probe after a hung TLS handshake may take, each step
PROBE_TIMEOUT = 1.0


def _answers_plain_http(settings: ReviewerSettings) -> bool:
    """After a TLS handshake that timed out: does the same host and port answer a plain
    ``HEAD / HTTP/1.0`` with an HTTP status line? (A plain-HTTP server waits for a
    request line the ClientHello never completes, so the handshake hangs.) One bounded
    probe, only for an https base URL; any error means no."""
    parts = urlsplit(settings.base_url)
    if parts.scheme != "https" or not parts.hostname:
        return False
    try:
        port = parts.port or 443
        with socket.create_connection((parts.hostname, port), timeout=PROBE_TIMEOUT) as sock:
            sock.settimeout(PROBE_TIMEOUT)
            sock.sendall(b"HEAD / HTTP/1.0\r\nHost: " + parts.hostname.encode("idna") + b"\r\n\r\n")
            return sock.recv(16).startswith(b"HTTP/")
    except (OSError, ValueError, UnicodeError):
        return False


def _transport_problem(
    err: Exception, settings: ReviewerSettings, progress: _Progress, watchdog: Watchdog
) -> Problem | None:
    """The problem a transport exception stands for; None when the deadline explains it."""
    # a handshake that hung (ConnectTimeout) or that the server closed without a TLS
    # answer: a plain-HTTP server waiting for a request line; one probe says so at once
    handshake_hung = isinstance(err, httpx.ConnectTimeout) or (
        isinstance(err, httpx.ConnectError) and _handshake_cut(err)
    )
    if progress.status is None and (
        _plain_http(err)
        or (handshake_hung and not watchdog.fired and _answers_plain_http(settings))
    ):
        plain = one_line(shown_url("http" + settings.base_url.removeprefix("https")), None, 120)
        return Problem(
            Failure.PLAIN_HTTP,
            f"the server speaks plain http: the TLS handshake with {settings.base_url} got a "
            f"plain-HTTP answer (or none, while a plain request is answered); use base_url "
            f"{plain}, not retryable",
            EndReason.SOCKET_CLOSE,
            retryable=False,
        )
    rule = next(rule for rule in _TRANSPORT_RULES if isinstance(err, rule.errors))
    if watchdog.fired or (rule.failure is Failure.TIMEOUT and progress.expired()):
        progress.timed_out = True  # the watchdog shut the socket: that is the cause
        return None
    received = len(progress.raw)
    detail = rule.detail.format(
        connect=_connect_bound(settings),
        read=_read_bound(settings),
        base_url=settings.base_url,
        where="before the response" if progress.status is None else f"after {received} body bytes",
        received=received,
        kind=type(err).__name__,
        error=one_line(str(err), settings.api_key, rule.limit),
    )
    return Problem(rule.failure, detail, rule.end, rule.retryable)


def _client(settings: ReviewerSettings) -> httpx.Client:
    connect, read = _connect_bound(settings), _read_bound(settings)
    return httpx.Client(
        timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=connect),
        verify=tls.context(),
        follow_redirects=False,
        trust_env=True,
    )


#: the streams open now (for :func:`open_streams`: the command line's heartbeat)
_OPEN: dict[int, _Progress] = {}
_OPEN_LOCK = threading.Lock()


def open_streams() -> list[tuple[int, float, int, int]]:
    """Each open exchange as (its id, seconds since it started, bytes received so far,
    answer progress): what a heartbeat says while a stream is silent
    (gate/reviewers/heartbeat.py). The progress is the dialect's count of what it read
    as the answer (events with data for the SSE dialects), so keep-alive comments
    (``: ping``, which llama.cpp's server sends every 15 s) are bytes, not progress;
    a dialect that counts nothing reports the bytes."""
    now = time.monotonic()
    with _OPEN_LOCK:
        live = list(_OPEN.items())
    return [(key, now - p.start, len(p.raw), p.answer_progress()) for key, p in live]


def perform(
    settings: ReviewerSettings,
    request: HttpRequest,
    sink: Callable[[bytes], None],
    progress_of: Callable[[], int] | None = None,
    *,
    watchdog: Watchdog | None = None,
) -> Exchange:
    """Send ``request`` and stream a 2xx body to ``sink``; never raises for network trouble.

    ``sink`` may raise :class:`GateError` to refuse the bytes; reading stops
    and the error is kept in :attr:`Exchange.sink_error`. ``progress_of`` counts what
    the dialect read as the answer so far (for :func:`open_streams`). ``watchdog`` is the
    caller's own deadline (made with ``settings.deadline``), for a caller that may cut the
    exchange early (:meth:`Watchdog.cut`); the exchange then ends as a passed deadline.
    """
    start = time.monotonic()
    progress = _Progress(
        start=start, deadline_at=start + settings.deadline, progress_of=progress_of
    )
    headers = {
        "user-agent": USER_AGENT,
        "accept-encoding": "identity",
        "content-type": "application/json",
        **request.headers,
    }
    watchdog = watchdog if watchdog is not None else Watchdog(settings.deadline)
    with _OPEN_LOCK:
        _OPEN[id(progress)] = progress
    try:
        with (
            watchdog,
            _client(settings) as client,
            client.stream(
                "POST",
                request.url,
                headers=headers,
                content=request.body,
                extensions={"trace": watchdog.trace},
            ) as response,
        ):
            progress.problem = _read_response(settings, response, sink, progress, watchdog)
            watchdog.disarm()
    except (httpx.HTTPError, OSError) as err:
        progress.problem = _transport_problem(err, settings, progress, watchdog)
    except KeyboardInterrupt as err:  # Ctrl-C: the front end records what had arrived
        raise Interrupted(bytes(progress.raw)) from err
    finally:
        with _OPEN_LOCK:
            _OPEN.pop(id(progress), None)
    return progress.seal(settings, deadline_fired=watchdog.fired)


def _declared_over(headers: Mapping[str, str], limit: int) -> bool:
    value = headers.get("content-length", "").strip()
    return value.isdigit() and int(value) > limit


class Parser(Protocol):
    """What a dialect gives :func:`perform` (``feed``) and then asks (``conclude``)."""

    def feed(self, chunk: bytes) -> None: ...

    def conclude(self, exchange: Exchange) -> Reply: ...
