"""Class: a pull request lowering its own bar through the workflow's inputs.

On ``pull_request`` (and ``merge_group``) the workflow file is the pull request's, so
every ``with:`` input is the author's. Before issue 20 ``min-confidence: 0.1``,
``allow-partial-coverage: true``, a raised ``max-cost``, a lower ``agreement``, another
``policy-version``, another reviewer or another config file all applied. Generated:
every input that can lower the bar, each with a value that lowers it below a base config
that sets it, through the whole action against the fake GitHub (every request checked
against GitHub's OpenAPI description); the same inputs on ``pull_request_target`` (the
default branch's workflow), allowed by ``inputs_may_lower``, or raising the bar, apply.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gate.action import bar
from gate.config.inputs import ACTION_INPUTS
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    HEAD,
    pr_payload,
    run_gate,
    setup_pull,
)

fake = base.fake
sim_factory = base.sim_factory
ROOT = Path(__file__).resolve().parents[2]

#: the base config names the MC1 service's key (the workflow gives the service's URL, as
#: the harness gives every reviewer's); the input names another key
KEY_A = "MCowBQYDK2VwAyEAA6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg="
KEY_B = "MCowBQYDK2VwAyEAebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ="
SIGNED_MC1 = (
    "reviewer:\n  provider: mc1\n  public_key: |\n    -----BEGIN PUBLIC KEY-----\n"
    f"    {KEY_A}\n    -----END PUBLIC KEY-----\n"
)
OTHER_KEY = f"-----BEGIN PUBLIC KEY-----\n{KEY_B}\n-----END PUBLIC KEY-----"
FALLBACK = "fallbacks:\n  - {provider: anthropic, model: sim-model, api_key_env: FB_KEY}\n"
#: input -> (the base config that sets the bar, an input value below it)
LOWERING: dict[str, tuple[str, str]] = {
    "min-confidence": ("min_confidence: 0.9\n", "0.1"),
    "allow-partial-coverage": ("allow_partial_coverage: false\n", "true"),
    "max-cost": ("max_cost: 0.5\npricing: {sim-model: {input: 1, output: 1}}\n", "50"),
    "agreement": ("agreement: 2\n", "1"),
    "policy-version": ("policy_version: '3'\n", "2"),
    "override-label": ("override_label: review-gate:override\n", "bug"),
    "temperature": ("reviewer:\n  temperature: 0\n", "1.5"),
    "provider": ("reviewer:\n  provider: anthropic\n", "openai"),
    "model": ("reviewer:\n  model: strong-model\n", "sim-model"),
    "base-url": ("reviewer:\n  base_url: https://api.example.com/v1\n", None),  # the sim's
    "api-key-env": ("reviewer:\n  api_key_env: REVIEW_KEY\n", "OTHER_KEY"),
    "deployment": ("reviewer:\n  deployment: prod\n", "cheap"),
    "api-version": ("reviewer:\n  api_version: '2024-10-21'\n", "2023-01-01"),
    "auth": ("reviewer:\n  auth: entra\n", "api-key"),
    "region": ("reviewer:\n  region: us-east-1\n", "eu-west-1"),
    "project": ("reviewer:\n  project: prod-project\n", "my-project"),
    "location": ("reviewer:\n  location: us-east5\n", "europe-west4"),
    # another key: the author's own service could sign the answer (issue 33)
    "public-key": (SIGNED_MC1, OTHER_KEY),
    # with a fallback, a primary that times out or gives up sooner lets the workflow pick
    # who judges (test_fallback_forcing_inputs.py: without one they apply)
    "timeout": (f"reviewer:\n  deadline: 120\n{FALLBACK}", "0.5"),
    "attempts": (f"reviewer:\n  attempts: 3\n{FALLBACK}", "1"),
}  # fmt: skip


def test_every_input_is_classified_once() -> None:
    """Go through every input: each one action.yml declares is placed exactly once."""
    declared = set(yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))["inputs"])
    groups = [set(bar.LOWERS), set(bar.NEVER_LOWERS), set(bar.RUNTIME)]
    assert set().union(*groups) == declared == set(ACTION_INPUTS)
    assert sum(len(g) for g in groups) == len(declared)
    assert set(LOWERING) == set(bar.LOWERS)


def test_the_schema_allows_exactly_the_inputs_that_can_lower() -> None:
    from gate.config.schema import schema

    items = schema()["properties"]["inputs_may_lower"]["items"]["enum"]
    assert sorted(items) == bar.allowable()


def _inputs(name: str, value: str | None, sim_url: str) -> dict[str, str]:
    given = {name: value if value is not None else sim_url}
    if name == "public-key":  # the harness's provider input is openai's; a key is mc1's
        given["provider"] = "mc1"
    return given


@pytest.mark.parametrize("name", sorted(LOWERING))
def test_an_input_lowering_the_bar_is_refused_on_pull_request(
    tmp_path, fake, sim_factory, name: str
) -> None:
    config, value = LOWERING[name]
    setup_pull(fake, config=config)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs=_inputs(name, value, sim.base_url))
    assert result.code == 3, result.stdout
    assert sim.requests == []
    assert result.outputs["reason"] == "config_input_lowers_bar"
    assert result.outputs["family"] == "config"
    status = fake.status_list(HEAD)[-1]
    assert status["state"] != "success"
    assert name in status["description"]
    assert "inputs_may_lower" in result.certificate["decision"]["detail"]


@pytest.mark.parametrize("name", ["min-confidence", "allow-partial-coverage", "agreement"])
@pytest.mark.parametrize("how", ["pull_request_target", "allowed"])
def test_the_same_input_applies_where_the_base_vouches_for_it(
    tmp_path, fake, sim_factory, name: str, how: str
) -> None:
    config, value = LOWERING[name]
    if how == "allowed":
        config += f"inputs_may_lower: [{name}]\n"
    setup_pull(fake, config=config)
    sim = sim_factory()
    event = "pull_request_target" if how == "pull_request_target" else "pull_request"
    result = run_gate(
        tmp_path, fake, sim, pr_payload(), event=event, inputs=_inputs(name, value, "")
    )
    assert result.outputs["reason"] != "config_input_lowers_bar", result.stdout
    assert result.code == 0, result.stdout
    assert len(sim.requests) >= 1


@pytest.mark.parametrize(
    ("name", "config", "value"),
    [
        ("min-confidence", "min_confidence: 0.5\n", "0.9"),  # raised
        ("max-cost", "pricing: {sim-model: {input: 1, output: 1}}\n", "50"),  # a first limit
        ("agreement", "", "2"),  # more answers
        ("model", "", "sim-model"),  # the base names no model: the workflow fills it in
    ],
)
def test_raising_the_bar_or_filling_what_the_base_leaves_open_applies(
    tmp_path, fake, sim_factory, name: str, config: str, value: str
) -> None:
    setup_pull(fake, config=config)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={name: value})
    assert result.outputs["reason"] != "config_input_lowers_bar", result.stdout
    assert result.code == 0, result.stdout


@pytest.mark.parametrize("allowed", [False, True])
def test_another_config_file_needs_the_default_one_to_allow_it(
    tmp_path, fake, sim_factory, allowed: bool
) -> None:
    setup_pull(fake, config="min_confidence: 0.9\n" + ("inputs_may_lower: [config]\n" * allowed))
    # a lax file that exists at the base (a test fixture, say), vouching for itself
    fake.set_file(BASE, "tests/lax.yml", "min_confidence: 0\ninputs_may_lower: [config]\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"config": "tests/lax.yml"})
    assert CONFIG_PATH != "tests/lax.yml"
    if allowed:
        assert result.code == 0, result.stdout
        return
    assert result.code == 3
    assert sim.requests == []
    assert result.outputs["reason"] == "config_input_lowers_bar"
    assert "config (another file than" in fake.status_list(HEAD)[-1]["description"]
