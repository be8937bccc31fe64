"""End to end: the README's minimal workflow, copied as the README shows it, run by act.

The quick start's first workflow (``examples/review-gate-minimal.yml``, shown verbatim in the
README) is taken from the README itself and changed only where act cannot go: ``uses:``
points at the action in this checkout (``./``, whose image the ``image`` fixture built) and
``base-url`` at the reviewer simulator on 127.0.0.1. The key stays
``${{ secrets.OPENAI_API_KEY }}``: act is given that secret, as the quick start's secret step
gives it to GitHub. Against the fake GitHub (every request checked against GitHub's OpenAPI
description) a healthy answer must give ``pending`` then ``success`` on the head commit, one
sticky comment, one model call, and the key nowhere it should not be.

The second test is the path that works before ``v1`` is published: a full commit SHA of
``main``, whose ``action.yml`` says ``image: Dockerfile``, so the runner builds the image in
the job. act builds it here (``--rebuild``, from a cold pip layer) and the run must still be
green; both tests print how long act took, the figures the README's quick start gives
(docs/container.md#the-quick-start-under-act).
"""

from __future__ import annotations

import re
import secrets
import shutil
import time
from pathlib import Path

import pytest

from gate.lab.sim import ReviewerSimulator
from tests.e2e.test_act import (
    BASE_IMAGE,
    PR_NUMBER,
    ROOT,
    World,
    _event,
    _reviewer_requests,
    _verdict,
    assert_key_kept,
    build_workspace,
    image,
    run_act,
    tools,
    world,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools", "world"]  # the fixtures of test_act.py

MINIMAL = ROOT / "examples" / "review-gate-minimal.yml"
USES = "uses: review-gate/review-gate@v1"


def readme_copy() -> str:
    """The minimal workflow as the README shows it (its fenced block, indentation removed)."""
    readme = (ROOT / "README.md").read_text("utf-8")
    first_line = MINIMAL.read_text("utf-8").splitlines()[0]
    pattern = rf"^( *)```yaml\n(\1{re.escape(first_line)}\n.*?)^\1```"
    found = re.search(pattern, readme, flags=re.MULTILINE | re.DOTALL)
    assert found is not None, "the README does not show the minimal workflow"
    indent = found.group(1)
    return "".join(line.removeprefix(indent) for line in found.group(2).splitlines(True))


def minimal_under_act(path: Path) -> Path:
    text = readme_copy()
    assert text.count(USES) == 1
    text = text.replace(USES, "uses: ./")
    key = "          api-key: ${{ secrets.OPENAI_API_KEY }}\n"
    assert text.count(key) == 1
    text = text.replace(key, key + "          base-url: ${{ env.RG_REVIEWER_URL }}\n")
    path.write_text(text, "utf-8")
    return path


def _cold_build_context(ws: Path) -> None:
    """What act needs to build the image itself: the lock files, the base image this
    machine has (the one the ``image`` fixture builds from), and a lock file no build
    cache has seen (a runner starts with no layers)."""
    for name in ("requirements.lock", "requirements-build.lock"):
        shutil.copy2(ROOT / name, ws / name)
    dockerfile = ws / "Dockerfile"
    text, count = re.subn(
        r"^ARG BASE_IMAGE=.*$",
        f"ARG BASE_IMAGE={BASE_IMAGE}",
        dockerfile.read_text("utf-8"),
        flags=re.MULTILINE,
    )
    assert count == 1
    dockerfile.write_text(text, "utf-8")
    lock = ws / "requirements.lock"
    lock.write_text(lock.read_text("utf-8") + f"# cold build {secrets.token_hex(8)}\n", "utf-8")


@pytest.mark.parametrize(
    "built_in_the_job", [False, True], ids=["image-prebuilt", "image-built-in-job"]
)
def test_the_readme_minimal_workflow_runs_green_on_a_healthy_answer(
    tools: dict[str, str], image: str, tmp_path: Path, world: World, built_in_the_job: bool
) -> None:
    workflow = minimal_under_act(tmp_path / "review-gate.yml")
    ws = build_workspace(tmp_path, workflow)
    if built_in_the_job:
        _cold_build_context(ws)
    with ReviewerSimulator("openai", _verdict("pass")) as sim:
        started = time.monotonic()
        run = run_act(
            tools,
            ws,
            _event(world.head_sha, world.base_sha),
            api_url=world.github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key="unused: the workflow reads secrets.OPENAI_API_KEY",
            workflow=workflow,
            job="review",
            extra_secrets={"OPENAI_API_KEY": world.key},
            rebuild=built_in_the_job,
        )
        took = time.monotonic() - started
        how = "built in the job" if built_in_the_job else "prebuilt"
        print(f"act ran the minimal workflow in {took:.1f} s (image {how})")
        assert sim.count == 1, run.explain()
        _reviewer_requests(sim, world)  # the key, and the config from the base commit
    assert run.returncode == 0, run.explain()
    assert run.gate_result() == "success", run.explain()
    assert_key_kept(run, world)
    assert world.github.states(world.head_sha) == ["pending", "success"]
    final = world.github.status_list(world.head_sha)[-1]
    assert final["context"] == "review-gate"
    assert final["description"].startswith("pass")
    [comment] = world.github.comments.get(PR_NUMBER, [])
    assert "review-gate: pass" in comment["body"]
    assert world.key not in comment["body"]
