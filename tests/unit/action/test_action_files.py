"""The files users and GitHub read: action.yml, Dockerfile, .dockerignore, workflows."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate import cli
from gate.action import report
from gate.config.inputs import ACTION_INPUTS

ROOT = Path(__file__).resolve().parents[3]


def _yaml(path: Path) -> dict[Any, Any]:
    loaded = yaml.safe_load(path.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _on(workflow: dict[Any, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the key `on` as the boolean true
    events = workflow.get("on", workflow.get(True))
    if isinstance(events, str):
        return {events: None}
    assert isinstance(events, dict)
    return events


def _steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


# --- action.yml ------------------------------------------------------------------------


def test_action_is_a_docker_action_built_from_the_dockerfile() -> None:
    action = _yaml(ROOT / "action.yml")
    assert action["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert action["name"]
    assert action["description"]
    assert set(action["branding"]) == {"icon", "color"}


def test_every_input_has_a_description_and_a_quoted_default() -> None:
    text = (ROOT / "action.yml").read_text("utf-8")
    action = _yaml(ROOT / "action.yml")
    for name, spec in action["inputs"].items():
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", name), f"{name} is not kebab-case"
        assert isinstance(spec["description"], str), name
        assert spec["description"].strip(), name
        assert isinstance(spec["default"], str), name
        assert spec.get("required", False) is False, name
    # quoted in the file, so YAML cannot turn "true" into a boolean or "" into null
    defaults = re.findall(r"^    default: (.*)$", text, flags=re.MULTILINE)
    assert len(defaults) == len(action["inputs"])
    assert all(d.startswith('"') and d.endswith('"') for d in defaults), defaults
    assert action["inputs"]["config"]["default"] == ".github/review-gate.yml"
    assert action["inputs"]["token"]["default"] == "${{ github.token }}"
    assert action["inputs"]["status-context"]["default"] == "review-gate"
    assert action["inputs"]["fail-job"]["default"] == "true"
    assert set(action["inputs"]) == set(ACTION_INPUTS)


def test_outputs_are_declared() -> None:
    outputs = _yaml(ROOT / "action.yml")["outputs"]
    assert {"state", "verdict", "description", "certificate"} <= set(outputs)
    # every output the action writes is declared, and nothing declared is left unwritten
    written = inspect.getsource(report.outputs_for)
    assert set(re.findall(r'^\s+"([a-z-]+)": ', written, re.MULTILINE)) == set(outputs)
    assert all(spec["description"] for spec in outputs.values())


def test_the_entrypoint_command_exists() -> None:
    parser = cli.build_parser()
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["action", "--help"])
    assert done.value.code == 0


# --- Dockerfile and .dockerignore -----------------------------------------------------------


def _instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text("utf-8").replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def test_dockerfile_base_is_a_build_arg_with_a_default_pinned_by_digest() -> None:
    steps = _instructions()
    assert steps[0][0] == "ARG"
    assert re.fullmatch(r"BASE_IMAGE=python:3\.12-slim@sha256:[0-9a-f]{64}", steps[0][1])
    froms = [rest for kw, rest in steps if kw == "FROM"]
    assert froms == ["${BASE_IMAGE} AS build", "${BASE_IMAGE}"]


def test_dockerfile_installs_only_hashed_locks_and_the_project_without_deps() -> None:
    runs = [rest for kw, rest in _instructions() if kw == "RUN"]
    installs = [
        part.strip()
        for run in runs
        for part in run.split("&&")
        if re.search(r"\bpip\b.* install\b", part)
    ]
    assert installs, runs
    for install in installs:
        assert "--no-deps" in install, install
        if "-r " in install:
            assert "--require-hashes" in install, install
            assert "--only-binary :all:" in install, install
        else:  # the project's own wheel, built here, and nothing else
            assert "--no-index" in install, install
            assert install.endswith("/src/dist/*.whl"), install
    locks = [re.search(r"-r (\S+)", i) for i in installs]
    assert sorted(m.group(1) for m in locks if m) == [
        "/src/requirements-build.lock",
        "/src/requirements.lock",
    ]
    # the wheel is built without build isolation (nothing unhashed is fetched)
    assert any("--no-build-isolation" in run for run in runs)
    assert any("pip --python /opt/venv/bin/python check" in run for run in runs)


def test_dockerfile_final_stage_holds_only_the_venv() -> None:
    steps = _instructions()
    last_from = max(i for i, (kw, _) in enumerate(steps) if kw == "FROM")
    final = steps[last_from + 1 :]
    assert {kw for kw, _ in final} <= {"COPY", "ENV", "ENTRYPOINT", "LABEL"}
    assert [rest for kw, rest in final if kw == "COPY"] == ["--from=build /opt/venv /opt/venv"]
    env = " ".join(rest for kw, rest in final if kw == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env
    assert "PYTHONUNBUFFERED=1" in env
    entry = [rest for kw, rest in final if kw == "ENTRYPOINT"]
    assert [json.loads(e) for e in entry] == [["/opt/venv/bin/review-gate", "action"]]


def test_dockerfile_has_no_user_no_workdir_no_host_paths() -> None:
    steps = _instructions()
    keywords = {kw for kw, _ in steps}
    assert "USER" not in keywords  # GitHub runs Docker actions as root and forbids USER
    assert "WORKDIR" not in keywords  # GitHub sets the working directory
    text = (ROOT / "Dockerfile").read_text("utf-8")
    assert "/work/" not in text
    assert "/tmp/venv" not in text


def test_dockerignore_is_an_allow_list() -> None:
    lines = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text("utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {
        "pyproject.toml",
        "README.md",
        "requirements.lock",
        "requirements-build.lock",
        "gate",
    }
    assert "**/__pycache__" in lines


# --- workflows ----------------------------------------------------------------------------


def test_example_workflow_is_complete_and_minimal() -> None:
    workflow = _yaml(ROOT / "examples" / "review-gate.yml")
    events = _on(workflow)
    assert {"pull_request", "merge_group", "workflow_dispatch"} <= set(events)
    assert set(events["pull_request"]["types"]) == {
        "opened",
        "synchronize",
        "reopened",
        "ready_for_review",
        "labeled",
        "unlabeled",
        "edited",
    }
    assert workflow["permissions"] == {}
    assert workflow["jobs"]["review"]["permissions"] == {
        "contents": "write",  # the question ledger (refs/review-gate/ledger) and nothing more
        "pull-requests": "write",
        "statuses": "write",
    }
    assert workflow["concurrency"]["cancel-in-progress"] is True
    assert "pull_request.number" in workflow["concurrency"]["group"]
    steps = _steps(workflow)
    gate = [s for s in steps if "review-gate" in str(s.get("uses", ""))]
    assert len(gate) == 1
    assert set(gate[0]["with"]) <= set(ACTION_INPUTS)
    assert not Path(gate[0]["with"]["certificate-dir"]).is_absolute()
    upload = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(upload) == 2
    assert upload[0]["if"] == "always()"
    assert upload[0]["with"]["path"] == "${{ steps.gate.outputs.certificate }}"


def test_example_workflow_signs_and_uploads_in_jobs_of_their_own() -> None:
    """The optional jobs hold the only extra permissions, each the one it needs."""
    from gate.export.statement import PREDICATE_TYPE

    workflow = _yaml(ROOT / "examples" / "review-gate.yml")
    jobs = workflow["jobs"]
    assert jobs["attest"]["permissions"] == {"id-token": "write", "attestations": "write"}
    assert jobs["code-scanning"]["permissions"] == {"security-events": "write"}
    [attest] = [s for s in jobs["attest"]["steps"] if "actions/attest@" in s.get("uses", "")]
    assert attest["with"]["predicate-type"] == PREDICATE_TYPE
    assert attest["with"]["predicate-path"] == "${{ needs.review.outputs.predicate }}"
    assert attest["with"]["subject-path"] == "${{ needs.review.outputs.certificate }}"
    [upload] = [s for s in jobs["code-scanning"]["steps"] if "upload-sarif@" in s.get("uses", "")]
    assert upload["with"]["sarif_file"] == "${{ needs.review.outputs.sarif }}"
    assert "needs.review.outputs.state == 'pass'" in jobs["code-scanning"]["if"]
    assert jobs["review"]["outputs"]["predicate"] == "${{ steps.gate.outputs.predicate }}"


def test_e2e_workflow_uses_the_local_action_with_declared_inputs() -> None:
    workflow = _yaml(ROOT / "tests" / "e2e" / "workflow" / "review-gate-e2e.yml")
    local = [s for s in _steps(workflow) if s.get("uses") == "./"]
    assert len(local) == 1
    assert set(local[0]["with"]) <= set(ACTION_INPUTS)


def test_ci_workflow_runs_the_ci_script_with_e2e_required() -> None:
    workflow = _yaml(ROOT / ".github" / "workflows" / "ci.yml")
    assert workflow["permissions"] == {"contents": "read"}
    (job,) = workflow["jobs"].values()
    assert job["env"]["REVIEW_GATE_E2E"] == "1"
    assert job["env"]["CI"] == "true"
    runs = [s.get("run") for s in job["steps"]]
    assert "bash .ci/run" in runs
    assert set(job["strategy"]["matrix"]["python"]) == {"3.11", "3.12"}
