"""Every GitHub call the action sends over httpx ends in a typed GitHubError on any answer
GitHub could not have meant, through real sockets, in a bounded number of requests.

Class: *an answer is read as more than it is.* The first calls of a run (the pull request,
the config at the base, the tree, the statuses, the comments, the identity, the sibling
pull requests) moved from PyGithub to the gate's own httpx client (issue 22). Each must
keep the policy of the diff download: 5xx and transport faults (a refused or cut
connection, a body shorter than its ``Content-Length``) retried by the one
:class:`~gate.action.github.http.RetryPolicy` and then ``github_http_5xx`` /
``github_unreachable``; redirects never followed; a JSON body that is ambiguous (a key
twice), not UTF-8, or of the wrong shape is ``github_bad_payload``; a list's next page
only on the API's own host, and never an endless chain of pages. Before, PyGithub read a
duplicated key last-wins (a pull request with two ``head`` objects was read as the
second), followed a redirect, and followed ``next`` links for as long as the server
sent them.

The grid is every call x every fault; a server on 127.0.0.1 answers each request from
the fault's script.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO, Self

import pytest

from gate.action.github.client import GitHubClient
from gate.action.github.http import RETRY_STATUSES, GitHubSettings
from gate.errors import GitHubError

REPO = "octo-org/hello-world"
HEAD, BASE = "a" * 40, "b" * 40
RETRIES = 1
#: requests any one call may send under the fault grid (tries x pages)
MAX_REQUESTS = 300

PULL = {
    "number": 7,
    "state": "open",
    "draft": False,
    "user": {"login": "octocat", "type": "User"},
    "head": {"sha": HEAD, "ref": "topic", "repo": {"full_name": REPO}},
    "base": {"sha": BASE, "ref": "main", "repo": {"full_name": REPO}},
    "labels": [],
}
BOT = {"login": "github-actions[bot]", "type": "Bot"}
CONTENT = {
    "type": "file",
    "path": "x.yml",
    "sha": "c" * 40,
    "encoding": "base64",
    "content": "eDogMQo=\n",
}
CHECK_RUN = {
    "id": 1,
    "name": "c",
    "status": "completed",
    "conclusion": "failure",
    "external_id": "review-gate:error",
    "app": {"slug": "github-actions"},
    "output": {"title": "t"},
}
TREE = {"sha": HEAD, "truncated": False, "tree": [{"path": "x", "type": "blob", "sha": "d" * 40}]}


@dataclass(frozen=True)
class Call:
    """One client call: what it sends, a healthy JSON answer, and whether it pages."""

    name: str
    run: Callable[[GitHubClient], Any]
    healthy: Any
    listing: bool = False
    #: a listing whose pages are objects holding the list under this name (check runs)
    envelope: str | None = None

    def page(self, items: list[Any]) -> Any:
        """A page of ``items`` in this call's page shape."""
        return {"total_count": len(items), self.envelope: items} if self.envelope else items


CALLS = [
    Call("get_pull", lambda c: c.get_pull(7), PULL),
    Call("read_file", lambda c: c.read_file("x.yml", BASE), CONTENT),
    Call("tree_paths", lambda c: c.tree_paths(HEAD), TREE),
    Call("identity", lambda c: c.identity(), BOT),
    Call(
        "create_status",
        lambda c: c.create_status(
            HEAD, state="pending", description="d", context="c", target_url=None
        ),
        {"state": "pending", "context": "c", "creator": BOT},
    ),
    Call(
        "own_comment",
        lambda c: c.own_comment(7, marker="<!-- review-gate"),
        [{"body": "hello", "user": BOT}],
        listing=True,
    ),
    Call(
        "own_statuses",
        lambda c: c.own_statuses(HEAD, context="c"),
        [{"state": "failure", "context": "other", "creator": BOT}],
        listing=True,
    ),
    Call("pulls_for_commit", lambda c: c.pulls_for_commit(HEAD), [PULL], listing=True),
    Call("pull_commits", lambda c: c.pull_commits(7), [{"sha": HEAD}], listing=True),
    Call("commit_parents", lambda c: c.commit_parents(HEAD), {"sha": HEAD, "parents": []}),
    Call(
        "own_check_runs",
        lambda c: c.own_check_runs(HEAD, name="c"),
        {"total_count": 1, "check_runs": [CHECK_RUN]},
        listing=True,
        envelope="check_runs",
    ),
]


class Loopback:
    """A threaded HTTP/1.1 server on 127.0.0.1, as a context manager (the scripted and
    the dripping servers of these tests): each request's body is read, then
    :meth:`answer` writes the raw answer and the connection is closed."""

    def answer(self, path: str, out: BinaryIO) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _any(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                outer.answer(self.path, self.wfile)
                self.close_connection = True

            do_GET = do_POST = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class Server(Loopback):
    """A 127.0.0.1 HTTP server that answers each request with ``script(n, path)`` raw
    bytes (``n`` counts requests from 0; None closes the connection unanswered)."""

    def __init__(self, script: Callable[[int, str], bytes | None]) -> None:
        self.paths: list[str] = []
        self.script = script
        self._serve()

    def answer(self, path: str, out: BinaryIO) -> None:
        n = len(self.paths)
        self.paths.append(path)
        raw = self.script(n, path)
        if raw is not None:
            out.write(raw)
            out.flush()


def response(
    status: int, body: bytes, *, headers: dict[str, str] | None = None, length: int | None = None
) -> bytes:
    head = [
        f"HTTP/1.1 {status} X",
        "Content-Type: application/json",
        "Connection: close",
        f"Content-Length: {len(body) if length is None else length}",
    ]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


@dataclass(frozen=True)
class Fault:
    """A scripted answer and what the call must end in."""

    name: str
    script: Callable[[Call, str], Callable[[int, str], bytes | None]]
    reasons: frozenset[str]
    #: requests the call may send, at most (None: tries x 1)
    bound: int | None = None
    listing_only: bool = False


def _constant(raw: Callable[[Call], bytes | None]) -> Callable[[Call, str], Any]:
    return lambda call, url: lambda n, path: raw(call)


def _cut(call: Call) -> bytes:
    body = dumps(call.healthy)
    return response(200, body[: len(body) // 2], length=len(body))


def _duplicated(call: Call) -> bytes:
    text = json.dumps(call.healthy)
    if call.listing and not call.envelope:  # the first item's first key, twice
        first = json.dumps(call.healthy[0])
        key = next(iter(call.healthy[0]))
        twice = first[:-1] + f", {json.dumps(key)}: " + json.dumps(call.healthy[0][key]) + "}"
        return response(200, ("[" + twice + text[len("[") + len(first) :]).encode())
    key = next(iter(call.healthy))
    return response(200, (text[:-1] + f", {json.dumps(key)}: {json.dumps(None)}}}").encode())


def _wrong_shape(call: Call) -> bytes:
    """A list's page as an object (an object page as a bare list); an object as a bare
    JSON string."""
    if call.envelope:
        return response(200, dumps(call.healthy[call.envelope]))
    return response(200, dumps({"items": call.healthy} if call.listing else "ok"))


def _off_host(call: Call, url: str) -> Callable[[int, str], bytes]:
    link = '<http://127.0.0.2:9/repos/x?page=2>; rel="next"'
    return lambda n, path: response(200, dumps(call.page([])), headers={"Link": link})


def _endless(call: Call, url: str) -> Callable[[int, str], bytes]:
    def script(n: int, path: str) -> bytes:
        link = f'<{url}/repos/{REPO}/endless?page={n + 2}>; rel="next"'
        return response(200, dumps(call.page([])), headers={"Link": link})

    return script


def _redirect(status: int) -> Callable[[Call, str], Any]:
    def make(call: Call, url: str) -> Callable[[int, str], bytes]:
        target = f"{url}/moved/elsewhere"
        return lambda n, path: response(
            status, dumps({"message": "Moved"}), headers={"Location": target}
        )

    return make


TRIES = RETRIES + 1
FAULTS = [
    *(
        Fault(
            f"http_{s}",
            _constant(lambda c, s=s: response(s, dumps({"message": "x"}))),
            frozenset({f"github_http_{s}"}),
        )
        for s in sorted(RETRY_STATUSES)
    ),
    Fault("closed_unanswered", _constant(lambda c: None), frozenset({"github_unreachable"})),
    Fault("cut_body", _constant(_cut), frozenset({"github_unreachable"})),
    Fault(
        "not_json",
        _constant(lambda c: response(200, b"<html>ok</html>")),
        frozenset({"github_bad_payload"}),
    ),
    Fault(
        "not_utf8",
        _constant(lambda c: response(200, b'{"a": "\xff\xfe"}')),
        frozenset({"github_bad_payload"}),
    ),
    Fault("duplicate_key", _constant(_duplicated), frozenset({"github_bad_payload"})),
    Fault("wrong_shape", _constant(_wrong_shape), frozenset({"github_bad_payload"})),
    *(
        Fault(f"redirect_{s}", _redirect(s), frozenset({f"github_http_{s}"}), bound=1)
        for s in (301, 302, 307, 308)
    ),
    Fault(
        "next_page_off_host",
        _off_host,
        frozenset({"github_bad_payload"}),
        bound=1,
        listing_only=True,
    ),
    Fault(
        "endless_pages",
        _endless,
        frozenset({"github_bad_payload"}),
        bound=MAX_REQUESTS,
        listing_only=True,
    ),
]

GRID = [
    (call, fault) for call in CALLS for fault in FAULTS if call.listing or not fault.listing_only
]


def client(url: str, call: Call | None = None) -> GitHubClient:
    """A client of ``url``; its identity named, except for the call that asks GET /user."""
    named = "" if call is not None and call.name == "identity" else "github-actions[bot]"
    settings = GitHubSettings(
        repository=REPO,
        api_url=url,
        token="t",
        timeout=5.0,
        retries=RETRIES,
        backoff=0.0,
        throttle=False,
        sleep=lambda _s: None,
        identity=named,
    )
    return GitHubClient(settings)


def test_the_grid_is_wide() -> None:
    assert len(GRID) >= 100
    assert {c.name for c in CALLS} >= {"get_pull", "read_file", "create_status", "identity"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("call", "fault"), GRID, ids=[f"{c.name}-{f.name}" for c, f in GRID])
def test_a_faulty_answer_is_a_typed_error_in_bounded_requests(call: Call, fault: Fault) -> None:
    holder: dict[str, str] = {}
    with Server(lambda n, path: holder["script"](n, path)) as server:  # type: ignore[operator]
        holder["script"] = fault.script(call, server.url)  # type: ignore[assignment]
        with pytest.raises(GitHubError) as info:
            call.run(client(server.url, call))
    assert info.value.reason in fault.reasons, (info.value.reason, info.value.message)
    assert len(server.paths) <= (fault.bound or TRIES)
    assert not any("/moved/" in p for p in server.paths)  # a redirect is never followed
    assert "Traceback" not in info.value.message


@pytest.mark.parametrize("call", CALLS, ids=[c.name for c in CALLS])
def test_the_healthy_answer_is_read(call: Call) -> None:
    """The grid's control: the same server and call, answered as GitHub does, succeed."""
    with Server(lambda n, path: response(200, dumps(call.healthy))) as server:
        call.run(client(server.url, call))
    assert len(server.paths) == 1


@pytest.mark.parametrize("status", [403, 429])
def test_a_spent_rate_limit_is_named_not_a_missing_permission(status: int) -> None:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1767225600"}
    answer = response(status, dumps({"message": "API rate limit exceeded"}), headers=headers)
    with Server(lambda n, path: answer) as server, pytest.raises(GitHubError) as info:
        client(server.url).get_pull(7)
    assert info.value.reason == f"github_http_{status}"
    assert "rate limit" in info.value.message
    assert "lacks a permission" not in info.value.message
    assert len(server.paths) == 1  # not retried: the policy never sleeps on Retry-After
