"""End to end: a real-sized pull request through the action's image, run by act (issue 10).

2,000 files, about 20 MiB of diff (tests/fakes/large_pull.py): GitHub refuses the diff
(406), the compare API lists 300 files, so the gate in the container reads the pull
request's file list (20 pages), binds every entry to the head tree, rebuilds the files
GitHub gave no patch for from their blobs, and reviews everything in chunks against the
reviewer simulator: 100% coverage, ``pending`` then ``success``. A second push changes
one file: the image sends only the chunks holding it (the count of requests is checked)
and carries every other chunk's pass from the first run's sticky comment. The same pull request
with one chunk's only attempt cut on the wire ends ``incomplete``: ``pending`` then
``error``, the job fails. The fake GitHub checks every request and response against
GitHub's OpenAPI description.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator, SimResponse
from tests.e2e.test_act import (
    CONFIG,
    PR_NUMBER,
    REPOSITORY,
    TOKEN,
    ActRun,
    World,
    _event,
    _reviewer_requests,
    assert_key_kept,
    build_workspace,
    image,
    run_act,
    tools,
)
from tests.fakes.github import FakeGitHub
from tests.fakes.large_pull import LARGE_CONFIG, LargePull, add_large_pull

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools"]  # the module-scoped fixtures of test_act.py


@pytest.fixture
def large() -> Iterator[tuple[World, LargePull]]:
    head_sha, base_sha = secrets.token_hex(20), secrets.token_hex(20)
    with FakeGitHub(REPOSITORY, token=TOKEN) as github:
        pull = add_large_pull(github, PR_NUMBER, head_sha=head_sha, base_sha=base_sha)
        github.set_file(base_sha, ".github/review-gate.yml", CONFIG + LARGE_CONFIG)
        # unchanged by the pull request: its file list must not name it
        github.set_file(head_sha, ".github/review-gate.yml", CONFIG + LARGE_CONFIG)
        yield World(github, head_sha, base_sha, "sk-e2e-" + secrets.token_hex(12)), pull


def _act(
    tools: dict[str, str],
    tmp_path: Path,
    world: World,
    script: tuple[SimResponse, ...],
    *,
    pages: int = 20,
    sim: ReviewerSimulator | None = None,
) -> tuple[ActRun, int, dict]:  # type: ignore[type-arg]
    if sim is None:
        with ReviewerSimulator("openai", ScriptedModel("pass"), script=script) as own:
            return _act(tools, tmp_path, world, script, pages=pages, sim=own)
    mark = sim.count
    run = run_act(
        tools,
        build_workspace(tmp_path),
        _event(world.head_sha, world.base_sha),
        api_url=world.github.api_url,
        reviewer_url=sim.base_url,
        reviewer_key=world.key,
        extra_env={"RG_ATTEMPTS": "1"},
    )
    _reviewer_requests(sim, world)
    count = sim.count - mark
    assert_key_kept(run, world)
    ops = [r.operation for r in world.github.requests]
    assert ops.count("pulls/list-files") == pages, run.explain()
    certificate = run.workspace / run.outputs["certificate"]
    cert = json.loads(certificate.read_text("utf-8"))
    assert world.key not in json.dumps(cert)
    return run, count, dict(cert["context"])


def test_a_2000_file_20_mib_pull_request_is_reviewed_whole_by_the_image(
    tools: dict[str, str],
    image: str,
    tmp_path: Path,
    large: tuple[World, LargePull],
) -> None:
    world, pull = large
    # one reviewer for both pushes: its URL is part of the config, so of the question
    with ReviewerSimulator("openai", ScriptedModel("pass")) as sim:
        _two_pushes(tools, tmp_path, world, pull, sim)


def _two_pushes(
    tools: dict[str, str], tmp_path: Path, world: World, pull: LargePull, sim: ReviewerSimulator
) -> None:
    run, count, context = _act(tools, tmp_path, world, (), sim=sim)
    coverage = context["coverage"]
    assert coverage["complete"] is True, run.explain()
    assert len(coverage["reviewed"]) == pull.files == 2000
    assert set(pull.without_patch) <= set(coverage["reviewed"])
    assert pull.diff_bytes >= 20 * (1 << 20)
    chunks = context["chunks"]["manifest"]["chunks"]
    assert count == len(chunks) > 40
    statuses = world.github.status_list(world.head_sha)
    assert [s["state"] for s in statuses] == ["pending", "success"], run.explain()
    assert run.outputs["state"] == "pass"
    assert run.job_outputs.get("state") == "pass"
    assert run.job_result == "success"
    assert f"### Chunks: {len(chunks)}" in run.summary
    assert run.exit_code == 0

    # a second push changes one file: only the chunks holding it are sent; every other
    # chunk's pass is carried from the first run through the gate's own sticky comment
    head = secrets.token_hex(20)
    add_large_pull(world.github, PR_NUMBER, head_sha=head, base_sha=world.base_sha, edited=777)
    world.github.set_file(head, ".github/review-gate.yml", CONFIG + LARGE_CONFIG)
    pushed = replace(world, head_sha=head)
    (tmp_path / "push2").mkdir()
    again, sent, context = _act(tools, tmp_path / "push2", pushed, (), pages=40, sim=sim)
    reviews = context["chunks"]["reviews"]
    fresh = [r for r in reviews if "carried" not in r]
    assert 1 <= len(fresh) <= 2, again.explain()
    assert any("services/s07/module_0777.py" in r["files"] for r in fresh)
    assert sent == len(fresh), again.explain()  # the count of requests
    assert context["chunks"]["carried"] == len(reviews) - len(fresh)
    assert [s["state"] for s in world.github.status_list(head)] == ["pending", "success"]
    assert again.outputs["state"] == "pass"
    assert "carried, not sent again" in again.summary
    assert again.exit_code == 0


def test_one_cut_chunk_blocks_the_whole_run_in_the_image(
    tools: dict[str, str],
    image: str,
    tmp_path: Path,
    large: tuple[World, LargePull],
) -> None:
    world, _pull = large
    # one attempt per chunk (RG_ATTEMPTS=1): the 100th answer is cut mid-way
    script = (*(SimResponse() for _ in range(99)), SimResponse(cut_after=300))
    run, _count, context = _act(tools, tmp_path, world, script)
    states = [r["decision"]["state"] for r in context["chunks"]["reviews"]]
    assert states.count("incomplete") == 1, run.explain()
    assert states.count("pass") == len(states) - 1
    statuses = world.github.status_list(world.head_sha)
    assert [s["state"] for s in statuses] == ["pending", "error"], run.explain()
    assert run.outputs["state"] == "incomplete"
    assert run.job_result == "failure"
    assert run.exit_code == 3
    assert "| `incomplete` |" in run.summary
