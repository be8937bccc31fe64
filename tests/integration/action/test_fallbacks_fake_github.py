"""Fallback reviewers through the whole action (fake GitHub checked against the OpenAPI
description, two reviewer simulators): the primary's quota is exhausted, the fallback
answers; a fallback without its key is a config block naming the setting; a fail by the
fallback stands on a re-push for the whole list."""

from __future__ import annotations

import json

from gate.lab.sim import SimResponse
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import (
    HEAD,
    REPO,
    pr_payload,
    run_gate,
    setup_pull,
)
from tests.unit.reviewers.test_limits import OPENAI_QUOTA

fake = base.fake
sim_factory = base.sim_factory
KEY = "fallback-key-0123456789abcdef"


def fallback_config(url: str) -> str:
    # the runner passes the input attempts: 1; with fallbacks, an input below the base
    # config's attempts is refused on pull_request, so the base config says 1 too
    return (
        "reviewer:\n  attempts: 1\n"
        "fallbacks:\n"
        f"  - {{provider: openai, model: backup-model, base_url: '{url}', "
        "api_key_env: BACKUP_KEY, attempts: 1}\n"
    )


def test_the_primarys_quota_is_exhausted_and_the_fallback_answers(tmp_path, fake, sim_factory):
    primary = sim_factory(script=(SimResponse(status=429, error_body=json.dumps(OPENAI_QUOTA)),))
    backup = sim_factory()
    setup_pull(fake, config=fallback_config(backup.base_url))
    result = run_gate(tmp_path, fake, primary, pr_payload(), env={"BACKUP_KEY": KEY})
    assert result.code == 0, result.stdout
    assert (primary.count, backup.count) == (1, 1)
    assert fake.status_list(HEAD)[-1]["state"] == "success"
    assert result.outputs["family"] == "pass"
    fallback = result.certificate["context"]["fallback"]
    assert fallback["answered_by"]["model"] == "backup-model"
    assert fallback["earlier"][0]["decision"]["reason"] == "quota_exhausted"
    assert "could not answer\\: quota\\_exhausted" in result.summary  # inert Markdown
    assert f"::add-mask::{KEY}" in result.stdout  # masked before any use
    assert result.stdout.count(KEY) == 1  # and never shown otherwise


def test_a_fallback_without_its_key_is_a_config_block(tmp_path, fake, sim_factory):
    primary, backup = sim_factory(), sim_factory()
    setup_pull(fake, config=fallback_config(backup.base_url))
    result = run_gate(tmp_path, fake, primary, pr_payload())
    assert result.code == 3, result.stdout
    assert (primary.count, backup.count) == (0, 0)  # named before any request
    assert result.outputs["reason"] == "config_fallback_key"
    assert result.outputs["family"] == "config"
    status = fake.status_list(HEAD)[-1]
    assert status["state"] == "error"
    assert status["description"].startswith("config, not about the code:")
    assert "BACKUP\\_KEY" in result.summary


def test_a_fail_by_the_fallback_stands_for_the_primary_on_a_re_push(tmp_path, fake, sim_factory):
    from gate.lab.demo import ScriptedModel

    primary = sim_factory(script=(SimResponse(status=429, error_body=json.dumps(OPENAI_QUOTA)),))
    backup = sim_factory(ScriptedModel("fail"))
    setup_pull(fake, config=fallback_config(backup.base_url))
    first = run_gate(tmp_path, fake, primary, pr_payload(), env={"BACKUP_KEY": KEY})
    assert first.code == 1, first.stdout
    # a re-push of the same diff with the primary healthy again: the fail stands, no call
    new_head = "5" * 40
    fake.move_head(7, new_head)
    fake.add_compare(base.BASE, new_head, base.DIFF)
    payload = base.pull_request_event(
        "synchronize", repository=REPO, number=7, head_sha=new_head, base_sha=base.BASE
    )
    (tmp_path / "again").mkdir()
    again = run_gate(tmp_path / "again", fake, primary, payload, env={"BACKUP_KEY": KEY})
    assert again.code == 1, again.stdout
    assert again.outputs["reason"] == "fail_stands"
    assert (primary.count, backup.count) == (1, 1)


def test_each_reviewers_attempts_are_priced_at_its_own_rate(tmp_path, fake, sim_factory):
    primary = sim_factory(script=(SimResponse(status=500), SimResponse(status=500)))
    backup = sim_factory()
    prices = (
        "pricing:\n  sim-model: {input: 1000, output: 1000}\n"
        "  backup-model: {input: 1, output: 1}\n"
    )
    setup_pull(fake, config=prices + fallback_config(backup.base_url))
    result = run_gate(
        tmp_path, fake, primary, pr_payload(), env={"BACKUP_KEY": KEY}, inputs={"attempts": "2"}
    )
    assert result.code == 0, result.stdout
    spent = result.certificate["context"]["cost"]
    assert spent["model"] == "sim-model then backup-model"
    rows = spent["attempts"]
    # two refused by the primary (HTTP 500: not billed, issue 34), one answered
    assert (len(rows), spent["unbilled"]) == (1, 2)
    assert rows[0]["cost"] == (rows[0]["input_tokens"] + rows[0]["output_tokens"]) / 1e6
