"""Class: an end the diff can cause, read as an outage (issue 31, findings 1, 2 and 3).

A fallback is asked, and a question is asked again later, only when the reviewer could
not answer at all (an outage: connect, TLS, cut, 5xx, 429, quota, auth, overload). Every
other end is the model's or the diff's doing, and the diff is the author's: an
instruction in it ("trip the filter", "call a tool", "ramble past the limit", "be long")
must not turn the primary's coming ``fail`` into a second opinion or into a fresh ask.
The cause was three partial lists of such ends (``MODEL_ENDS`` in the pipeline, the
dialects' finish tables, the pool's overflow markers) and a decision that called every
one of them ``incomplete``, which memory does not keep. The fix is one classification
(:mod:`gate.decide.ends`): answered, chosen, outage; a chosen end is a ``needs_human``
block decided by the answer, which stands like a ``fail``.

Each test runs the action's entry point against the fake GitHub (checked against
GitHub's OpenAPI description) and the reviewer simulator, with a fallback that passes
anything:

1. Azure's content filter, wherever it fires (the finish reason, a filtered prompt or
   answer in the filter results of a 200, a 400 ``content_filter``), asks no fallback;
2. an HTTP 4xx the prompt's content can cause (``context_length_exceeded`` on a diff the
   estimate says fits, ``invalid_prompt``, a filtered prompt, a 413, a 422, words the gate
   has never seen) asks no fallback and never passes;
3. a refusal, a tool call, an answer cut at ``max_tokens`` or an unknown finish, in any
   dialect, stands: a reopen of the same head asks nobody and stays blocked.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator, SimResponse
from tests.adversarial.test_state_machine import reset
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    DIFF,
    HEAD,
    REPO,
    pr_payload,
    run_gate,
    setup_pull,
)
from tests.verdicts import fenced_verdict

KEY = "fallback-key-0123456789abcdef"
POLICY = "ends-1"
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
#: Azure's content filter categories (the REST reference's contentFilterResults)
AZURE_CATEGORIES = (
    "hate", "sexual", "violence", "self_harm", "profanity", "jailbreak", "indirect_attack",
    "protected_material_text", "protected_material_code", "custom_blocklists",
)  # fmt: skip


def config_text(provider: str, backup_url: str) -> str:
    """The base config: the primary, and a fallback (OpenAI dialect) that passes anything."""
    return (
        f"policy_version: '{POLICY}'\n"
        f"reviewer:\n  provider: {provider}\n  attempts: 1\n"
        "fallbacks:\n"
        f"  - {{provider: openai, model: backup-model, base_url: '{backup_url}', "
        "api_key_env: BACKUP_KEY, attempts: 1}\n"
    )


def bound_pass() -> str:
    """A bound, confident pass of DIFF under POLICY (what a filtered answer may still say)."""
    return fenced_verdict(
        hashlib.sha256(DIFF).hexdigest(), POLICY, reasons=["looks fine"], confidence=0.99
    )


def _data(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def azure_body(where: str, category: str) -> bytes:
    """An Azure stream whose text passes but whose filter results say ``filtered: true``
    on the prompt or on the answer (the finish reason stays ``stop``)."""
    fired = {category: {"filtered": True, "severity": "high"}}
    prompt = fired if where == "prompt" else {}
    answer = fired if where == "answer" else {}
    first = {
        "choices": [], "created": 0, "id": "", "model": "", "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": prompt}],
    }  # fmt: skip

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        choice["content_filter_results"] = answer
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}

    return (
        _data(first)
        + _data(chunk({"role": "assistant", "content": bound_pass()}, None))
        + _data(chunk({}, "stop"))
        + b"data: [DONE]\n\n"
    )


def azure_400(category: str) -> str:
    """Azure's documented answer to a filtered prompt: HTTP 400, code content_filter."""
    return json.dumps(
        {
            "error": {
                "message": "The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy.",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {category: {"filtered": True, "severity": "high"}},
                },
            }
        }
    )


class Pull:
    """One pull request's runs through the action, a primary and a passing fallback."""

    def __init__(self, fake: FakeGitHub, provider: str, primary: ReviewerSimulator) -> None:
        self.fake = reset(fake)
        self.provider = provider
        self.primary = primary
        self.backup = ReviewerSimulator("openai", ScriptedModel("pass"))
        self.tmp = Path(tempfile.mkdtemp(prefix="rg-ends-"))
        setup_pull(self.fake)

    def __enter__(self) -> Pull:
        self.primary.start()
        self.backup.start()
        self.fake.set_file(BASE, CONFIG_PATH, self.config())
        return self

    def __exit__(self, *exc: object) -> None:
        self.primary.stop()
        self.backup.stop()

    def config(self) -> str:
        return config_text(self.provider, self.backup.base_url)

    def run(self, action: str = "opened") -> tuple[int, str]:
        """Run the action on ``action``; (exit code, the newest status's state)."""
        outcome = run_gate(
            self.tmp,
            self.fake,
            self.primary,
            pr_payload(action),
            env={"INPUT_PROVIDER": self.provider, "BACKUP_KEY": KEY},
        )
        states = [s["state"] for s in self.fake.status_list(HEAD)]
        return outcome.code, states[-1]


def _no_violations(fake: FakeGitHub) -> None:
    assert fake.violations == [], fake.violations
    assert fake.response_violations == [], fake.response_violations


# --- finding 1: Azure's content filter ------------------------------------------------


def test_azures_content_filter_asks_no_fallback() -> None:
    with FakeGitHub(REPO) as fake:

        @SETTINGS
        @given(
            where=st.sampled_from(["finish", "prompt", "answer", "http_400"]),
            category=st.sampled_from(AZURE_CATEGORIES),
        )
        def example(where: str, category: str) -> None:
            if where == "finish":
                response = SimResponse(provider_finish="content_filter")
            elif where == "http_400":
                response = SimResponse(status=400, error_body=azure_400(category))
            else:
                response = SimResponse(body=azure_body(where, category))
            primary = ReviewerSimulator("azure-openai", ScriptedModel("pass"), script=(response,))
            with Pull(fake, "azure-openai", primary) as pull:
                code, state = pull.run()
                assert pull.backup.count == 0, f"{where}/{category}: the fallback was asked"
                assert state != "success", (where, category, state)
                assert code != 0, (where, category, state)

        example()
        _no_violations(fake)


# --- finding 2: a 4xx the prompt can cause ----------------------------------------------

#: (status, body) a provider answers to what the prompt holds
CONTENT_4XX = {
    "openai_context_length": (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, "
                "your messages resulted in 215000 tokens. Please reduce the length.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    ),
    "vllm_context_length": (
        400,
        {"object": "error", "message": "This model's maximum context length is 8192 tokens"},
    ),
    "openai_invalid_prompt": (
        400,
        {
            "error": {
                "message": "Invalid prompt: your prompt was flagged as potentially violating "
                "our usage policy.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_prompt",
            }
        },
    ),
    "too_large": (413, {"error": {"type": "request_too_large", "message": "Request too large"}}),
    "unprocessable": (422, {"detail": [{"loc": ["body", "messages"], "msg": "bad input"}]}),
}


def test_a_4xx_the_prompt_can_cause_asks_no_fallback() -> None:
    with FakeGitHub(REPO) as fake:

        @SETTINGS
        @given(
            name=st.sampled_from(sorted(CONTENT_4XX)) | st.just("unseen"),
            words=st.text(st.characters(codec="ascii", categories=["L", "N", "Zs"]), max_size=40),
            status=st.sampled_from([400, 409, 413, 422]),
        )
        def example(name: str, words: str, status: int) -> None:
            if name == "unseen":  # words no table of the gate names
                code, body = status, {"error": {"message": words, "type": "x_" + words[:8]}}
            else:
                code, body = CONTENT_4XX[name]
            response = SimResponse(status=code, error_body=json.dumps(body))
            primary = ReviewerSimulator("openai", ScriptedModel("pass"), script=(response,))
            with Pull(fake, "openai", primary) as pull:
                exit_code, state = pull.run()
                assert pull.backup.count == 0, f"{name} ({code}): the fallback was asked"
                assert state != "success", (name, code, state)
                assert exit_code != 0, (name, code, state)

        example()
        _no_violations(fake)


# --- finding 3: a model's own end stands ------------------------------------------------

#: dialect -> the verbatim finishes of ends the diff can ask for (tool calls, unknown
#: finishes), besides the simulator's own "length" and "refusal" for that dialect
CHOSEN_FINISHES = {
    "openai": ("tool_calls", "function_call", "content_filter"),
    "anthropic": ("tool_use", "pause_turn", "model_context_window_exceeded"),
    "gemini": (
        "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
        "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "OTHER", "LANGUAGE",
    ),
    "openai-responses": ("content_filter", "max_output_tokens"),
    "azure-openai": ("tool_calls", "content_filter"),
}  # fmt: skip
STOPS = frozenset({"stop", "end_turn", "stop_sequence", "STOP", "completed"})


@st.composite
def chosen_ends(draw: st.DrawFn) -> tuple[str, SimResponse]:
    dialect = draw(st.sampled_from(sorted(CHOSEN_FINISHES)))
    kind = draw(st.sampled_from(["length", "refusal", "named", "unknown"]))
    if kind in ("length", "refusal"):
        return dialect, SimResponse(finish=kind)
    if kind == "named":
        named = draw(st.sampled_from(CHOSEN_FINISHES[dialect]))
        return dialect, SimResponse(provider_finish=named)
    words = st.from_regex(r"[a-z][a-z_]{2,20}", fullmatch=True)
    word = draw(words.filter(lambda w: w not in STOPS))
    return dialect, SimResponse(provider_finish=word)


def test_a_models_own_end_stands_on_a_reopen() -> None:
    with FakeGitHub(REPO) as fake:

        @SETTINGS
        @given(end=chosen_ends(), again=st.sampled_from(["reopened", "synchronize"]))
        def example(end: tuple[str, SimResponse], again: str) -> None:
            dialect, response = end
            # the primary ends as scripted once, and passes anything after that
            primary = ReviewerSimulator(dialect, ScriptedModel("pass"), script=(response,))
            with Pull(fake, dialect, primary) as pull:
                code, state = pull.run()
                assert state != "success", (dialect, response, state)
                assert code != 0, (dialect, response, state)
                assert pull.backup.count == 0, f"{dialect} {response}: the fallback was asked"
                code, state = pull.run(again)
                assert primary.count == 1, f"{dialect} {response}: asked again on {again}"
                assert state != "success", (dialect, response, again, state)
                assert code != 0, (dialect, response, again, state)

        example()
        _no_violations(fake)
