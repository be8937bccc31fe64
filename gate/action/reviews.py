"""The gate's pull request review: one per head SHA, a comment on each anchored line.

With ``review_comments: true`` (input ``review-comments``), a reviewed pull request gets
one review for the head SHA that was reviewed, carrying a comment on each anchored
finding (:mod:`gate.findings`; right side, the line or the range). Its event is
``REQUEST_CHANGES`` on fail and ``COMMENT`` otherwise, never ``APPROVE``: the commit
status decides the merge, a review by the gate must not count as a human approval.

A review is the gate's own when the token's identity wrote it (same login, same account
type: :meth:`gate.action.github.records.Identity.wrote`, the sticky comment's adoption rule) and
its body starts with the review marker of the status context. On a new head, each of the
gate's own earlier reviews is dismissed (``CHANGES_REQUESTED``) or, as GitHub cannot
dismiss a ``COMMENTED`` review, its body is replaced by a "superseded" note; a review by
anyone else, marker or not, is never touched. A re-run on the same head updates the body
of the gate's review for that head instead of adding a second one.

Texts are the reviewer's: rendered inert with :func:`gate.action.report.md` (Markdown,
no mention, no HTML) and redacted before they leave (:func:`gate.safe.redact.redact`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gate.action.findings_report import annotatable
from gate.action.github.client import GitHubClient
from gate.action.report import code, comment_marker, md
from gate.findings import Anchor, Finding
from gate.safe.redact import redact

#: reviews scanned for the gate's own (a bound: a pull request rarely has more)
MAX_REVIEWS_SCANNED = 300
#: comments in one review (each anchored finding, in order)
MAX_REVIEW_COMMENTS = 50
DISMISSABLE = frozenset({"CHANGES_REQUESTED", "APPROVED"})


def review_marker(context: str) -> str:
    """The hidden marker of the gate's review: the sticky comment's, with ``review``."""
    return comment_marker(context).replace("review-gate:sticky:", "review-gate:review:", 1)


def event_for(state: str) -> str:
    """``REQUEST_CHANGES`` on fail, ``COMMENT`` otherwise; never ``APPROVE``."""
    return "REQUEST_CHANGES" if state == "fail" else "COMMENT"


def review_comments(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for finding in [f for f in findings if annotatable(f)][:MAX_REVIEW_COMMENTS]:
        comment: dict[str, Any] = {
            "path": finding.path,
            "line": finding.end,
            "side": "RIGHT",
            "body": redact(f"**review-gate**: {md(finding.text)}"),
        }
        if finding.start != finding.end:
            comment.update(start_line=finding.start, start_side="RIGHT")
        out.append(comment)
    return out


def review_body(
    context: str, state: str, description: str, sha: str, findings: Sequence[Finding]
) -> str:
    outside = sum(1 for f in findings if f.anchor is Anchor.OUTSIDE)
    general = sum(1 for f in findings if f.anchor is Anchor.GENERAL)
    lines = [
        review_marker(context),
        f"**review-gate: {md(state)}** on {code(sha[:12])}: {md(description)}",
    ]
    if outside or general:
        lines.append(
            f"\n{outside + general} more reasons are not on a changed line "
            f"({outside} name a line outside the reviewed diff); see the job summary."
        )
    return redact("\n".join(lines))


def _superseded_body(context: str, head: str) -> str:
    return (
        f"{review_marker(context)}\n"
        f"Superseded: review-gate reviewed a newer head, {code(head[:12])}."
    )


def post_review(
    gh: GitHubClient,
    number: int,
    head: str,
    *,
    context: str,
    state: str,
    description: str,
    findings: Sequence[Finding],
) -> str:
    """Create (or, on the same head, update) the gate's review; supersede its older ones.

    Returns what was done, in words (for the run's notes). Raises GitHubError.
    """
    marker = review_marker(context)
    own = gh.identity()
    body = review_body(context, state, description, head, findings)
    comments = review_comments(findings)
    event = event_for(state)

    def run() -> str:
        pull = gh.repo.get_pull(number)
        mine = []
        for scanned, review in enumerate(pull.get_reviews()):
            if scanned >= MAX_REVIEWS_SCANNED:
                break
            if own.wrote(review.user) and (review.body or "").startswith(marker):
                mine.append(review)
        done = []
        current = None
        for review in mine:
            if review.commit_id == head and review.state != "DISMISSED":
                current = current or review
                continue
            if review.state in DISMISSABLE:
                review.dismiss(f"review-gate: superseded by the review of {head[:12]}")
                done.append(f"dismissed review {review.id}")
            elif review.state != "DISMISSED" and review.body != _superseded_body(context, head):
                review.edit(_superseded_body(context, head))
                done.append(f"marked review {review.id} superseded")
        if current is not None:
            if current.body != body:
                current.edit(body)
            done.append(f"updated review {current.id} on {head[:12]}")
        else:
            created = pull.create_review(
                commit=gh.repo.get_commit(head), body=body, event=event, comments=comments
            )
            done.append(f"{event} review {created.id} with {len(comments)} line comments")
        return "; ".join(done)

    return gh.call(f"post the review-gate review on #{number}", run)
