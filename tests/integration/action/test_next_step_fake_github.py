"""What the blocked author reads, through the action against the fake GitHub (every
request checked against GitHub's OpenAPI description): the sticky comment and the job
summary give the full reason, not the 140-character status, then one next step for the
decision's family, linking to its section of docs/troubleshooting.md as an absolute URL
built from the project's one URL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gate import REPOSITORY_URL
from gate.action.next_step import ANCHORS, TROUBLESHOOTING_URL
from gate.decide.decision import Family
from gate.lab.sim import SimResponse
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import (
    BINARY,
    DIFF,
    pr_payload,
    run_gate,
    setup_pull,
    verdict_text,
)

fake = base.fake
sim_factory = base.sim_factory
ROOT = Path(__file__).resolve().parents[3]
LONG = "the reason a reviewer gives can be long; " * 6

#: family -> (base config, diff, responder, script, the words its next step must hold)
CASES = {
    "rejected": ("", DIFF, lambda r: verdict_text(r, "fail"), (), "fix what the reasons"),
    "needs_human": ("", DIFF, lambda r: verdict_text(r, "pass", 0.5), (), "`review-gate:fresh`"),
    "coverage": ("", DIFF + BINARY, verdict_text, (), "files named above were not reviewed"),
    "unavailable": ("", DIFF, verdict_text, (SimResponse(cut_after=60),),
                    "this is not a judgement of your code"),
    "config": ("min_confidence: 7\n", DIFF, verdict_text, (),
               "this is not a judgement of your code"),
}  # fmt: skip


def test_every_family_links_to_a_section_that_exists() -> None:
    doc = (ROOT / "docs" / "troubleshooting.md").read_text("utf-8")
    headings = set(re.findall(r"^### (\S+)$", doc, re.MULTILINE))
    assert set(ANCHORS.values()) - {None} <= headings
    assert {f for f, anchor in ANCHORS.items() if anchor} == set(Family) - {Family.PASS}
    assert TROUBLESHOOTING_URL.startswith(REPOSITORY_URL + "/blob/")
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    assert f'Source = "{REPOSITORY_URL}"' in pyproject  # the one URL, defined once


@pytest.mark.parametrize("family", sorted(CASES))
def test_the_comment_and_summary_give_the_full_reason_and_the_next_step(
    tmp_path, fake, sim_factory, family: str
) -> None:
    config, diff, responder, script, words = CASES[family]
    setup_pull(fake, diff=diff, config=config or None)
    sim = sim_factory(responder, script)
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.outputs["family"] == family, result.stdout
    # a config that cannot be read has no sticky_comment setting: no comment then
    body = fake.comments[7][0]["body"] if family != "config" else result.summary
    summary = result.summary
    link = f"({TROUBLESHOOTING_URL}#{ANCHORS[Family(family)]})"
    for text in (body, summary):
        (line,) = [x for x in text.splitlines() if x.startswith("**Next step**:")]
        assert words in line
        assert line.endswith(link)
    detail = result.certificate["decision"]["detail"]
    description = fake.status_list(base.HEAD)[-1]["description"]
    if len(detail) > len(description):  # the comment holds what the status had to cut
        shown = re.sub(r"\\(.)", r"\1", body).replace("\u200b", "")  # md() made it inert
        assert detail.split(";")[0][:60] in shown
