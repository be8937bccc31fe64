"""The cost outputs and the max_cost guard through the whole action, against the fake
GitHub (every request checked against the OpenAPI description) and the reviewer simulator
(OpenAI dialect; it reports prompt and completion tokens)."""

from __future__ import annotations

import re

from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory

PRICED = "pricing:\n  sim-model: {input: 3, output: 15}\n"


def test_cost_outputs_summary_and_certificate(tmp_path, fake, sim_factory):
    setup_pull(fake, config=PRICED)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout
    tokens_in = int(result.outputs["input-tokens"])
    tokens_out = int(result.outputs["output-tokens"])
    assert tokens_in > 0
    assert tokens_out > 0
    want = (tokens_in * 3 + tokens_out * 15) / 1e6
    assert result.outputs["cost"] == f"{want:.6f}"
    recorded = result.certificate["context"]["cost"]
    assert recorded["input_tokens"] == tokens_in
    assert recorded["price_per_million"] == {"input": 3.0, "output": 15.0}
    assert [a["attempt"] for a in recorded["attempts"]] == [1]
    assert "### Cost" in result.summary
    assert f"| total | {tokens_in} | {tokens_out} | {want:.6f} |" in result.summary


def test_without_a_price_the_cost_is_empty_and_tokens_are_given(tmp_path, fake, sim_factory):
    setup_pull(fake)
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert result.code == 0, result.stdout
    assert result.outputs["cost"] == ""
    assert int(result.outputs["input-tokens"]) > 0
    assert "No price for this model" in result.summary


def test_max_cost_blocks_before_the_reviewer_is_asked(tmp_path, fake, sim_factory):
    setup_pull(fake, config=PRICED + "max_cost: 0.000001\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3, result.stdout
    assert sim.requests == []
    assert result.outputs["state"] == "needs_human"
    assert result.outputs["reason"] == "over_budget"
    assert result.outputs["cost"] == ""
    assert fake.status_list(HEAD)[-1]["state"] == "failure"
    assert "exceeds max_cost" in fake.status_list(HEAD)[-1]["description"]


def test_the_max_cost_input_overrides_the_config(tmp_path, fake, sim_factory):
    # raising the limit on pull_request needs the base config's leave (gate.action.bar)
    setup_pull(fake, config=PRICED + "max_cost: 0.000001\ninputs_may_lower: [max-cost]\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"max-cost": "100"})
    assert result.code == 0, result.stdout
    assert len(sim.requests) == 1


def test_requests_no_provider_answered_are_not_paid(tmp_path, fake, sim_factory):
    """Issue 34, finding 6: a refused request (401, 500) generated nothing to bill; the
    summary says nothing was paid, the certificate counts them apart, and every amount
    names its currency."""
    from gate.lab.sim import SimResponse

    setup_pull(fake, config=PRICED + "max_cost: 5\n")
    sim = sim_factory(script=(SimResponse(status=500), SimResponse(status=401)))
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs={"attempts": "2"})
    assert result.code == 3, result.stdout
    assert len(sim.requests) == 2
    recorded = result.certificate["context"]["cost"]
    assert (recorded["attempts"], recorded["unbilled"]) == ([], 2)
    assert "Nothing to pay: none of the 2 request(s) made could be billed" in result.summary
    assert result.outputs["cost"] == ""
    # the estimate: at most ... USD, held to max_cost 5 USD (Markdown escapes removed)
    estimate = result.summary.split("### Cost estimate")[1].split("###")[0].replace("\\", "")
    assert re.search(r"at most 0\.\d{6} USD \(.*; max_cost 5 USD is held to it\)", estimate)
    assert re.search(r"likely about 0\.\d{6} USD \(", estimate)


def test_a_priced_summary_names_the_currency(tmp_path, fake, sim_factory):
    setup_pull(fake, config=PRICED)
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert result.code == 0, result.stdout
    assert "| attempt | input tokens | output tokens | cost (USD) |" in result.summary
    assert "max_cost" not in result.summary.split("### Cost estimate")[1].split("###")[0]
