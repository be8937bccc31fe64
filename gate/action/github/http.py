"""The HTTP policy of every GitHub call: settings, one retry policy, typed errors.

PyGithub is built with ``base_url`` from ``GITHUB_API_URL`` (so GitHub Enterprise Server
works) and an explicit timeout. One :class:`RetryPolicy` (5xx and connection errors only,
exponential backoff with a cap, no ``Retry-After`` sleeps, an injectable ``sleep``) paces
every retry: the ones urllib3 makes under PyGithub, the status post and the diff
download. The diff is fetched with httpx (same token, same timeouts, same policy) because
PyGithub decodes bodies as text and the gate needs the exact bytes. Every failure becomes
a :class:`~gate.errors.GitHubError` whose ``reason`` is a stable code and whose message
names the call, the HTTP status and the fix.
"""

from __future__ import annotations

import functools
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from gate import USER_AGENT
from gate.action.blobfetch import FetchCount
from gate.action.github import sdk
from gate.action.github.records import Identity, TreeListing
from gate.errors import GitHubError, UsageError
from gate.safe import strictjson
from gate.safe.redact import redact

DEFAULT_API_URL = "https://api.github.com"


DEFAULT_SERVER_URL = "https://github.com"


API_VERSION = "2022-11-28"


#: largest diff body the gate downloads before falling back to the file list
MAX_FETCH_BYTES = 64 * 1024 * 1024


#: the answers worth asking again (GitHub's transient server errors)
RETRY_STATUSES = frozenset({500, 502, 503, 504})


#: the longest pause between two tries, seconds
MAX_BACKOFF = 10.0


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
    timeout: float = 30.0
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


class GitHubHttp:
    """The HTTP policy every GitHub call goes through: one PyGithub client (one timeout,
    one retry policy, the user agent), :meth:`call` (every failure a typed
    :class:`~gate.errors.GitHubError`) and the exact-bytes GET the diff needs.

    The PyGithub client is built (and PyGithub imported, :mod:`~gate.action.github.sdk`)
    when a call first needs it; the diff download does not."""

    def __init__(self, settings: GitHubSettings) -> None:
        self.settings = settings
        self.policy = settings.retry
        self._identity: Identity | None = None
        self._trees: dict[str, TreeListing] = {}  # a commit's tree never changes
        #: what the last rebuild from blobs did (requests, bytes, files left and why)
        self.last_fetch: FetchCount | None = None

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
            seconds_between_requests=None if not throttle else 0.25,
            seconds_between_writes=None if not throttle else 1.0,
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
                fix = _FIXES.get(
                    status, "see the GitHub API message above; retry the job if transient"
                )
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
        url = f"{self.settings.api_url}{path}"
        timeout = httpx.Timeout(self.settings.timeout)

        def once() -> tuple[int, bytes]:
            with (
                httpx.Client(timeout=timeout, follow_redirects=False) as client,
                client.stream("GET", url, headers=self._headers(accept)) as resp,
            ):
                if resp.status_code in RETRY_STATUSES:
                    raise _ServerError(resp.status_code)
                if resp.status_code == 406:
                    return 406, b""
                chunks: list[bytes] = []
                size = 0
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > MAX_FETCH_BYTES:
                        return 406, b""
                    chunks.append(chunk)
                body = b"".join(chunks)
                if resp.status_code != 200:
                    message = _error_message(body)
                    fix = _FIXES.get(
                        resp.status_code,
                        "a redirect means the repository moved; check GITHUB_REPOSITORY"
                        if 300 <= resp.status_code < 400
                        else "retry the job if transient",
                    )
                    raise GitHubError(
                        f"GitHub answered HTTP {resp.status_code} to {what}: {message}; {fix}",
                        reason=f"github_http_{resp.status_code}",
                    )
                return resp.status_code, body

        tries = self.policy.retries + 1
        try:
            return self.policy.run(
                once, transient=lambda err: isinstance(err, _ServerError | httpx.HTTPError)
            )
        except _ServerError as err:
            raise GitHubError(
                f"GitHub answered HTTP {err.status} to {what} {tries} times; retry the job",
                reason=f"github_http_{err.status}",
            ) from None
        except httpx.HTTPError as err:
            raise GitHubError(
                f"GitHub at {self.settings.api_url} did not answer {what}: "
                f"{_network_cause(err, self.settings.timeout)} ({_tries(tries)}); check "
                "GITHUB_API_URL and the network, or retry the job",
                reason="github_unreachable",
            ) from err


class _ServerError(Exception):
    """A transient server error (5xx) on the diff download: worth another try."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


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


def _network_cause(err: BaseException, timeout: float) -> str:
    """The real reason a request got no answer, in words (never a guess at a timeout)."""
    chain = list(_chain(err))
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
