"""A real-sized pull request through the whole action (issue 10's done-when, in process):
2,000 files, about 20 MiB of diff, against the fake GitHub (every request and response
checked against GitHub's OpenAPI description) and the reviewer simulator.

GitHub refuses the diff (406), the compare API lists only 300 files, so the gate reads the
pull request's file list (20 pages), binds every entry to the head tree, rebuilds the
files listed without a patch from their blobs, and reviews everything in chunks: 100%
coverage and ``pass``. The same pull request with one chunk cut on the wire blocks.
tests/e2e/test_act_large.py runs the same through the action's image with act.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator, SimResponse, extract_prompt
from gate.review.prompt import binding_in
from tests.fakes.github import FakeGitHub
from tests.fakes.large_pull import LARGE_CONFIG, add_large_pull
from tests.integration.action.test_run_fake_github import (
    API_KEY,
    BASE,
    CONFIG_PATH,
    HEAD,
    pr_payload,
    run_gate,
)

#: GitHub's limit on an issue comment's body, in characters
MAX_COMMENT = 65_536
#: and on a job summary, in bytes
MAX_SUMMARY = 1 << 20


def _setup(fake: FakeGitHub):  # type: ignore[no-untyped-def]
    pull = add_large_pull(fake, 7, head_sha=HEAD, base_sha=BASE)
    fake.set_file(BASE, CONFIG_PATH, LARGE_CONFIG)
    fake.set_file(HEAD, CONFIG_PATH, LARGE_CONFIG)  # unchanged: the file list must not name it
    return pull


def _common(fake: FakeGitHub, result, sim: ReviewerSimulator) -> dict:  # type: ignore[no-untyped-def, type-arg]
    assert fake.violations == [], fake.violations[:3]
    assert fake.response_violations == [], fake.response_violations[:3]
    ops = [r.operation for r in fake.requests]
    assert ops.count("pulls/list-files") == 20  # 2,000 files, 100 a page
    assert "pulls/get-diff" not in ops
    (body,) = [c["body"] for c in fake.comments[7]]
    assert len(body) <= MAX_COMMENT
    assert len(result.summary.encode()) <= MAX_SUMMARY
    printed = "".join(ln for ln in result.stdout.splitlines(True) if "::add-mask::" not in ln)
    assert API_KEY not in body + result.summary + printed
    cert = result.certificate
    manifest = cert["context"]["chunks"]["manifest"]
    # every request was one chunk of the manifest, bound to that chunk's own digest
    sent = set()
    for request in sim.requests:
        binding = binding_in(extract_prompt("openai", request)[1])
        assert binding is not None
        sent.add(binding.diff_sha)
    assert sent == {c["diff_sha"] for c in manifest["chunks"]}
    return dict(cert["context"])


def test_a_2000_file_20_mib_pull_request_is_reviewed_whole(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    pull = _setup(fake_github)
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert result.code == 0, result.stdout[-2000:]
    context = _common(fake_github, result, sim)
    coverage = context["coverage"]
    assert coverage["complete"] is True
    assert len(coverage["reviewed"]) == pull.files == 2000
    assert coverage["skipped"] == []
    assert set(pull.without_patch) <= set(coverage["reviewed"])  # rebuilt from blobs
    assert pull.diff_bytes >= 20 * (1 << 20)
    chunks = context["chunks"]["manifest"]["chunks"]
    assert sim.count == len(chunks) > 40
    # the chunks hold every file once (a file split over chunks repeats its header)
    files = [f for c in chunks for f in c["files"]]
    assert sorted(set(files)) == sorted(coverage["reviewed"])
    assert result.outputs["state"] == "pass"
    assert fake_github.decided_states(HEAD) == ["pending", "success"]
    assert f"### Chunks: {len(chunks)}" in result.summary
    assert f"| {len(chunks)}/{len(chunks)} |" in result.summary  # every row
    assert "more (all `pass` or split)" in fake_github.comments[7][0]["body"]  # the first 20


def test_one_cut_chunk_of_2000_files_blocks_the_run(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    _setup(fake_github)
    # one attempt per chunk (INPUT_ATTEMPTS=1): the 100th answer is cut mid-way
    script = (*(SimResponse() for _ in range(99)), SimResponse(cut_after=300))
    sim = sim_factory(ScriptedModel("pass"), script)
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert result.code == 3, result.stdout[-2000:]
    context = _common(fake_github, result, sim)
    assert result.outputs["state"] == "incomplete"
    assert fake_github.decided_states(HEAD) == ["pending", "error"]
    states = [r["decision"]["state"] for r in context["chunks"]["reviews"]]
    assert states.count("incomplete") == 1
    assert states.count("pass") == len(states) - 1
    # the blocking chunk is in the table, whatever its number
    for text in (result.summary, fake_github.comments[7][0]["body"]):
        assert "| `incomplete` |" in text


def test_a_second_push_of_2000_files_sends_only_the_changed_files_chunks(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    """Incremental review at size: a push that changes one file of 2,000 sends only the
    chunks holding it; every other chunk's pass is carried from the first run (the
    carry block in the gate's comment holds them all, within its bound)."""
    from gate.action import carry
    from tests.fakes.events import pull_request_event
    from tests.integration.action.test_run_fake_github import NEW_HEAD, REPO

    _setup(fake_github)
    sim = sim_factory(ScriptedModel("pass"))
    first = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert first.code == 0, first.stdout[-2000:]
    total = len(first.certificate["context"]["chunks"]["reviews"])
    body = fake_github.comments[7][0]["body"]
    assert len(body) <= MAX_COMMENT
    assert len(carry.read(body)) == total  # every chunk's pass fits the block
    add_large_pull(fake_github, 7, head_sha=NEW_HEAD, base_sha=BASE, edited=777)
    fake_github.set_file(NEW_HEAD, CONFIG_PATH, LARGE_CONFIG)
    mark = sim.count
    payload = pull_request_event(
        "synchronize", repository=REPO, number=7, head_sha=NEW_HEAD, base_sha=BASE
    )
    second = run_gate(tmp_path, fake_github, sim, payload)
    assert second.code == 0, second.stdout[-2000:]
    rows = second.certificate["context"]["chunks"]["reviews"]
    fresh = [r for r in rows if "carried" not in r]
    assert 1 <= len(fresh) <= 2
    assert any("services/s07/module_0777.py" in r["files"] for r in fresh)
    assert sim.count - mark == len(fresh)
    assert len(rows) - len(fresh) == second.certificate["context"]["chunks"]["carried"]
    assert fake_github.decided_states(NEW_HEAD) == ["pending", "success"]
