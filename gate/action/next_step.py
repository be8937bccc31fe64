"""What the blocked author reads next: one "next step" per reason family, and a link.

The status description is cut at 140 characters; the sticky comment and the job summary
give the full reason, and after it the step this module words for the decision's family
(:class:`gate.decide.decision.Family`, issue 21): who can act, and how. Each step links to the
matching section of docs/troubleshooting.md, as an absolute URL built from
:data:`gate.REPOSITORY_URL`, the project's one URL.

Keyed on the family, so the certificate, the record and the comment agree on it, and on
whether the decision is a *standing* one: an earlier answer of the same question repeated
with no model call (``fail stands``, ``block stands``, the gate's failure on the commit).
Its reasons are not in this run, and a push of the same diff is the same question, so its
step says what does change the answer: a changed diff, or a writer's fresh review.
"""

from __future__ import annotations

from gate import FILES_URL
from gate.action.event import REVIEW_COMMAND
from gate.action.report import code
from gate.decide.decision import Family

TROUBLESHOOTING_URL = f"{FILES_URL}/docs/troubleshooting.md"

#: the section of docs/troubleshooting.md each family links to (its heading's anchor)
ANCHORS: dict[Family, str | None] = {
    Family.PASS: None,  # nothing to troubleshoot: the page itself
    Family.REJECTED: "rejected",
    Family.NEEDS_HUMAN: "needs_human",
    Family.COVERAGE: "coverage",
    Family.UNAVAILABLE: "unavailable",
    Family.CONFIG: "config",
}


def next_step(
    family: Family, *, override_label: str, fresh_label: str, standing: bool = False
) -> str | None:
    """The next step for a decision of ``family`` (None for a pass); ``standing``: the
    decision repeats an earlier answer of the same question, with no model call."""
    if family is Family.PASS:
        return None
    override_label, fresh_label = code(override_label), code(fresh_label)
    if standing:
        override = (
            f", or a maintainer can override with the label {override_label}"
            if family is Family.NEEDS_HUMAN
            else ""
        )
        step = (
            "this diff was answered before and that answer stands: no model was asked "
            "again, and a new commit with the same diff is the same question. The author "
            f"can change the diff; a writer can ask for a fresh review with the label "
            f"{fresh_label} or by commenting {code(REVIEW_COMMAND)}{override}."
        )
        return f"**Next step**: {step} [What this means]({link(family)})"
    steps = {
        Family.PASS: "none: the review passed.",  # returned above; named so no family is missing
        Family.REJECTED: "fix what the reasons above say and push; the new head is reviewed again.",
        Family.NEEDS_HUMAN: f"a maintainer can override with the label {override_label}, or "
        f"ask for a fresh review with the label {fresh_label}.",
        Family.COVERAGE: "the files named above were not reviewed, each with what would cover "
        "it: cover them that way, or a maintainer reviews them and overrides with the label "
        f"{override_label}.",
        Family.UNAVAILABLE: "this is not a judgement of your code: the reviewer could not "
        "answer. Re-run the job, or comment `/review-gate review`.",
        Family.CONFIG: "this is not a judgement of your code: the gate's setup needs a "
        "maintainer to fix what the reason names.",
    }
    return f"**Next step**: {steps[family]} [What this means]({link(family)})"


def link(family: Family) -> str:
    """The absolute URL of ``family``'s section of docs/troubleshooting.md."""
    anchor = ANCHORS[family]
    return f"{TROUBLESHOOTING_URL}#{anchor}" if anchor else TROUBLESHOOTING_URL
