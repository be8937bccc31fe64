"""The CLI a newcomer meets: every ordinary mistake gets a hint naming its real cause.

Class: a hint worded for the wrong setting (``--provider claude`` told to pass
``--provider openai``, a missing region told to pass ``--base-url``, a hunk over the
chunk size told to check ``max_diff_bytes``, a gzip file told to check include/exclude),
or a mistake that costs time or leaves files behind. Each test runs the CLI (``main``)
over generated variants of one mistake and checks the message, the exit code, and that
nothing is left behind (no certificate, no request to the reviewer).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.cli import build_parser, main
from gate.decide.envelope import seal
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse
from tests.integration.test_agreement_sim import DIFF, KEY, scripted

Run = tuple[int, str, str]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "GOOGLE_OAUTH_ACCESS_TOKEN",
        "COLUMNS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture
def diff_file(tmp_path: Path) -> Path:
    path = tmp_path / "change.diff"
    path.write_bytes(DIFF)
    return path


# --- --provider: did you mean -------------------------------------------------------------

OLLAMA = "--provider openai --base-url http://127.0.0.1:11434/v1"


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("claude", "--provider anthropic"),
        ("Claude", "--provider anthropic"),
        ("Anthropic", "--provider anthropic"),
        ("ANTHROPIC", "--provider anthropic"),
        ("anthropc", "--provider anthropic"),
        ("azure", "--provider azure-openai"),
        ("Azure_OpenAI", "--provider azure-openai"),
        ("google", "--provider gemini"),
        ("google", "--provider vertex"),
        ("vertex-ai", "--provider vertex"),
        ("aws", "--provider bedrock"),
        ("ollama", OLLAMA),
        ("Ollama", OLLAMA),
        ("openai-compatible", OLLAMA),
        ("vllm", OLLAMA),
        ("llama.cpp", OLLAMA),
        ("OpenAI", "--provider openai?"),
        ("responses", "--provider openai-responses"),
    ],
)
def test_a_wrong_provider_gets_the_one_it_meant(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, diff_file: Path, value: str, meant: str
) -> None:
    before = listing(tmp_path)
    cert = tmp_path / "cert.json"
    code, out, err = cli(
        capsys, "review", "--diff", str(diff_file), "--provider", value, "--model", "m",
        "--certificate", str(cert),
    )  # fmt: skip
    assert code == 2
    assert out == ""
    assert err.startswith(f"review-gate review: error: --provider {value!r} is not a provider")
    assert meant in err
    if "openai" not in meant:
        assert "--provider openai" not in err  # the old hint named the default, always
    assert listing(tmp_path) == before


def test_a_wrong_provider_is_reported_with_every_other_problem(
    capsys: pytest.CaptureFixture[str], diff_file: Path
) -> None:
    code, _, err = cli(
        capsys, "review", "--diff", str(diff_file), "--provider", "claude", "--attempts", "0",
        "--max-tokens", "many", "--base-url", "127.0.0.1:8080/v1",
    )  # fmt: skip
    assert code == 2
    lines = err.splitlines()
    assert "did you mean --provider anthropic?" in lines[0]
    assert "did you mean --base-url http://127.0.0.1:8080/v1?" in lines[1]
    assert any(line.startswith("--attempts:") for line in lines)
    assert any(line.startswith("--max-tokens:") for line in lines)
    assert not any(line.startswith(("--provider:", "--base-url:")) for line in lines)


# --- --base-url without a scheme ----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("localhost:11434/v1", "http://localhost:11434/v1"),
        ("10.1.2.3:8000/v1", "http://10.1.2.3:8000/v1"),
        ("192.168.0.7/v1", "http://192.168.0.7/v1"),
        ("[::1]:8080/v1", "http://[::1]:8080/v1"),
        ("host.docker.internal:11434/v1", "http://host.docker.internal:11434/v1"),
        ("api.example.com/v1", "https://api.example.com/v1"),
        ("my-resource.openai.azure.com", "https://my-resource.openai.azure.com"),
    ],
)
@pytest.mark.parametrize("command", ["review", "replay"])
def test_a_base_url_without_a_scheme_gets_the_url_it_meant(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    diff_file: Path,
    value: str,
    meant: str,
    command: str,
) -> None:
    before = listing(tmp_path)
    argv = ["--diff", str(diff_file), "--base-url", value]
    argv = ["review", *argv, "--model", "m"] if command == "review" else ["replay", "c", *argv]
    code, _, err = cli(capsys, *argv)
    assert code == 2
    assert f"--base-url {value!r} has no scheme; did you mean --base-url {meant}?" in err
    assert listing(tmp_path) == before


# --- a cloud's region (or location) and its key, in one run --------------------------------


@pytest.mark.parametrize("key_set", [False, True])
@pytest.mark.parametrize(
    ("provider", "fix", "key_env"),
    [
        ("bedrock", "pass --region REGION or export AWS_REGION", "AWS_SECRET_ACCESS_KEY"),
        ("vertex", "pass --location LOCATION", "GOOGLE_OAUTH_ACCESS_TOKEN"),
    ],
)
def test_a_cloud_without_its_region_names_the_region_and_the_key_at_once(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    diff_file: Path,
    provider: str,
    fix: str,
    key_env: str,
    key_set: bool,
) -> None:
    if key_set:
        monkeypatch.setenv(key_env, "a-key-value-that-is-long-enough")
    before = listing(tmp_path)
    code, out, err = cli(
        capsys, "review", "--diff", str(diff_file), "--provider", provider, "--model", "m"
    )
    assert code == 2
    assert out == ""
    assert fix in err
    assert "pass --base-url URL (or set" not in err  # the old hint, for the wrong setting
    assert (f"{key_env} is not set" in err) is not key_set
    assert listing(tmp_path) == before


# --- a hunk over the chunk size -----------------------------------------------------------


def one_hunk(lines: int) -> bytes:
    body = b"".join(b"+line %d of a long generated hunk\n" % i for i in range(lines))
    head = b"diff --git a/big.py b/big.py\n--- a/big.py\n+++ b/big.py\n"
    return head + b"@@ -0,0 +1,%d @@\n" % lines + body


@pytest.mark.parametrize("lines", [2_500, 4_000, 9_000])
def test_a_hunk_over_the_chunk_size_names_max_chunk_bytes_and_its_size(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    sim_factory: Callable[..., ReviewerSimulator],
    lines: int,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sim = sim_factory(scripted(["pass"]))
    data = one_hunk(lines)
    diff, config = tmp_path / "big.diff", tmp_path / "c.yml"
    diff.write_bytes(data)
    config.write_text("max_chunk_bytes: 65536\n")
    code, out, _err = cli(
        capsys, "review", "--diff", str(diff), "--config", str(config), "--model", MODEL,
        "--base-url", sim.base_url,
    )  # fmt: skip
    assert code == 3
    assert sim.count == 0
    assert f"its largest hunk is {len(data)} bytes with the file's header" in out
    assert "over max_chunk_bytes 65536; raise max_chunk_bytes in the config" in out
    assert "max_diff_bytes" not in out


# --- a --diff that is not a diff ----------------------------------------------------------

NOT_DIFFS: list[tuple[str, Callable[[], bytes], str]] = [
    ("gzip", lambda: gzip.compress(DIFF), "gzip-compressed data"),
    ("random", lambda: bytes(range(256)) * 3, "binary data (768 bytes, not UTF-8 text)"),
    ("nul", lambda: b"text\0with a NUL\n", "binary data"),
    ("png", lambda: b"\x89PNG\r\n\x1a\n" + b"\0" * 20, "a PNG image"),
    ("zip", lambda: b"PK\x03\x04" + b"\0" * 20, "a zip archive"),
    ("mc1", lambda: seal(b"a saved answer"), "an MC1 envelope"),
    ("json", lambda: b'{"a": 1}\n', "JSON, not a diff"),
    (
        "certificate",
        lambda: json.dumps({"schema": "review-gate.certificate/1"}).encode(),
        "a review-gate certificate (JSON)",
    ),
    (
        "diff -u",
        lambda: b"--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a\n+b\n",
        "a unified diff without git's 'diff --git' headers",
    ),
    ("text", lambda: b"hello world\nsecond line\n", "text whose first line is 'hello world'"),
    ("long text", lambda: b"x" * 200 + b"\n", "text whose first line is 'xxxx"),
]


@pytest.mark.parametrize(("name", "make", "looks"), NOT_DIFFS, ids=[n for n, _, _ in NOT_DIFFS])
def test_a_file_that_is_not_a_diff_says_what_it_looks_like(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    sim_factory: Callable[..., ReviewerSimulator],
    name: str,
    make: Callable[[], bytes],
    looks: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sim = sim_factory(scripted(["pass"]))
    path = tmp_path / "input.bin"
    path.write_bytes(make())
    before = listing(tmp_path)
    code, out, err = cli(
        capsys, "review", "--diff", str(path), "--model", MODEL, "--base-url", sim.base_url,
        "--certificate", str(tmp_path / "cert.json"),
    )  # fmt: skip
    assert code == 2, name
    assert out == ""
    assert err.startswith(f"review-gate review: error: --diff {str(path)!r} is not a unified diff")
    assert looks in err
    assert "include/exclude" not in err
    assert sim.count == 0
    assert listing(tmp_path) == before


def test_an_empty_diff_is_still_a_diff_with_nothing_to_review(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    empty = tmp_path / "empty.diff"
    empty.write_bytes(b"")
    code, out, _ = cli(
        capsys,
        "review",
        "--diff",
        str(empty),
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
    )
    assert code == 3
    assert out.startswith("needs_human: nothing to review: the diff holds no file section")


# --- a wrong base URL path: the URL that was requested -------------------------------------


@pytest.mark.parametrize(
    ("suffix", "requested", "hint"),
    [
        ("", "{root}/chat/completions", "OpenAI-compatible servers serve under /v1; try base_url"),
        ("/", "{root}/chat/completions", "serve under /v1"),
        (
            "/v1/chat/completions",
            "{root}/v1/chat/completions/chat/completions",
            "/chat/completions is in it twice",
        ),
        ("/v1/v1", "{root}/v1/v1/chat/completions", "/v1 is in it twice"),
        ("/api/v1", "{root}/api/v1/chat/completions", "check base_url and the model name"),
    ],
)
def test_a_404_shows_the_url_that_was_requested(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    diff_file: Path,
    sim_factory: Callable[..., ReviewerSimulator],
    suffix: str,
    requested: str,
    hint: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sim = sim_factory(scripted(["pass"]))
    root = sim.base_url.removesuffix("/v1")
    code, out, err = cli(
        capsys, "review", "--diff", str(diff_file), "--model", MODEL, "--base-url",
        root + suffix, "--attempts", "1",
    )  # fmt: skip
    assert code == 3
    shown = requested.format(root=root)
    assert f"nothing at the requested URL {shown}" in out + err
    assert hint in out + err


# --- https:// against a plain-HTTP server --------------------------------------------------


class PlainHTTP:
    """A server on 127.0.0.1 that answers anything with a plain-HTTP status line."""

    def __init__(self, answer: bytes, *, close: bool) -> None:
        self.answer, self.close = answer, close
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        held: list[socket.socket] = []
        deadline = time.monotonic() + 30
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.settimeout(2)
            try:
                conn.recv(4096)
                conn.sendall(self.answer)
            except OSError:
                pass
            if self.close:
                conn.close()
            else:
                held.append(conn)
        for conn in held:
            conn.close()

    def __enter__(self) -> PlainHTTP:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.mark.parametrize("close", [True, False])
@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.0 400 Bad Request\r\n\r\n",
        b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found",
    ],
)
def test_https_against_plain_http_fails_at_once_saying_so(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    diff_file: Path,
    answer: bytes,
    close: bool,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with PlainHTTP(answer, close=close) as server:
        url = f"https://127.0.0.1:{server.port}/v1"
        code, out, err = cli(
            capsys, "review", "--diff", str(diff_file), "--model", "m", "--base-url", url
        )
    assert code == 3
    assert server.accepted == 1  # not retried: the answer will not change
    assert "attempt 2/" not in err
    assert "(plain_http)" in out
    assert "the server speaks plain http" in out
    assert f"use base_url http://127.0.0.1:{server.port}/v1" in out


# --- verify: a certificate given as the response -------------------------------------------


@pytest.fixture
def certificate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    answer, cert = tmp_path / "answer.mc1", tmp_path / "made.json"
    answer.write_bytes(seal(b"no verdict here"))
    main(["verify", str(answer), "--diff-sha", "a" * 64, "--policy-version", "1",
          "--certificate", str(cert)])  # fmt: skip
    capsys.readouterr()
    return cert


@pytest.mark.parametrize("shape", ["file", "indented", "stdin"])
def test_a_certificate_given_as_the_response_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    certificate: Path,
    shape: str,
) -> None:
    import io
    import sys

    data = certificate.read_bytes()
    target = str(certificate)
    if shape == "indented":
        target = str(tmp_path / "indented.json")
        Path(target).write_bytes(b"\n  " + data)
    if shape == "stdin":
        target = "-"
        fake = io.TextIOWrapper(io.BytesIO(data))
        monkeypatch.setattr(sys, "stdin", fake)
    before = listing(tmp_path)
    code, out, err = cli(
        capsys, "verify", target, "--diff-sha", "a" * 64, "--policy-version", "1",
        "--certificate", str(tmp_path / "again.json"),
    )  # fmt: skip
    assert code == 2
    assert out == ""
    assert "is a review-gate certificate (review-gate.certificate/1), not an MC1 response" in err
    assert f"did you mean --from-certificate {target}?" in err
    assert "missing MC1 header" not in err
    assert listing(tmp_path) == before


def test_other_json_as_the_response_is_still_judged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "provider.json"
    path.write_text('{"choices": []}')
    code, _, _ = cli(capsys, "verify", str(path), "--diff-sha", "a" * 64, "--policy-version", "1")
    assert code == 3  # a response that is not an envelope: incomplete, as before


# --- an unwritable output path: exit 2 for every command ----------------------------------


def _targets(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    yield "a missing folder", tmp_path / "no" / "such" / "folder" / "out.json"
    folder = tmp_path / "a-folder"
    folder.mkdir()
    yield "a folder", folder


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("seal", "--output"),
        ("seal", "-o"),
        ("verify", "--certificate"),
        ("review", "--certificate"),
        ("review", "--save-response"),
    ],
)
def test_an_unwritable_output_path_is_a_usage_error_for_every_command(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    diff_file: Path,
    sim_factory: Callable[..., ReviewerSimulator],
    command: str,
    option: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sim = sim_factory(scripted(["pass"]))
    answer = tmp_path / "answer.mc1"
    answer.write_bytes(seal(b"x"))
    for what, target in _targets(tmp_path):
        before = listing(tmp_path)
        argv = {
            "seal": ["seal", str(answer)],
            "verify": ["verify", str(answer), "--diff-sha", "a" * 64, "--policy-version", "1"],
            "review": [
                "review",
                "--diff",
                str(diff_file),
                "--model",
                MODEL,
                "--base-url",
                sim.base_url,
            ],
        }[command]
        code, out, err = cli(capsys, *argv, option, str(target))
        assert code == 2, what
        assert out == ""
        shown = "--output" if option == "-o" else option
        assert err.startswith(f"review-gate {command}: error: {shown} {str(target)!r}"), err
        assert listing(tmp_path) == before
    assert sim.count == 0  # checked before any request


# --- replay: the diff file it looked for -----------------------------------------------


def test_replay_names_the_diff_file_it_looked_for(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    diff_file: Path,
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sim = sim_factory(scripted(["pass"]))
    cert = tmp_path / "c.json"
    assert main(["review", "--diff", str(diff_file), "--model", MODEL, "--base-url",
                 sim.base_url, "--certificate", str(cert)]) == 0  # fmt: skip
    sha = hashlib.sha256(DIFF).hexdigest()
    folder = tmp_path / "diffs"
    folder.mkdir()
    for misnamed in (f"{sha[:12]}.diff", "change.diff", f"{sha}.patch"):
        (folder / misnamed).write_bytes(DIFF)
    capsys.readouterr()
    code, out, _ = cli(capsys, "replay", str(cert), "--diff-dir", str(folder))
    assert code == 3
    assert f"no file '{folder / (sha + '.diff')}'" in out
    assert f"{sha[:12]}.diff" in out  # what the folder holds instead
    assert sim.count == 1  # the review; nothing replayed without the diff


# --- the CLI surface --------------------------------------------------------------------

COMMANDS = ["demo", "verify", "seal", "selftest", "review", "replay", "fault-proxy", "apply"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("flag", ["--bogus", "--diff-file", "--json-out=x", "-Z"])
def test_an_unknown_option_shows_the_commands_usage_and_names_the_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, flag: str
) -> None:
    before = listing(tmp_path)
    with pytest.raises(SystemExit) as caught:
        main([command, flag, "value"])
    _, err = capsys.readouterr()
    assert caught.value.code == 2
    assert err.startswith(f"usage: review-gate {command} ")
    assert "unrecognized argument" in err
    assert flag.partition("=")[0] in err
    assert "the following arguments are required" not in err
    assert listing(tmp_path) == before


def test_a_misspelt_option_gets_the_one_it_meant(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["review", "--diff-file", "x"])
    err = capsys.readouterr().err
    assert "unrecognized argument: --diff-file (did you mean --diff?)" in err


def test_help_never_repeats_a_default() -> None:
    parser = build_parser()
    for sub in parser._subparsers._group_actions:  # type: ignore[union-attr]
        for name, child in sub.choices.items():
            for action in child._actions:
                text = (action.help or "").casefold()
                assert text.count("(default") <= 1, (name, action.option_strings, text)
                assert text.count("default:") <= 1, (name, action.option_strings, text)


def test_action_help_lists_every_event_it_handles() -> None:
    from gate.action.event import PULL_ACTIONS, SUPPORTED_EVENTS

    parser = build_parser()
    [sub] = parser._subparsers._group_actions  # type: ignore[union-attr]
    description = " ".join((sub.choices["action"].description or "").split())
    for word in (*SUPPORTED_EVENTS, *PULL_ACTIONS, "checks_requested", "created"):
        assert word in description, word


# --- the demo: its table fits the terminal; its certificates re-decide as recorded --------


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from gate.lab.demo import run_demo

    return run_demo(tmp_path_factory.mktemp("demo"))


@pytest.mark.parametrize("width", [40, 60, 72, 80, 100, 120, 160, 240])
def test_the_demo_table_fits_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, demo_run: Any, width: int
) -> None:
    from gate.lab.demo import table, text_report

    monkeypatch.setenv("COLUMNS", str(width))
    lines = table(demo_run.outcomes).splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    body = [line for line in lines if not line.startswith(("*", " "))]
    for outcome in demo_run.outcomes:
        row = next(line for line in body if line.split()[0] == outcome.case.name)
        if width >= 60:  # case, decision and the start of why always stay
            assert str(outcome.result.decision.state) in row
            assert str(outcome.result.decision.reason)[:8] in row
    report = "\n".join(text_report(demo_run))
    assert table(demo_run.outcomes) in report


@pytest.mark.parametrize(
    "case",
    [
        "healthy",
        "cut",
        "flip-sha",
        "flip-done",
        "stall",
        "echoed-example",
        "reject",
        "out-of-tokens",
        "large",
        "large-cut",
    ],
)
def test_a_certificate_re_decides_with_the_recorded_reason(
    capsys: pytest.CaptureFixture[str], demo_run: Any, case: str
) -> None:
    out_dir: Path = demo_run.out
    cert = out_dir / f"{case}.json"
    recorded = json.loads(cert.read_text())["decision"]
    diff = out_dir / ("large.diff" if case.startswith("large") else "sample.diff")
    code, out, _ = cli(
        capsys, "verify", "--from-certificate", str(cert), "--diff", str(diff),
        "--policy-version", "1", "--json",
    )  # fmt: skip
    redecided = json.loads(out)
    assert (redecided["state"], redecided["reason"]) == (recorded["state"], recorded["reason"])
    assert code == {"pass": 0, "fail": 1}.get(recorded["state"], 3)


# --- review without a key: demo --serve ---------------------------------------------------


@pytest.mark.parametrize(
    ("model", "code", "says"),
    [
        ("healthy", 0, "pass: confidence 0.93"),
        ("cut", 3, "incomplete (connection_cut)"),
        ("fail", 1, "fail: canned answer of the local reviewer"),
        ("echo", 3, "needs_human (multiple_fences)"),
        ("gpt-4o", 3, 'unknown model "gpt-4o": the demo reviewer serves healthy, cut, fail, echo'),
    ],
)
def test_demo_serve_answers_review_by_model_name_until_stopped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, model: str, code: int, says: str
) -> None:
    from gate.lab.serve import serve

    before = {thread.ident for thread in threading.enumerate()}
    printed: list[str] = []
    stop = threading.Event()
    out = tmp_path / "demo"
    server = threading.Thread(
        target=serve, args=(out,), kwargs={"stop": stop, "report": printed.append, "seconds": 60}
    )
    server.start()
    try:
        deadline = time.monotonic() + 10
        while not printed and time.monotonic() < deadline:
            time.sleep(0.02)
        text = "\n".join(printed)
        url = text.split(" at ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/v1")
        command = (
            f"review-gate review --diff {out / 'sample.diff'} --base-url {url} --model healthy"
        )
        assert command in text
        argv = [*command.split()[1:-1], model, "--attempts", "1"]
        got, stdout, stderr = cli(capsys, *argv)  # the printed command, as printed
    finally:
        stop.set()
        server.join(10)
    assert not server.is_alive()
    assert got == code
    assert says in stdout + stderr
    assert {thread.ident for thread in threading.enumerate()} == before
    assert listing(tmp_path) == {"demo", "demo/sample.diff"}


def test_demo_serve_from_the_command_line_stops_after_for(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli(capsys, "demo", "--serve", "--for", "0.3", "--out", str(tmp_path / "d"))
    assert code == 0
    assert "--model healthy" in out
    assert "the local reviewer stopped" in err
    for wrong in (["--provider", "anthropic"], ["--json"], ["--port", "70000"], ["--for", "0"]):
        assert main(["demo", "--serve", "--out", str(tmp_path / "d"), *wrong]) == 2
    assert main(["demo", "--for", "1", "--out", str(tmp_path / "e")]) == 2
    assert not (tmp_path / "e").exists()


# --- Ctrl-C: exit 130, and what had arrived is kept, marked interrupted ---------------------

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("script", "ended"),
    [
        pytest.param((SimResponse(stall_after=0),), 0, id="before-any-byte"),
        pytest.param((SimResponse(stall_after=400),), 0, id="mid-answer"),
        pytest.param(
            (SimResponse(cut_after=300), SimResponse(stall_after=500)), 1, id="after-a-cut"
        ),
    ],
)
def test_ctrl_c_exits_130_and_keeps_what_had_arrived(
    tmp_path: Path, diff_file: Path, script: tuple[SimResponse, ...], ended: int
) -> None:
    import os
    import signal
    import subprocess
    import sys

    cert, saved = tmp_path / "cert.json", tmp_path / "raw.bin"
    with ReviewerSimulator("openai", scripted(["pass"]), script=script) as sim:
        env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": KEY}
        argv = [sys.executable, "-m", "gate", "review", "--diff", str(diff_file), "--model",
                MODEL, "--base-url", sim.base_url, "--certificate", str(cert),
                "--save-response", str(saved)]  # fmt: skip
        proc = subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 30
            while sim.count < len(script) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)  # the stalled answer's first bytes are read
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    text = err.decode()
    assert "interrupted (Ctrl-C)" in text
    record = json.loads(cert.read_text())
    assert record["decision"]["state"] == "incomplete"
    assert record["decision"]["reason"] == "interrupted"
    assert record["context"]["interrupted"] is True
    assert len(record["context"]["attempts_ended"]) == ended
    raw = saved.read_bytes()
    assert record["context"]["response_bytes"] == len(raw)
    assert record["context"]["response_sha256"] == hashlib.sha256(raw).hexdigest()
    if script[-1].stall_after:
        assert raw  # the bytes of the answer under way
    assert listing(tmp_path) == {"change.diff", "cert.json", "raw.bin"}  # no temp file left


# --- config errors: every one, in line order, at the line of its cause ----------------------

#: top-level lines that are each wrong, and the key each error names
WRONG_LINES = [
    ("min_confidence: 7", "min_confidence must be"),
    ("max_diff_bytes: -5", "max_diff_bytes must be"),
    ("agreement: 9", "agreement must be"),
    ("zzz_unknown: 1", "unknown key zzz_unknown"),
    ("aaa_unknown: 2", "unknown key aaa_unknown"),
    ("exclude: 'x'", "exclude must be"),
    ("policy_version: 1", "policy_version must be"),
]
#: a nested block: its wrong lines are the ones after "reviewer:"
WRONG_BLOCK = [
    ("reviewer:", None),
    ("  attempts: 0", "reviewer.attempts must be"),
    ("  yyy_unknown: 3", "unknown key reviewer.yyy_unknown"),
    ("  max_tokens: many", "reviewer.max_tokens must be"),
    ("  bbb_unknown: 4", "unknown key reviewer.bbb_unknown"),
]


@pytest.mark.parametrize("seed", range(12))
def test_config_errors_are_listed_in_line_order_at_the_line_of_the_cause(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, diff_file: Path, seed: int
) -> None:
    import random

    rng = random.Random(seed)
    top = WRONG_LINES[:]
    rng.shuffle(top)
    block = [WRONG_BLOCK[0], *rng.sample(WRONG_BLOCK[1:], len(WRONG_BLOCK) - 1)]
    at = rng.randrange(len(top) + 1)
    lines = [*top[:at], *block, *top[at:]]
    config = tmp_path / "review-gate.yml"
    config.write_text("".join(f"{text}\n" for text, _ in lines))
    before = listing(tmp_path)
    code, out, err = cli(capsys, "review", "--diff", str(diff_file), "--config", str(config))
    assert code == 2
    assert out == ""
    reported = err.removeprefix("review-gate review: error: ").splitlines()
    expected = [(n + 1, says) for n, (_, says) in enumerate(lines) if says is not None]
    assert len(reported) == len(expected), err
    for line, (number, says) in zip(reported, expected, strict=True):
        assert line.startswith(f"{config} line {number}: {says}"), (seed, line)
    assert listing(tmp_path) == before


def test_a_mapping_error_is_at_its_keys_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, diff_file: Path
) -> None:
    config = tmp_path / "c.yml"
    config.write_text("policy_version: '1'\npricing:\n  m:\n    input: -1\n")
    code, _, err = cli(capsys, "review", "--diff", str(diff_file), "--config", str(config))
    assert code == 2
    body = err.removeprefix("review-gate review: error: ").splitlines()
    assert body[0].startswith(f"{config} line 3: pricing.m ")
    assert body[1].startswith(f"{config} line 4: pricing.m.input ")


@pytest.mark.parametrize(
    ("value", "meant", "write"),
    [
        ("claude", "did you mean anthropic?", "write `provider: anthropic`"),
        ("Anthropic", "did you mean anthropic?", "write `provider: anthropic`"),
        ("azure", "did you mean azure-openai?", "write `provider: azure-openai`"),
        ("google", "did you mean gemini or vertex?", "`provider: gemini` or `provider: vertex`"),
        (
            "ollama",
            "did you mean openai with base_url",
            "and `base_url: http://127.0.0.1:11434/v1`",
        ),
    ],
)
def test_a_wrong_provider_in_the_config_file_or_an_input_gets_the_one_it_meant(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    diff_file: Path,
    value: str,
    meant: str,
    write: str,
) -> None:
    from gate.config.inputs import apply_inputs
    from gate.config.model import default_config
    from gate.errors import ConfigError

    config = tmp_path / "c.yml"
    config.write_text(f"reviewer:\n  provider: {value}\n  model: m\n")
    code, _, err = cli(capsys, "review", "--diff", str(diff_file), "--config", str(config))
    assert code == 2
    assert f"{config} line 2: reviewer.provider must be one of" in err
    assert meant in err
    assert write in err
    assert '`provider: "openai"`' not in err  # the default, named for every wrong value
    with pytest.raises(ConfigError) as caught:
        apply_inputs(default_config(), {"provider": value})
    first = "openai" if value == "ollama" else write.split("`provider: ")[1].split("`")[0]
    assert meant in caught.value.message
    assert f'correct the provider input (e.g. "{first}")' in caught.value.message


class WaitingHTTP:
    """A plain-HTTP server on 127.0.0.1 that answers only once a request's head has ended
    (a blank line), as real ones do: a TLS ClientHello never ends one, so it hangs."""

    def __init__(self, give_up: float = 5.0) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.give_up = give_up  # then it closes the connection, as http.server's timeout does
        self.accepted = 0
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        deadline = time.monotonic() + 30
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            worker = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self.threads.append(worker)
            worker.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.2)
            data, until = b"", time.monotonic() + self.give_up
            while b"\r\n\r\n" not in data and time.monotonic() < until and not self.stop.is_set():
                try:
                    chunk = conn.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                data += chunk
            if b"\r\n\r\n" in data:
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    def __enter__(self) -> WaitingHTTP:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        for worker in self.threads:
            worker.join(5)
        self.sock.close()


@pytest.mark.parametrize(
    ("give_up", "connect_timeout"),
    [
        (5.0, 1),  # it waits longer than the handshake may take: the handshake times out
        # it gives up first and closes (Python's http.server, the demo's reviewer): the
        # handshake ends with an EOF, once read as connect_error and retried, 21 s in all
        # before a second attempt said plain_http (issue 34, finding 8)
        (0.3, 5),
    ],
)
def test_https_against_a_plain_http_server_that_waits_is_named_after_one_handshake(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    diff_file: Path,
    give_up: float,
    connect_timeout: int,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    config = tmp_path / "c.yml"
    config.write_text(f"reviewer:\n  connect_timeout: {connect_timeout}\n")
    with WaitingHTTP(give_up=give_up) as server:
        url = f"https://127.0.0.1:{server.port}/v1"
        code, out, err = cli(
            capsys, "review", "--diff", str(diff_file), "--model", "m", "--base-url", url,
            "--config", str(config),
        )  # fmt: skip
    assert code == 3
    assert server.accepted == 2  # one handshake, one plain probe; no retry
    assert "attempt 2/" not in err
    assert "connect_error" not in out + err
    assert "(plain_http)" in out
    assert f"use base_url http://127.0.0.1:{server.port}/v1" in out


def test_ctrl_c_in_a_review_in_chunks_sends_no_further_chunk(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    files = [
        f"diff --git a/f{i}.py b/f{i}.py\n--- a/f{i}.py\n+++ b/f{i}.py\n@@ -0,0 +1,40 @@\n"
        + "".join(f"+line {n} of file {i}, padded to a steady width\n" for n in range(40))
        for i in range(4)
    ]
    diff = tmp_path / "four.diff"
    diff.write_text("".join(files))
    config = tmp_path / "c.yml"
    config.write_text(
        "max_chunk_bytes: 2048\nconcurrency: 1\nreviewer:\n  read_timeout: 1\n  attempts: 1\n"
    )
    cert = tmp_path / "cert.json"
    with ReviewerSimulator(
        "openai", scripted(["pass"]), script=(SimResponse(stall_after=300),)
    ) as sim:
        env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": KEY}
        argv = [sys.executable, "-m", "gate", "review", "--diff", str(diff), "--config",
                str(config), "--model", MODEL, "--base-url", sim.base_url,
                "--certificate", str(cert)]  # fmt: skip
        proc = subprocess.Popen(
            argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 30
            while sim.count < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=10)
        sent = sim.count
    assert proc.returncode == 130, err
    assert sent == 1  # the queued chunks were cancelled, never sent
    assert json.loads(cert.read_text())["decision"]["reason"] == "interrupted"


# --- a saved response, verified (issue 34, finding 7) ---------------------------------------


def _saved_run(tmp_path: Path, dialect: str) -> tuple[Path, Path]:
    """``review --save-response --certificate`` against the simulator of ``dialect``, under
    policy_version 7: the raw stream and the certificate it wrote."""
    from gate.lab.sim import DIALECTS, SIM_EXTRAS
    from tests.integration.test_review_cli import model

    assert dialect in DIALECTS
    config = tmp_path / "review-gate.yml"
    config.write_text("policy_version: '7'\n")
    raw, cert = tmp_path / "answer.raw", tmp_path / "cert.json"
    with ReviewerSimulator(dialect, model(dialect)) as sim:
        argv = ["review", "--diff", str(tmp_path / "change.diff"), "--provider", dialect]
        argv += ["--model", MODEL, "--base-url", sim.base_url, "--config", str(config)]
        argv += ["--save-response", str(raw), "--certificate", str(cert)]
        for name, value in SIM_EXTRAS.get(dialect, {}).items():
            argv += [f"--{name.replace('_', '-')}", value]
        assert main(argv) == 0
    return raw, cert


KEY_ENVS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "REVIEW_GATE_API_KEY")
CLOUD_ENVS = ("AZURE_OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GOOGLE_OAUTH_ACCESS_TOKEN")


@pytest.mark.parametrize(
    "dialect",
    ["openai", "anthropic", "gemini", "mc1", "openai-responses", "azure-openai", "bedrock"],
)
def test_a_saved_raw_stream_is_named_and_its_certificate_verifies(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    diff_file: Path,
    dialect: str,
) -> None:
    """``--save-response`` keeps the provider's own bytes (Server-Sent Events, an AWS
    event stream); verify names that and the command that verifies the run, and
    ``--from-certificate`` needs no --policy-version: the certificate records it."""
    for name in (*KEY_ENVS, *CLOUD_ENVS):
        monkeypatch.setenv(name, KEY)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    raw, cert = _saved_run(tmp_path, dialect)
    capsys.readouterr()
    code, out, err = cli(
        capsys, "verify", str(raw), "--diff", str(diff_file), "--policy-version", "7"
    )
    if dialect == "mc1":  # the MC1 service's answer is itself the envelope
        assert code == 0, err
    else:
        assert code == 2, (out, err)
        assert "raw stream" in err
        assert "review-gate verify --from-certificate CERT --diff DIFF" in err
        assert "missing MC1 header" not in err + out
    code, out, err = cli(
        capsys, "verify", "--from-certificate", str(cert), "--diff", str(diff_file), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["binding"]["policy_version"] == "7"
    # a policy given is still the one the verdict must repeat
    code, out, _ = cli(
        capsys, "verify", "--from-certificate", str(cert), "--diff", str(diff_file),
        "--policy-version", "1", "--json",
    )  # fmt: skip
    assert code == 3
    assert json.loads(out)["reason"] == "policy_version_mismatch"


# --- config hints: a reviewer setting at the top level, a string for a list (finding 8) ---


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("provider: anthropic\n", "`reviewer: {provider: anthropic, model: your-model}`"),
        ("model: gpt-4o-mini\n", "`reviewer: {provider: openai, model: gpt-4o-mini}`"),
        (
            "provider: anthropic\nmodel: claude-sonnet-4-5\n",
            "`reviewer: {provider: anthropic, model: claude-sonnet-4-5}`",
        ),
        ("base_url: http://127.0.0.1:11434/v1\n", "base_url: http://127.0.0.1:11434/v1}`"),
        ('exclude: "*.md"\n', 'wrap it in a list: `exclude: ["*.md"]`'),
        ("include: docs/**\n", 'wrap it in a list: `include: ["docs/**"]`'),
        ('inputs_may_lower: "model"\n', 'wrap it in a list: `inputs_may_lower: ["model"]`'),
    ],
)
def test_a_config_mistake_gets_the_shape_it_meant(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    diff_file: Path,
    text: str,
    says: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    config = tmp_path / "c.yml"
    config.write_text(text)
    code, _, err = cli(
        capsys, "review", "--diff", str(diff_file), "--model", "m", "--config", str(config)
    )
    assert code == 2
    assert says in err
    assert "did you mean reviewer?" not in err
    assert "`exclude: []`" not in err
    assert '`include: ["**"]`' not in err
