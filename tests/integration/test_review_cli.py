"""``review-gate review`` end to end against a local reviewer simulator on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.cli import build_parser, main
from gate.commands._io import check_output_path
from gate.commands.review import load
from gate.decide.readback import marker
from gate.errors import UsageError
from gate.lab.sim import DIALECTS, MODEL, SIM_EXTRAS, ReviewerSimulator, SimResponse, extract_prompt
from gate.review.prompt import binding_in, halves
from tests.verdicts import fenced_verdict, read_words

REPO = Path(__file__).resolve().parents[2]
DIFF = (
    b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
    b"@@ -1 +1 @@\n-retries = 0\n+retries = 3\n"
)
SECRET = "sk-test-0123456789abcdef-not-real"
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "REVIEW_GATE_API_KEY")


def model(dialect: str, verdict: str = "pass", *, echo: bool = False) -> Callable[..., str]:
    """A responder answering a verdict bound to the binding it reads from the prompt."""

    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt(dialect, request)[1])
        assert binding is not None
        block = fenced_verdict(binding, verdict=verdict, reasons=["retries are bounded"])
        return ("Format:\n" + block + "\n" if echo else "") + "Reviewed.\n" + block

    return respond


@pytest.fixture
def diff_file(tmp_path: Path) -> Path:
    path = tmp_path / "change.diff"
    path.write_bytes(DIFF)
    return path


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*KEY_VARS, "MY_REVIEW_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def review(
    capsys: pytest.CaptureFixture[str], sim: ReviewerSimulator, diff: Path, *extra: str
) -> tuple[int, str, str]:
    argv = ["review", "--diff", str(diff), "--provider", sim.dialect, "--model", MODEL]
    argv += ["--base-url", sim.base_url, *extra]
    for name, value in SIM_EXTRAS.get(sim.dialect, {}).items():  # vertex: project, location
        argv += [f"--{name.replace('_', '-')}", value]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_bound_pass_passes_in_every_dialect(
    capsys: pytest.CaptureFixture[str], diff_file: Path, dialect: str
) -> None:
    with ReviewerSimulator(dialect, model(dialect)) as sim:
        code, out, err = review(capsys, sim, diff_file)
        assert sim.count == 1
        system, user = extract_prompt(dialect, sim.requests[0])
    assert code == 0
    assert out.startswith("pass: ")
    assert f"attempt 1/3 {dialect}" in err
    assert "complete" in err
    sha = hashlib.sha256(DIFF).hexdigest()
    assert f'diff_sha: "{sha}"' in user
    assert all(part in user for part in halves(DIFF.decode()))  # around the middle read word
    assert "exactly one fenced code block" in system
    assert marker("system", read_words(sha, "1")) in system


def test_json_output_certificate_and_saved_response(
    capsys: pytest.CaptureFixture[str],
    diff_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    cert_path, raw_path = tmp_path / "cert.json", tmp_path / "raw.bin"
    with ReviewerSimulator("openai", model("openai")) as sim:
        code, out, err = review(
            capsys, sim, diff_file, "--json", "--certificate", str(cert_path),
            "--save-response", str(raw_path),
        )  # fmt: skip
        sent_auth = sim.exchanges[0].headers["authorization"]
    assert code == 0
    assert sent_auth == f"Bearer {SECRET}"  # the key is used ...
    summary = json.loads(out)
    cert_text = cert_path.read_text()
    for text in (out, err, cert_text):  # ... and never written down
        assert SECRET not in text
    assert summary["state"] == "pass"
    assert summary["reason"] == "reviewer_pass"
    assert summary["exit_code"] == 0
    assert summary["binding"] == {
        "diff_sha": hashlib.sha256(DIFF).hexdigest(),
        "policy_version": "1",
        "read": read_words(hashlib.sha256(DIFF).hexdigest(), "1"),
    }
    assert len(summary["attempts"]) == 1
    saved = raw_path.read_bytes()
    assert hashlib.sha256(saved).hexdigest() == summary["attempts"][0]["raw_sha256"]
    assert saved.endswith(b"data: [DONE]\n\n")
    assert summary["certificate_sha256"] == hashlib.sha256(cert_path.read_bytes()).hexdigest()
    cert = json.loads(cert_text)
    assert cert["decision"]["state"] == "pass"
    assert cert["context"]["reviewer"]["provider"] == "openai"
    assert cert["inputs"]["diff"] == summary["binding"]["diff_sha"]
    assert cert["inputs"]["prompt"] == summary["prompt_sha256"]
    # The certificate alone re-verifies offline to the same decision.
    again = main(
        [
            *("verify", "--from-certificate", str(cert_path)),
            *("--diff", str(diff_file), "--policy-version", "1"),
        ]
    )
    assert again == 0
    assert capsys.readouterr().out.startswith("pass: ")


def test_fail_is_exit_1_and_echoed_example_is_exit_3(
    capsys: pytest.CaptureFixture[str], diff_file: Path
) -> None:
    with ReviewerSimulator("openai", model("openai", "fail")) as sim:
        code, out, _ = review(capsys, sim, diff_file)
    assert (code, out.split(":")[0]) == (1, "fail")
    with ReviewerSimulator("openai", model("openai", echo=True)) as sim:
        code, out, _ = review(capsys, sim, diff_file, "--json")
        assert sim.count == 1  # a complete answer is never asked again
    assert code == 3
    assert json.loads(out)["reason"] == "multiple_fences"


def test_retries_are_reported_one_line_each(
    capsys: pytest.CaptureFixture[str], diff_file: Path
) -> None:
    script = [SimResponse(status=429, retry_after="0"), SimResponse(status=503, retry_after="0")]
    with ReviewerSimulator("openai", model("openai"), script=script) as sim:
        code, _, err = review(capsys, sim, diff_file, "--attempts", "3")
        assert sim.count == 3
    assert code == 0
    lines = [line for line in err.splitlines() if line.startswith("attempt ")]
    assert len(lines) == 3
    assert "HTTP 429: incomplete: http_429" in lines[0]
    assert "HTTP 503: incomplete: http_503" in lines[1]
    assert "complete" in lines[2]


def test_budget_spent_is_incomplete_and_saves_what_arrived(
    capsys: pytest.CaptureFixture[str], diff_file: Path, tmp_path: Path
) -> None:
    raw_path = tmp_path / "partial.bin"
    script = [SimResponse(cut_after=300), SimResponse(cut_after=300)]
    with ReviewerSimulator("openai", model("openai"), script=script) as sim:
        code, out, err = review(
            capsys, sim, diff_file, "--attempts", "2", "--json", "--save-response", str(raw_path)
        )
        assert sim.count == 2
    summary = json.loads(out)
    assert code == 3
    assert summary["state"] == "incomplete"
    assert summary["reason"] == "connection_cut"
    assert [a["end_reason"] for a in summary["attempts"]] == ["socket_close", "socket_close"]
    assert err.count("incomplete: connection_cut") == 2
    partial = raw_path.read_bytes()
    assert 0 < len(partial) < 300
    assert hashlib.sha256(partial).hexdigest() == summary["attempts"][-1]["raw_sha256"]


def test_missing_key_is_one_line_naming_the_variable(
    capsys: pytest.CaptureFixture[str], diff_file: Path
) -> None:
    code = main(["review", "--diff", str(diff_file), "--model", "gpt-4o-mini"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err == (
        "review-gate review: error: OPENAI_API_KEY is not set; "
        "export it or pass --api-key-env NAME\n"
    )
    code = main(["review", "--diff", str(diff_file), "--provider", "anthropic", "--model", "m"])
    assert code == 2
    assert "ANTHROPIC_API_KEY is not set" in capsys.readouterr().err


def test_named_key_variable_must_exist_even_for_a_local_server(
    capsys: pytest.CaptureFixture[str], diff_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ReviewerSimulator("openai", model("openai")) as sim:
        code, _, err = review(capsys, sim, diff_file, "--api-key-env", "MY_REVIEW_KEY")
        assert sim.count == 0
        assert code == 2
        assert err.strip() == (
            "review-gate review: error: MY_REVIEW_KEY is not set; "
            "export it or pass --api-key-env NAME"
        )
        monkeypatch.setenv("MY_REVIEW_KEY", SECRET)
        code, _, err = review(capsys, sim, diff_file, "--api-key-env", "MY_REVIEW_KEY")
        assert code == 0
        assert sim.exchanges[0].headers["authorization"] == f"Bearer {SECRET}"


def test_unreachable_endpoint_names_the_setting(
    capsys: pytest.CaptureFixture[str], diff_file: Path
) -> None:
    placeholder = socket.socket()  # bound, never listening: refused, and kept reserved
    placeholder.bind(("127.0.0.1", 0))
    port = placeholder.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    argv = ["review", "--diff", str(diff_file), "--model", "m", "--base-url", url]
    hint = (
        f"review-gate review: hint: cannot reach the reviewer at {url} (connect_error); "
        "check --base-url (reviewer.base_url) and that the server is running"
    )
    code = main([*argv, "--attempts", "2"])
    out, err = capsys.readouterr()
    assert code == 3
    # the whole cause on standard output, not the status text cut at 140 characters
    assert out.startswith(f"incomplete (connect_error): cannot connect to {url} (")
    assert out.rstrip().endswith("check base_url and that the reviewer is running")
    assert "..." not in out
    lines = err.splitlines()
    # the estimate before any request (no price for the model m: tokens only, and no
    # bound named, since there is no max_cost), then each attempt
    assert lines[0].startswith("cost estimate for 1 request: no price for m, so tokens only: ")
    assert "max_cost" not in lines[0]
    # nothing reached a provider: nothing was paid (issue 34, finding 6)
    assert "cost: nothing to pay (none of the 2 requests made could be billed" in err
    assert "paid requests" not in err
    lines = lines[1:]
    assert [line.split(":")[0] for line in lines[:2]] == [
        "attempt 1/2 openai",
        "attempt 2/2 openai",
    ]
    assert lines[-1] == hint  # one final hint line, and no "error:" (this is no usage error)
    assert "error:" not in err.replace("connect_error", "")
    code = main([*argv, "--attempts", "1", "--json"])
    out, err = capsys.readouterr()
    assert code == 3
    assert json.loads(out)["reason"] == "connect_error"
    assert err.splitlines()[-1] == hint
    placeholder.close()


def test_config_file_then_options(
    capsys: pytest.CaptureFixture[str], diff_file: Path, tmp_path: Path
) -> None:
    with ReviewerSimulator("anthropic", model("anthropic")) as sim:
        config = tmp_path / "review-gate.yml"
        config.write_text(
            "reviewer:\n"
            "  provider: anthropic\n"
            f"  model: {MODEL}\n"
            f"  base_url: {sim.base_url}\n"
            "  attempts: 1\n"
            'policy_version: "7"\n'
            "instructions: Bounded retries only.\n"
        )
        code = main(["review", "--diff", str(diff_file), "--config", str(config), "--json"])
        first = json.loads(capsys.readouterr().out)
        code2 = main(
            [
                *("review", "--diff", str(diff_file), "--config", str(config)),
                *("--json", "--policy-version", "9"),
            ]
        )
        second = json.loads(capsys.readouterr().out)
        user = extract_prompt("anthropic", sim.requests[0])[1]
    assert (code, code2) == (0, 0)
    assert first["binding"]["policy_version"] == "7"
    assert second["binding"]["policy_version"] == "9"
    assert "Bounded retries only." in user


def test_bad_option_values_are_usage_errors(
    capsys: pytest.CaptureFixture[str], diff_file: Path, tmp_path: Path
) -> None:
    base = ["review", "--diff", str(diff_file), "--base-url", "http://127.0.0.1:9/v1"]
    assert main([*base, "--model", "m", "--max-tokens", "lots"]) == 2
    assert "--max-tokens: " in capsys.readouterr().err
    assert main(base) == 2
    assert "reviewer.model is not set for provider openai; pass --model NAME" in (
        capsys.readouterr().err
    )
    assert main(["review", "--diff", str(tmp_path / "missing.diff"), "--model", "m"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main([*base, "--model", "m", "--provider", "bard"]) == 2
    assert "bard" in capsys.readouterr().err


def test_the_installed_entry_point_runs_a_review(diff_file: Path) -> None:
    with ReviewerSimulator("mc1", model("mc1")) as sim:
        env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
        env["PYTHONPATH"] = str(REPO)
        cmd = [sys.executable, "-m", "gate", "review", "--diff", str(diff_file)]
        cmd += ["--provider", "mc1", "--base-url", sim.base_url]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pass: ")
    assert "attempt 1/3 mc1 HTTP 200: complete" in proc.stderr


def proxy_process(upstream_port: int, *fault: str) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "gate", "fault-proxy", "--listen", "127.0.0.1:0"]
    cmd += ["--upstream", f"127.0.0.1:{upstream_port}", *fault, "--once"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    banner = proc.stderr.readline()
    return proc, int(banner.split("listening on 127.0.0.1:")[1].split(",")[0])


@pytest.mark.parametrize(
    ("fault", "extra", "reason"),
    [
        (("--cut-after", "150"), (), "connection_cut"),
        (("--stall-after", "150", "--stall-seconds", "30"), ("--timeout", "1"), "deadline"),
    ],
)
def test_the_documented_fault_proxy_workflow(
    diff_file: Path, fault: tuple[str, ...], extra: tuple[str, ...], reason: str
) -> None:
    """fault-proxy and review as two processes, as the README shows them."""
    with ReviewerSimulator("openai", model("openai")) as sim:
        proxy, port = proxy_process(sim.port, *fault)
        try:
            env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
            env["PYTHONPATH"] = str(REPO)
            cmd = [sys.executable, "-m", "gate", "review", "--diff", str(diff_file), "--json"]
            cmd += ["--model", MODEL, "--base-url", f"http://127.0.0.1:{port}/v1"]
            cmd += ["--attempts", "1", *extra]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
            proxy_err = proxy.communicate(timeout=30)[1]
        finally:
            if proxy.poll() is None:
                proxy.kill()
                proxy.wait(5)
        assert sim.count == 1
    assert proc.returncode == 3, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["state"] == "incomplete"
    assert summary["reason"] == reason
    assert "cannot reach" not in proc.stderr  # the endpoint answered, then broke
    assert proxy.returncode == 0
    assert "150 bytes out" in proxy_err


# --- the selection the action applies (include/exclude, max_diff_bytes) -------------

SECOND = (
    b"diff --git a/docs/notes.md b/docs/notes.md\n--- a/docs/notes.md\n+++ b/docs/notes.md\n"
    b"@@ -1 +1 @@\n-old\n+" + b"x" * 400 + b"\n"
)


@pytest.mark.parametrize(
    ("diff", "config_text", "cause"),
    [
        (b"", "", "holds no file section"),
        # diff -u output (no 'diff --git' headers) is a usage error now: test_newcomer_cli.py
        # under nothing_in_scope: block (the default passes: test_asset_only_changes.py)
        (
            DIFF,
            "exclude: ['*.py']\nnothing_in_scope: block\n",
            "0 of 1 files reviewed (1 filtered)",
        ),
        (DIFF, "max_diff_bytes: 10\n", "0 of 1 files reviewed (1 over_byte_limit)"),
    ],
)
def test_nothing_reviewed_blocks_without_calling_the_model(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    diff: bytes,
    config_text: str,
    cause: str,
) -> None:
    path = tmp_path / "change.diff"
    path.write_bytes(diff)
    config = tmp_path / "review-gate.yml"
    config.write_text(config_text or "policy_version: '1'\n")
    cert_path = tmp_path / "cert.json"
    with ReviewerSimulator("openai", model("openai")) as sim:
        code, out, _ = review(
            capsys, sim, path, "--config", str(config), "--json", "--certificate", str(cert_path)
        )
        assert sim.count == 0  # a verdict on nothing would pass: the model is never asked
    summary = json.loads(out)
    assert code == 3
    assert (summary["state"], summary["reason"]) == ("needs_human", "nothing_reviewed")
    assert cause in summary["detail"]
    assert summary["attempts"] == []
    cert = json.loads(cert_path.read_text())
    assert cert["decision"]["reason"] == "nothing_reviewed"
    assert cert["envelope"] is None
    with ReviewerSimulator("openai", model("openai")) as sim:
        code, out, _ = review(capsys, sim, path, "--config", str(config))
        assert sim.count == 0
    assert code == 3
    assert out.startswith("needs_human")
    assert "nothing to review: " in out
    assert cause in out


def test_partial_coverage_is_needs_human_before_any_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 20: a review that would block on coverage is never paid for; the block names
    each file left out and what would cover it."""
    path = tmp_path / "change.diff"
    path.write_bytes(DIFF + SECOND)  # the second file does not fit max_diff_bytes
    config = tmp_path / "review-gate.yml"
    config.write_text(f"max_diff_bytes: {len(DIFF) + 10}\n")
    cert_path = tmp_path / "cert.json"
    with ReviewerSimulator("openai", model("openai")) as sim:
        code, out, _ = review(
            capsys, sim, path, "--config", str(config), "--json", "--certificate", str(cert_path)
        )
        asked = sim.count
    summary = json.loads(out)
    assert code == 3
    assert asked == 0  # nobody was asked, nothing was paid
    assert (summary["state"], summary["reason"]) == ("needs_human", "partial_coverage")
    assert "1 of 2 files reviewed (1 over_byte_limit)" in summary["detail"]
    assert "docs/notes.md (over max_diff_bytes" in summary["detail"]
    assert "the reviewer was not asked" in summary["detail"]
    assert summary["coverage"]["reviewed"] == ["app.py"]
    cert = json.loads(cert_path.read_text())
    assert cert["decision"]["reason"] == "partial_coverage"
    assert cert["attempts"] == []

    config.write_text(f"max_diff_bytes: {len(DIFF) + 10}\nallow_partial_coverage: true\n")
    with ReviewerSimulator("openai", model("openai")) as sim:
        code, out, _ = review(capsys, sim, path, "--config", str(config), "--json")
        user = extract_prompt("openai", sim.requests[0])[1]
    assert code == 0
    assert json.loads(out)["reason"] == "reviewer_pass"
    assert "docs/notes.md" not in user


def test_partial_coverage_allowed_keeps_a_fail_and_notes_the_gap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "change.diff"
    binary = b"diff --git a/logo.png b/logo.png\nBinary files a/logo.png and b/logo.png differ\n"
    path.write_bytes(DIFF + binary)
    with ReviewerSimulator("openai", model("openai", "fail")) as sim:
        code, out, _ = review(capsys, sim, path)
        assert sim.count == 0
    # no bytes to read on the command line: the .png is no asset, it blocks as a binary
    assert code == 3
    assert "logo.png (a binary file no reviewer can read" in out
    config = tmp_path / "review-gate.yml"
    config.write_text("allow_partial_coverage: true\n")
    with ReviewerSimulator("openai", model("openai", "fail")) as sim:
        code, out, _ = review(capsys, sim, path, "--config", str(config))
    assert code == 1
    assert out.startswith("fail: ")


@pytest.mark.parametrize(
    ("url", "problem"),
    [("http://127.0.0.1:99999/v1", "Port out of range"), ("http://[::1", "Invalid IPv6 URL")],
)
def test_a_base_url_that_is_no_url_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], diff_file: Path, tmp_path: Path, url: str, problem: str
) -> None:
    code = main(["review", "--diff", str(diff_file), "--model", "m", "--base-url", url])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"review-gate review: error: --base-url {url!r}: ")
    assert problem in err
    config = tmp_path / "review-gate.yml"
    config.write_text(f"reviewer:\n  model: m\n  base_url: '{url}'\n")
    code = main(["review", "--diff", str(diff_file), "--config", str(config)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"reviewer.base_url in {config} {url!r}: " in err
    assert problem in err


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--max-tokens", "lots", "--max-tokens: reviewer.max_tokens must be an integer"),
        ("--attempts", "0", "--attempts: reviewer.attempts must be an integer >= 1"),
        ("--timeout", "-1", "--timeout: reviewer.deadline must be a number > 0"),
        ("--min-confidence", "5", "--min-confidence: min_confidence must be a number >= 0"),
    ],
)
def test_option_errors_are_worded_for_the_command_line(
    capsys: pytest.CaptureFixture[str], diff_file: Path, option: str, value: str, says: str
) -> None:
    argv = [
        "review",
        "--diff",
        str(diff_file),
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ]
    args = build_parser().parse_args([*argv, option, value])
    with pytest.raises(UsageError) as caught:
        load(args)
    assert caught.value.reason == "config_invalid_input"
    message = caught.value.message
    assert message.startswith(says)
    assert f"; fix: pass {option} " in message
    assert message.endswith(", or omit it")
    assert "input" not in message  # the action's words: there are no inputs here
    assert main([*argv, option, value]) == 2
    err = capsys.readouterr().err
    assert err == f"review-gate review: error: {message}\n"


def test_every_bad_option_is_named_once_with_its_own_fix(diff_file: Path) -> None:
    argv = ["review", "--diff", str(diff_file), "--attempts", "0", "--max-tokens", "x"]
    with pytest.raises(UsageError) as caught:
        load(build_parser().parse_args(argv))
    lines = caught.value.message.splitlines()
    assert [line.split(":")[0] for line in lines] == ["--attempts", "--max-tokens"]
    assert lines[0].endswith("fix: pass --attempts 3, or omit it")
    assert lines[1].endswith("fix: pass --max-tokens 4096, or omit it")


def test_a_missing_config_file_names_the_option(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yml"
    args = build_parser().parse_args(["review", "--diff", "-", "--config", str(missing)])
    with pytest.raises(UsageError) as caught:
        load(args)
    assert caught.value.reason == "config_missing"
    assert caught.value.message.endswith("pass --config PATH with the right path")
    assert "config input" not in caught.value.message


def test_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["review", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option, default in [
        ("--provider", "openai"),
        ("--max-tokens", "4096"),
        ("--timeout", "300"),
        ("--attempts", "3"),
        ("--policy-version", "1"),
        ("--min-confidence", "0.8"),
    ]:
        assert re.search(rf"{option} \S+ [^(]*\(default: from --config, else {default}\)", text), (
            option
        )


@pytest.mark.parametrize("option", ["--certificate", "--save-response"])
@pytest.mark.parametrize(
    ("target", "problem"),
    [("dir", "is a directory"), ("missing/out.bin", "does not exist")],
)
def test_output_paths_are_checked_before_the_reviewer_is_called(
    capsys: pytest.CaptureFixture[str],
    diff_file: Path,
    tmp_path: Path,
    option: str,
    target: str,
    problem: str,
) -> None:
    (tmp_path / "dir").mkdir()
    path = tmp_path / target
    with ReviewerSimulator("openai", model("openai")) as sim:
        code, out, err = review(capsys, sim, diff_file, option, str(path))
        assert sim.count == 0  # no tokens spent on an answer that could not be saved
    assert code == 2
    assert out == ""
    assert err.startswith(f"review-gate review: error: {option} {str(path)!r} ")
    assert problem in err
    assert err.count("\n") == 1
    args = build_parser().parse_args(["review", "--diff", "-", option, str(path)])
    with pytest.raises(UsageError) as caught:
        check_output_path(option, getattr(args, option[2:].replace("-", "_")))
    assert caught.value.reason == "bad_output_path"


def test_save_response_help_says_after_chunked_decoding(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["review", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exactly as received, after HTTP chunked decoding" in text


def test_max_cost_blocks_before_the_call_and_the_cost_is_reported(
    capsys: pytest.CaptureFixture[str],
    diff_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """max_cost holds on the command line as in the action (never silently ignored), and
    each run says what it cost: tokens as the provider counted them, priced by the config."""
    config = tmp_path / "review-gate.yml"
    config.write_text(f"pricing:\n  {MODEL}: {{input: 2.5, output: 10}}\n")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with ReviewerSimulator("openai", model("openai")) as sim:
        code, out, err = review(capsys, sim, diff_file, "--config", str(config))
        assert (code, sim.count) == (0, 1), err
        assert re.search(r"^cost: \d+ input \+ \d+ output tokens over 1 paid request, "
                         r"0\.\d{6} USD$", err, re.MULTILINE), err  # fmt: skip
        # every amount names its currency; the bound is max_cost's only when one is set
        (estimate,) = [line for line in err.splitlines() if line.startswith("cost estimate")]
        shape = (r"cost estimate for 1 request: at most 0\.\d{6} USD \(.*, every attempt\); "
                 r"likely about 0\.\d{6} USD \(.*\)")  # fmt: skip
        assert re.fullmatch(shape, estimate), estimate
        code, out, err = review(capsys, sim, diff_file, "--config", str(config), "--json")
        spent = json.loads(out)["cost"]
        assert spent["cost"] > 0
        assert spent["input_tokens"] > 0
        assert spent["price_per_million"] == {"input": 2.5, "output": 10.0}
        code, out, err = review(
            capsys, sim, diff_file, "--config", str(config), "--max-cost", "0.000001", "--json"
        )
        assert sim.count == 2  # the third run asked nobody
        assert code == 3
        assert json.loads(out)["reason"] == "over_budget"
        assert re.search(r"estimated cost 0\.\d{6} USD exceeds max_cost 1e-06 USD",
                         json.loads(out)["detail"])  # fmt: skip
        # no price for the model: a config error when read (exit 2), nobody asked
        code, out, err = review(capsys, sim, diff_file, "--max-cost", "100")
        assert (code, sim.count) == (2, 2)
        assert f"max_cost is 100 USD but nothing gives a price for the model {MODEL}" in err
        assert "under pricing" in err
    assert SECRET not in out + err
