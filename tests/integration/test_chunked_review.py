"""A pull request reviewed in chunks, through real sockets (the reviewer simulator).

Every chunk is its own request, bound to its own bytes; the pull request passes only if
every chunk does. A cut chunk, a chunk answered with a neighbour's binding, a 429 and a
context overflow are each played on the wire.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import Binding, Family, State
from gate.lab.demo import ScriptedModel, answer, request_text, verdict_block
from gate.lab.sim import ReviewerSimulator, SimResponse, wire_for
from gate.review.chunks import plan
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from gate.review.result import ReviewResult
from gate.review.scope import select_diff

FILES = 12


def big_diff(files: int = FILES, lines: int = 30) -> bytes:
    out = b""
    for i in range(files):
        name = f"src/m{i}.py"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
        out += f"@@ -1 +1,{lines} @@\n-old\n".encode()
        out += b"".join(f"+value_{j} = {i} * {j}\n".encode() for j in range(lines))
    return out


def config_for(sim: ReviewerSimulator, *, attempts: int = 3, **top: Any) -> Config:
    values: dict[str, Any] = {"max_chunk_bytes": 2048, "concurrency": 1}
    values.update(top)
    reviewer = ReviewerConfig(
        provider=sim.dialect, model="sim-model", base_url=sim.base_url, attempts=attempts
    )
    return Config(reviewer=reviewer, **values)


def review(sim: ReviewerSimulator, config: Config, diff: bytes | None = None) -> ReviewResult:
    selected = select_diff(diff if diff is not None else big_diff(), config)
    return review_diff(
        selected.data,
        config,
        api_key="sk-test",
        coverage=selected.coverage,
        sleep=lambda _s: None,
    )


def test_every_chunk_is_asked_and_bound(sim_factory: Callable[..., ReviewerSimulator]) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    config = config_for(sim, concurrency=4)
    result = review(sim, config)
    assert result.decision.state is State.PASS
    count = len(result.chunks)
    assert count > 2
    assert sim.count == count
    # each request carried its own chunk's digest, number/total and the whole file list
    shas = {binding_in(request_text(body)) for body in sim.requests}
    assert {b.diff_sha for b in shas if b is not None} == {r.chunk.sha for r in result.chunks}
    text = request_text(sim.requests[0])
    assert f"of {count} of one pull request" in text
    assert all(re.search(rf'\n(modified|added) \d+ "src/m{i}\.py"\n', text) for i in range(FILES))
    # the certificate holds the manifest: ordered digests, files, one digest over them
    manifest = result.certificate["context"]["chunks"]["manifest"]
    assert [row["diff_sha"] for row in manifest["chunks"]] == [r.chunk.sha for r in result.chunks]
    assert len(manifest["sha256"]) == 64
    assert result.certificate["decision"]["state"] == "pass"


def test_small_diff_is_one_request_as_before(sim_factory: Callable[..., ReviewerSimulator]) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    result = review(sim, config_for(sim, max_chunk_bytes=1 << 20))
    assert result.decision.state is State.PASS
    assert result.chunks == ()
    assert sim.count == 1
    assert "of one pull request" not in request_text(sim.requests[0])


def test_one_failing_chunk_fails_the_pull_request(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    calls = {"n": 0}
    lock = threading.Lock()

    def responder(body: dict[str, Any]) -> str:
        binding = binding_in(request_text(body))
        assert binding is not None
        with lock:
            calls["n"] += 1
            mode = "fail" if calls["n"] == 2 else "pass"
        return answer(mode, binding)

    sim = sim_factory(responder)
    result = review(sim, config_for(sim))
    assert result.decision.state is State.FAIL
    assert "chunk 2/" in result.decision.detail


def _cut_sweep_offsets(total: int) -> list[int]:
    # every offset of the body's last 150 bytes (the verdict, the end marker, the last
    # chunk frame) and a stride through the rest: bounded to run in seconds
    tail = range(max(0, total - 150), total)
    return sorted({*range(0, total, 61), *tail})


def test_a_cut_chunk_at_any_offset_never_passes(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    config = config_for(sim, attempts=1)
    diff = big_diff(files=4)
    chunks = plan(
        select_diff(diff, config).data, select_diff(diff, config).coverage, max_chunk_bytes=2048
    ).chunks
    assert len(chunks) >= 2
    second = Binding(chunks[1].sha, "1")
    wire = wire_for("openai", answer("pass", second), SimResponse())
    offsets = _cut_sweep_offsets(len(wire))
    assert len(offsets) > 150
    for offset in offsets:
        sim.queue(SimResponse(), SimResponse(cut_after=offset))
        result = review(sim, config, diff)
        assert result.decision.state is not State.PASS, offset
        assert result.decision.state is State.INCOMPLETE, (offset, result.decision)
        assert result.chunks[1].state == "incomplete"


def test_a_neighbours_diff_sha_is_unbound(sim_factory: Callable[..., ReviewerSimulator]) -> None:
    diff = big_diff(files=6)
    probe = Config(max_chunk_bytes=2048)
    selected = select_diff(diff, probe)
    shas = [c.sha for c in plan(selected.data, selected.coverage, max_chunk_bytes=2048).chunks]

    def neighbour(body: dict[str, Any]) -> str:
        binding = binding_in(request_text(body))
        assert binding is not None
        index = shas.index(binding.diff_sha)
        if index == 1:  # chunk 2 answers with chunk 1's digest
            return answer("pass", Binding(shas[0], binding.policy_version))
        return answer("pass", binding)

    sim = sim_factory(neighbour)
    result = review(sim, config_for(sim, concurrency=3), diff)
    assert result.decision.state is State.NEEDS_HUMAN
    assert result.decision.reason == "diff_sha_mismatch"
    assert [r.state for r in result.chunks][1] == "needs_human"


def test_answers_in_another_order_are_matched_by_digest(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    second_asked = threading.Event()
    order: list[str] = []
    lock = threading.Lock()
    diff = big_diff(files=6)
    selected = select_diff(diff, Config(max_chunk_bytes=2048))
    shas = [c.sha for c in plan(selected.data, selected.coverage, max_chunk_bytes=2048).chunks]

    def slow_first(body: dict[str, Any]) -> str:
        binding = binding_in(request_text(body))
        assert binding is not None
        if binding.diff_sha == shas[0]:
            second_asked.wait(timeout=10)  # chunk 1 answers only after chunk 2 was asked
        else:
            second_asked.set()
        with lock:
            order.append(binding.diff_sha)
        return answer("pass", binding)

    sim = sim_factory(slow_first)
    result = review(sim, config_for(sim, concurrency=2), diff)
    assert order[0] != shas[0]  # answered out of order
    assert result.decision.state is State.PASS
    assert [r.chunk.sha for r in result.chunks] == shas


def test_a_429_on_one_chunk_pauses_every_chunk(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    sim = sim_factory(ScriptedModel("pass"), [SimResponse(status=429, retry_after="30")])
    config = config_for(sim)
    selected = select_diff(big_diff(files=10), config)
    slept: list[float] = []
    result = review_diff(
        selected.data, config, api_key="k", coverage=selected.coverage, sleep=slept.append
    )
    assert result.decision.state is State.PASS
    count = len(result.chunks)
    assert count >= 3
    # chunk 1 waited out the Retry-After, and so did every chunk after it
    assert len([s for s in slept if s > 20]) == count
    assert "for every chunk" in result.chunks[0].outcome.attempts[0].detail


OVERFLOW = {
    "openai": {
        "error": {
            "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    },
    "anthropic": {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    },
    "gemini": {
        "error": {
            "code": 400,
            "message": "The input token count (1200000) exceeds the maximum number of tokens "
            "allowed (1048576).",
            "status": "INVALID_ARGUMENT",
        }
    },
}


@pytest.mark.parametrize("dialect", sorted(OVERFLOW))
def test_a_context_overflow_splits_the_chunk(
    sim_factory: Callable[..., ReviewerSimulator], dialect: str
) -> None:
    body = json.dumps(OVERFLOW[dialect])
    sim = sim_factory(
        ScriptedModel("pass"), [SimResponse(status=400, error_body=body)], dialect=dialect
    )
    result = review(sim, config_for(sim))
    assert result.decision.state is State.PASS, result.decision
    names = [r.chunk.name for r in result.chunks]
    parts = [r for r in result.chunks if r.chunk.name.startswith("1.")]
    assert names[: 1 + len(parts)] == ["1"] + [f"1.{i + 1}" for i in range(len(parts))]
    assert len(parts) >= 2
    assert result.chunks[0].state == "split"
    assert result.chunks[0].outcome.attempts[0].reason == "context_overflow"
    # the halves hold exactly chunk 1's bodies
    halves = b"".join(p.body for r in parts for p in r.chunk.pieces)
    assert halves == b"".join(p.body for p in result.chunks[0].chunk.pieces)


def test_a_context_overflow_that_cannot_split_blocks(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    body = json.dumps(OVERFLOW["openai"])
    sim = sim_factory(ScriptedModel("pass"), [SimResponse(status=400, error_body=body)] * 20)
    result = review(sim, config_for(sim))
    # the diff's own end (gate.decide.ends): a coverage block that stands, never a fallback
    assert result.decision.state is State.NEEDS_HUMAN
    assert result.decision.reason == "context_overflow"
    assert result.decision.family is Family.COVERAGE


def test_over_max_chunks_blocks_before_any_call(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    result = review(sim, config_for(sim, max_chunks=2))
    assert result.decision.state is State.NEEDS_HUMAN
    assert result.decision.reason == "too_large"
    assert "chunks (max_chunks=2)" in result.decision.detail
    assert "input tokens" in result.decision.detail
    assert sim.count == 0


def test_a_hunk_larger_than_a_chunk_is_too_large(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    diff = big_diff(files=3) + big_diff(files=1, lines=400).replace(b"m0.py", b"huge.py")
    result = review(sim, config_for(sim), diff)
    assert result.coverage is not None
    assert [s.path for s in result.coverage.gaps] == ["src/huge.py"]
    assert result.decision.state is State.NEEDS_HUMAN
    assert result.decision.reason == "partial_coverage"


def test_review_cli_shows_the_chunks(
    sim_factory: Callable[..., ReviewerSimulator],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gate.cli import main

    sim = sim_factory(ScriptedModel("pass"))
    diff_file, config = tmp_path / "change.diff", tmp_path / "review-gate.yml"
    diff_file.write_bytes(big_diff())
    config.write_text("max_chunk_bytes: 2048\nconcurrency: 2\n")
    argv = ["review", "--diff", str(diff_file), "--config", str(config)]
    argv += ["--model", "sim-model", "--base-url", sim.base_url]
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    lines = [line for line in out.splitlines() if re.match(r"  chunk \d+/\d+: ", line)]
    assert len(lines) == sim.count
    assert lines[0].startswith(f"  chunk 1/{sim.count}: ")
    assert lines[0].endswith("pass (reviewer_pass)")
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [row["chunk"] for row in summary["chunks"]] == [str(i + 1) for i in range(len(lines))]
    assert {row["state"] for row in summary["chunks"]} == {"pass"}


def test_the_run_deadline_bounds_every_chunk(
    sim_factory: Callable[..., ReviewerSimulator],
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    result = review(sim, config_for(sim, run_deadline=1e-9))
    assert result.decision.state is State.INCOMPLETE
    assert result.decision.reason == "run_deadline"
    assert sim.count == 0
    assert {r.reason for r in result.chunks} == {"run_deadline"}


def test_a_chunked_certificate_reverifies_offline(
    sim_factory: Callable[..., ReviewerSimulator],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gate.cli import main
    from gate.review import certificate

    sim = sim_factory(ScriptedModel("pass"))
    diff = big_diff()
    result = review(sim, config_for(sim), diff)
    assert result.decision.state is State.PASS
    cert_path, diff_path = tmp_path / "cert.json", tmp_path / "change.diff"
    certificate.write(cert_path, result.certificate)
    diff_path.write_bytes(diff)
    verify = ["verify", "--diff", str(diff_path), "--policy-version", "1"]
    assert main([*verify, "--from-certificate", str(cert_path)]) == 0
    # another diff: the recomputed chunk digests differ, no chunk is bound: never a pass
    other = tmp_path / "other.diff"
    other.write_bytes(diff.replace(b"value_3 = 0", b"value_3 = 9"))
    assert (
        main([*verify[:1], "--diff", str(other), *verify[3:], "--from-certificate", str(cert_path)])
        == 3
    )
    # a recorded chunk digest edited to match nothing: that chunk is missing
    record = json.loads(cert_path.read_text())
    record["context"]["chunks"]["reviews"][1]["diff_sha"] = "0" * 64
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(record))
    assert main([*verify, "--from-certificate", str(edited)]) == 3
    assert "chunk 2/" in capsys.readouterr().out


def test_agreement_asks_every_chunk_k_times(sim_factory: Callable[..., ReviewerSimulator]) -> None:
    """``agreement: k`` holds for a review in chunks too: k answers per chunk, and a
    chunk passes only on k passes (a chunked review never quietly asks fewer times)."""
    sim = sim_factory(ScriptedModel("pass"))
    result = review(sim, config_for(sim, concurrency=3, agreement=2))
    assert result.decision.state is State.PASS
    assert sim.count == 2 * len(result.chunks)
    for request_review in result.certificate["context"]["chunks"]["reviews"]:
        assert len(request_review["answers"]) == 2


@pytest.mark.parametrize("late", ["fail", "pass-low"])
def test_one_dissenting_answer_on_one_chunk_blocks(
    sim_factory: Callable[..., ReviewerSimulator], late: str
) -> None:
    """Concurrency 1: chunk 2's second answer dissents (a fail, or a low-confidence pass)."""
    asked: list[str] = []

    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(request_text(request))
        assert binding is not None
        asked.append(binding.diff_sha)
        if len(asked) == 4:  # chunk 1 twice, then chunk 2 twice: this is chunk 2's second
            assert asked[2] == asked[3] != asked[0]
            if late == "fail":
                return answer("fail", binding)
            return verdict_block(binding, "pass", ["unsure"], 0.1)
        return answer("pass", binding)

    sim = sim_factory(respond)
    result = review(sim, config_for(sim, concurrency=1, agreement=2))
    assert result.decision.state is not State.PASS
    rows = {r.chunk.name: r for r in result.chunks}
    assert rows["2"].decision is not None
    assert rows["2"].decision.state is not State.PASS
    assert all(r.decision is not None and r.decision.state is State.PASS
               for name, r in rows.items() if name != "2")  # fmt: skip
    expected = "unstable" if late == "fail" else "low_confidence"
    assert rows["2"].decision.reason == expected
