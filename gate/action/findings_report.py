"""Findings rendered for each sink: workflow annotations and the job summary.

A finding's text and location come from the reviewer; its path must be a file of the
reviewed diff (:mod:`gate.findings`), whose name came from the pull request. Both are
escaped for the sink they go to:

- **workflow commands** (``::error file=...,line=...::text``): the text through
  :func:`gate.safe.untrusted.lines` (secrets redacted, controls and bidi escaped, no line
  that reads as a command) then GitHub's data escaping (``%``, CR, LF); the file and
  title properties through GitHub's property escaping (also ``:`` and ``,``), so a
  reason can neither end the command early, add a property, nor start a second command.
  A path that does not print as itself (a control character, a secret) is not annotated:
  an escaped name would point the annotation at another file;
- **Markdown** (the summary): :func:`gate.action.report.md` and ``code``.

GitHub shows at most 10 error and 10 warning annotations per step; the decision's own
annotation takes one, so at most :data:`MAX_ANNOTATIONS` findings are annotated and the
summary says when more were left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gate.action.report import code, escape_data, escape_property, md
from gate.decide.decision import Decision, State
from gate.findings import Anchor, Finding, findings_for
from gate.safe import untrusted

if TYPE_CHECKING:
    from gate.review.result import ChunkReview

#: GitHub shows at most 10 annotations of each level per step; one is the decision's
MAX_ANNOTATIONS = 9


def findings_of(
    decision: Decision, diff: bytes, chunks: Sequence[ChunkReview] = ()
) -> tuple[Finding, ...]:
    """The reasons against the diff that was reviewed (none without a verdict).

    A review in chunks takes each chunk's own reasons, as its reviewer wrote them (the
    aggregated verdict names the chunk before each reason, and on ``fail`` holds only
    the first failing chunk's): on a fail, the reasons of every failing chunk, else of
    every chunk that has a verdict. Each chunk's reasons are placed against that chunk's
    own bytes, the only ones its reviewer saw: a line of another chunk's file is not on
    the diff it reviewed, so never anchored (no annotation, no review comment there).
    """
    if not diff:
        return ()
    if chunks:
        judged = [c for c in chunks if c.decision is not None and c.decision.verdict]
        failed = [c for c in judged if c.decision and c.decision.state is State.FAIL]
        return tuple(
            finding
            for c in (failed or judged)
            if c.decision is not None and c.decision.verdict is not None
            for finding in findings_for(c.decision.verdict.reasons, c.chunk.data)
        )
    if decision.verdict is None:
        return ()
    return findings_for(decision.verdict.reasons, diff)


def annotatable(finding: Finding) -> bool:
    """Anchored, and its path prints as itself (escaping it would name another file)."""
    return finding.anchored and untrusted.line(finding.path) == finding.path


def annotation_commands(findings: Sequence[Finding], *, failed: bool, context: str) -> list[str]:
    """One ``::error`` (on fail) or ``::warning`` per anchored finding, at most
    :data:`MAX_ANNOTATIONS`."""
    level = "error" if failed else "warning"
    title = escape_property(untrusted.line(f"{context}: {'fail' if failed else 'finding'}"))
    out: list[str] = []
    for finding in [f for f in findings if annotatable(f)][:MAX_ANNOTATIONS]:
        props = [f"file={escape_property(finding.path)}", f"line={finding.start}"]
        if finding.end != finding.start:
            props.append(f"endLine={finding.end}")
        props.append(f"title={title}")
        message = escape_data(untrusted.lines(finding.text))
        out.append(f"::{level} {','.join(props)}::{message}")
    return out


def summary_lines(findings: Sequence[Finding]) -> list[str]:
    """The summary's findings section: where each located reason went, and why not."""
    located = [f for f in findings if f.anchor is not Anchor.GENERAL]
    if not located:
        return []
    lines = ["### Findings on lines", ""]
    annotated = [f for f in findings if annotatable(f)]
    for finding in located:
        if finding.anchored:
            where = "annotated" if finding in annotated[:MAX_ANNOTATIONS] else "not annotated"
            if not annotatable(finding):
                where = "not annotated: the file name does not print as itself"
            lines.append(f"- {code(finding.location)} ({where}): {md(finding.text)}")
        else:
            lines.append(
                f"- {code(finding.location)} (unanchored: not on the right side of the "
                f"reviewed diff, so kept here only): {md(finding.text)}"
            )
    if len(annotated) > MAX_ANNOTATIONS:
        lines.append(
            f"- … {len(annotated) - MAX_ANNOTATIONS} more anchored findings are listed here "
            f"only: GitHub shows at most {MAX_ANNOTATIONS + 1} annotations per step"
        )
    lines.append("")
    return lines
