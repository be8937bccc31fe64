"""Class: an input that makes a parser raise something other than its typed error.

Cause: each parser entry point caught its own list of exceptions, and each list had a
gap: ``json.loads`` raises ``ValueError`` for an integer of more than 4300 digits
(``apply``: "internal error", exit 3, nothing on stdout with ``--json``) and
``RecursionError`` for deep nesting (``verify --from-certificate``); PyYAML's composer
recurses once per level (a 6 KB config: ``RecursionError``) and builds dates and
integers that raise ``ValueError`` (``policy_version: 2001-13-45``); an event payload
field of the wrong type raised ``AttributeError``, a ``pr-number`` of superscript
digits ``ValueError``.

Fix: one strict JSON loader (:mod:`gate.safe.strictjson`) for verdicts, provider frames,
tool results, certificates and event payloads, turning every failure into the
caller's typed error with a reason code; one YAML loader wrapper
(:func:`gate.config.load.compose_yaml`) that refuses aliases, tags and deep nesting from
the event stream before composing, and scalar construction errors named by line;
event payload fields checked for their type.

Variants: one Hypothesis test per entry point (verdict, MC1 envelope, SSE parser,
each provider dialect's frames, the MC1 dialect, certificates, tool results, config,
event payloads, action inputs), each drawing arbitrary bytes and structure-aware
mutations of a valid input (byte edits with a dictionary of hostile tokens, and JSON
or YAML nodes replaced by hostile values: 4400-digit integers, 1e999, deep nesting,
duplicate keys, wrong types). Each asserts a typed error or a valid result, never
another exception, CLI exit codes in {0, 1, 2, 3} without the internal-error path,
and never ``pass`` (exit 0, a sealed reply, an applied write) unless the input is a
valid one by an independent check. Lone surrogates in verdict strings and line
endings other than LF around fences belong to their own modules and are not drawn
for verdicts here.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import itertools
import json
import math
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

from gate import cli
from gate.action.event import read_event, target_from_event
from gate.action.run import run_action
from gate.apply.marker import marker_path, read_marker
from gate.config.inputs import apply_inputs
from gate.config.load import load_config
from gate.config.model import Config, default_config
from gate.decide.attempt import EndReason
from gate.decide.decision import Binding, State, decide, exit_code
from gate.decide.envelope import StreamVerifier, seal, verify
from gate.decide.verdict import KEYS, parse_verdict
from gate.errors import (
    ConfigError,
    EnvelopeError,
    GateError,
    GitHubError,
    TransportError,
    UsageError,
    VerdictError,
)
from gate.lab.sim import render_events
from gate.review.certificate import build, dumps
from gate.reviewers import anthropic, gemini, mc1, openai
from gate.reviewers.base import Exchange, Reply
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.sse import SSEParser
from tests.fakes.events import merge_group_event, pull_request_event, workflow_dispatch_event
from tests.verdicts import read_words

T = TypeVar("T")
FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SHA = "ab" * 32
POLICY = "1"
BINDING = Binding(diff_sha=SHA, policy_version=POLICY)
MIN_CONFIDENCE = 0.8

# --- mutations -------------------------------------------------------------------------

#: raw JSON texts that broke (or could break) a parser
HOSTILE_JSON = [
    "9" * 4400,
    "-" + "9" * 4400,
    "1e999",
    "-1e999",
    "1" + "0" * 400 + ".5",
    "NaN",
    "Infinity",
    "[" * 3000 + "]" * 3000,
    '{"a":' * 200 + "1" + "}" * 200,
    '{"a": 1, "a": 2}',
    '"\\ud800"',
    '"\\u0000"',
    '"' + "x" * 5000 + '"',
    "null",
    "true",
    "false",
    "0",
    "-1",
    "0.5",
    '""',
    "[]",
    "{}",
    '["x"]',
    '{"type": "error"}',
    '"\uff12"',
]
HOSTILE_BYTES = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b"\\",
    b",",
    b":",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\n",
    b"\n\n",
    b"data: ",
    b"event: error\n",
    b"```",
    b"```json\n",
    b"\xef\xbb\xbf",
    b"MC1 ",
    b"9" * 4400,
    b"[" * 3000,
    b"1e999",
    b"NaN",
    b"!!float ",
    b"&a ",
    b"*a",
    b"- ",
    b": ",
    b"  ",
    b"\t",
]


@st.composite
def mutated(draw: st.DrawFn, original: bytes, tokens: list[bytes] = HOSTILE_BYTES) -> bytes:
    """``original`` with 1 to 4 byte-level edits (insert a hostile token, delete, duplicate,
    replace, truncate, flip a bit)."""
    data = bytearray(original)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        op = draw(st.sampled_from(["insert", "delete", "duplicate", "replace", "cut", "flip"]))
        pos = draw(st.integers(min_value=0, max_value=len(data)))
        end = min(len(data), pos + draw(st.integers(min_value=1, max_value=24)))
        if op == "insert":
            data[pos:pos] = draw(st.sampled_from(tokens) | st.binary(min_size=1, max_size=6))
        elif op == "delete":
            del data[pos:end]
        elif op == "duplicate":
            data[pos:pos] = data[pos:end]
        elif op == "replace":
            data[pos:end] = draw(st.sampled_from(tokens))
        elif op == "cut":
            del data[pos:]
        elif data:
            data[pos % len(data)] ^= 1 << draw(st.integers(min_value=0, max_value=7))
    return bytes(data)


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every node's path in a JSON value (the root is ``()``)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_paths(item, (*prefix, index))


@st.composite
def mutated_json(
    draw: st.DrawFn, doc: Any, targets: list[tuple[Any, ...]] = (), *, text: bool = False
) -> bytes:
    """``doc`` with 1 to 3 nodes replaced by hostile values (raw JSON texts, values of other
    types), deleted or given a duplicate key; targets (fields a parser reads) are favoured."""
    doc = json.loads(json.dumps(doc))
    every = list(json_paths(doc))
    raws: dict[str, str] = {}
    for index in range(draw(st.integers(min_value=1, max_value=3))):
        pool = [p for p in targets if _has(doc, p[:-1])] if targets else []
        favour = bool(pool) and draw(st.booleans())
        path = draw(st.sampled_from(pool if favour else every))
        op = draw(st.sampled_from(["raw", "value", "delete", "duplicate"]))
        marker = f"\x00mark{index}\x00"
        if op == "raw":
            raws[marker] = draw(st.sampled_from(HOSTILE_JSON))
        elif op == "duplicate" and path and isinstance(path[-1], str):
            raws[marker] = f"1, {json.dumps(path[-1])}: " + draw(st.sampled_from(HOSTILE_JSON))
        elif op == "delete" and path:
            _delete(doc, path)
            every = list(json_paths(doc))
            continue
        else:
            raws[marker] = json.dumps(draw(JSON_VALUES))
        if not path:
            doc = marker
        else:
            _set(doc, path, marker)
        every = list(json_paths(doc))
    out = json.dumps(doc)
    for marker, raw in raws.items():
        out = out.replace(json.dumps(marker), raw)
    data = out.encode("utf-8", "surrogatepass")
    return draw(mutated(data)) if text and draw(st.booleans()) else data


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _has(doc: Any, path: tuple[Any, ...]) -> bool:
    node = doc
    for key in path:
        found = (isinstance(node, dict) and key in node) or (
            isinstance(node, list) and isinstance(key, int) and key < len(node)
        )
        if not found:
            return False
        node = node[key]
    return isinstance(node, dict | list)


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    node = doc
    for key in path[:-1]:
        node = node[key]
    if isinstance(node, list) and path[-1] >= len(node):
        node.append(value)
    else:
        node[path[-1]] = value


def _delete(doc: Any, path: tuple[Any, ...]) -> None:
    node = doc
    for key in path[:-1]:
        node = node[key]
    if (isinstance(node, list) and path[-1] < len(node)) or isinstance(node, dict):
        node.pop(path[-1], None) if isinstance(node, dict) else node.pop(path[-1])


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


CUTS = st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=6)


# --- the CLI, as a terminal would run it ---------------------------------------------------


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``review-gate ARGV`` in process, with stdout strict UTF-8 and stderr
    backslashreplace, as Python sets them up for a terminal or a pipe."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    out.flush()
    err.flush()
    texts = [s.buffer.getvalue().decode("utf-8", "replace") for s in (out, err)]  # type: ignore[attr-defined]
    return code, texts[0], texts[1]


def outcome(call: Callable[[], T]) -> T | GateError:
    """What ``call`` returns, or the typed error it raises (any other exception escapes
    and fails the test). Every GateError carries a reason code (gate.errors)."""
    try:
        return call()
    except GateError as err:
        return err


def assert_no_internal_error(code: int, stderr: str) -> None:
    assert code in (0, 1, 2, 3)
    assert "internal error" not in stderr, stderr


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


# --- 1. verdict ------------------------------------------------------------------------------

VALID_VERDICT = {
    "verdict": "pass",
    "reasons": ["checked the change"],
    "confidence": 0.9,
    "diff_sha": SHA,
    "policy_version": POLICY,
    "read": read_words(SHA, POLICY),
}
VERDICT_TARGETS = [(key,) for key in KEYS] + [("reasons", 0), ("extra",)]
# text the verdict tests draw: no lone surrogates, no line ending but LF (their own modules)
SAFE_TEXT = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    ),
    max_size=40,
)


def answer_text(fenced: str, before: str = "My verdict:\n", after: str = "") -> str:
    return f"{before}```json\n{fenced}\n```\n{after}"


def valid_pass(content: str) -> bool:
    """An independent reading of "a valid pass": exactly two fence lines (```json, ```), one
    strict JSON object with exactly the five keys, a pass with reasons, a confidence in
    [min, 1] and the binding."""
    lines = content.split("\n")
    fences = [i for i, line in enumerate(lines) if line.lstrip().startswith(("```", "~~~"))]
    if len(fences) != 2 or lines[fences[0]].rstrip(" \t") != "```json":
        return False
    if lines[fences[1]].rstrip(" \t") != "```":
        return False
    inner = "\n".join(lines[fences[0] + 1 : fences[1]])

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate")
        return dict(items)

    try:
        obj = json.loads(inner, object_pairs_hook=pairs, parse_constant=float)
    except (ValueError, RecursionError):
        return False
    if not isinstance(obj, dict) or set(obj) != set(KEYS):
        return False
    reasons, confidence = obj["reasons"], obj["confidence"]
    return (
        obj["verdict"] == "pass"
        and isinstance(reasons, list)
        and bool(reasons)
        and all(isinstance(r, str) and r.strip() for r in reasons)
        and isinstance(confidence, int | float)
        and not isinstance(confidence, bool)
        and math.isfinite(confidence)
        and MIN_CONFIDENCE <= confidence <= 1
        and obj["diff_sha"] == SHA
        and obj["policy_version"] == POLICY
    )


@st.composite
def verdict_answers(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["json", "text", "answer", "valid"]))
    if kind == "text":
        return draw(SAFE_TEXT)
    if kind == "answer":
        fenced = draw(SAFE_TEXT)
    elif kind == "valid":  # well-formed verdicts with drawn values: some pass, some do not
        verdict = {
            **VALID_VERDICT,
            "verdict": draw(st.sampled_from(["pass", "fail"])),
            "reasons": draw(st.lists(SAFE_TEXT.filter(lambda r: "\n" not in r), max_size=3)),
            "confidence": draw(st.floats(min_value=0, max_value=1)),
        }
        fenced = json.dumps(verdict, ensure_ascii=draw(st.booleans()))
    else:
        raw = draw(mutated_json(VALID_VERDICT, VERDICT_TARGETS, text=True))
        fenced = raw.decode("utf-8", "replace")
        assume("\ufffd" not in fenced and "\\ud" not in fenced.lower())
        assume(not any(ch in fenced for ch in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"))
    return answer_text(fenced, after=draw(st.sampled_from(["", "thanks\n", "```\n"])))


@FUZZ
@given(content=verdict_answers())
@example(content=answer_text(json.dumps(VALID_VERDICT)))
@example(content=answer_text(json.dumps({**VALID_VERDICT, "confidence": 1e400})))
@example(content=answer_text('{"verdict": "pass", "confidence": ' + "9" * 4400 + "}"))
def test_verdict_parser_raises_only_verdict_errors(content: str, workdir: Path) -> None:
    verdict = outcome(lambda: parse_verdict(content, diff_sha=SHA, policy_version=POLICY))
    assert isinstance(verdict, VerdictError) or verdict.verdict in ("pass", "fail")
    decision = decide(seal(content.encode()), binding=BINDING, min_confidence=MIN_CONFIDENCE)
    if decision.state is State.PASS:
        assert valid_pass(content), content
    envelope = workdir / "verdict.mc1"
    envelope.write_bytes(seal(content.encode()))
    code, _, err = run_cli(
        ["verify", str(envelope), "--diff-sha", SHA, "--policy-version", POLICY, "--json"]
    )
    assert_no_internal_error(code, err)
    assert code == exit_code(decision)
    event(f"verdict: {decision.state} ({decision.reason})")


# --- 2. MC1 envelope --------------------------------------------------------------------------

VALID_ENVELOPE = seal(b"```json\n{}\n```\n")


@FUZZ
@given(
    raw=st.binary(max_size=200) | mutated(VALID_ENVELOPE) | st.just(VALID_ENVELOPE),
    cuts=CUTS,
)
def test_mc1_envelope_raises_only_envelope_errors(raw: bytes, cuts: list[int]) -> None:
    verifier = StreamVerifier()

    def streamed() -> bytes:
        for part in chunked(raw, cuts):
            verifier.feed(part)
        return verifier.finish().content

    content = outcome(streamed)
    whole = outcome(lambda: verify(raw))
    if isinstance(content, GateError):
        assert isinstance(whole, EnvelopeError)  # the same answer whatever the chunking
        assert whole.reason == content.reason
    else:
        assert raw == seal(content)  # accepted: exactly a sealed envelope, nothing else
        assert whole == content


# --- 3. provider frames ---------------------------------------------------------------------

DIALECTS = {"openai": openai, "anthropic": anthropic, "gemini": gemini}
END_MARKERS = {"openai": b"[DONE]", "anthropic": b"message_stop", "gemini": b"finishReason"}


def reviewer_settings(provider: str) -> ReviewerSettings:
    return ReviewerSettings(provider=provider, model="m", base_url="http://127.0.0.1:1/")


def exchange(raw: bytes, sink_error: GateError | None = None) -> Exchange:
    return Exchange(
        status=200,
        headers={"content-type": "text/event-stream"},
        raw=raw,
        framing="chunked",
        failure="",
        failure_detail="",
        end_reason=EndReason.TRAILER,
        retryable=False,
        elapsed_s=0.0,
        first_byte_s=0.0,
        sink_error=sink_error,
    )


@st.composite
def provider_bodies(draw: st.DrawFn, provider: str) -> bytes:
    events = render_events(provider, "```json\n{}\n```\n")
    kind = draw(st.sampled_from(["bytes", "event_json", "event_bytes", "events", "whole"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "whole":
        return b"".join(events)
    index = draw(st.integers(min_value=0, max_value=len(events) - 1))
    if kind == "events":  # drop, repeat or swap whole events
        order = draw(st.lists(st.sampled_from(range(len(events))), max_size=len(events) + 2))
        return b"".join(events[i] for i in order)
    head, _, data = events[index].rpartition(b"data: ")
    if kind == "event_json":
        try:
            doc = json.loads(data)
        except ValueError:
            doc = data.decode().strip()
        new = head + b"data: " + draw(mutated_json(doc)) + b"\n\n"
    else:
        new = draw(mutated(events[index]))
    return b"".join(events[:index]) + new + b"".join(events[index + 1 :])


@pytest.mark.parametrize("provider", sorted(DIALECTS))
def test_provider_frames_raise_nothing_and_seal_only_whole_answers(provider: str) -> None:
    @FUZZ
    @given(body=provider_bodies(provider), cuts=CUTS)
    def check(body: bytes, cuts: list[int]) -> None:
        stream = DIALECTS[provider].Stream(reviewer_settings(provider))
        for part in chunked(body, cuts):
            stream.feed(part)  # the SSE dialects never raise: errors are recorded
        reply: Reply = stream.conclude(exchange(body))
        assert isinstance(reply, Reply)
        event(f"{provider}: {reply.reason or 'complete'}")
        if reply.complete:
            assert reply.envelope is not None
            assert verify(reply.envelope) == reply.content.encode()
            assert END_MARKERS[provider] in body
        else:
            assert reply.reason
            assert reply.envelope is None

    check()


@FUZZ
@given(body=st.binary(max_size=300) | mutated(b"".join(render_events("openai", "x"))), cuts=CUTS)
def test_sse_parser_raises_only_transport_errors(body: bytes, cuts: list[int]) -> None:
    parser = SSEParser()
    with contextlib.suppress(TransportError):
        for part in chunked(body, cuts):
            for event in parser.feed(part):
                # a named event with no data line is dispatched with data None (frame
                # precedence: `event: error` alone must reach the dialect); else a string
                assert isinstance(event.data, str) or (event.data is None and event.event)


@FUZZ
@given(raw=st.binary(max_size=200) | mutated(VALID_ENVELOPE), cuts=CUTS)
def test_mc1_dialect_raises_only_envelope_errors_and_keeps_the_bytes(
    raw: bytes, cuts: list[int]
) -> None:
    stream = mc1.Stream(reviewer_settings("mc1"))
    sink_error: GateError | None = None
    for part in chunked(raw, cuts):
        try:
            stream.feed(part)
        except EnvelopeError as err:  # what perform() keeps as the sink error
            sink_error = err
            break
    reply = stream.conclude(exchange(raw, sink_error))
    if reply.complete:
        assert reply.envelope == raw == seal(reply.content.encode())


# --- 4. certificates --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate_pass() -> dict[str, Any]:
    envelope = seal(answer_text(json.dumps(VALID_VERDICT)).encode())
    decision = decide(envelope, binding=BINDING, min_confidence=MIN_CONFIDENCE)
    assert decision.state is State.PASS
    return build(decision, binding=BINDING, attempts=(), inputs={}, envelope=envelope)


CERT_TARGETS = [
    ("envelope",),
    ("envelope", "base64"),
    ("envelope", "sha256"),
    ("attempts",),
    ("decision",),
    ("decision", "state"),
    ("decision", "status"),
    ("decision", "reason"),
]


@FUZZ
@given(data=st.data())
def test_certificates_reach_a_typed_error_never_an_internal_one(
    data: st.DataObject, certificate_pass: dict[str, Any], workdir: Path
) -> None:
    original = dumps(certificate_pass)
    raw = data.draw(
        st.binary(max_size=200)
        | mutated(original)
        | mutated_json(certificate_pass, CERT_TARGETS, text=True)
        | st.just(original),
        label="certificate",
    )
    path = workdir / "cert.json"
    path.write_bytes(raw)
    code, _, err = run_cli(
        ["verify", "--from-certificate", str(path), "--diff-sha", SHA, "--policy-version", POLICY]
    )
    assert_no_internal_error(code, err)
    event(f"certificate: exit {code}")
    if code == 0:  # a pass only from the very envelope and recorded decision of a pass
        cert = json.loads(raw)
        assert cert["envelope"]["base64"] == certificate_pass["envelope"]["base64"]
        assert (cert["decision"]["state"], cert["decision"]["status"]) == ("pass", "success")


# --- 5. tool results --------------------------------------------------------------------------

CONTENT = b"print('ok')\n"
WRITE = {
    "tool": "write_file",
    "path": "src/ok.py",
    "content_length": len(CONTENT),
    "sha256": hashlib.sha256(CONTENT).hexdigest(),
    "encoding": "base64",
    "content": base64.b64encode(CONTENT).decode(),
    "stream_end_reason": "trailer",
    "apply_id": "a1",
}
DELETE = {"tool": "delete_path", "path": "src/old.py", "apply_id": "d1"}
TOOL_TARGETS = [(key,) for key in WRITE] + [("extra",)]


TOOL_RESULTS = (
    st.binary(max_size=200)
    | st.sampled_from([WRITE, DELETE]).map(lambda doc: json.dumps(doc).encode())
    | mutated(json.dumps(WRITE).encode())
    | mutated_json(WRITE, TOOL_TARGETS)
    | mutated_json(WRITE, TOOL_TARGETS, text=True)
    | mutated_json(DELETE, [(k,) for k in DELETE], text=True)
)
BIG_INT_RESULT = json.dumps(DELETE).replace('"d1"', '"d1", "n": ' + "9" * 4400).encode()


def apply_cli(raw: bytes, *extra: str) -> tuple[int, str, str, Path]:
    root = Path(tempfile.mkdtemp())
    (root / "src").mkdir()
    (root / "src" / "old.py").write_bytes(b"old\n")
    result = root / "result.json"
    result.write_bytes(raw)
    code, out, err = run_cli(["apply", str(result), "--root", str(root), *extra])
    return code, out, err, root


@FUZZ
@given(raw=TOOL_RESULTS)
@example(raw=BIG_INT_RESULT)
@example(raw=json.dumps({**DELETE, "path": "src/\ud800"}).encode())
@example(raw=json.dumps({**WRITE, "path": "\udfff"}).encode())
def test_tool_results_are_applied_or_refused_never_an_internal_error(raw: bytes) -> None:
    code, out, err, root = apply_cli(raw, "--json")
    try:
        assert_no_internal_error(code, err)
        record = json.loads(out)  # --json: the whole record, always
        event(f"apply: {record['outcome']} ({record['reason']})")
        if code == 0:  # applied: only a well-formed result, and exactly its bytes
            doc = json.loads(raw)
            if doc["tool"] == "write_file":
                written = (root / doc["path"]).read_bytes()
                assert hashlib.sha256(written).hexdigest() == doc["sha256"]
                assert len(written) == doc["content_length"]
        else:
            assert record["outcome"] != "ok"
    finally:
        shutil.rmtree(root)


def test_the_issue_case_an_integer_of_4400_digits_is_refused_not_json() -> None:
    code, out, err, root = apply_cli(BIG_INT_RESULT, "--json")
    assert (code, json.loads(out)["reason"]) == (3, "not_json"), err
    code, out, err, root2 = apply_cli(BIG_INT_RESULT)
    assert code == 3
    assert "apply.refused=true" in out
    assert "apply.reason=not_json" in out
    shutil.rmtree(root)
    shutil.rmtree(root2)


MARKER = {
    "version": 1,
    "entries": [{"apply_id": "a1", "path": "src/x.py", "reason": "length_short", "time": "t"}],
}


@FUZZ
@given(
    raw=st.binary(max_size=120)
    | mutated(json.dumps(MARKER).encode())
    | mutated_json(MARKER, [("entries",), ("entries", 0), ("entries", 0, "path")], text=True)
)
@example(raw=b'{"entries": ' + b"[" * 5000 + b"]" * 5000 + b"}")
def test_the_apply_marker_is_read_or_refused_as_unreadable(raw: bytes) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        marker_path(root).parent.mkdir()
        marker_path(root).write_bytes(raw)
        entries = outcome(lambda: read_marker(root))
        if isinstance(entries, GateError):
            assert entries.reason == "marker_unreadable"
        else:
            assert all(isinstance(entry.path, str) for entry in entries)
    finally:
        shutil.rmtree(root)


# --- 6. config ----------------------------------------------------------------------------------

VALID_CONFIG = """\
reviewer:
  provider: openai
  model: gpt-x
  max_tokens: 4096
  temperature: 0.0
policy_version: "7"
min_confidence: 0.85
include: ["**"]
exclude: ["docs/**", "*.lock"]
allow_partial_coverage: false
instructions: |
  Look for SQL injection.
"""
YAML_TOKENS = [
    b"!!float ",
    b"!!bool ",
    b"!!python/object:os.system ",
    b"! ",
    b"&a ",
    b"*a",
    b"<<: ",
    b"[" * 2000,
    b"{" * 2000,
    b"- " * 500,
    b"2001-13-45",
    b"9" * 5000,
    b"1_0:3" + b"9" * 5000,
    b".nan",
    b"yes",
    b"on",
    b"~",
    b'"1\\n"',
    b"\t",
    b"%TAG ! tag:x,2000:\n---\n",
    b"---\n",
    b"...\n",
    b"? ",
    b"|\n",
    *HOSTILE_BYTES,
]


@FUZZ
@given(
    raw=st.binary(max_size=200)
    | st.text(max_size=200).map(str.encode)
    | mutated(VALID_CONFIG.encode(), YAML_TOKENS)
    | st.just(VALID_CONFIG.encode())
)
@example(raw=b"a: " + b"[" * 3000 + b"]" * 3000 + b"\n")
@example(raw=b"policy_version: 2001-13-45\n")
@example(raw=b"min_confidence: !!float '0.5'\n")
@example(raw=b'policy_version: "1\\n"\n')
def test_config_is_a_config_or_a_config_error(raw: bytes, workdir: Path) -> None:
    path = workdir / "config.yml"
    path.write_bytes(raw)
    config = outcome(lambda: load_config(path))
    event(f"config: {getattr(config, 'reason', 'valid')}")
    if not isinstance(config, GateError):
        assert isinstance(config, Config)
        assert isinstance(config.policy_version, str)
        assert "\n" not in config.policy_version
        return
    assert isinstance(config, ConfigError)
    # the CLI: a config error is exit 2 (before any reviewer call), never an internal error
    diff = workdir / "change.diff"
    diff.write_bytes(b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    code, _, err = run_cli(["review", "--diff", str(diff), "--config", str(path)])
    assert_no_internal_error(code, err)
    assert code == 2


@FUZZ
@given(
    name=st.sampled_from(
        sorted(
            [
                "min-confidence",
                "max-tokens",
                "attempts",
                "timeout",
                "policy-version",
                "allow-partial-coverage",
                "base-url",
                "api-key-env",
                "max-diff-bytes",
                "comment",
                "provider",
            ]
        )
    ),
    value=st.text(max_size=30)
    | st.sampled_from(["9" * 5000, "1e999", "nan", "-0", "true", "yes", "1\n", "²", "0x10"]),
)
def test_action_inputs_are_a_config_or_a_config_error(name: str, value: str) -> None:
    config = outcome(lambda: apply_inputs(default_config(), {name: value}))
    if isinstance(config, GateError):
        assert isinstance(config, ConfigError)
        assert config.reason.startswith("config_")
    else:
        assert math.isfinite(config.min_confidence)
        assert "\n" not in config.policy_version


# --- 7. event payloads and inputs -------------------------------------------------------------

EVENT_TARGETS = [
    ("action",),
    ("number",),
    ("sender",),
    ("sender", "login"),
    ("pull_request",),
    ("pull_request", "number"),
    ("pull_request", "head"),
    ("pull_request", "head", "sha"),
    ("pull_request", "head", "repo"),
    ("pull_request", "base"),
    ("pull_request", "base", "repo"),
    ("pull_request", "labels"),
    ("pull_request", "draft"),
    ("pull_request", "user"),
    ("pull_request", "changed_files"),
    ("label",),
    ("label", "name"),
    ("changes",),
    ("merge_group",),
    ("merge_group", "head_sha"),
    ("inputs",),
    ("inputs", "pr-number"),
]


@pytest.fixture(scope="module")
def payloads() -> dict[str, dict[str, Any]]:
    common = {"repository": "o/r", "head_sha": "1" * 40, "base_sha": "2" * 40}
    return {
        "pull_request": pull_request_event("labeled", number=7, label="x", **common),
        "merge_group": merge_group_event(**common),
        "workflow_dispatch": workflow_dispatch_event(repository="o/r", inputs={"pr-number": "7"}),
    }


class Stop(GitHubError):
    """Raised by the fake client factory: the event was read, the test ends the run here."""


def no_github(_settings: Any) -> Any:
    raise Stop("no GitHub in this test", reason="test_stop")


@FUZZ
@given(data=st.data())
def test_event_payloads_are_read_or_refused_with_a_usage_error(
    data: st.DataObject, payloads: dict[str, dict[str, Any]], workdir: Path
) -> None:
    name = data.draw(st.sampled_from(sorted(payloads)), label="event")
    raw = data.draw(
        st.binary(max_size=100) | mutated_json(payloads[name], EVENT_TARGETS, text=True),
        label="payload",
    )
    pr_number = data.draw(
        st.sampled_from(["", "7", "#7", "²", "9" * 5000, "-1", "7\n"]) | st.text(max_size=8),
        label="pr-number",
    )
    path = workdir / "event.json"
    path.write_bytes(raw)
    env = {"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(path)}
    target = outcome(lambda: target_from_event(*read_event(env), pr_number=pr_number))
    assert isinstance(target, UsageError | GitHubError) or target.event == name
    # the whole action, up to the first GitHub call: never the internal-error path
    out = io.StringIO()
    action_env = {
        **env,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_TOKEN": "t",
        "INPUT_PR-NUMBER": pr_number,
    }
    code = run_action(action_env, out=out, client_factory=no_github, throttle=False)
    event(f"event: {getattr(target, 'reason', 'read')}, action exit {code}")
    assert code in (0, 2, 3)
    assert "internal" not in out.getvalue(), out.getvalue()


def test_the_mutators_change_what_they_are_given() -> None:
    # a generator that returned its input unchanged would make every test above vacuous
    drawn: list[bytes] = []

    @settings(max_examples=100, deadline=None, database=None, derandomize=True)
    @given(raw=mutated_json(VALID_VERDICT, VERDICT_TARGETS), other=mutated(VALID_ENVELOPE))
    def collect(raw: bytes, other: bytes) -> None:
        drawn.extend((raw, other))

    collect()
    unchanged = drawn.count(json.dumps(VALID_VERDICT).encode()) + drawn.count(VALID_ENVELOPE)
    assert unchanged <= len(drawn) // 10  # a no-op edit (deleting an absent key) is rare
    assert len(set(drawn)) >= len(drawn) // 2
