"""A bot's run without the reviewer key, through the whole action against the fake GitHub.

Issue 34, finding 4: a Dependabot pull request got "no reviewer API key: set the secret
in OPENAI_API_KEY" although the secret was set: a run Dependabot starts (``GITHUB_ACTOR``
``dependabot[bot]``) reads Dependabot secrets, never Actions secrets. The block now says
that, and how to add the key where Dependabot's runs read it; another bot's run reads
Actions secrets as a person's does, and is told so. Always a block (``config``, not
about the code), never a pass, and the reviewer is never asked.
"""

from __future__ import annotations

import pytest

from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory

KEYED = "reviewer:\n  api_key_env: OPENAI_API_KEY\n"


@pytest.mark.parametrize(
    ("actor", "says", "never"),
    [
        (
            "dependabot[bot]",
            "a run Dependabot starts reads Dependabot secrets, not Actions secrets, so "
            "OPENAI_API_KEY is empty here even when it is set for Actions; add it as a "
            "Dependabot secret of the same name",
            "set the secret in OPENAI_API_KEY",
        ),
        ("renovate[bot]", "(started by renovate[bot], a bot: its runs read Actions", "Dependabot"),
        ("octocat", "no reviewer API key: set the secret in OPENAI_API_KEY", "bot"),
    ],
)
def test_a_run_without_the_key_says_why_for_its_actor(
    tmp_path, fake, sim_factory, actor: str, says: str, never: str
) -> None:
    setup_pull(fake, config=KEYED)
    sim = sim_factory()
    result = run_gate(
        tmp_path,
        fake,
        sim,
        pr_payload(),
        inputs={"API-KEY": ""},
        env={"GITHUB_ACTOR": actor, "OPENAI_API_KEY": None},
    )
    assert result.code == 3, result.stdout
    assert sim.count == 0
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "error"]
    assert statuses[-1]["description"].startswith("config, not about the code")
    assert (result.outputs["family"], result.outputs["reason"]) == ("config", "missing_api_key")
    detail = result.certificate["decision"]["detail"]
    assert says in detail
    assert never not in detail
    if actor == "dependabot[bot]":
        assert "gh secret set OPENAI_API_KEY --app dependabot" in detail
        assert "docs/action.md#dependabot-and-other-bots" in detail


def test_the_recipe_the_block_links_to_exists() -> None:
    from pathlib import Path

    from gate.action.guards import BOTS_DOC_URL

    doc = (Path(__file__).resolve().parents[3] / "docs" / "action.md").read_text("utf-8")
    assert BOTS_DOC_URL.endswith("docs/action.md#dependabot-and-other-bots")
    assert "\n## Dependabot and other bots\n" in doc
    assert "gh secret set OPENAI_API_KEY --app dependabot" in doc
