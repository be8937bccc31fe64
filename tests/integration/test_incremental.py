"""Incremental review through real sockets (the reviewer simulator): a push carries the
bound chunk passes of the push before it, sends only what changed, and still decides
over every chunk of the final diff.

A 40-file pull request is reviewed in chunks; a second push changes one file. Only the
chunks holding it are sent; the rest are carried from the first run's certificate,
named in the chunk rows and the certificate, and ``verify --from-certificate`` decides
the second certificate again from the envelopes it cites. A changed chunk is sent (and
its fail fails), a cut on the one fresh chunk blocks, and a config change, a foreign
question or a forged record carries nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from gate.config.model import Config, ReviewerConfig
from gate.decide.decision import State
from gate.lab.demo import ScriptedModel, answer, request_text
from gate.lab.sim import ReviewerSimulator, SimResponse
from gate.memory.question import key_for
from gate.review import certificate
from gate.review.carry import Book, from_certificate
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from gate.review.result import ReviewResult
from gate.review.scope import select_diff

FILES = 40


def pr(files: int = FILES, *, changed: int | None = None, text: str = "edited") -> bytes:
    """``files`` modified files of about 600 bytes; ``changed`` is the one a push edits."""
    out = b""
    for i in range(files):
        name = f"src/pkg/module_{i:02d}.py"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
        out += b"@@ -1 +1,20 @@\n-old\n"
        body = text if i == changed else "value"
        out += b"".join(f"+{body}_{j} = {i} * {j}\n".encode() for j in range(20))
    return out


def config_for(sim: ReviewerSimulator, **top: Any) -> Config:
    values: dict[str, Any] = {"max_chunk_bytes": 4096, "concurrency": 2}
    values.update(top)
    reviewer = ReviewerConfig(
        provider=sim.dialect, model="sim-model", base_url=sim.base_url, attempts=1
    )
    return Config(reviewer=reviewer, **values)


def review(config: Config, diff: bytes, carry: Book | None = None) -> ReviewResult:
    selected = select_diff(diff, config)
    return review_diff(
        selected.data,
        config,
        api_key="sk-test",
        coverage=selected.coverage,
        sleep=lambda _s: None,
        carry=carry,
        question=key_for(selected.data, config),
    )


def book_of(result: ReviewResult, tmp_path: Path, name: str = "push1.json") -> Book:
    path = tmp_path / name
    certificate.write(path, result.certificate)
    return from_certificate(path.read_bytes(), run=name)


def sent(sim: ReviewerSimulator, since: int = 0) -> set[str]:
    out = set()
    for body in sim.requests[since:]:
        binding = binding_in(request_text(body))
        assert binding is not None
        out.add(binding.diff_sha)
    return out


def test_a_push_that_changes_one_file_sends_only_its_chunks_and_passes(
    sim_factory: Callable[..., ReviewerSimulator], tmp_path: Path
) -> None:
    from gate.cli import main

    sim = sim_factory(ScriptedModel("pass"))
    config = config_for(sim)
    first = review(config, pr())
    assert first.decision.state is State.PASS
    total = len(first.chunks)
    assert total >= 6
    assert sim.count == total
    book = book_of(first, tmp_path)
    assert len(book) == total

    before = sim.count
    second = review(config, pr(changed=17), book)
    assert second.decision.state is State.PASS
    fresh = [r for r in second.chunks if r.carried is None]
    carried = [r for r in second.chunks if r.carried is not None]
    assert len(fresh) <= 2  # only the chunks holding module_17
    assert carried
    assert any("src/pkg/module_17.py" in r.chunk.files() for r in fresh)
    assert sent(sim, before) == {r.chunk.sha for r in fresh}
    assert sim.count - before == len(fresh)
    # named as carried, with where from, in the rows and the certificate
    record = second.certificate["context"]["chunks"]
    assert record["carried"] == len(carried)
    rows = {row["chunk"]: row for row in record["reviews"]}
    for review_ in carried:
        assert rows[review_.chunk.name]["carried"]["run"] == "push1.json"
        assert len(rows[review_.chunk.name]["carried"]["certificate_sha"]) == 64
    assert any("carried" in note for note in second.notes)
    # verify --from-certificate decides the carried chunks again from the cited envelopes
    cert_path, diff_path = tmp_path / "push2.json", tmp_path / "push2.diff"
    certificate.write(cert_path, second.certificate)
    diff_path.write_bytes(select_diff(pr(changed=17), config).data)
    verify = ["verify", "--diff", str(diff_path), "--policy-version", "1"]
    assert main([*verify, "--from-certificate", str(cert_path)]) == 0
    # a third push carries from the second's certificate: the origin stays the first run
    third = review(config, pr(changed=17), book_of(second, tmp_path, "push2b.json"))
    assert all(r.carried is not None for r in third.chunks)
    origins = {r.carried.run for r in third.chunks if r.carried is not None}
    assert origins == {"push1.json", "push2b.json"}


def test_a_push_that_changes_a_carried_chunks_bytes_sends_it_and_its_fail_fails(
    sim_factory: Callable[..., ReviewerSimulator], tmp_path: Path
) -> None:
    def responder(body: dict[str, Any]) -> str:
        text = request_text(body)
        binding = binding_in(text)
        assert binding is not None
        return answer("fail" if "+broken_" in text else "pass", binding)

    sim = sim_factory(responder)
    config = config_for(sim)
    book = book_of(review(config, pr()), tmp_path)
    before = sim.count
    second = review(config, pr(changed=5, text="broken"), book)
    assert second.decision.state is State.FAIL
    assert sim.count - before >= 1
    holding = [r for r in second.chunks if "src/pkg/module_05.py" in r.chunk.files()]
    assert holding
    assert all(r.carried is None for r in holding)
    # the fail stands when the same bytes come back: carried, not asked again
    failed = book_of(second, tmp_path, "push2.json")
    again_before = sim.count
    third = review(config, pr(changed=5, text="broken"), failed)
    assert third.decision.state is State.FAIL
    assert sim.count == again_before


def test_a_cut_on_a_fresh_chunk_blocks_though_the_others_are_carried(
    sim_factory: Callable[..., ReviewerSimulator], tmp_path: Path
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    config = config_for(sim, concurrency=1)
    book = book_of(review(config, pr()), tmp_path)
    before = sim.count
    for _ in range(4):  # every fresh request is cut mid-answer
        sim.queue(SimResponse(cut_after=120))
    second = review(config, pr(changed=30), book)
    assert second.decision.state is State.INCOMPLETE
    assert sim.count > before
    assert any(r.carried is not None for r in second.chunks)
    assert [r.state for r in second.chunks if r.carried is None] == ["incomplete"] * len(
        [r for r in second.chunks if r.carried is None]
    )


def test_a_config_change_carries_nothing(
    sim_factory: Callable[..., ReviewerSimulator], tmp_path: Path
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    book = book_of(review(config_for(sim), pr()), tmp_path)
    for change in (
        {"instructions": "Also block TODO comments."},
        {"min_confidence": 0.5},
        {"policy_version": "2"},
    ):
        before = sim.count
        result = review(config_for(sim, **change), pr(), book)
        assert result.decision.state is State.PASS
        assert all(r.carried is None for r in result.chunks), change
        assert sim.count - before == len(result.chunks), change
    # a model change, and incremental: off, carry nothing either
    base = config_for(sim)
    other = replace(base, reviewer=replace(base.reviewer, model="m2"))
    assert all(r.carried is None for r in review(other, pr(), book).chunks)
    off = config_for(sim, incremental="off")
    assert all(r.carried is None for r in review(off, pr(), book).chunks)


def test_a_forged_or_foreign_record_carries_nothing(
    sim_factory: Callable[..., ReviewerSimulator], tmp_path: Path
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    config = config_for(sim)
    first = review(config, pr())
    path = tmp_path / "push1.json"
    certificate.write(path, first.certificate)
    record = json.loads(path.read_text())
    chunks = record["context"]["chunks"]["reviews"]
    # forged: each row's digest rewritten to the next chunk's (the envelope still names
    # its own chunk), so every lookup hits an answer bound to other bytes
    shas = [row["diff_sha"] for row in chunks]
    for row, sha in zip(chunks, shas[1:] + shas[:1], strict=True):
        row["diff_sha"] = sha
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(record))
    before = sim.count
    result = review(config, pr(), from_certificate(forged.read_bytes(), run="forged"))
    assert result.decision.state is State.PASS
    assert all(r.carried is None for r in result.chunks)
    assert sim.count - before == len(result.chunks)
    # foreign: another question's record (its question field rewritten) matches nothing
    record = json.loads(path.read_text())
    record["context"]["chunks"]["question"] = "0" * 64
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(record))
    result = review(config, pr(), from_certificate(foreign.read_bytes(), run="foreign"))
    assert all(r.carried is None for r in result.chunks)


def test_small_pull_requests_stay_whole_unless_always(
    sim_factory: Callable[..., ReviewerSimulator], tmp_path: Path
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    roomy = {"max_chunk_bytes": 1 << 20}
    whole = review(config_for(sim, **roomy), pr())
    assert whole.chunks == ()  # auto: a diff that fits one request is one request
    assert sim.count == 1
    always = config_for(sim, incremental="always", **roomy)
    first = review(always, pr())
    assert len(first.chunks) == 1  # always: reviewed as a chunk, so a push can carry it
    assert "of one pull request" in request_text(sim.requests[-1])
    mark = sim.count
    again = review(always, pr(), book_of(first, tmp_path))
    assert again.decision.state is State.PASS
    assert sim.count == mark
    assert all(r.carried is not None for r in again.chunks)
