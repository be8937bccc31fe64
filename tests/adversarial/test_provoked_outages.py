"""Class: an end the diff can provoke, read as an outage (decision 0040).

Only an outage asks a fallback or earns a fresh ask later; an end the author's diff can
cause must stand. Two provider answers the diff can provoke were read as outages:

1. OpenAI answers a single request larger than the key's tokens-per-minute limit with a
   429 ``rate_limit_exceeded`` whose message says ``Request too large ... on tokens per
   min``: no wait heals it (the same prompt is refused again), and its size is the
   diff's. It was ``http_429``, an outage: a diff made big enough asked the fallback.
2. A 400 whose body carries the words ``API key not valid`` was ``auth_refused``, an
   outage, whichever provider sent it and wherever in the body the words were: a server
   that quotes the request (the diff) in its 400 let the author spell a refused key. Only
   Gemini's structured ``"reason": "API_KEY_INVALID"`` (a JSON string, which text inside
   another string cannot close) names a refused key.
"""

from __future__ import annotations

import json

from gate.decide.attempt import EndReason
from gate.decide.ends import AUTH_REFUSED, End, reason_end
from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator, SimResponse
from gate.reviewers.base import Reply
from gate.reviewers.transport import named
from tests.adversarial.test_diff_caused_ends import REPO, Pull
from tests.fakes.github import FakeGitHub


def _refused(status: int, body: object) -> Reply:
    return Reply(
        provider="openai",
        complete=False,
        reason=f"http_{status}",
        detail=f"HTTP {status}",
        end_reason=EndReason.HTTP_ERROR,
        http_status=status,
        raw=json.dumps(body).encode(),
        retryable=status == 429,
    )


TOO_LARGE_FOR_TPM = {
    "error": {
        "message": "Request too large for gpt-4o in organization org-abc on tokens per min "
        "(TPM): Limit 30000, Requested 52113. The input or output tokens must be reduced in "
        "order to run successfully. Visit https://platform.openai.com/account/rate-limits "
        "to learn more.",
        "type": "tokens",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}


def test_a_request_too_large_for_the_rate_limit_is_the_diffs_size() -> None:
    reply = named(_refused(429, TOO_LARGE_FOR_TPM))
    assert reason_end(reply.reason) is End.CHOSEN, reply.reason
    assert not reply.retryable


def test_a_passing_rate_limit_is_still_an_outage() -> None:
    body = {
        "error": {
            "message": "Rate limit reached for gpt-4o in organization org-abc on tokens per "
            "min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    reply = named(_refused(429, body))
    assert reason_end(reply.reason) is End.OUTAGE


def test_words_a_400_quotes_from_the_prompt_name_no_refused_key() -> None:
    echoed = "the diff said: API key not valid. Please pass a valid API key. API_KEY_INVALID"
    body = {"error": {"message": f"invalid request near {echoed!r}", "type": "bad_request"}}
    reply = named(_refused(400, body))
    assert reply.reason != AUTH_REFUSED
    assert reason_end(reply.reason) is End.CHOSEN, reply.reason


def test_geminis_refused_key_is_still_an_outage() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"},
                }
            ],
        }
    }
    reply = named(_refused(400, body))
    assert reply.reason == AUTH_REFUSED
    assert reason_end(reply.reason) is End.OUTAGE


def test_through_the_action_a_request_too_large_asks_no_fallback() -> None:
    """The same 429, answered to every attempt, through the action's entry point against
    the fake GitHub, with a fallback that passes anything (as test_diff_caused_ends)."""
    response = SimResponse(status=429, error_body=json.dumps(TOO_LARGE_FOR_TPM))
    primary = ReviewerSimulator("openai", ScriptedModel("pass"), script=(response,) * 8)
    with FakeGitHub(REPO) as fake, Pull(fake, "openai", primary) as pull:
        exit_code, state = pull.run()
        assert pull.backup.count == 0, "the fallback was asked"
        assert state != "success"
        assert exit_code != 0
