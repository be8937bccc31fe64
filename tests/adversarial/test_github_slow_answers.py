"""Class: *a per-read timeout taken for a deadline.* An answer GitHub (or anything between
the gate and GitHub) sends a few bytes at a time, each just inside the read timeout, held
the run for as long as the sender liked.

Cause: the gate's own httpx client (the first calls of a run, issue 22) had only httpx's
timeouts, and each of them is per operation: connect, one read, one write. ``_read``
took the body chunk by chunk up to :data:`~gate.action.github.http.MAX_FETCH_BYTES`
(64 MB), so a body dripped at one byte per 29 s read as healthy after years, and the
required check sat at ``pending`` meanwhile (a hang, the attacker's goal, on the runner's
minutes). The reviewer transport had a deadline of its own (:mod:`gate.reviewers.base`);
the GitHub client did not.

Fix: :meth:`~gate.action.github.http.GitHubHttp._exchange` gives each request a deadline
(``GitHubSettings.deadline``, :data:`~gate.action.github.http.REQUEST_DEADLINE`): a
watchdog shuts the client's sockets down when it passes (the head too), and the body's
reads check it; an answer still coming at it is a transport fault, retried
by the one retry policy and then ``github_unreachable``, whose message says the answer was
still coming (never "no answer").

Generated: every call the action sends over httpx x every way an answer can be dripped
(a body framed by ``Content-Length``, a chunked one, the body of a 5xx GitHub would have
the gate retry, and the answer's head itself: httpx reads a head as slowly as it comes),
through a real socket on 127.0.0.1. On the code before the fix every variant returned the
dripped answer (or its 5xx) after the whole drip: no error named the slowness.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import BinaryIO

import pytest

from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.errors import GitHubError
from tests.adversarial.test_github_answers import CALLS, REPO, Call, Loopback, dumps

#: the request's deadline in these tests, and the pause between two dripped pieces
DEADLINE = 0.2
DRIP = 0.03
#: a read timeout far above the drip: only the deadline can end the request
READ_TIMEOUT = 5.0
RETRIES = 1
#: pieces dripped at most (a drip past the deadline is cut off by the client)
MAX_PIECES = 400

SHAPES = ("content-length", "chunked", "5xx-body", "head")


def pieces(shape: str, body: bytes) -> Iterator[bytes]:
    """The raw answer: its head at once, then its body a byte (or a chunk) at a time; or
    (``head``) its head a byte at a time, padded with a long header, then its body."""
    status = "502 Bad Gateway" if shape == "5xx-body" else "200 OK"
    framing = "Transfer-Encoding: chunked" if shape == "chunked" else f"Content-Length: {len(body)}"
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n"
        f"X-Padding: {'p' * 200}\r\n{framing}\r\n\r\n"
    ).encode()
    if shape == "head":
        yield from (head[i : i + 1] for i in range(len(head)))
        yield body
        return
    yield head
    for i in range(len(body)):
        byte = body[i : i + 1]
        yield b"1\r\n" + byte + b"\r\n" if shape == "chunked" else byte
    if shape == "chunked":
        yield b"0\r\n\r\n"


class DripServer(Loopback):
    """A 127.0.0.1 server that drips each answer (bounded in pieces and time)."""

    def __init__(self, shape: str, body: bytes, *, drip: float = DRIP) -> None:
        self.requests = 0
        #: answers sent whole: the client waited for all of it
        self.complete = 0
        self.shape, self.body, self.drip = shape, body, drip
        self._serve()

    def answer(self, path: str, out: BinaryIO) -> None:
        self.requests += 1
        answer = list(pieces(self.shape, self.body))[:MAX_PIECES]
        try:
            for n, piece in enumerate(answer):
                out.write(piece)
                out.flush()
                if n == len(answer) - 1:
                    self.complete += 1  # before the client can have returned
                time.sleep(self.drip)
        except OSError:
            pass  # the client hung up at its deadline


def client(url: str, call: Call) -> GitHubClient:
    named = "" if call.name == "identity" else "github-actions[bot]"
    return GitHubClient(
        GitHubSettings(
            repository=REPO,
            api_url=url,
            token="t",
            timeout=READ_TIMEOUT,
            deadline=DEADLINE,
            retries=RETRIES,
            backoff=0.0,
            throttle=False,
            sleep=lambda _s: None,
            identity=named,
        )
    )


def body_of(call: Call, shape: str) -> bytes:
    """A healthy answer (long enough to outlast the deadline when dripped)."""
    if shape == "5xx-body":
        return dumps({"message": "Server Error " + "x" * 40})
    return dumps(call.healthy)


GRID = [(call, shape) for call in CALLS for shape in SHAPES]


def test_every_answer_outlasts_the_deadline_when_dripped() -> None:
    """The grid's premise: each dripped body takes longer than the deadline to send."""
    for call, shape in GRID:
        assert len(body_of(call, shape)) * DRIP > 2 * DEADLINE, (call.name, shape)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("call", "shape"), GRID, ids=[f"{c.name}-{s}" for c, s in GRID])
def test_a_dripped_answer_ends_at_the_deadline(call: Call, shape: str) -> None:
    with DripServer(shape, body_of(call, shape)) as server:
        with pytest.raises(GitHubError) as info:
            call.run(client(server.url, call))
        requests, complete = server.requests, server.complete
    assert info.value.reason == "github_unreachable", (info.value.reason, info.value.message)
    assert complete == 0  # the client hung up before the drip was over, every time
    assert "still coming" in info.value.message
    assert f"{DEADLINE:g}s" in info.value.message
    assert requests <= RETRIES + 1  # retried by the one policy, never more


@pytest.mark.parametrize("shape", ["content-length", "chunked", "head"])
def test_an_answer_sent_at_once_is_read(shape: str) -> None:
    """The control: the same server without the pause, and the answer is read."""
    call = CALLS[0]
    with DripServer(shape, body_of(call, shape), drip=0.0) as server:
        pull = call.run(client(server.url, call))
    assert pull.number == 7
