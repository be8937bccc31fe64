"""The HTTP policy of every GitHub call: settings, one retry policy, typed errors.

Two clients share it, both built with ``base_url`` from ``GITHUB_API_URL`` (so GitHub
Enterprise Server works), one timeout and the user agent. The gate's own httpx client
makes the calls a run needs first (the pull request, the config, the statuses, the
identity, the history, the head tree, the diff's exact bytes: :meth:`GitHubHttp._rest`,
:meth:`GitHubHttp._pages`, :meth:`GitHubHttp._get_bytes`), so PyGithub, the client of
record for the rest, is imported only when a later call needs it. One
:class:`RetryPolicy` (5xx and transport errors only, exponential backoff with a cap, no
``Retry-After`` sleeps, an injectable ``sleep``) paces every retry, httpx's and the ones
urllib3 makes under PyGithub; both pace requests as GitHub asks; httpx follows no
redirect and reads JSON strictly. Every failure becomes a
:class:`~gate.errors.GitHubError` whose ``reason`` is a stable code and whose message
names the call, the HTTP status and the fix.
"""

from __future__ import annotations

import functools
import socket
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from gate import USER_AGENT
from gate.action.blobfetch import FetchCount
from gate.action.github import sdk
from gate.action.github.records import Identity, TreeListing
from gate.errors import GitHubError, UsageError
from gate.safe import strictjson, tls
from gate.safe.redact import redact
from gate.safe.watchdog import Watchdog

DEFAULT_API_URL = "https://api.github.com"


DEFAULT_SERVER_URL = "https://github.com"


API_VERSION = "2022-11-28"


#: largest diff body the gate downloads before falling back to the file list
MAX_FETCH_BYTES = 64 * 1024 * 1024


#: the answers worth asking again (GitHub's transient server errors)
RETRY_STATUSES = frozenset({500, 502, 503, 504})


#: the longest pause between two tries, seconds
MAX_BACKOFF = 10.0


#: GitHub's guidance on pacing, seconds between two requests and between two writes
#: (PyGithub's ``seconds_between_requests``/``_writes``; ``throttle`` off in tests)
REQUEST_GAP = 0.25
WRITE_GAP = 1.0


JSON_MEDIA_TYPE = "application/vnd.github+json"


#: items asked for per page of a list (GitHub's largest)
PER_PAGE = 100


#: how much of a 5xx answer's body is read for its message
ERROR_BODY_BYTES = 64 * 1024


#: the longest one request may take, its head and body included, seconds: httpx's
#: timeouts are per read, so an answer sent a byte at a time just inside the read timeout
#: would hold the run for as long as the sender liked (64 MB at one byte a read). When it
#: passes, the client's sockets are shut down (:class:`gate.safe.watchdog.Watchdog`), and
#: the body's reads check it too.
REQUEST_DEADLINE = 120.0


T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """The one retry policy for GitHub: ``retries`` more tries after the first, pausing
    ``backoff * 2**(n-1)`` seconds (at most :data:`MAX_BACKOFF`) before the n-th retry,
    with ``sleep`` (injectable: tests and the demo pass one that does not wait)."""

    retries: int = 2
    backoff: float = 0.5
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    def pause(self, retry: int) -> None:
        """Wait before retry number ``retry`` (1 for the first retry)."""
        delay = min(MAX_BACKOFF, self.backoff * 2 ** (retry - 1))
        if retry > 0 and delay > 0:
            self.sleep(delay)

    def run(self, once: Callable[[], T], *, transient: Callable[[Exception], bool]) -> T:
        """``once()``, tried again (after a pause) while it raises a transient error."""
        for retry in range(self.retries + 1):
            self.pause(retry)
            try:
                return once()
            except Exception as err:
                if retry == self.retries or not transient(err):
                    raise
        raise AssertionError("unreachable: the last try returns or raises")  # pragma: no cover

    def for_urllib3(self) -> Any:
        """The same policy for the requests PyGithub makes (through urllib3's ``Retry``)."""
        return sdk.urllib3_retry(
            self,
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            status_forcelist=tuple(sorted(RETRY_STATUSES)),
            respect_retry_after_header=False,
            raise_on_status=False,
        )


@dataclass(frozen=True)
class GitHubSettings:
    """How to reach GitHub. ``token`` is never printed (``repr=False``)."""

    repository: str  # owner/name
    api_url: str = DEFAULT_API_URL
    server_url: str = DEFAULT_SERVER_URL
    token: str = field(default="", repr=False)
    timeout: float = 30.0  # per connect, per read (httpx), per request (PyGithub)
    #: one httpx request, its body included (:data:`REQUEST_DEADLINE`)
    deadline: float = REQUEST_DEADLINE
    retries: int = 2
    backoff: float = 0.5
    throttle: bool = True  # PyGithub's pause between requests (GitHub's guidance); off in tests
    #: the token's account, when the workflow names it (the input ``identity``), else learned
    identity: str = ""
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(retries=self.retries, backoff=self.backoff, sleep=self.sleep)

    @staticmethod
    def from_env(env: Mapping[str, str], *, token: str) -> GitHubSettings:
        repository = env.get("GITHUB_REPOSITORY", "")
        if "/" not in repository:
            raise UsageError(
                "GITHUB_REPOSITORY is not set (expected owner/name); "
                "run review-gate action inside a GitHub Actions job"
            )
        if not token:
            raise UsageError(
                "no GitHub token: set the action input 'token' (default ${{ github.token }})"
            )
        return GitHubSettings(
            repository=repository,
            api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            server_url=(env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/"),
            token=token,
            identity=(env.get("INPUT_IDENTITY") or "").strip(),
        )

    def run_url(self, run_id: str) -> str | None:
        """The workflow run's page (the status ``target_url``), when the run id is known."""
        if not run_id:
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{run_id}"


def _http_status(err: Exception) -> int:
    return int(getattr(err, "status", 0) or 0)


def _github_message(err: Exception) -> str:
    data = getattr(err, "data", None)
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"])
    return str(err)


_FIXES = {
    401: "the token is invalid or expired; check the action input 'token'",
    403: "the token lacks a permission (statuses: write, contents: read, pull-requests: "
    "read/write); a pull_request run from a fork gets a read-only token",
    404: "check the repository, the number/SHA, and that the token can read the repository",
}


def _fix(status: int, headers: Mapping[str, str]) -> str:
    """What to do about a non-2xx answer (the same words for PyGithub's calls and httpx's).

    A 403/429 that says the rate limit is spent (``x-ratelimit-remaining: 0`` or a
    ``retry-after``, GitHub's primary and secondary limits) is not a missing permission."""
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if status in (403, 429) and (
        lowered.get("x-ratelimit-remaining") == "0" or "retry-after" in lowered
    ):
        return "GitHub's rate limit for this token is spent; re-run the job later"
    if 300 <= status < 400:
        return "a redirect means the repository moved; check GITHUB_REPOSITORY"
    return _FIXES.get(status, "see the GitHub API message above; retry the job if transient")


class GitHubHttp:
    """The HTTP policy every GitHub call goes through: one httpx client (``_rest``,
    ``_pages``, the exact-bytes GET) and one PyGithub client (:meth:`call`), with one
    timeout, one retry policy and the user agent; every failure a typed
    :class:`~gate.errors.GitHubError`.

    The PyGithub client is built (and PyGithub imported, :mod:`~gate.action.github.sdk`)
    when a call first needs it; the httpx calls do not."""

    def __init__(self, settings: GitHubSettings) -> None:
        self.settings = settings
        self.policy = settings.retry
        self._identity: Identity | None = None
        #: the identity was read from what the head showed, not yet confirmed by a write
        self._identity_read = False
        #: (kind, sha, context) -> the id of the status or check run this client wrote
        #: there last (the read-your-writes check of :mod:`gate.action.github.write`)
        self._written: dict[tuple[str, str, str], int] = {}
        self._trees: dict[str, TreeListing] = {}  # a commit's tree never changes
        #: what the last rebuild from blobs did (requests, bytes, files left and why)
        self.last_fetch: FetchCount | None = None
        self._last_request: float | None = None  # monotonic, for the pacing over httpx
        self._last_write: float | None = None
        #: the httpx client's connected sockets (kept alive between requests), which a
        #: request's :class:`gate.safe.watchdog.Watchdog` shuts down at its deadline
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    @functools.cached_property
    def _gh(self) -> Any:
        """The PyGithub client, built at its first use."""
        throttle = self.settings.throttle
        return sdk.client(
            token=self.settings.token,
            base_url=self.settings.api_url,
            timeout=max(1, round(self.settings.timeout)),
            user_agent=USER_AGENT,
            retry=self.policy.for_urllib3(),
            seconds_between_requests=None if not throttle else REQUEST_GAP,
            seconds_between_writes=None if not throttle else WRITE_GAP,
        )

    @functools.cached_property
    def _repo(self) -> Any:
        """The PyGithub repository (lazy: PyGithub makes no request for it)."""
        return self._gh.get_repo(self.settings.repository)

    @property
    def repo(self) -> Any:
        """The PyGithub repository (lazy), for the modules that add calls of their own
        (:mod:`gate.action.reviews`); each such call goes through :meth:`call`."""
        return self._repo

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` with GitHub's errors turned into a :class:`GitHubError` naming ``what``."""
        return self._call(what, fn)

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except Exception as err:
            if sdk.is_github_error(err):
                status = _http_status(err)
                fix = _fix(status, getattr(err, "headers", None) or {})
                raise GitHubError(
                    f"GitHub answered HTTP {status} to {what}: {_github_message(err)}; {fix}",
                    reason=f"github_http_{status}",
                ) from err
            if not sdk.is_requests_error(err):
                raise
            tries = self.settings.retries + 1
            raise GitHubError(
                f"GitHub at {self.settings.api_url} did not answer {what}: "
                f"{_network_cause(err, self.settings.timeout)} ({_tries(tries)}); "
                "check GITHUB_API_URL and the network",
                reason="github_unreachable",
            ) from err

    def _headers(self, accept: str) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.settings.token}",
            "Accept": accept,
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        }

    def _get_bytes(self, what: str, path: str, accept: str) -> tuple[int, bytes]:
        """GET raw bytes (diff media type). Returns (status, body); 406/size cap -> (406, b"")."""
        answer = self._exchange(what, "GET", f"{self.settings.api_url}{path}", accept=accept)
        if answer.status == 406 or answer.body is None:
            return 406, b""
        if answer.status != 200:
            raise _answer_error(what, answer)
        return answer.status, answer.body

    # --- JSON over the same httpx client: the first calls of a run need no PyGithub ---

    def _rest(
        self,
        method: str,
        what: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
        missing: bool = False,
    ) -> Any:
        """One REST call over httpx under the one policy, its JSON answer parsed strictly.

        ``missing``: a 404 answers None instead of raising (the contents API's absence).
        Any other non-2xx is a :class:`GitHubError` naming ``what``, the status and the fix."""
        self._pace(write=method != "GET")
        url = self._url(path)
        answer = self._exchange(what, method, url, accept=JSON_MEDIA_TYPE, params=params, body=body)
        if missing and answer.status == 404:
            return None
        if not 200 <= answer.status < 300:
            raise _answer_error(what, answer)
        return _json_of(what, answer)

    def _pages(
        self,
        what: str,
        path: str,
        *,
        limit: int,
        query: Mapping[str, str] | None = None,
        key: str | None = None,
    ) -> Iterator[Any]:
        """The items of a paginated list, page by page (``per_page=100`` and ``query`` on
        the first page, the ``Link`` header's ``next`` after it), lazily: the caller stops
        when it has seen enough. ``key``: the page is an object holding the list under
        that name (``check_runs``), not a list. A next page on another host, more than
        ``limit`` items, or more pages than ``limit`` items fill (an endless chain of short
        pages), is refused, never followed."""
        url: str | None = self._url(path)
        params: Mapping[str, str] | None = {"per_page": str(PER_PAGE), **(query or {})}
        served = 0
        for _page in range(limit // PER_PAGE + 2):
            if url is None:
                return
            self._pace(write=False)
            answer = self._exchange(what, "GET", url, accept=JSON_MEDIA_TYPE, params=params)
            if answer.status != 200:
                raise _answer_error(what, answer)
            items = _json_of(what, answer)
            if key is not None:
                items = items.get(key) if isinstance(items, dict) else None
                if not isinstance(items, list):
                    raise _bad_payload(what, f"a page is not an object holding a {key} list")
            if not isinstance(items, list):
                raise _bad_payload(what, f"a page is {type(items).__name__}, not a list")
            for item in items:
                served += 1
                if served > limit:
                    raise _bad_payload(what, f"the list goes on past {limit} items")
                yield item
            url, params = self._next_page(what, answer), None
        if url is not None:
            raise _bad_payload(what, f"the list has more pages than {limit} items fill")

    def _next_page(self, what: str, answer: _Answer) -> str | None:
        """The ``next`` link of a page, only on the API's own host and path."""
        link = _next_link(answer.headers.get("link", ""))
        if link is None:
            return None
        api, found = httpx.URL(self.settings.api_url), httpx.URL(link)
        same = (found.scheme, found.host, found.port) == (api.scheme, api.host, api.port)
        if not same or not found.path.startswith(api.path.rstrip("/") + "/"):
            raise _bad_payload(what, "the next page is on another host; it was not followed")
        return link

    def _url(self, path: str) -> str:
        return f"{self.settings.api_url}{path}"

    @functools.cached_property
    def _http(self) -> httpx.Client:
        """The one httpx client (one timeout, redirects refused, connections kept, the
        process's one verifying TLS context, built only when GitHub is reached over TLS)."""
        client = httpx.Client(
            timeout=httpx.Timeout(self.settings.timeout),
            verify=tls.for_url(self.settings.api_url),
            follow_redirects=False,
        )
        weakref.finalize(self, client.close)
        return client

    def _pace(self, *, write: bool) -> None:
        """GitHub's guidance, as PyGithub keeps it: 0.25 s between requests, 1 s between
        writes (``throttle``; off in tests)."""
        if not self.settings.throttle:
            return
        now = time.monotonic()
        gap = WRITE_GAP if write else REQUEST_GAP
        last = self._last_write if write else self._last_request
        if last is not None and now - last < gap:
            self.settings.sleep(gap - (now - last))
        self._last_request = time.monotonic()
        if write:
            self._last_write = self._last_request

    def _exchange(
        self,
        what: str,
        method: str,
        url: str,
        *,
        accept: str,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> _Answer:
        """One request, tried again (the retry policy) on a 5xx or a transport error (a
        refused connection, a timeout, a cut body). The body is read up to
        :data:`MAX_FETCH_BYTES` (past it: ``body`` None) within the settings' ``deadline``
        (past it: :class:`_Overdue`, a transport error). The last 5xx, or the last
        transport error, is a :class:`GitHubError`."""

        def once() -> _Answer:
            until = time.monotonic() + self.settings.deadline
            watchdog = Watchdog(self.settings.deadline, self._sockets)
            try:
                with (
                    watchdog,
                    self._http.stream(
                        method,
                        url,
                        params=params,
                        json=body,
                        headers=self._headers(accept),
                        extensions={"trace": watchdog.trace},
                    ) as resp,
                ):
                    if resp.status_code in RETRY_STATUSES:
                        error_body = _read(resp, ERROR_BODY_BYTES, until=until) or b""
                        raise _ServerError(resp.status_code, error_body)
                    found = _read(resp, MAX_FETCH_BYTES, until=until)
                    return _Answer(resp.status_code, resp.headers, found)
            except httpx.HTTPError as err:
                if watchdog.fired and not isinstance(err, _Overdue):
                    raise _Overdue("the answer was still coming at the deadline") from err
                raise

        tries = self.policy.retries + 1
        try:
            return self.policy.run(
                once, transient=lambda err: isinstance(err, _ServerError | httpx.HTTPError)
            )
        except _ServerError as err:
            raise GitHubError(
                f"GitHub answered HTTP {err.status} to {what} {tries} times: "
                f"{_error_message(err.body)}; retry the job",
                reason=f"github_http_{err.status}",
            ) from None
        except httpx.HTTPError as err:
            raise GitHubError(
                f"GitHub at {self.settings.api_url} did not answer {what}: "
                f"{_network_cause(err, self.settings.timeout, self.settings.deadline)} "
                f"({_tries(tries)}); check GITHUB_API_URL and the network, or retry the job",
                reason="github_unreachable",
            ) from err


@dataclass(frozen=True)
class _Answer:
    """GitHub's final answer to one request: status, headers, body (None past the cap)."""

    status: int
    headers: httpx.Headers
    body: bytes | None


class _Overdue(httpx.TransportError):
    """The answer's body was still coming at the request's deadline (a transport fault:
    retried like a timeout, then ``github_unreachable``)."""


def _read(resp: httpx.Response, cap: int, *, until: float) -> bytes | None:
    """The response's body, or None when it is longer than ``cap`` bytes (not read on);
    :class:`_Overdue` when it is not whole by ``until`` (monotonic seconds)."""
    chunks: list[bytes] = []
    size = 0
    for chunk in resp.iter_bytes():
        if time.monotonic() > until:
            raise _Overdue("the answer's body was still coming at the request's deadline")
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _answer_error(what: str, answer: _Answer) -> GitHubError:
    """A non-2xx answer as a :class:`GitHubError`: the status, GitHub's message, the fix."""
    message = _error_message(answer.body or b"")
    fix = _fix(answer.status, answer.headers)
    return GitHubError(
        f"GitHub answered HTTP {answer.status} to {what}: {message}; {fix}",
        reason=f"github_http_{answer.status}",
    )


def _json_of(what: str, answer: _Answer) -> Any:
    """The answer's JSON (strict: UTF-8, no duplicate key, finite numbers), else
    ``github_bad_payload``."""
    if answer.body is None:
        raise _bad_payload(what, f"the answer is larger than {MAX_FETCH_BYTES} bytes")
    try:
        return strictjson.loads(answer.body, what="the answer", error=GitHubError)
    except GitHubError as err:
        raise _bad_payload(what, err.message) from None


def _bad_payload(what: str, why: str) -> GitHubError:
    return GitHubError(
        f"GitHub's answer to {what} cannot be read: {why}; retry the job",
        reason="github_bad_payload",
    )


def _next_link(header: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header (RFC 8288), or None."""
    for part in header.split(","):
        target, _, rels = part.partition(";")
        target = target.strip()
        if not (target.startswith("<") and target.endswith(">")):
            continue
        for param in rels.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "rel" and "next" in value.strip().strip('"').split():
                return target[1:-1]
    return None


class _ServerError(Exception):
    """A transient server error (5xx): worth another try."""

    def __init__(self, status: int, body: bytes = b"") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


def _tries(count: int) -> str:
    return "1 try" if count == 1 else f"{count} tries"


def _chain(err: BaseException) -> Iterator[BaseException]:
    """``err``, its causes and contexts, and exceptions carried in ``args`` (urllib3 wraps
    the socket error in ``MaxRetryError.reason``), each once, bounded."""
    todo: list[BaseException] = [err]
    seen: set[int] = set()
    while todo and len(seen) < 32:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        nested = [item.__cause__, item.__context__, getattr(item, "reason", None), *item.args]
        todo.extend(x for x in nested if isinstance(x, BaseException))


def _network_cause(err: BaseException, timeout: float, deadline: float | None = None) -> str:
    """The real reason a request got no answer, in words (never a guess at a timeout)."""
    chain = list(_chain(err))
    if any(isinstance(e, _Overdue) for e in chain):
        return (
            f"its answer was still coming after {deadline or REQUEST_DEADLINE:g}s (a body sent "
            "slower than GitHub sends one)"
        )
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return "connection refused"
    if any(isinstance(e, ConnectionResetError) for e in chain) or "reset by peer" in text:
        return "connection reset"
    timeouts = httpx.TimeoutException | TimeoutError
    if any(isinstance(e, timeouts) or sdk.is_requests_timeout(e) for e in chain):
        return f"no answer within {timeout:g}s"
    if "timed out" in text:
        return f"no answer within {timeout:g}s"
    if any(isinstance(e, socket.gaierror) for e in chain) or "name resolution" in text:
        return "the host name does not resolve"
    return f"{type(err).__name__}: {err}"


def _iter(items: Any) -> Iterator[Any]:
    yield from items


def _error_message(body: bytes) -> str:
    """GitHub's message from an error body, else its start (redacted before the cut)."""
    try:
        data = strictjson.loads(body, what="the error body", error=GitHubError)
    except GitHubError:
        data = None
    if isinstance(data, dict) and "message" in data:
        return redact(str(data["message"]))
    return redact(body.decode("utf-8", "replace"))[:200]
