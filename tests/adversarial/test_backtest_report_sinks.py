"""Class: author text in the backtest's Markdown report (the job summary).

``review-gate backtest --repo`` reports each merge with its subject: a squash merge's
subject is the pull request's title, the author's words; a ``--cases`` file names its own
ids and sources. The Markdown report is appended to ``$GITHUB_STEP_SUMMARY``, and its
cells went through :func:`gate.safe.untrusted.line` with only ``|`` escaped: a title
holding ``<img src=...>``, a link, a ``<!--`` that hides every row after it, an
``@team`` mention or a ``#123`` reference rendered live. Author text in a summary renders
as exactly itself, as the action's summary does (:func:`gate.action.report.md`).
"""

from __future__ import annotations

from gate.backtest.cases import Case, Plan
from gate.backtest.report import markdown, summarise
from tests.adversarial.test_untrusted_text import assert_inert_markdown, render

HOSTILE = (
    "<img src=https://attacker.example/p.png> [login](https://attacker.example) "
    "@org/team #12 GH-3 <!-- the rows after this are hidden"
)


def test_a_merge_subject_in_the_summary_is_inert() -> None:
    cases = (
        Case("c1", "allow", True, f"squash 0123456789ab: {HOSTILE} (#7)", text=b"x\n"),
        Case(HOSTILE, "block", False, "second row", text=b"y\n"),
    )
    plan = Plan(cases, "cases hostile.jsonl")
    status = {"complete": True, "asked": 0, "skipped": 0, "total": 2}
    report = summarise(plan, ["default"], [], {}, status)
    text = markdown(report)
    assert_inert_markdown(text)
    page = render(text)
    assert "second row" in page  # nothing hid the rows after the first
    assert "attacker.example/p.png" in page  # shown as text, not loaded
