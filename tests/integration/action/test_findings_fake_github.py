"""Line-anchored findings through the whole action, against the fake GitHub (issue 14).

The reviewer simulator answers a verdict whose reasons start with ``path:line:``; the
action must annotate the ones on the right side of the reviewed diff, keep the others
in the summary only and say so. Every GitHub request is checked against the OpenAPI
description by the fake.
"""

from __future__ import annotations

import json
from typing import Any

from gate.lab.sim import extract_prompt
from gate.prompt import binding_in
from tests.fakes.runner import commands_in
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

# the fixtures of the action's main integration module, under the same names
fake = base.fake
sim_factory = base.sim_factory


def answer(reasons: list[str], verdict: str = "fail", confidence: float = 0.9) -> Any:
    def respond(request: dict[str, Any]) -> str:
        _system, user = extract_prompt("openai", request)
        binding = binding_in(user)
        assert binding is not None
        body = {
            "verdict": verdict,
            "reasons": reasons,
            "confidence": confidence,
            "diff_sha": binding.diff_sha,
            "policy_version": binding.policy_version,
        }
        return "```json\n" + json.dumps(body) + "\n```\n"

    return respond


REASONS = [
    "src/calc.py:2: the sign is flipped back",
    "src/calc.py:1-3: no test covers add()",
    "src/calc.py:40: a line the diff does not show",
    "docs/other.md:1: a file the diff does not touch",
    "overall the change is risky",
]


def test_a_fail_annotates_anchored_lines_and_keeps_the_rest_in_the_summary(
    tmp_path, fake, sim_factory
):
    setup_pull(fake)
    result = run_gate(tmp_path, fake, sim_factory(answer(REASONS)), pr_payload())
    assert result.code == 1, result.stdout
    annotations = [c for c in commands_in(result.stdout) if "file" in c[1]]
    assert [(n, p["file"], p["line"], p.get("endLine")) for n, p, _ in annotations] == [
        ("error", "src/calc.py", "2", None),
        ("error", "src/calc.py", "1", "3"),
    ]
    assert [d for _n, _p, d in annotations] == ["the sign is flipped back", "no test covers add()"]
    assert "Findings on lines" in result.summary
    assert "src/calc.py:40" in result.summary
    assert "docs/other.md:1" in result.summary
    assert result.summary.count("unanchored: not on the right side of the reviewed diff") == 2
    assert fake.status_list(HEAD)[-1]["state"] == "failure"


def test_a_pass_annotates_as_warnings(tmp_path, fake, sim_factory):
    setup_pull(fake)
    reasons = ["src/calc.py:2: checked the sign", "tests pass"]
    result = run_gate(tmp_path, fake, sim_factory(answer(reasons, "pass", 0.95)), pr_payload())
    assert result.code == 0, result.stdout
    annotations = [c for c in commands_in(result.stdout) if "file" in c[1]]
    assert [(n, p["file"], p["line"]) for n, p, _ in annotations] == [
        ("warning", "src/calc.py", "2")
    ]
