"""End to end: the example workflow itself, run by act up to the attestation step.

``examples/review-gate.yml`` is read and changed only where act cannot go: the gate's
``uses:`` points at the local action (``./``) with the fake reviewer's address and key;
each step that needs GitHub's own services is **skipped**, and in its place a step
records the inputs the skipped step would have received (evaluated by act from the
same expressions):

- ``actions/upload-artifact`` and ``actions/download-artifact`` (the artifact service;
  act's ``--bind`` shares the workspace between the jobs instead);
- ``actions/attest`` (the signing needs GitHub's OIDC token and Sigstore);
- ``github/codeql-action/upload-sarif`` (code scanning).

Everything else runs as written: the three jobs, their ``if:`` conditions and ``needs``,
the job outputs that carry the paths. The test then checks what the signing step would
have signed: the predicate file is the statement's predicate, the subject is the
certificate, the predicate type is review-gate's; the statement passes the in-toto
checks and ``review-gate verify --statement``; the SARIF log passes the OASIS schema.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.cli import main
from gate.export.statement import PREDICATE_TYPE
from gate.lab.sim import ReviewerSimulator
from tests.e2e.test_act import (
    DIFF,
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
from tests.export_oracles import check_sarif, check_statement

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]
__all__ = ["image", "tools", "world"]  # the fixtures of test_act.py

EXAMPLE = ROOT / "examples" / "review-gate.yml"
#: the actions that need GitHub's services: skipped, their inputs recorded instead
SKIPPED = ("actions/upload-artifact@", "actions/download-artifact@", "actions/attest@")
SKIPPED += ("github/codeql-action/upload-sarif@",)
RECORD = (
    "python3 -c 'import json, os, sys; "
    'json.dump({k[5:].lower(): v for k, v in os.environ.items() if k.startswith("WITH_")}, '
    'open(sys.argv[1], "w"))\' NAME'
)


def _recording(step: dict[str, Any], name: str) -> dict[str, Any]:
    """The step, skipped: a step that writes the inputs it would have had to ``name``."""
    env = {f"WITH_{k.upper().replace('-', '_')}": str(v) for k, v in step["with"].items()}
    return {
        "name": f"skipped under act: {step['uses'].split('@')[0]} (inputs recorded)",
        "env": env,
        "run": RECORD.replace("NAME", name),
    }


def example_under_act(path: Path) -> Path:
    """The example workflow with the gate pointed at the fakes and GitHub's services skipped."""
    workflow = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true
    for job_name, job in workflow["jobs"].items():
        steps = []
        for index, step in enumerate(job["steps"]):
            uses = str(step.get("uses", ""))
            if uses.startswith("review-gate/review-gate@"):
                step["uses"] = "./"
                step["with"].update(
                    model="sim-model",
                    **{"base-url": "${{ env.RG_REVIEWER_URL }}"},
                    **{"api-key": "${{ secrets.RG_REVIEWER_KEY }}"},
                )
                steps.append(step)
            elif uses.startswith(SKIPPED):
                steps.append(_recording(step, f"skipped-{job_name}-{index}.json"))
            else:
                steps.append(step)
        job["steps"] = steps
    path.write_text(yaml.safe_dump(workflow, sort_keys=False), "utf-8")
    return path


def _recorded(ws: Path, job: str, uses: str) -> dict[str, str]:
    workflow = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    [index] = [
        i for i, s in enumerate(workflow["jobs"][job]["steps"]) if uses in str(s.get("uses", ""))
    ]
    path = ws / f"skipped-{job}-{index}.json"
    assert path.is_file(), f"the {job} job did not reach its {uses} step"
    loaded = json.loads(path.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_the_example_workflow_runs_up_to_the_attestation_step(
    tools: dict[str, str], image: str, tmp_path: Path, world: World
) -> None:
    workflow = example_under_act(tmp_path / "review-gate.yml")
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
        )
        assert sim.count == 1, run.explain()
    assert_key_kept(run, world)
    assert [s["state"] for s in world.github.status_list(world.head_sha)] == [
        "pending",
        "failure",
    ]
    # what the signing step would have signed, as act evaluated its inputs
    attest = _recorded(ws, "attest", "actions/attest@")
    assert attest["predicate_type"] == PREDICATE_TYPE
    certificate = ws / attest["subject_path"]
    predicate = ws / attest["predicate_path"]
    made_path = certificate.with_name(certificate.name.replace(".certificate.", ".statement."))
    made = json.loads(made_path.read_text("utf-8"))
    check_statement(made)
    assert json.loads(predicate.read_text("utf-8")) == made["predicate"]
    assert made["predicate"]["commit"] == world.head_sha
    assert made["predicate"]["decision"]["state"] == "fail"
    assert world.key not in made_path.read_text("utf-8")
    # the statement names the certificate and the diff the gate reviewed
    reviewed = tmp_path / "reviewed.diff"
    reviewed.write_bytes(DIFF)
    argv = ["verify", "--statement", str(made_path), "--from-certificate", str(certificate)]
    assert main([*argv, "--diff", str(reviewed)]) == 1  # matches; the recorded fail stands
    # what code scanning would have received
    upload = _recorded(ws, "code-scanning", "upload-sarif@")
    assert upload["category"] == "review-gate"
    assert upload["sha"] == world.head_sha
    log = json.loads((ws / upload["sarif_file"]).read_text("utf-8"))
    check_sarif(log)
    assert log["runs"][0]["properties"]["reviewGate"]["state"] == "fail"
