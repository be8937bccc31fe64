"""Class: reviewer text in a check run's output, raw (Markdown, HTML, invisible characters).

Cause: the check run (``report: check-run | both``) is one more sink for the reviewer's
words. :func:`gate.action.checks.post` put the status description, which holds the
reviewer's first reason (``fail: <reason>``), into ``output.summary`` as is: GitHub
renders that summary as Markdown, so a reason could show an image (a tracking pixel), a
link, an @mention or HTML on the check run. The final job summary replaced it only when
the next request went through, and the reviewer could make that request fail (an
annotation message over GitHub's 64 KB): then the raw text stayed. The check-run
annotations skipped the rule the two other findings sinks share
(:func:`gate.action.findings_report.annotatable`) and sent the reason's text with its
control and bidi characters, uncut.

Fix: in :mod:`gate.action.checks`, the description goes through
:func:`gate.action.report.md` before it is a summary; annotations are the annotatable
findings, each message through :func:`gate.safe.untrusted.lines`, cut to
``MAX_MESSAGE_CHARS``.

Variants: 8 hostile first reasons (image, link, autolink, mention, team mention, HTML,
HTML comment, heading with a table), each also an anchored finding with invisible
characters, in ``report: check-run``; and one anchored reason over 64 KB; every
check-run request the gate sent is checked (9 runs).
"""

from __future__ import annotations

import pytest

from tests.integration.action.test_findings_fake_github import answer
from tests.integration.action.test_run_fake_github import (
    fake,
    pr_payload,
    run_gate,
    setup_pull,
    sim_factory,
)

__all__ = ["fake", "sim_factory"]

HOSTILE = {
    "image": "![pixel](https://evil.example/p.png)",
    "link": "[click here](https://evil.example/login)",
    "autolink": "<https://evil.example/x>",
    "mention": "@octocat please merge",
    "team": "@octo-org/admins approve",
    "html": '<img src="https://evil.example/p.png">',
    "comment": "<!-- review-gate:history AAAA -->",
    "heading": "# Approved\n| a | b |\n|---|---|",
}
INVISIBLE = "\u202eevil\u200b\x1b[31m"
UNSEEN = ("\u202e", "\u200b", "\x1b")


def check_bodies(fake) -> list[dict]:
    return [r.json_body() for r in fake.requests if "/check-runs" in r.path and r.method != "GET"]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_reviewer_markdown_never_reaches_a_check_run_raw(tmp_path, fake, sim_factory, name):
    payload = HOSTILE[name]
    setup_pull(fake, config="report: check-run\n")
    reasons = [payload, f"src/calc.py:3: {payload} {INVISIBLE}"]
    result = run_gate(tmp_path, fake, sim_factory(answer(reasons)), pr_payload())
    assert result.code == 1, result.stdout
    bodies = check_bodies(fake)
    assert bodies
    raw = payload.split("\n")[0]
    for body in bodies:
        output = body.get("output") or {}
        assert raw not in output.get("summary", ""), (name, output.get("summary"))
        for note in output.get("annotations", []):
            assert note["path"] == "src/calc.py"
            assert note["message"].isprintable() or "\n" in note["message"]
            assert not any(ch in note["message"] for ch in UNSEEN), note["message"]
    assert fake.violations == []


def test_an_annotation_message_over_64_kb_is_cut(tmp_path, fake, sim_factory):
    setup_pull(fake, config="report: check-run\n")
    reasons = ["src/calc.py:3: " + "x" * 70_000]
    result = run_gate(tmp_path, fake, sim_factory(answer(reasons)), pr_payload())
    assert result.code == 1, result.stdout
    notes = [n for b in check_bodies(fake) for n in (b.get("output") or {}).get("annotations", [])]
    assert len(notes) == 1
    assert len(notes[0]["message"].encode("utf-8")) <= 64 * 1024
    assert fake.violations == []
