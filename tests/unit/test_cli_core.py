"""seal / verify / selftest through the real command line (a subprocess)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.decide.decision import MAX_DESCRIPTION, Binding
from gate.decide.envelope import seal, verify
from gate.review import certificate
from tests.verdicts import read_words

ROOT = Path(__file__).resolve().parents[2]
DIFF = b"diff --git a/a.py b/a.py\n+print('hi')\n"
SHA = hashlib.sha256(DIFF).hexdigest()


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def answer(verdict: str = "pass", confidence: float = 0.9, sha: str = SHA) -> bytes:
    obj = {
        "verdict": verdict,
        "reasons": ["fine"],
        "confidence": confidence,
        "diff_sha": sha,
        "policy_version": "7",
        "read": read_words(SHA, "7"),  # the words of the prompt the gate sent
    }
    return seal(f"ok\n```json\n{json.dumps(obj)}\n```\n".encode())


@pytest.fixture
def diff_file(tmp_path: Path) -> Path:
    path = tmp_path / "change.diff"
    path.write_bytes(DIFF)
    return path


def test_seal_writes_a_verifiable_envelope(tmp_path: Path) -> None:
    src = tmp_path / "a.txt"
    src.write_bytes(b"content\n")
    out = cli("seal", str(src))
    assert out.returncode == 0
    assert verify(out.stdout) == b"content\n"
    target = tmp_path / "a.mc1"
    assert cli("seal", str(src), "-o", str(target)).returncode == 0
    assert target.read_bytes() == out.stdout


@pytest.mark.parametrize(
    ("raw", "code", "state", "status", "reason"),
    [
        (answer(), 0, "pass", "success", "reviewer_pass"),
        (answer("fail"), 1, "fail", "failure", "reviewer_fail"),
        (answer(confidence=0.5), 3, "needs_human", "failure", "low_confidence"),
        (answer(sha="f" * 64), 3, "needs_human", "error", "diff_sha_mismatch"),
        (answer()[:-1], 3, "incomplete", "error", "length_mismatch"),
        (b"", 3, "incomplete", "error", "missing_header"),
    ],
)
def test_verify_json_and_exit_codes(
    diff_file: Path, tmp_path: Path, raw: bytes, code: int, state: str, status: str, reason: str
) -> None:
    response = tmp_path / "r.mc1"
    response.write_bytes(raw)
    out = cli("verify", str(response), "--diff", str(diff_file), "--policy-version", "7", "--json")
    assert out.returncode == code, out.stderr
    result = json.loads(out.stdout)
    assert (result["state"], result["status"], result["reason"]) == (state, status, reason)
    assert len(result["description"]) <= MAX_DESCRIPTION
    assert result["exit_code"] == code
    if state in ("pass", "fail"):
        assert result["verdict"]["diff_sha"] == SHA
    else:
        assert result["verdict"] is None or state == "needs_human"


def test_verify_reads_stdin_and_diff_sha(diff_file: Path) -> None:
    out = cli("verify", "-", "--diff-sha", SHA, "--policy-version", "7", stdin=answer())
    assert out.returncode == 0
    assert out.stdout.decode().startswith("pass: ")


def test_verify_min_confidence_flag(diff_file: Path) -> None:
    args = ["verify", "-", "--diff-sha", SHA, "--policy-version", "7", "--min-confidence"]
    assert cli(*args, "0.95", stdin=answer(confidence=0.9)).returncode == 3
    assert cli(*args, "0.85", stdin=answer(confidence=0.9)).returncode == 0


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "-", "--policy-version", "7"],  # no binding
        ["verify", "-", "--diff-sha", "ABC", "--policy-version", "7"],
        ["verify", "-", "--diff-sha", SHA],  # no policy
        ["verify", "-", "--diff-sha", SHA, "--policy-version", "7", "--min-confidence", "2"],
        ["verify", "/no/such/file", "--diff-sha", SHA, "--policy-version", "7"],
        ["verify", "-", "--diff", "/no/such/diff", "--policy-version", "7"],
        ["seal", "/no/such/file"],
        ["nonsense"],
        [],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    out = cli(*args, stdin=answer())
    assert out.returncode == 2, out
    assert out.stderr


def test_verify_writes_a_certificate_that_re_verifies(diff_file: Path, tmp_path: Path) -> None:
    cert_path = tmp_path / "cert.json"
    out = cli(
        "verify",
        "-",
        "--diff",
        str(diff_file),
        "--policy-version",
        "7",
        "--certificate",
        str(cert_path),
        stdin=answer("fail"),
    )
    assert out.returncode == 1
    cert = json.loads(cert_path.read_text())
    assert cert["schema"] == certificate.SCHEMA
    assert cert["decision"]["state"] == "fail"
    assert cert["inputs"]["diff"] == SHA
    assert cert["envelope"]["sha256"] == hashlib.sha256(answer("fail")).hexdigest()
    again = cli(
        "verify",
        "--from-certificate",
        str(cert_path),
        "--diff",
        str(diff_file),
        "--policy-version",
        "7",
        "--json",
    )
    assert again.returncode == 1
    assert json.loads(again.stdout)["reason"] == "reviewer_fail"


def test_help_on_every_command() -> None:
    top = cli("--help")
    assert top.returncode == 0
    text = top.stdout.decode()
    for name in ("verify", "seal", "selftest"):
        assert name in text
        sub = cli(name, "--help")
        assert sub.returncode == 0
        assert b"usage: review-gate " + name.encode() in sub.stdout


def test_selftest_builtin_passes_and_counts() -> None:
    out = cli("selftest", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    size = result["envelope_bytes"]
    assert result["ok"] is True
    assert result["truncations"] == {**result["truncations"], "checked": size, "passed": 0}
    assert result["byte_flips"]["checked"] == 8 * size
    assert result["byte_flips"]["passed"] == 0
    assert result["forgeries"]["reasons"]["missing_sentinel"] == 1
    assert result["forgeries"]["passed"] == 0
    for reason in ("multiple_fences", "fence_ambiguous", "invisible_reason", "lone_surrogate"):
        assert result["forgeries"]["reasons"][reason] >= 1  # resealed answers (issue 8)


def test_selftest_on_a_given_response(tmp_path: Path) -> None:
    path = tmp_path / "r.mc1"
    path.write_bytes(answer())
    assert cli("selftest", str(path)).returncode == 0
    path.write_bytes(answer("fail"))
    out = cli("selftest", str(path))
    assert out.returncode == 2
    assert b"does not pass on its own" in out.stderr


def test_selftest_detects_a_broken_verifier(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop can fail: with a verifier that ignores the digest, flips pass."""
    from gate.decide import envelope as envelope_module
    from gate.decide.envelope import Envelope
    from gate.errors import BadEncoding
    from gate.lab import selftest

    def lax(raw: bytes, *, max_size: int | None = None) -> Envelope:
        body = raw.split(b"\n", 1)[-1]
        try:
            body[:-5].decode("utf-8")
        except UnicodeDecodeError as err:
            raise BadEncoding("lax") from err
        return Envelope(memoryview(body[:-5]), len(body), "", "")

    # decide() imports verify_envelope when it runs: the module's name is the one it reads
    monkeypatch.setattr(envelope_module, "verify_envelope", lax)
    raw, binding = selftest.builtin_envelope()
    report = selftest.run(raw, binding)
    assert not report.ok
    assert report.flips.passed  # flips in the header and sentinel slip through a lax verifier


def test_verify_re_decides_an_incomplete_run_from_its_certificate(tmp_path: Path) -> None:
    from gate.decide.attempt import Attempt, EndReason
    from gate.decide.decision import Binding, decide

    attempt = Attempt(
        number=1,
        provider="openai",
        complete=False,
        reason="missing_done",
        detail="the stream ended without data: [DONE]",
        end_reason=EndReason.TRAILER,
    )
    binding = Binding(SHA, "7")
    cert = certificate.build(
        decide(None, binding=binding, attempts=[attempt]),
        binding=binding,
        attempts=[attempt],
        inputs={},
        envelope=None,
    )
    path = tmp_path / "cert.json"
    certificate.write(path, cert)
    out = cli(
        "verify", "--from-certificate", str(path), "--diff-sha", SHA,
        "--policy-version", "7", "--json",
    )  # fmt: skip
    assert out.returncode == 3, out.stderr
    result = json.loads(out.stdout)
    assert (result["state"], result["reason"]) == ("incomplete", "missing_done")


def test_verify_judges_an_oversize_response_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.mc1"
    path.write_bytes(answer())
    out = cli(
        "verify", str(path), "--diff-sha", SHA, "--policy-version", "7",
        "--max-size", "50", "--json",
    )  # fmt: skip
    assert out.returncode == 3
    assert json.loads(out.stdout)["reason"] == "size_limit"


def test_verify_prints_the_state_once() -> None:
    out = cli("verify", "-", "--diff-sha", SHA, "--policy-version", "7", stdin=answer())
    assert out.stdout.decode() == "pass: confidence 0.9, 1 reason\n"


def test_an_unexpected_exception_blocks_with_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    from gate import cli as cli_module
    from gate.commands import seal

    def boom(args: object) -> int:
        raise KeyError("surprise")

    monkeypatch.setattr(seal, "run", boom)
    assert cli_module.main(["seal", "x"]) == 3


def test_verify_from_certificate_never_rises_above_the_recorded_decision(tmp_path: Path) -> None:
    from gate.decide.decision import Binding, State, Status, blocked

    raw = answer()
    binding = Binding(SHA, "7")
    lowered = blocked(
        State.NEEDS_HUMAN, "partial_coverage", "2 files not reviewed", status=Status.FAILURE
    )
    cert = certificate.build(lowered, binding=binding, attempts=(), inputs={}, envelope=raw)
    path = tmp_path / "cert.json"
    certificate.write(path, cert)
    out = cli(
        "verify", "--from-certificate", str(path), "--diff-sha", SHA,
        "--policy-version", "7", "--json",
    )  # fmt: skip
    assert out.returncode == 3
    result = json.loads(out.stdout)
    assert (result["state"], result["reason"]) == ("needs_human", "partial_coverage")


@pytest.mark.parametrize("recorded", [None, "pass", []])
def test_verify_from_a_certificate_without_a_recorded_decision_does_not_pass(
    tmp_path: Path, recorded: object
) -> None:
    from gate.decide.decision import Binding, decide

    raw = answer()
    binding = Binding(SHA, "7")
    cert = certificate.build(
        decide(raw, binding=binding), binding=binding, attempts=(), inputs={}, envelope=raw
    )
    cert["decision"] = recorded
    path = tmp_path / "cert.json"
    certificate.write(path, cert)
    out = cli(
        "verify", "--from-certificate", str(path), "--diff-sha", SHA,
        "--policy-version", "7", "--json",
    )  # fmt: skip
    assert out.returncode == 3
    assert json.loads(out.stdout)["reason"] == "certificate_invalid"


def test_the_program_entry_freezes_the_heap_only_in_its_own_process() -> None:
    """``review-gate`` (``gate.cli:entry``) freezes the heap before exit and keeps Python's
    pace of young collections (a raised threshold for the whole run let a large review's
    cyclic garbage raise its peak RSS by about the diff's size); ``main``, which tests call
    in-process, leaves the collector as it found it."""
    import gc

    probe = (
        "import gc, sys\n"
        "from gate.cli import entry\n"
        "default = gc.get_threshold()\n"
        "sys.argv = ['review-gate', '--version']\n"
        "try:\n    entry()\nexcept SystemExit:\n    pass\n"
        "print(gc.get_threshold() == default, gc.get_freeze_count() > 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    from gate.cli import main

    assert done.stdout.split()[-2:] == ["True", "True"]
    before = (gc.get_threshold(), gc.get_freeze_count())
    with contextlib.suppress(SystemExit):
        main(["--version"])
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_lines_said_from_many_threads_stay_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A review in chunks reports each attempt from its worker thread; two workers must
    never run their lines together. The stream here gives the other threads their turn
    inside every write, as a write to a pipe does (``print`` writes a line and its end
    apart, and did run lines together)."""
    import threading
    import time

    from gate.commands._io import say

    class Pipe:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, text: str) -> int:
            self.parts.append(text)
            time.sleep(0)  # the GIL is let go, as a write system call does
            return len(text)

        def flush(self) -> None:
            time.sleep(0)

    pipe = Pipe()
    monkeypatch.setattr(sys, "stderr", pipe)
    words = [f"chunk {n}/8: attempt 1/3 openai HTTP 200: complete" for n in range(8)]
    start = threading.Barrier(len(words))

    def speak(text: str) -> None:
        start.wait(timeout=10)
        for _ in range(50):
            say(text, err=True)

    threads = [threading.Thread(target=speak, args=(w,)) for w in words]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    lines = "".join(pipe.parts).splitlines()
    assert len(lines) == 8 * 50
    assert set(lines) == set(words)


def _old_answer(verdict: str) -> bytes:
    """A verdict as a gate before the read words asked for it (five members)."""
    obj = {"verdict": verdict, "reasons": ["fine"], "confidence": 0.9}
    obj |= {"diff_sha": SHA, "policy_version": "7"}
    return seal(f"ok\n```json\n{json.dumps(obj)}\n```\n".encode())


@pytest.mark.parametrize(("verdict", "code"), [("pass", 0), ("fail", 1)])
def test_a_certificate_made_before_the_read_words_verifies_as_it_was_decided(
    diff_file: Path, tmp_path: Path, verdict: str, code: int
) -> None:
    from gate.decide.decision import decide

    raw = _old_answer(verdict)
    decision = decide(raw, binding=Binding(SHA, "7"), read=False)
    cert = certificate.build(
        decision, binding=Binding(SHA, "7"), attempts=(), inputs={}, envelope=raw
    )
    del cert["binding"]["read"]  # as written before the read words
    path = tmp_path / "old.json"
    certificate.write(path, cert)
    args = ("verify", "--from-certificate", str(path), "--diff", str(diff_file), "--json")
    out = cli(*args)
    assert (out.returncode, json.loads(out.stdout)["state"]) == (code, verdict), out.stdout
    # the same answer given as a response today: the read member is missing
    now = cli("verify", "-", "--diff", str(diff_file), "--policy-version", "7", "--json", stdin=raw)
    assert (now.returncode, json.loads(now.stdout)["reason"]) == (3, "prompt_unread")


def test_removing_the_read_words_from_a_certificate_lowers_no_bar(
    diff_file: Path, tmp_path: Path
) -> None:
    """A certificate of today's contract with its binding's read words removed is decided
    by the old contract, which refuses the read member: never a pass."""
    from gate.decide.decision import decide

    raw = answer("pass")
    cert = certificate.build(
        decide(raw, binding=Binding(SHA, "7")),
        binding=Binding(SHA, "7"),
        attempts=(),
        inputs={},
        envelope=raw,
    )
    del cert["binding"]["read"]
    path = tmp_path / "stripped.json"
    certificate.write(path, cert)
    out = cli("verify", "--from-certificate", str(path), "--diff", str(diff_file), "--json")
    assert (out.returncode, json.loads(out.stdout)["reason"]) == (3, "extra_key"), out.stdout
