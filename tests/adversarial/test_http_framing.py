"""Class: HTTP framing and status. Only a 200 whose body's end is unambiguous carries an answer.

Cause: :func:`gate.reviewers.base.perform` chose the framing by looking for
``chunked`` first, so a response with both ``Transfer-Encoding`` and
``Content-Length`` was read (h11 lets Transfer-Encoding win), although RFC 9112
section 6.3 says such a message ought to be handled as an error: it is the
signature of request smuggling, where two hops disagree on where a body ends.
Every 2xx status was read as an answer, so a 206 (a part of something) could be
sealed. And an error body shaped ``{"detail": ...}`` (FastAPI, vLLM, LiteLLM)
gave no message, so the attempt said only the status.

Fix: :func:`~gate.reviewers.base._read_response` refuses a head with both
framing headers (``ambiguous_framing``, not retried, no body byte read) before
it looks at the status, and reads a body as an answer only for status 200; any
other status, 2xx included, is ``http_<status>``. ``{"detail": ...}`` bodies (a
string, FastAPI's list of problems, or an object) are read for the message.

Every variant goes through a real socket (:class:`gate.lab.sim.ReviewerSimulator`
with an exact head) for every dialect, MC1 included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from gate.decide.attempt import Attempt, EndReason
from gate.lab.sim import DIALECTS, ReviewerSimulator, SimResponse, render_events
from gate.reviewers.transport import review

pytestmark = pytest.mark.timeout(120)

CONTENT = "Reviewed: fine."
CONTENT_TYPE = {
    "openai": "text/event-stream",
    "anthropic": "text/event-stream",
    "gemini": "text/event-stream",
    "mc1": "application/x-mc1",
    "openai-responses": "text/event-stream",
    "azure-openai": "text/event-stream",
    "bedrock": "application/vnd.amazon.eventstream",
    "vertex": "text/event-stream",
}
HEADER_NAMES = (
    ("Transfer-Encoding", "Content-Length"),
    ("transfer-encoding", "content-length"),
    ("TRANSFER-ENCODING", "CONTENT-LENGTH"),
    ("tRANSFER-eNCODING", "cONTENT-lENGTH"),
)
TE_VALUES = ("chunked", "Chunked", "CHUNKED")
ORDERS = ("te-first", "cl-first")
#: every 2xx with a name, and three without one
OTHER_2XX = (201, 202, 203, 204, 205, 206, 207, 208, 226, 209, 250, 299)


def run(dialect: str, responses: list[SimResponse], attempts: int = 3) -> list[tuple[Attempt, int]]:
    """Each response answers one review of up to ``attempts``: (last attempt, requests made)."""
    out = []
    with ReviewerSimulator(dialect, lambda _req: CONTENT) as sim:
        for response in responses:
            before = sim.count
            sim.queue(response)
            settings = sim.settings(attempts=attempts)
            outcome = review(settings, system="S", user="U", sleep=lambda _s: None)
            attempt = outcome.last
            assert attempt is not None
            assert (outcome.envelope is not None) is attempt.complete
            out.append((attempt, sim.count - before))
    return out


def body_length(dialect: str) -> int:
    return len(b"".join(render_events(dialect, CONTENT)))


# --- Transfer-Encoding and Content-Length together ------------------------------------


def both_headers(dialect: str, status: int = 200) -> Iterator[tuple[str, SimResponse]]:
    decoded = body_length(dialect)
    index = 0
    for order in ORDERS:
        for te_name, cl_name in HEADER_NAMES:
            for te_value in TE_VALUES:
                # the declared length: the real body, the chunked wire, or nothing at all
                length = (decoded, decoded + 32, 0)[index % 3]
                index += 1
                te, cl = f"{te_name}: {te_value}", f"{cl_name}: {length}"
                pair = (te, cl) if order == "te-first" else (cl, te)
                head = (
                    f"HTTP/1.1 {status} X\r\nContent-Type: {CONTENT_TYPE[dialect]}\r\n"
                    f"{pair[0]}\r\n{pair[1]}\r\nConnection: close\r\n\r\n"
                ).encode()
                # the body is chunked, so a reader that lets Transfer-Encoding win sees it whole
                label = f"{dialect}-{status}-{order}-{te_name}-{te_value}-{length}"
                yield label, SimResponse(framing="chunked", head=head)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_response_with_both_framing_headers_is_refused_unread(dialect: str) -> None:
    variants = [*both_headers(dialect), *both_headers(dialect, status=500)]
    assert len(variants) == 2 * len(ORDERS) * len(HEADER_NAMES) * len(TE_VALUES)
    results = run(dialect, [response for _, response in variants])
    wrong = [
        (label, attempt.reason, requests)
        for (label, _), (attempt, requests) in zip(variants, results, strict=True)
        if attempt.complete
        or attempt.reason != "ambiguous_framing"
        or attempt.retryable
        or requests != 1
        or attempt.bytes_received != 0
        or attempt.end_reason is not EndReason.HTTP_ERROR
    ]
    assert wrong == [], f"{len(wrong)} of {len(variants)}: {wrong[:5]}"
    detail = results[0][0].detail
    assert "Transfer-Encoding and Content-Length" in detail
    assert "RFC 9112" in detail


@pytest.mark.parametrize("dialect", DIALECTS)
def test_either_framing_header_alone_still_completes(dialect: str) -> None:
    """The control: the refusal is for the pair, not for either header."""
    results = run(dialect, [SimResponse(framing="chunked"), SimResponse(framing="length")])
    assert [(a.complete, a.reason, n) for a, n in results] == [(True, "", 1), (True, "", 1)]


# --- every 2xx other than 200 -------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_2xx_other_than_200_is_refused_and_not_retried(dialect: str) -> None:
    responses = [SimResponse(status=status) for status in OTHER_2XX]
    results = run(dialect, responses)
    got = [(a.http_status, a.complete, a.reason, a.retryable, n) for a, n in results]
    assert got == [(s, False, f"http_{s}", False, 1) for s in OTHER_2XX]
    for attempt, _ in results:
        assert "only a 200 carries a whole answer" in attempt.detail


# --- {"detail": ...} error bodies -----------------------------------------------------


DETAIL_BODIES: tuple[tuple[Any, str], ...] = (
    ({"detail": "Not authenticated"}, "Not authenticated"),
    (
        {"detail": [{"loc": ["body", "model"], "msg": "field required", "type": "missing"}]},
        "body.model: field required",
    ),
    ({"detail": {"message": "quota exceeded for this key"}}, "quota exceeded for this key"),
    ([{"detail": "first of a list"}], "first of a list"),
)
DETAIL_STATUSES = (400, 401, 404, 422, 500, 503)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_detail_error_body_is_read_for_its_message(dialect: str) -> None:
    cases = [
        (status, body, words)
        for index, status in enumerate(DETAIL_STATUSES)
        for body, words in (DETAIL_BODIES[index % len(DETAIL_BODIES)], *DETAIL_BODIES[:1])
    ]
    responses = [
        SimResponse(status=status, error_body=json.dumps(body)) for status, body, _ in cases
    ]
    results = run(dialect, responses, attempts=1)
    for (status, _, words), (attempt, _) in zip(cases, results, strict=True):
        assert not attempt.complete
        assert attempt.reason == f"http_{status}"
        assert f"({words})" in attempt.detail, attempt.detail
