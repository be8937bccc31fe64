"""Class: a secret reaching a sink, in any form (issue 8, section 2).

Cause: the API key was matched only as its exact string, only in the attempt
detail and the certificate, and only after the 200-character (error frame) and
80-character (non-JSON event) cuts. So its repr (h11's ``Illegal header value
b'Bearer sk-...\\n'`` for a pasted key with a trailing newline), a URL-encoded
or base64 echo, a prefix left by a cut, the raw ``.response`` file, the public
commit status, the job summary, the sticky comment and the step outputs all
kept it; and the GitHub token was redacted nowhere but the log masks.

Fix: keys are stripped and checked where they are read
(:func:`gate.safe.redact.checked_key`: a control character, whitespace or a
non-ASCII character is a config error naming the source, never showing the
value). One redaction step (:mod:`gate.safe.redact`) finds any run of 12 or more
characters of a secret raw, repr-, JSON-, HTML-, URL- and base64-encoded (three
byte phases, two alphabets), and every sink runs it before it cuts or escapes:
``one_line``, ``describe``, the status, comment, summary, outputs, log lines,
certificate, raw response and every line the CLI prints.

The oracle is independent of :mod:`gate.safe.redact`: it never encodes the secret,
it decodes what was written (URL, ``repr``/JSON escapes, HTML entities, base64
at every alignment of every run) and looks for any 12-character window of the
secret in each view. Variants: Hypothesis generates keys, encodings, partial
echoes, offsets around every cut and filler text; the canary runs the CLI
(``python -m gate review``) and the action against the reviewer simulator and
the fake GitHub through every error path that can carry a key.

Wave 2 (siblings): a hex dump of the key, and the key in UTF-16 (an error body in
UTF-16, read as UTF-8: a NUL beside every character, which no form matched) went
through every sink: the terminal showed ``s\x00k\x00-...``, the public status
``s?k?-?...``, the raw ``.response`` file the UTF-16 bytes. :func:`gate.safe.redact.forms`
now holds the hex (both cases) and UTF-16 (both byte orders) forms; the oracle decodes
hex runs and reads every other character (a NUL or what a sink made of it beside
each one), and the canary runs a 401 echoing the key in UTF-16 LE, BE and hex.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
import string
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.action import report
from gate.action.run import run_action
from gate.commands._io import say, say_json
from gate.decide.attempt import Attempt, EndReason
from gate.decide.decision import Binding, Decision, State, Status, blocked, describe
from gate.errors import ConfigError, UsageError
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse, extract_prompt
from gate.review import certificate
from gate.review.prompt import binding_in
from gate.reviewers.base import Exchange
from gate.reviewers.settings import ReviewerSettings, validate
from gate.safe import redact
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.verdicts import read_words

REPO = Path(__file__).resolve().parents[2]
WINDOW = 12
EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- the oracle: decode what was written, look for any 12-character window --------

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "0": "\0"}
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}")


def _unescape(text: str) -> str:
    """Undo ``repr``, JSON and Markdown backslash escapes (``\\x41``, ``\\u0041``, ``\\"``)."""

    def one(match: re.Match[str]) -> str:
        body = match.group(1)
        if len(body) > 1:
            try:
                return chr(int(body[1:], 16))
            except ValueError:
                return match.group(0)
        return _SIMPLE.get(body, body)

    return _ESCAPE.sub(one, text)


def _base64_views(text: str) -> Iterator[str]:
    for run in _BASE64_RUN.findall(text):
        std = run.replace("-", "+").replace("_", "/")
        for offset in range(4):
            part = std[offset:]
            if len(part) % 4 == 1:  # a lone character holds no whole byte
                part = part[:-1]
            part += "=" * (-len(part) % 4)
            if part:
                yield base64.b64decode(part).decode("latin-1")


_HEX_RUN = re.compile(r"[0-9a-fA-F]{24,}")


def _hex_views(text: str) -> Iterator[str]:
    for run in _HEX_RUN.findall(text):
        for offset in range(2):
            part = run[offset:]
            yield bytes.fromhex(part[: len(part) // 2 * 2]).decode("latin-1")


# UTF-16 written as text: a character, then a NUL or what a sink made of it ("?", U+FFFD)
_UTF16_FILL = "\x00?\ufffd"
# (little- or big-endian: a run starts at its first character either way)
_UTF16_RUN = re.compile(f"(?:.[{_UTF16_FILL}])+.?", re.DOTALL)


def views(data: str | bytes) -> Iterator[tuple[str, str]]:
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    yield "raw", text
    yield "url", unquote(text, errors="replace")
    yield "url+", unquote_plus(text, errors="replace")
    yield "escapes", _unescape(text)
    yield "html", html.unescape(text)
    for decoded in _base64_views(text):
        yield "base64", decoded
    for decoded in _hex_views(text):
        yield "hex", decoded
    # UTF-16 read as bytes or UTF-8: a NUL (or what a sink made of it: "?", "\x00")
    # beside every character; every other character of what was written is the key
    for name, view in (("raw", text), ("escapes", _unescape(text))):
        yield f"utf16-{name}", view.replace("\x00", "")
        # every other character, where the others are what a sink made of the NULs: read
        # anywhere else, a key of one repeated character would "leak" from its own pieces
        for run in _UTF16_RUN.findall(view):
            yield f"utf16-{name}-pairs", run[0::2]


def windows(secret: str, size: int = WINDOW) -> set[str]:
    if len(secret) <= size:
        return {secret}
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def leaks(data: str | bytes, secret: str, size: int = WINDOW) -> list[str]:
    """Every (view, window) in which ``data`` still shows ``size`` characters of ``secret``."""
    found = []
    wanted = windows(secret, size)
    for name, view in views(data):
        found += [f"{name}: {w!r}" for w in wanted if w in view]
    return found


# --- generated keys and echoes -----------------------------------------------------

KEY_ALPHABET = string.ascii_letters + string.digits + "-_+/=.~!\"#$%&'()*,:;<>?@[\\]^`{|}"
keys = st.text(KEY_ALPHABET, min_size=16, max_size=64).filter(lambda k: len(set(k)) >= 12)
filler = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


def _lower_hex(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


ENCODERS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "repr": repr,
    "repr-bytes": lambda s: repr(s.encode()),
    "h11-header": lambda s: f"Illegal header value {(f'Bearer {s}' + chr(10)).encode()!r}",
    "json": json.dumps,
    "json-slash": lambda s: json.dumps(s).replace("/", "\\/"),
    "html": html.escape,
    "quote": lambda s: quote(s, safe=""),
    "quote-slash": quote,
    "quote-plus": quote_plus,
    "quote-lower": lambda s: _lower_hex(quote(s, safe="")),
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "base64-url": lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
    "hex": lambda s: s.encode().hex(),
    "hex-upper": lambda s: s.encode().hex().upper(),
    "utf-16-le": lambda s: s.encode("utf-16-le").decode("latin-1"),
    "utf-16-be": lambda s: s.encode("utf-16-be").decode("latin-1"),
}


@st.composite
def echoes(draw: st.DrawFn) -> tuple[str, str, str]:
    """(key, text echoing the key or 12+ characters of it in some encoding, encoding)."""
    key = draw(keys)
    start = draw(st.integers(0, len(key) - WINDOW))
    end = draw(st.integers(start + WINDOW, len(key)))
    part = draw(st.sampled_from([key, key[start:end]]))
    how = draw(st.sampled_from(sorted(ENCODERS)))
    if how.startswith("base64"):
        # inside a larger base64 text, at any byte phase
        before, after = draw(st.binary(max_size=5)), draw(st.binary(max_size=5))
        blob = before + part.encode() + after
        shown = (
            base64.urlsafe_b64encode(blob) if how == "base64-url" else base64.b64encode(blob)
        ).decode()
    else:
        shown = ENCODERS[how](part)
    return key, draw(filler) + shown + draw(filler), how


# --- 1. the redaction step ---------------------------------------------------------


@EXAMPLES
@given(echoes())
def test_every_form_of_the_key_is_redacted(echo: tuple[str, str, str]) -> None:
    key, text, _how = echo
    assert leaks(text, key), "the oracle sees the echo before redaction"
    with redact.scope(key):
        out = redact.redact(text)
        data = redact.redact_bytes(text.encode("utf-8"))
    assert leaks(out, key) == []
    assert leaks(data, key) == []


periodic_keys = st.builds(
    lambda unit, size: (unit * size)[:size],
    st.text(KEY_ALPHABET, min_size=1, max_size=7),
    st.integers(16, 48),
)


@EXAMPLES
@given(
    st.data(),
    keys | periodic_keys,
    st.lists(st.tuples(st.integers(0, 47), st.integers(1, 48)), min_size=1, max_size=30),
)
def test_text_made_of_pieces_of_the_key_is_redacted(
    data: st.DataObject, key: str, cuts: list[tuple[int, int]]
) -> None:
    """Runs that touch, overlap and repeat (and periodic keys, with many alignments)."""
    pieces = [key[start : start + size] for start, size in cuts]
    glue = data.draw(st.lists(st.sampled_from(["", "", " ", "\n", "x"]), min_size=len(pieces)))
    text = "".join(piece + sep for piece, sep in zip(pieces, glue, strict=False))
    with redact.scope(key):
        out = redact.redact(text)
    # the marker's own characters are the gate's, not the key's: "[redacted]0]0]..." holds
    # "]0]0]..." only by the marker's closing bracket (a key of "0]" repeated, found here).
    # A line break stands for it: no key holds one, and no view drops it (a NUL would be
    # dropped by the UTF-16 views, joining the text on both sides)
    assert leaks(out.replace(redact.MARK, "\n"), key) == []


@EXAMPLES
@given(keys, filler)
def test_text_without_the_key_is_left_alone(key: str, text: str) -> None:
    if leaks(text, key):
        return
    with redact.scope(key):
        assert redact.redact(text) == text


# --- 2. redacted before every cut ----------------------------------------------------


def _sse(dialect: str, message: str, kind: str) -> bytes:
    """A 200 stream whose error frame (or malformed event) carries ``message``."""
    if kind == "not-json":
        return f"data: {message}\n\n".encode()
    if kind == "error-event-text":
        return f"event: error\ndata: {message}\n\n".encode()
    error = {"type": "invalid_request_error", "message": message}
    if dialect == "anthropic":
        frame = "event: error\ndata: " + json.dumps({"type": "error", "error": error})
    elif dialect == "gemini":
        frame = "data: " + json.dumps({"error": {"code": 400, **error, "status": "INVALID"}})
    else:
        frame = "data: " + json.dumps({"error": error})
    return (frame + "\n\n").encode()


def _conclude(dialect: str, key: str, body: bytes) -> str:
    """What one attempt of ``dialect`` says about ``body`` (the module, not the network)."""
    from importlib import import_module

    module = import_module(f"gate.reviewers.{dialect}")
    stream = module.Stream(ReviewerSettings(dialect, MODEL, "http://127.0.0.1:9", api_key=key))
    stream.feed(body)
    exchange = Exchange(
        status=200,
        headers={"content-type": "text/event-stream"},
        raw=body,
        framing="chunked",
        failure="",
        failure_detail="",
        end_reason=EndReason.TRAILER,
        retryable=False,
        elapsed_s=0.0,
        first_byte_s=0.0,
    )
    return str(stream.conclude(exchange).detail)


@EXAMPLES
@given(
    keys,
    st.sampled_from(
        [
            ("openai", "frame", 200),
            ("anthropic", "frame", 200),
            ("gemini", "frame", 200),
            ("openai", "error-event-text", 200),
            ("anthropic", "error-event-text", 200),
            ("gemini", "error-event-text", 200),
            ("openai", "not-json", 80),
            ("anthropic", "not-json", 80),
            ("gemini", "not-json", 80),
        ]
    ),
    st.integers(1, 40),
)
def test_a_key_across_a_providers_cut_is_redacted_before_the_cut(
    key: str, where: tuple[str, str, int], into: int
) -> None:
    """The echoed key starts ``into`` characters before the dialect's cut (200 or 80)."""
    dialect, kind, cut = where
    message = "E" * max(0, cut - 24 - into) + key + " end"
    detail = _conclude(dialect, key, _sse(dialect, message, kind))
    assert leaks(detail, key) == []


@settings(max_examples=150, deadline=None)
@given(keys, st.integers(4, 30), st.sampled_from(["describe", "status", "comment"]))
def test_nothing_of_the_key_is_left_at_a_cut(key: str, kept: int, sink: str) -> None:
    """Redacted before the cut: not even a 4-character prefix stands before the ellipsis."""
    kept = min(kept, len(key) - 1)
    if sink == "describe":
        text = "x" * (137 - len("incomplete: ") - kept) + key
        with redact.scope(key):
            out = describe("incomplete", text)
    elif sink == "status":
        text = "x" * (139 - kept) + key
        out = _posted_description(key, text)
    else:
        text = "x" * (report.MAX_COMMENT_CHARS - kept) + key
        with redact.scope(key):
            out = report.comment_body(_report(detail="d", notes=(text,)))
    for size in range(4, kept + 1):
        assert key[:size] + "..." not in out
        assert key[:size] + "…" not in out
        assert not out.rstrip().endswith(key[:size])


def _posted_description(key: str, description: str) -> str:
    """What GitHubClient.create_status posts (nothing is sent: the request body is caught)."""
    from gate.action.github.client import GitHubClient
    from gate.action.github.http import GitHubSettings

    posted: list[str] = []

    def rest(method: str, what: str, path: str, **kw: Any) -> dict[str, Any]:
        posted.append(kw["body"]["description"])
        return {}

    client = GitHubClient(GitHubSettings(repository="o/r", token="t", retries=0))
    client._rest = rest  # type: ignore[method-assign]
    with redact.scope(key):
        client.create_status(
            "a" * 40, state="error", description=description, context="c", target_url=None
        )
    return posted[0]


# --- 3. every sink ---------------------------------------------------------------------


def _report(detail: str, notes: tuple[str, ...] = (), reasons: tuple[str, ...] = ()) -> Any:
    from gate.decide.verdict import Verdict

    verdict = Verdict(
        verdict="fail",
        reasons=reasons or ("r",),
        confidence=0.9,
        diff_sha="d" * 64,
        policy_version="1",
    )
    decision = Decision(
        state=State.FAIL,
        status=Status.FAILURE,
        reason="reviewer_fail",
        description=describe("fail", detail),
        detail=detail,
        verdict=verdict,
        source="envelope",
    )
    attempt = Attempt(1, "openai", False, "http_401", detail, EndReason.HTTP_ERROR)
    return report.Report(
        decision=decision,
        state="fail",
        status="failure",
        description=decision.description,
        context="review-gate",
        subject="pull request #7",
        sha="a" * 40,
        attempts=(attempt,),
        notes=notes,
    )


def _sink_output(sink: str, text: str, tmp: Path, capsys: pytest.CaptureFixture[str]) -> str:
    if sink == "say":
        say(text)
        say(text, err=True)
        out, err = capsys.readouterr()
        return out + err
    if sink == "say_json":
        say_json({"detail": text, text[:20]: [text]})
        return capsys.readouterr().out
    rep = _report(detail=text, notes=(text,), reasons=(text,))
    if sink == "log":
        stream = io.StringIO()
        report.emit([*report.annotation_commands(rep), f"review-gate: {text}"], stream)
        return stream.getvalue()
    if sink == "summary":
        path = tmp / "summary.md"
        path.write_text("")
        report.append_summary(str(path), report.summary_markdown(rep))
        return path.read_text()
    if sink == "outputs":
        path = tmp / "output"
        path.write_text("")
        report.write_outputs(str(path), report.outputs_for(rep) | {"description": text})
        return path.read_text()
    if sink == "comment":
        return report.comment_body(rep)
    if sink == "certificate":
        path = tmp / "c.json"
        binding = Binding("d" * 64, "1")
        cert = certificate.build(
            rep.decision,
            binding=binding,
            attempts=rep.attempts,
            inputs={},
            envelope=text.encode(),
            extra={"note": text},
        )
        certificate.write(path, cert)
        return path.read_text()
    if sink == "response":
        path = tmp / "r.response"
        certificate.write_response(path, text.encode())
        return path.read_bytes().decode("latin-1")
    raise AssertionError(sink)


SINKS = ("say", "say_json", "log", "summary", "outputs", "comment", "certificate", "response")


@pytest.mark.parametrize("sink", SINKS)
def test_every_sink_redacts_every_form(
    sink: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(echoes())
    def check(echo: tuple[str, str, str]) -> None:
        key, text, _how = echo
        with redact.scope():
            report.mask_commands([key])  # how the action registers its secrets
            written = _sink_output(sink, text, tmp_path, capsys)
        assert leaks(written, key) == [], written

    check()


# --- 4. keys are checked where they are read ------------------------------------------

BAD_CHARACTERS = (
    [chr(c) for c in range(0x20)]
    + ["\x7f", "\x85", "\x9b", " ", "\u00a0", "\u2028", "\u3000"]
    + ["é", "ß", "\u202e", "\ufeff", "\u200b", "\U0001f511"]
)


@EXAMPLES
@given(keys, st.sampled_from(BAD_CHARACTERS), st.integers(1, 15), st.sampled_from(["env", "in"]))
def test_a_key_with_a_bad_character_inside_is_refused_without_showing_it(
    key: str, bad: str, at: int, source: str
) -> None:
    dirty = key[:at] + bad + key[at:]
    where = "the environment variable OPENAI_API_KEY" if source == "env" else "the input api-key"

    def refused(value: str) -> ConfigError:
        with pytest.raises(ConfigError) as info:
            redact.checked_key(value, source=where)
        return info.value

    error = refused(dirty)
    assert error.reason == "config_bad_secret"
    assert where in error.message
    # nothing of the key is shown: the message is the same for another key of its shape
    assert error.message == refused("A" * at + bad + "A" * (len(key) - at)).message
    with pytest.raises(UsageError):  # a caller that did not check is refused too
        validate(ReviewerSettings("openai", MODEL, "http://127.0.0.1:9", api_key=dirty))


URL_SECRET = string.ascii_letters + string.digits + "-_.~!$&'()*+,;=:%"
url_credentials = st.tuples(
    st.text(URL_SECRET, min_size=0, max_size=12),
    st.text(URL_SECRET, min_size=16, max_size=40).filter(lambda p: len(set(p)) >= 12),
    st.sampled_from(["https", "http", "HTTPS"]),
    st.sampled_from(["api.example", "127.0.0.1:9", "[::1]:9", "h:99999", "h:x"]),
    st.sampled_from(["", "/v1", "/v1?x=a@b", "#f"]),
)


@EXAMPLES
@given(url_credentials, st.sampled_from(["openai", "anthropic", "gemini", "mc1"]))
def test_credentials_in_the_base_url_are_refused_without_showing_them(
    parts: tuple[str, str, str, str, str], provider: str
) -> None:
    """Wave 2 sibling: a password in base_url (user:password@host) is refused, but a URL
    that also had another problem (a port out of range, a bad IPv6 host) was reported
    first, by a message quoting the URL: password included, into the terminal, the
    status and the summary. Every message now shows the URL without its credentials."""
    user, password, scheme, host, tail = parts

    def refused(secret: str) -> str:
        url = f"{scheme}://{user}:{secret}@{host}{tail}"
        with pytest.raises(UsageError) as caught:
            validate(ReviewerSettings(provider=provider, model="m", base_url=url, api_key="k" * 20))
        return caught.value.message

    # a window the message shows for another password too is the message's own text (a
    # password drawn as "012OPENAI_API_K3" meets "OPENAI_API_KEY" in the advice), not a leak
    shown_anyway = set(leaks(refused("~" * len(password)), password))
    assert [w for w in leaks(refused(password), password) if w not in shown_anyway] == []


@pytest.mark.parametrize("password", ["pw-CANARY-9f3Kq+Zx7LmWv", "%41%42CANARY~!$&'()*+,;=x"])
def test_cli_refuses_credentials_in_the_base_url(password: str, tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_bytes(DIFF)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
    env |= {"OPENAI_API_KEY": "sk-" + "k" * 30, "PYTHONPATH": str(REPO)}
    url = f"http://user:{password}@127.0.0.1:99999/v1"  # refused for its port first
    cmd = [sys.executable, "-m", "gate", "review", "--diff", str(diff), "--model", MODEL]
    proc = subprocess.run(
        [*cmd, "--base-url", url, "--attempts", "1", "--timeout", "5"],
        env=env,
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    _assert_no_canary({"stdout": proc.stdout, "stderr": proc.stderr}, (password,))


@EXAMPLES
@given(keys.filter(lambda k: re.search(r"[^A-Za-z0-9_]", k) is not None), st.booleans())
def test_a_key_given_where_its_variable_name_belongs_is_not_shown(key: str, cli: bool) -> None:
    """``api-key-env: <the key>`` (the key pasted where its variable's name goes)."""
    from gate.commands.review import usage_from
    from gate.config.inputs import apply_inputs
    from gate.config.model import default_config

    def message(value: str) -> str:
        with pytest.raises(ConfigError) as info:
            apply_inputs(default_config(), {"api-key-env": value})
        return usage_from(info.value).message if cli else info.value.message

    shown = message(key)
    assert "api-key-env" in shown
    # nothing of the value is shown: the message is the same for any other refused value
    assert shown == message("-" * len(key))


@EXAMPLES
@given(keys, st.sampled_from(["\n", "\r\n", " ", "\t", " \n", "\u00a0"]), st.booleans())
def test_surrounding_whitespace_is_stripped(key: str, space: str, before: bool) -> None:
    dirty = (space + key) if before else (key + space)
    assert redact.checked_key(dirty, source="x") == key


# --- 5. the canary: the CLI and the action through every error path ---------------------

CANARY = 'sk-CANARY-9f3Kq+Zx/7Lm=Wv_"Pd\\4Ht&<Ny>~Jb2%3Fq'
TOKEN = "ghs_CANARYt0ken+9Qx/Zr=7Lm_Wv4Pd8Ht2NyJb"
DIFF = b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a = 0\n+a = 3\n"
HEAD, BASE = "1" * 40, "2" * 40


def _verdict(request: dict[str, Any], dialect: str, reasons: list[str]) -> str:
    binding = binding_in(extract_prompt(dialect, request)[1]) or Binding("0" * 64, "1")
    body = {
        "verdict": "pass",
        "reasons": reasons,
        "confidence": 0.95,
        "diff_sha": binding.diff_sha,
        "policy_version": binding.policy_version,
        "read": read_words(binding),
    }
    return "```json\n" + json.dumps(body) + "\n```\n"


def _echo_reasons(dialect: str) -> Callable[[dict[str, Any]], str]:
    """A reviewer (a hostile proxy) that puts the key in its reasons, in several forms."""
    reasons = [
        f"the key is {CANARY}",
        "base64 " + base64.b64encode(b"k=" + CANARY.encode()).decode(),
        "url " + quote_plus(CANARY),
    ]
    return lambda request: _verdict(request, dialect, reasons)


def _healthy(dialect: str) -> Callable[[dict[str, Any]], str]:
    return lambda request: _verdict(request, dialect, ["fine"])


def _frame_body(dialect: str) -> bytes:
    return _sse(dialect, "E" * 180 + CANARY + " was refused", "frame")


@dataclass(frozen=True)
class Path_:
    """One error path: what the reviewer answers, and the key as the environment holds it."""

    name: str
    dialect: str = "openai"
    script: tuple[SimResponse, ...] = ()
    responder: Callable[[str], Callable[[dict[str, Any]], str]] = _healthy
    key: str = CANARY


PATHS = [
    # a pasted key with a trailing newline: h11's "Illegal header value b'Bearer ...\n'"
    Path_("key-trailing-newline", key=CANARY + "\n"),
    Path_("key-inner-newline", key=CANARY[:20] + "\n" + CANARY[20:]),
    Path_(
        "401-echo-json",
        script=(
            SimResponse(
                status=401,
                error_body=json.dumps(
                    {"error": {"message": f"Incorrect API key provided: {CANARY}"}}
                ),
            ),
        ),
    ),
    Path_(
        "401-echo-text",
        script=(
            SimResponse(
                status=401,
                error_body=f"bad key {CANARY!r} / {quote(CANARY)} / "
                + base64.b64encode(CANARY.encode()).decode(),
            ),
        ),
    ),
    *(
        Path_(f"error-frame-{d}", dialect=d, script=(SimResponse(body=_frame_body(d)),))
        for d in ("openai", "anthropic", "gemini")
    ),
    Path_(
        "non-json-event",
        script=(SimResponse(body=b"data: " + b"x" * 60 + CANARY.encode() + b"\n\n"),),
    ),
    Path_(
        "redirect",
        script=(
            SimResponse(
                status=307,
                headers=(("Location", "https://evil.example/?key=" + quote_plus(CANARY)),),
                error_body="Redirecting to https://evil.example/?key=" + quote_plus(CANARY),
            ),
        ),
    ),
    *(
        Path_(
            f"401-echo-{codec}",
            script=(
                SimResponse(
                    status=401,
                    error_body=(
                        json.dumps({"error": {"message": f"Incorrect API key: {CANARY}"}})
                        .encode(codec)
                        .decode("latin-1")
                    ),
                ),
            ),
        )
        for codec in ("utf-16-le", "utf-16-be")
    ),
    Path_(
        "401-echo-hex",
        script=(SimResponse(status=401, error_body=f"key={CANARY.encode().hex()}"),),
    ),
    Path_("request-id-echo", script=(SimResponse(headers=(("x-request-id", CANARY),)),)),
    Path_("content-echo", responder=_echo_reasons),
]


def _assert_no_canary(blobs: dict[str, str | bytes], secrets: tuple[str, ...] = (CANARY,)) -> None:
    found = {
        name: hits
        for name, blob in blobs.items()
        for secret in secrets
        if (hits := leaks(blob, secret))
    }
    assert found == {}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_canary_cli(path: Path_, as_json: bool, tmp_path: Path) -> None:
    """``python -m gate review`` through the path: no byte it writes shows the key."""
    diff = tmp_path / "change.diff"
    diff.write_bytes(DIFF)
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
    env |= {"OPENAI_API_KEY": path.key, "ANTHROPIC_API_KEY": path.key, "GEMINI_API_KEY": path.key}
    env |= {"NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(REPO)}
    with ReviewerSimulator(path.dialect, path.responder(path.dialect), script=path.script) as sim:
        cmd = [sys.executable, "-m", "gate", "review", "--diff", str(diff)]
        cmd += ["--provider", path.dialect, "--model", MODEL, "--base-url", sim.base_url]
        cmd += ["--attempts", "1", "--timeout", "20"]
        cmd += ["--certificate", str(out / "cert.json"), "--save-response", str(out / "raw")]
        cmd += ["--json"] if as_json else []
        proc = subprocess.run(cmd, env=env, capture_output=True, timeout=120, cwd=tmp_path)
    assert proc.returncode in (0, 2, 3), proc.stderr
    _assert_no_canary({"stdout": proc.stdout, "stderr": proc.stderr, **_files(out)})


def _action(
    tmp_path: Path, fake: FakeGitHub, sim: ReviewerSimulator, key: str, where: str
) -> dict[str, str | bytes]:
    fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=DIFF)
    event = tmp_path / "event.json"
    payload = pull_request_event(
        "opened", repository=fake.repository, number=7, head_sha=HEAD, base_sha=BASE
    )
    event.write_text(json.dumps(payload))
    runner = tmp_path / "runner"
    runner.mkdir()
    output, summary = tmp_path / "output.txt", tmp_path / "summary.md"
    output.write_text("")
    summary.write_text("")
    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": fake.repository,
        "GITHUB_API_URL": fake.api_url,
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "4242",
        "RUNNER_TEMP": str(runner),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_TOKEN": fake.token,
        "INPUT_PROVIDER": sim.dialect,
        "INPUT_MODEL": MODEL,
        "INPUT_BASE-URL": sim.base_url,
        "INPUT_ATTEMPTS": "1",
    }
    env |= {"INPUT_API-KEY": key} if where == "input" else {"OPENAI_API_KEY": key}
    env |= {"ANTHROPIC_API_KEY": key, "GEMINI_API_KEY": key} if where == "env" else {}
    stream = io.StringIO()
    code = run_action(env, out=stream, sleep=lambda _s: None, throttle=False)
    assert code in (0, 2, 3), stream.getvalue()
    blobs: dict[str, str | bytes] = {
        "log": stream.getvalue(),
        "GITHUB_OUTPUT": output.read_bytes(),
        "GITHUB_STEP_SUMMARY": summary.read_bytes(),
        **{f"runner/{k}": v for k, v in _files(runner).items()},
    }
    for number, rec in enumerate(fake.requests):
        blobs[f"github request {number}"] = f"{rec.method} {rec.path}?{rec.query}\n".encode() + (
            rec.body
        )
    return blobs


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
@pytest.mark.parametrize("where", ["input", "env"])
def test_canary_action(path: Path_, where: str, tmp_path: Path) -> None:
    """The action through the path: no log line, file or GitHub request shows the key."""
    key = path.key.strip() if where == "input" else path.key  # GitHub strips inputs
    with (
        FakeGitHub("octo-org/hello-world", token=TOKEN) as fake,
        ReviewerSimulator(path.dialect, path.responder(path.dialect), script=path.script) as sim,
    ):
        blobs = _action(tmp_path, fake, sim, key, where)
        assert fake.violations == []
    log = str(blobs["log"])
    masks = [line for line in log.splitlines() if line.startswith("::add-mask::")]
    assert masks, "the secrets are masked in the log first"
    blobs["log"] = "\n".join(line for line in log.splitlines() if line not in masks)
    _assert_no_canary(blobs, (CANARY, TOKEN))


def test_canary_github_token_echoed_by_github(tmp_path: Path) -> None:
    """GitHub (or a proxy in front of it) echoes the token: the public status never shows it."""
    with (
        FakeGitHub("octo-org/hello-world", token=TOKEN) as fake,
        ReviewerSimulator("openai", _healthy("openai")) as sim,
    ):
        fake.inject(r"POST .*/statuses/", 403, message=f"token {TOKEN} may not write statuses")
        blobs = _action(tmp_path, fake, sim, CANARY, "input")
        statuses = fake.status_list(HEAD)
    assert statuses, "the error status was posted"
    log = str(blobs["log"])
    blobs["log"] = "\n".join(x for x in log.splitlines() if not x.startswith("::add-mask::"))
    _assert_no_canary(blobs, (CANARY, TOKEN))
    assert "[redacted]" in statuses[-1]["description"]


def test_a_bad_key_in_the_action_is_a_needs_human_status_naming_the_input(tmp_path: Path) -> None:
    with (
        FakeGitHub("octo-org/hello-world", token=TOKEN) as fake,
        ReviewerSimulator("openai", _healthy("openai")) as sim,
    ):
        blobs = _action(tmp_path, fake, sim, CANARY[:9] + "\x07" + CANARY[9:], "input")
        statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["error"]
    assert "api-key" in statuses[-1]["description"]
    assert sim.count == 0, "the reviewer is never called with a refused key"
    log = str(blobs["log"])
    blobs["log"] = "\n".join(x for x in log.splitlines() if not x.startswith("::add-mask::"))
    _assert_no_canary(blobs, (CANARY, TOKEN))


def test_every_path_is_provoked() -> None:
    """Each scripted path reaches the failure it names (the canary would pass vacuously else)."""
    expected = {
        "key-trailing-newline": "pass",
        "key-inner-newline": "config_bad_secret",
        "401-echo-json": "http_401",
        "401-echo-text": "http_401",
        "401-echo-utf-16-le": "http_401",
        "401-echo-utf-16-be": "http_401",
        "401-echo-hex": "http_401",
        "error-frame-openai": "error_frame",
        "error-frame-anthropic": "error_frame",
        "error-frame-gemini": "error_frame",
        "non-json-event": "malformed_event",
        "redirect": "http_307",
        "request-id-echo": "pass",
        "content-echo": "pass",
    }
    assert sorted(expected) == sorted(p.name for p in PATHS)
    from gate.reviewers.transport import review

    for path in PATHS:
        with ReviewerSimulator(
            path.dialect, path.responder(path.dialect), script=path.script
        ) as sim:
            if expected[path.name] == "config_bad_secret":
                with pytest.raises(ConfigError, match="not a usable key"):
                    redact.checked_key(path.key, source="test")
                continue
            key = redact.checked_key(path.key, source="test")
            outcome = review(sim.settings(api_key=key, attempts=1), system="s", user="u")
        last = outcome.last
        assert last is not None
        got = "pass" if last.complete else last.reason
        if expected[path.name] == "pass":
            assert last.complete, (path.name, last.detail)
        else:
            assert got == expected[path.name], (path.name, last.detail)


def test_a_redacted_envelope_says_why_it_cannot_be_reverified(tmp_path: Path) -> None:
    decision = blocked(State.NEEDS_HUMAN, "x", "x")
    cert = certificate.build(
        decision,
        binding=Binding("d" * 64, "1"),
        attempts=(),
        inputs={},
        envelope=f"key {CANARY}".encode(),
    )
    certificate.write(tmp_path / "c.json", cert, secrets=[CANARY])
    written = json.loads((tmp_path / "c.json").read_text())
    assert "$.envelope.base64" in written["context"]["redacted"]
    with pytest.raises(UsageError, match="redacted when it was written"):
        certificate.envelope_from(written)
