"""The check run: the gate's decision as a check (``report: check-run`` or ``both``).

A check run named like the status context is created on the reviewed head when the
review starts (``in_progress``) and completed with the decision: ``success`` only for
a ``success`` status, ``failure`` for every other final state. A skipped draft leaves it
``in_progress`` (never ``neutral`` or ``skipped``, which branch protection counts as
passing). Its output is the job summary, and the anchored findings are attached as
annotations (GitHub takes at most 50 per request, so they are sent in pages of 50).

The output is a sink for untrusted text like every other: its summary is Markdown (a
status description holds the reviewer's first reason, so it goes through
:func:`gate.action.report.md` before it becomes a summary: no image, link, mention or
HTML), its title is one safe line, and each annotation is a finding that
:func:`gate.action.findings_report.annotatable` accepts (the workflow annotations' and the
review comments' rule), its message through :func:`gate.safe.untrusted.lines` and cut to
:data:`MAX_MESSAGE_CHARS` (GitHub refuses a message over 64 KB, and one refused page
would lose the whole output).

A check run can only be created by a GitHub App (the workflow's ``GITHUB_TOKEN`` is the
GitHub Actions app): branch protection can require the check *from that app*, so a
status or check posted with any other token cannot satisfy it (docs/security.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gate.action.findings_report import annotatable
from gate.action.github import mark
from gate.action.github.client import GitHubClient
from gate.action.github.mark import Mark
from gate.action.github.records import CONCLUSION
from gate.action.report import md
from gate.decide.decision import Status
from gate.findings import Finding
from gate.safe import untrusted
from gate.safe.redact import redact

REPORT_MODES = ("status", "check-run", "both")
#: GitHub's limit of annotations in one create or update request
ANNOTATIONS_PER_REQUEST = 50
#: a bound on the pages sent (50 annotations each)
MAX_ANNOTATION_PAGES = 20
#: GitHub's limit on the output summary (characters)
MAX_SUMMARY_CHARS = 65_535
MAX_TITLE_CHARS = 255
#: an annotation's message, at most (GitHub's limit is 64 KB; a character may take 4 bytes)
MAX_MESSAGE_CHARS = 16_000


def wants_status(mode: str) -> bool:
    return mode in ("status", "both")


def wants_check(mode: str) -> bool:
    return mode in ("check-run", "both")


def _title(description: str) -> str:
    return untrusted.line(redact(description))[:MAX_TITLE_CHARS] or "review-gate"


def _summary(markdown: str) -> str:
    text = redact(markdown)
    if len(text) > MAX_SUMMARY_CHARS:
        cut = "\n\n… (cut; see the job summary)"
        text = text[: MAX_SUMMARY_CHARS - len(cut)] + cut
    return text


def post(
    gh: GitHubClient,
    *,
    check_id: int | None,
    name: str,
    head: str,
    status: Status,
    description: str,
    details_url: str | None,
    marked: Mark,
) -> int:
    """Create (``check_id`` None) or update the check run; return its id. A completed run
    names the status it stands for, its kind and its question (``marked``,
    :mod:`gate.action.github.mark`) in its ``external_id``: the commit-level evidence
    :meth:`GitHubClient.own_check_runs` reads back. A run created completed (the head
    showed the gate's decision, so no ``in_progress`` run was created first) is one write."""
    body: dict[str, Any] = {"name": name, "head_sha": head}
    if details_url:
        body["details_url"] = details_url
    if status is Status.PENDING:
        body["status"] = "in_progress"
    else:
        body["status"] = "completed"
        body["conclusion"] = CONCLUSION[status]
        body["external_id"] = mark.check_external_id(str(status), marked)
    title = _title(description)
    # the description holds the reviewer's words: inert Markdown, like every summary line
    body["output"] = {"title": title, "summary": _summary(md(description))}
    return _send(gh, check_id, body, what=f"{body['status']} check run {name!r} on {head[:12]}")


def post_neutral(
    gh: GitHubClient,
    *,
    name: str,
    head: str,
    description: str,
    details_url: str | None,
    marked: Mark,
) -> int:
    """Create a completed check run with conclusion ``neutral`` (a ``mode: shadow`` run's,
    :mod:`gate.action.shadow`: what the gate would have done; branch protection counts
    ``neutral`` as passing, so it is never the required check); return its id. Its
    ``external_id`` names ``neutral`` and a shadow kind, which no reader takes for a
    decision (:func:`gate.action.github.mark.of_check`)."""
    if marked.kind not in mark.SHADOW_KINDS:
        raise ValueError(f"a neutral check run stands for a shadow kind, not {marked.kind!r}")
    body: dict[str, Any] = {
        "name": name,
        "head_sha": head,
        "status": "completed",
        "conclusion": "neutral",
        "external_id": mark.check_external_id("neutral", marked),
        "output": {"title": _title(description), "summary": _summary(md(description))},
    }
    if details_url:
        body["details_url"] = details_url
    return _send(gh, None, body, what=f"neutral check run {name!r} on {head[:12]}")


def _message(text: str) -> str:
    shown = untrusted.lines(text)  # redacted first, then escaped, then cut
    if len(shown) > MAX_MESSAGE_CHARS:
        shown = shown[: MAX_MESSAGE_CHARS - 1] + "…"
    return shown or "(empty)"


def check_annotations(findings: Sequence[Finding], *, failed: bool) -> list[dict[str, Any]]:
    """Every annotatable finding as a check-run annotation (``failure`` on fail)."""
    level = "failure" if failed else "warning"
    return [
        {
            "path": f.path,
            "start_line": f.start,
            "end_line": f.end,
            "annotation_level": level,
            "message": _message(f.text),
            "title": "review-gate",
        }
        for f in findings
        if annotatable(f)
    ]


def publish(
    gh: GitHubClient,
    check_id: int,
    *,
    description: str,
    summary: str,
    items: Sequence[dict[str, Any]],
) -> int:
    """Set the output (the job summary) and attach ``items`` in pages of 50; return the
    number of annotations sent."""
    output = {"title": _title(description), "summary": _summary(summary)}
    pages = [
        list(items[i : i + ANNOTATIONS_PER_REQUEST])
        for i in range(0, len(items), ANNOTATIONS_PER_REQUEST)
    ][:MAX_ANNOTATION_PAGES] or [[]]
    sent = 0
    for number, page in enumerate(pages, start=1):
        body = {"output": {**output, "annotations": page} if page else output}
        _send(gh, check_id, body, what=f"check run output, page {number} of {len(pages)}")
        sent += len(page)
    return sent


def _send(gh: GitHubClient, check_id: int | None, body: dict[str, Any], *, what: str) -> int:
    base = f"{gh.repo.url}/check-runs"

    def once() -> int:
        if check_id is None:
            _headers, data = gh.repo.requester.requestJsonAndCheck("POST", base, input=body)
            gh.learn_identity_from_check(data)  # the app that wrote it is the token's
            gh.wrote_check_run(str(body["head_sha"]), str(body["name"]), int(data["id"]))
        else:
            _headers, data = gh.repo.requester.requestJsonAndCheck(
                "PATCH", f"{base}/{check_id}", input=body
            )
        return int(data["id"])

    return gh.call(f"{'POST' if check_id is None else 'PATCH'} {what}", once)
