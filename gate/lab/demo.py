"""The demo's scenarios: see the gate refuse every broken answer, on this machine, in seconds.

``review-gate demo`` (:mod:`gate.commands.demo`) runs :func:`run_demo` and prints
:func:`text_report`.

The demo starts a local reviewer (:class:`gate.lab.sim.ReviewerSimulator`, speaking
the OpenAI streaming dialect byte for byte) on 127.0.0.1, whose scripted model
answers a well-formed verdict bound to the ``diff_sha`` and ``policy_version``
it reads from the prompt. It reviews a bundled sample diff through
:func:`gate.review.pipeline.review_diff` (the same code the action runs), once cleanly
and then through the fault proxy (:mod:`gate.lab.faults`) with a cut, flipped bytes
and a stall, plus scripted answers that echo an example, reject the change or
run out of tokens. It prints what was sent, what arrived, the decision and why;
writes one certificate per case; and exits 0 only if every case got the
decision it must get. No API key, no network beyond 127.0.0.1, no process or
thread left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import Binding, State, binding_for
from gate.decide.readback import words_for, words_in
from gate.errors import GateError, UsageError
from gate.lab.faults import ConnectionRecord, Fault, FaultKind, FaultProxy
from gate.lab.sim import SIM_EXTRAS, ReviewerSimulator, SimResponse, quota_response
from gate.memory.question import key_for
from gate.providers import Provider
from gate.review import certificate
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in, build_prompt
from gate.review.result import ReviewResult
from gate.safe.atomic import atomic_write

SAMPLE = "sample.diff"
DEFAULT_PROVIDER = Provider.OPENAI.value
#: How the report names each dialect ("to: a local reviewer speaking ... on 127.0.0.1").
SPEAKING = {
    "openai": "the OpenAI streaming dialect",
    "anthropic": "the Anthropic Messages streaming dialect",
    "gemini": "the Gemini streamGenerateContent dialect",
    "mc1": "MC1 (a sealed envelope)",
    "openai-responses": "the OpenAI Responses streaming dialect",
    "azure-openai": "Azure OpenAI's chat streaming dialect (filter results included)",
    "bedrock": "Bedrock ConverseStream (AWS event-stream frames, each CRC-checked)",
    "vertex": "Vertex AI's Gemini streaming dialect",
}
#: The end marker the flip-end case corrupts: the bytes to find, the offset of the byte to
#: flip inside them, and how the row names it.
END_MARKERS = {
    "openai": (b"data: [DONE]", len("data: ["), "[DONE]"),
    "azure-openai": (b"data: [DONE]", len("data: ["), "[DONE]"),
    "anthropic": (b"event: message_stop", len("event: message_"), "message_stop"),
    "openai-responses": (b"event: response.completed", len("event: response."), "completed"),
    "gemini": (b'"finishReason":"STOP"', len('"finishReason":"'), "finishReason"),
    "vertex": (b'"finishReason":"STOP"', len('"finishReason":"'), "finishReason"),
    "bedrock": (b"messageStop", len("message"), "messageStop"),
    "mc1": (b"\nEND\n", 1, "END"),
}
#: Where a flipped digit of the diff_sha is caught before the verdict is read: an answer
#: that carries its own integrity (CRC32s, the MC1 digest) never reaches it.
#: The Responses API repeats the text whole after its deltas, and every copy must agree.
SHA_FLIP_STATE = {
    "bedrock": State.INCOMPLETE,
    "mc1": State.INCOMPLETE,
    "openai-responses": State.INCOMPLETE,
}
#: Where a flipped byte of the end marker is caught: Gemini's marker is its finish reason,
#: and a finish reason nobody mapped is the model's own end (gate.decide.ends), which
#: blocks as needs_human and stands; elsewhere the answer is not proven whole.
DONE_FLIP_STATE = {"gemini": State.NEEDS_HUMAN, "vertex": State.NEEDS_HUMAN}
POLICY_VERSION = "1"
RETRY_PAUSE_CAP = 0.05  # seconds; the real backoff is seconds long
STALL_READ_TIMEOUT = 0.5


# --- the scripted model ----------------------------------------------------------


def verdict_block(
    binding: Binding,
    verdict: str,
    reasons: Sequence[str],
    confidence: float,
    read: Mapping[str, str] | None = None,
) -> str:
    """A fenced verdict bound to ``binding``, repeating ``read`` (default: the read words
    of ``binding``'s prompt, as a reviewer that saw all of it writes them)."""
    obj = {
        "verdict": verdict,
        "reasons": list(reasons),
        "confidence": confidence,
        "read": dict(read) if read is not None else words_for(*_bound(binding)),
        "diff_sha": binding.diff_sha,
        "policy_version": binding.policy_version,
    }
    return "```json\n" + json.dumps(obj, indent=2) + "\n```\n"


def _bound(binding: Binding) -> tuple[str, str]:
    return binding.diff_sha, binding.policy_version


#: The scripted model's reasons. It answers every diff alike without reading it (the demo's
#: sample and whatever ``review`` sends to ``demo --serve``), so each reason says so: words
#: that read like a review of the code would invite "is it reading my diff?" (issue 34).
PASS_REASONS = (
    "canned answer of the local reviewer (review-gate demo): it passes every diff and has "
    "not read this one",
    "canned answer of the local reviewer: bound to the diff_sha and policy_version the gate "
    "sent, so the gate's checks hold; a real model's reasons would be about the code",
)
FAIL_REASONS = (
    "canned answer of the local reviewer (review-gate demo): it rejects every diff and has "
    "not read this one",
)


def answer(mode: str, binding: Binding, read: Mapping[str, str] | None = None) -> str:
    """What the scripted model says for ``mode``, bound to ``binding``, repeating the read
    words it saw (``read``: :func:`gate.decide.readback.words_in` of the prompt)."""
    if mode == "fail":
        return "A canned rejection from the local reviewer.\n\n" + verdict_block(
            binding, "fail", FAIL_REASONS, 0.9, read
        )
    real = "A canned pass from the local reviewer.\n\n" + verdict_block(
        binding, "pass", PASS_REASONS, 0.93, read
    )
    if mode == "echo":
        example = verdict_block(
            Binding("<sha256 of the diff>", "<policy>"), "pass", ["..."], 1.0, {}
        )
        return "The answer format is:\n\n" + example + "\n" + real
    return real


def request_text(value: Any) -> str:
    """Every string in a request body, joined (works for every dialect's JSON)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(request_text(item) for item in value.values())
    if isinstance(value, list):
        return "\n".join(request_text(item) for item in value)
    return ""


@dataclass
class ScriptedModel:
    """The simulator's responder: answers per :attr:`mode`, bound to the prompt's binding."""

    mode: str = "pass"

    def __call__(self, request: dict[str, Any]) -> str:
        text = request_text(request)
        binding = binding_in(text)
        if binding is None:
            return "The prompt carried no diff_sha; I cannot give a bound verdict."
        return answer(self.mode, binding, words_in(text))


# --- cases -----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    expected: State
    mode: str = "pass"  # what the scripted model answers
    fault: Fault = field(default_factory=Fault)
    sent: str = "sample diff"  # one-line account of what was sent / done on the wire
    read_timeout: float = 5.0
    script: tuple[SimResponse, ...] = ()
    note: str = ""  # a footnote for a row that might read as a contradiction
    large: bool = False  # review LARGE_FILES generated files in chunks instead of the sample
    fallback: bool = False  # a fallback reviewer (a second simulator, healthy) is configured


@dataclass(frozen=True)
class Outcome:
    case: Case
    result: ReviewResult
    wire: ConnectionRecord | None
    certificate_path: Path

    @property
    def ok(self) -> bool:
        return self.result.decision.state is self.case.expected


def locate(haystack: bytes, needle: bytes) -> int:
    at = haystack.find(needle)
    if at < 0:
        raise GateError(
            f"demo: could not find {needle[:20]!r} in the healthy response to aim a flip; "
            "this is a bug in the demo, please report it",
            reason="demo_bug",
        )
    return at


def inside_sha(haystack: bytes, diff_sha: str) -> int:
    """The offset of a byte of ``diff_sha`` in the healthy response.

    The model's text is streamed in small pieces, so the hex digest may be split
    across events; any 6-digit window of it that arrived in one piece will do.
    """
    for start in range(len(diff_sha) - 6, -1, -1):
        at = haystack.find(diff_sha[start : start + 6].encode())
        if at >= 0:
            return at + 3
    return locate(haystack, diff_sha.encode())


def wire_cases(healthy: bytes, binding: Binding, provider: str = DEFAULT_PROVIDER) -> list[Case]:
    """The cases that break the healthy response on the wire, aimed at its bytes."""
    half = len(healthy) // 2
    sha_at = inside_sha(healthy, binding.diff_sha)
    marker, inside, label = END_MARKERS[provider]
    done_at = locate(healthy, marker) + inside
    note = (
        "the HTTP response ended properly (end trailer) and the finish reason was "
        "stop; only the data: [DONE] end marker was corrupted, and without it the "
        "answer is not proven whole"
        if label == "[DONE]"
        else f"the HTTP response ended properly (end trailer); only the {label} end marker "
        "was corrupted, and without it the answer is not proven whole"
    )
    return [
        Case(
            "cut",
            State.INCOMPLETE,
            fault=Fault(FaultKind.CUT, half),
            sent=f"cut after byte {half}",
        ),
        Case(
            "flip-sha",
            SHA_FLIP_STATE.get(provider, State.NEEDS_HUMAN),
            fault=Fault(FaultKind.FLIP, sha_at),
            sent=f"flip byte {sha_at} (diff_sha)",
        ),
        Case(
            "flip-done",
            DONE_FLIP_STATE.get(provider, State.INCOMPLETE),
            fault=Fault(FaultKind.FLIP, done_at),
            sent=f"flip byte {done_at} ({label})",
            note=note,
        ),
        Case(
            "stall",
            State.INCOMPLETE,
            fault=Fault(FaultKind.STALL, half),
            sent=f"stall after byte {half}",
            read_timeout=STALL_READ_TIMEOUT,
        ),
    ]


def model_cases() -> list[Case]:
    return [
        Case("echoed-example", State.NEEDS_HUMAN, mode="echo", sent="model echoes an example"),
        Case("reject", State.FAIL, mode="fail", sent="model answers fail"),
        Case(
            "out-of-tokens",
            State.NEEDS_HUMAN,  # the model's own end: it stands (gate.decide.ends)
            sent="model hits max_tokens",
            script=(SimResponse(finish="length"),),
        ),
    ]


#: the large-diff cases: this many files, in chunks of at most LARGE_CHUNK_BYTES
LARGE_FILES = 40
LARGE_CHUNK_BYTES = 8192
LARGE = "large.diff"


def large_diff(files: int = LARGE_FILES) -> bytes:
    """A generated pull request of ``files`` modules, several chunks long."""
    out = b""
    for i in range(files):
        name = f"billing/rules/rule_{i:02d}.py"
        out += f"diff --git a/{name} b/{name}\nindex 0000000..1111111 100644\n".encode()
        out += f"--- a/{name}\n+++ b/{name}\n@@ -1,2 +1,16 @@\n".encode()
        out += b" from decimal import Decimal\n-RATE = 0.1\n"
        out += f"+RATE = Decimal('0.{i + 1:02d}')\n".encode()
        out += b"".join(
            f"+LIMIT_{j} = Decimal('{i * 100 + j}.00')  # tier {j}\n".encode() for j in range(13)
        )
        out += b" \n"
    return out


def large_cases() -> list[Case]:
    """A pull request of LARGE_FILES files in several chunks; then one chunk cut on the wire
    (on every try), which must block the whole run."""
    cut = SimResponse(cut_after=400)
    return [
        Case("large", State.PASS, sent=f"{LARGE_FILES} files, in chunks", large=True),
        Case(
            "large-cut",
            State.INCOMPLETE,
            sent="same, chunk 2 cut at byte 400",
            large=True,
            script=(SimResponse(), cut, cut),
        ),
    ]


def fallback_cases(provider: str = DEFAULT_PROVIDER) -> list[Case]:
    """The primary reviewer's quota is exhausted (its documented stop, never retried), the
    fallback reviewer answers: a pass, with both reviewers in the certificate."""
    stop = quota_response(provider)
    script = (stop,) if provider != "mc1" else (stop, stop)  # mc1's 503 is retried
    return [
        Case(
            "quota-fallback",
            State.PASS,
            sent=f"primary: HTTP {stop.status} {'outage' if provider == 'mc1' else 'quota'}; "
            "fallback answers",
            script=script,
            fallback=True,
        )
    ]


# --- running -----------------------------------------------------------------------


def demo_config(base_url: str, *, read_timeout: float, provider: str = DEFAULT_PROVIDER) -> Config:
    extras: dict[str, Any] = dict(SIM_EXTRAS.get(provider, {}))
    return Config(
        reviewer=ReviewerConfig(
            provider=provider,
            model="demo-reviewer",
            **extras,
            base_url=base_url,
            connect_timeout=2.0,
            read_timeout=read_timeout,
            deadline=10.0,
            attempts=2,
        ),
        policy_version=POLICY_VERSION,
    )


def short_pause(seconds: float) -> None:
    time.sleep(min(seconds, RETRY_PAUSE_CAP))


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Keep any configured HTTP proxy away from 127.0.0.1 for the demo's duration."""
    saved = {name: os.environ.get(name) for name in ("NO_PROXY", "no_proxy")}
    for name, value in saved.items():
        os.environ[name] = ",".join(x for x in (value, "127.0.0.1", "localhost") if x)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def via(proxy: FaultProxy, sim_url: str) -> str:
    """The simulator's base URL, with its host and port replaced by the proxy's."""
    return proxy.url + urlsplit(sim_url).path


def run_case(
    case: Case,
    diff: bytes,
    base_url: str,
    out: Path,
    proxy: FaultProxy | None,
    review: Callable[..., ReviewResult] = review_diff,
    provider: str = DEFAULT_PROVIDER,
    fallback_url: str | None = None,
) -> Outcome:
    before = len(proxy.records) if proxy is not None else 0
    if proxy is not None:
        proxy.fault = case.fault
    config = demo_config(base_url, read_timeout=case.read_timeout, provider=provider)
    if case.large:
        diff = large_diff()
        config = replace(config, max_chunk_bytes=LARGE_CHUNK_BYTES, concurrency=1)
    keys: dict[str, Any] = {}
    if fallback_url is not None:
        fallback = replace(config.reviewer, base_url=fallback_url)
        config = replace(config, fallbacks=(fallback,))
        keys["fallback_keys"] = (None,)
    result = review(
        diff,
        config,
        api_key=None,  # a local reviewer needs no key (Bedrock's request goes unsigned)
        extra_cert={"command": "demo", "case": case.name, "on_the_wire": case.sent},
        sleep=short_pause,
        question=key_for(diff, config),  # as the action and `review` ask it: chunks name it
        **keys,
    )
    wire = None
    if proxy is not None:
        proxy.wait(5.0)
        records = proxy.records[before:]
        wire = records[-1] if records else None
    path = out / f"{case.name}.json"
    certificate.write(path, result.certificate)
    return Outcome(case=case, result=result, wire=wire, certificate_path=path)


def run_all(diff: bytes, out: Path, provider: str = DEFAULT_PROVIDER) -> list[Outcome]:
    outcomes: list[Outcome] = []
    model = ScriptedModel()
    with loopback_only():
        with ReviewerSimulator(provider, model) as sim, FaultProxy(_hostport(sim.base_url)) as px:
            url = via(px, sim.base_url)
            healthy = Case("healthy", State.PASS, sent="as is")
            first = run_case(healthy, diff, url, out, px, provider=provider)
            outcomes.append(first)
            captured = bytes(first.wire.captured) if first.wire is not None else b""
            for case in wire_cases(captured, first.result.binding, provider):
                outcomes.append(run_case(case, diff, url, out, px, provider=provider))
            for case in model_cases():
                if case.script:
                    continue
                model.mode = case.mode
                outcomes.append(run_case(case, diff, url, out, px, provider=provider))
        for case in model_cases():
            if not case.script:
                continue
            scripted = ScriptedModel(mode=case.mode)
            with ReviewerSimulator(provider, scripted, script=case.script) as sim:
                outcomes.append(run_case(case, diff, sim.base_url, out, None, provider=provider))
        for case in large_cases():
            with ReviewerSimulator(provider, ScriptedModel(), script=case.script) as sim:
                outcomes.append(run_case(case, diff, sim.base_url, out, None, provider=provider))
        for case in fallback_cases(provider):
            with (
                ReviewerSimulator(provider, ScriptedModel(), script=case.script) as sim,
                ReviewerSimulator(provider, ScriptedModel()) as backup,
            ):
                outcomes.append(
                    run_case(
                        case,
                        diff,
                        sim.base_url,
                        out,
                        None,
                        provider=provider,
                        fallback_url=backup.base_url,
                    )
                )
    return outcomes


def _hostport(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.hostname is None or parts.port is None:
        raise GateError(f"demo: the simulator URL {url!r} has no host:port", reason="demo_bug")
    return parts.hostname, parts.port


# --- reporting ---------------------------------------------------------------------


def arrived(outcome: Outcome) -> str:
    last = outcome.result.outcome.last
    if last is None:
        return "nothing"
    finish = str(last.finish_reason)
    if last.provider_finish_reason and last.provider_finish_reason != finish:
        finish = f"{finish} ({last.provider_finish_reason})"
    return f"{last.bytes_received} B, end {last.end_reason}, finish {finish}"


#: the narrowest the why column is cut to; below it every line is cut at the width instead
WHY_MIN = 16


def terminal_width() -> int:
    """The terminal's width (``COLUMNS`` when set, else the terminal's, else 160: a log)."""
    return shutil.get_terminal_size(fallback=(160, 24)).columns


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 3)] + "..."


def why(outcome: Outcome) -> str:
    """The reason code and the cause, without the state prefix (in full)."""
    decision = outcome.result.decision
    tail = decision.description
    for prefix in (f"{decision.state}: ", f"{decision.reason}: "):
        tail = tail.removeprefix(prefix)
    tail = re.sub(r"^incomplete after \d+ attempts?: ", "", tail)
    return f"{decision.reason}: {tail}"


#: the columns left out, in this order, when the terminal is too narrow for all of them
#: (arrived, on the wire, tries); case, decision and why always stay
_DROP_ORDER = (3, 1, 2)


def table(outcomes: Sequence[Outcome], width: int | None = None) -> str:
    """The cases as a table no wider than ``width`` (default: the terminal's): the why
    column gets what the others leave, cut with ``...``; on a terminal too narrow even
    for that, every line is cut at the width."""
    width = terminal_width() if width is None else width
    rows = [("case", "on the wire", "tries", "arrived (body, last try)", "decision", "why")]
    for o in outcomes:
        state = str(o.result.decision.state)
        mark = state if o.ok else f"{state} (EXPECTED {o.case.expected})"
        tries = str(len(o.result.outcome.attempts))
        seen = f"{arrived(o)} *" if o.case.note else arrived(o)
        rows.append((o.case.name, o.case.sent, tries, seen, mark, why(o)))
    keep = [0, 1, 2, 3, 4]
    widths = {i: max(len(row[i]) for row in rows) for i in keep}
    for drop in _DROP_ORDER:  # too narrow: leave out the columns a reader needs least
        if sum(widths[i] + 2 for i in keep) + WHY_MIN <= width:
            break
        keep.remove(drop)
    room = max(WHY_MIN, width - sum(widths[i] + 2 for i in keep))
    lines = []
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in keep]
        lines.append(cut("  ".join([*cells, cut(row[5], room)]).rstrip(), width))
    for o in outcomes:
        if o.case.note:  # a footnote is wrapped to the width, never cut
            lines += textwrap.wrap(
                f"* {o.case.name}: {o.case.note}", max(width, WHY_MIN), subsequent_indent="  "
            )
    return "\n".join(lines)


def summary_json(outcomes: Sequence[Outcome], out: Path) -> dict[str, Any]:
    return {
        "ok": all(o.ok for o in outcomes),
        "out": str(out),
        "cases": [
            {
                "case": o.case.name,
                "expected": str(o.case.expected),
                "ok": o.ok,
                "on_the_wire": o.case.sent,
                "note": o.case.note or None,
                "wire_bytes": None if o.wire is None else o.wire.client_bytes,
                "decision": o.result.decision.to_json(),
                "attempts": [a.to_json() for a in o.result.outcome.attempts],
                "certificate": str(o.certificate_path),
            }
            for o in outcomes
        ],
    }


def load_sample() -> bytes:
    return resources.files("gate").joinpath("data", SAMPLE).read_bytes()


@dataclass(frozen=True)
class DemoRun:
    """One run of every case: what was sent, what came of it, how long it took."""

    diff: bytes
    binding: Binding
    prompt_chars: int
    outcomes: list[Outcome]
    elapsed: float
    out: Path
    provider: str = DEFAULT_PROVIDER

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.outcomes)


def run_demo(out: Path, provider: str = DEFAULT_PROVIDER) -> DemoRun:
    """Run every case into ``out`` (certificates and the sample diff); UsageError when
    ``out`` cannot be written."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot create the output folder {out}: {err.strerror}") from err
    diff = load_sample()
    sample = out / SAMPLE
    try:  # the exact bytes reviewed, for re-verifying the certificates offline
        atomic_write(sample, diff)
        atomic_write(out / LARGE, large_diff())
    except (GateError, OSError) as err:
        raise UsageError(f"cannot write {sample}: {err}") from err
    binding = binding_for(diff, demo_config("http://127.0.0.1", read_timeout=1.0))
    prompt = build_prompt(diff, binding=binding)
    started = time.monotonic()
    outcomes = run_all(diff, out, provider)
    elapsed = time.monotonic() - started
    chars = len(prompt.system) + len(prompt.user)
    return DemoRun(diff, binding, chars, outcomes, elapsed, out, provider)


def text_report(run: DemoRun) -> list[str]:
    """The demo's screen: what was sent and to whom, the table, where the evidence is."""
    diff, binding, out, outcomes = run.diff, run.binding, run.out, run.outcomes
    sample = out / SAMPLE
    good = sum(o.ok for o in outcomes)
    verdict = "every case got its expected decision" if run.ok else "SOME CASES DID NOT"
    return [
        f"sent: the bundled {SAMPLE} ({len(diff)} bytes, diff_sha {binding.diff_sha[:12]}..., "
        f"policy_version {binding.policy_version}) in a {run.prompt_chars}-character prompt",
        f"to:   a local reviewer speaking {SPEAKING[run.provider]} on 127.0.0.1, "
        "through the fault proxy; 2 tries per case, retry pauses shortened",
        "      (wire offsets count the HTTP response from its first byte, headers included)",
        "",
        table(outcomes),
        "",
        f"certificates: {out}/ ({len(outcomes)} files, one per case), with the diff as {sample}"
        f" (the large cases: {out / LARGE})",
        f"re-verify one offline: review-gate verify --from-certificate {out / 'healthy.json'} "
        f"--diff {sample} --policy-version {POLICY_VERSION}",
        "the why column is cut to the terminal's width (COLUMNS): --json prints every detail "
        "in full",
        f"{good}/{len(outcomes)} as expected in {run.elapsed:.1f} s: {verdict}",
    ]
