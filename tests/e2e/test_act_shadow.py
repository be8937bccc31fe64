"""End to end: the shadow example workflow, run by act, on a ``fail`` answer.

``examples/review-gate-shadow.yml`` is read and changed only where act cannot go: the
gate's ``uses:`` points at the action in this checkout (``./``, whose image the ``image``
fixture built), ``base-url`` at the reviewer simulator on 127.0.0.1, and the
``actions/upload-artifact`` step (GitHub's artifact service) is skipped with its inputs
recorded, as tests/e2e/test_act_example.py does. The reviewer answers ``fail``: the job is
green, the head carries one ``success`` status under ``review-gate/shadow`` that reads
"would block", and nothing under the required context, no ledger, no comment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.action.github.mark import of_status, plain
from gate.action.ledger import REF
from gate.lab.sim import ReviewerSimulator
from tests.e2e.test_act import (
    PR_NUMBER,
    ROOT,
    World,
    _event,
    _verdict,
    assert_key_kept,
    build_workspace,
    image,
    run_act,
    tools,
    world,
)
from tests.e2e.test_act_example import _recording

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools", "world"]  # the fixtures of test_act.py

SHADOW = ROOT / "examples" / "review-gate-shadow.yml"


def shadow_under_act(path: Path) -> Path:
    """The shadow example with the gate pointed at the fakes and the upload skipped."""
    workflow: dict[str, Any] = yaml.safe_load(SHADOW.read_text("utf-8"))
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true
    steps = []
    for index, step in enumerate(workflow["jobs"]["shadow"]["steps"]):
        uses = str(step.get("uses", ""))
        if uses.startswith("review-gate/review-gate@"):
            assert step["with"]["mode"] == "shadow"
            step["uses"] = "./"
            step["with"].update(
                model="sim-model",
                **{"base-url": "${{ env.RG_REVIEWER_URL }}"},
                **{"api-key": "${{ secrets.RG_REVIEWER_KEY }}"},
            )
            steps.append(step)
        elif uses.startswith("actions/upload-artifact@"):
            steps.append(_recording(step, f"skipped-shadow-{index}.json"))
        else:
            steps.append(step)
    workflow["jobs"]["shadow"]["steps"] = steps
    path.write_text(yaml.safe_dump(workflow, sort_keys=False), "utf-8")
    return path


def test_a_fail_answer_leaves_a_green_job_and_a_shadow_status(
    tools: dict[str, str], image: str, tmp_path: Path, world: World
) -> None:
    workflow = shadow_under_act(tmp_path / "review-gate-shadow.yml")
    ws = build_workspace(tmp_path, workflow)
    with ReviewerSimulator("openai", _verdict("fail")) as sim:
        run = run_act(
            tools,
            ws,
            _event(world.head_sha, world.base_sha),
            api_url=world.github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key=world.key,
            workflow=workflow,
            job="shadow",
        )
        assert sim.count == 1, run.explain()
    assert run.returncode == 0, run.explain()
    assert run.gate_result() == "success", run.explain()
    assert_key_kept(run, world)
    [status] = world.github.status_list(world.head_sha)
    assert (status["context"], status["state"]) == ("review-gate/shadow", "success")
    assert plain(status["description"]).startswith("would block: ")
    assert of_status(status["description"]).kind == "would_block"
    assert REF not in world.github.git.refs
    assert not world.github.comments.get(PR_NUMBER)
    # the upload step got the certificate, which says what the shadow would have done
    [recorded] = ws.glob("skipped-shadow-*.json")
    path = ws / json.loads(recorded.read_text("utf-8"))["path"]
    certificate = json.loads(path.read_text("utf-8"))
    assert certificate["decision"]["state"] == "fail"
    assert certificate["context"]["shadow"]["would"] == "would_block"
