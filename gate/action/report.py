"""What the action tells people: job summary, annotations, step outputs, masks, the PR comment.

Pure renderers plus three tiny writers (append to ``GITHUB_STEP_SUMMARY``,
append to ``GITHUB_OUTPUT``, print workflow commands). Nothing here talks to
GitHub's API (that is :mod:`gate.action.github`) or decides anything (that is
:mod:`gate.decide.decision`); it renders a :class:`Report`.

Safety rules this module keeps:

- ``::add-mask::`` for every secret is printed before anything else
  (:func:`mask_commands`), one command per line of a multi-line secret;
- step outputs use a fresh random heredoc delimiter per value
  (``name<<ghadelimiter_<random>``) that is checked not to occur in the value,
  so a value cannot inject another output;
- every secret in :func:`mask_commands` is also registered for redaction
  (:mod:`gate.safe.redact`), and every writer here (:func:`emit`,
  :func:`append_summary`, :func:`write_outputs`) and renderer (:func:`md`,
  :func:`code`, :func:`comment_body`) redacts before it escapes or cuts;
- text that came from the reviewer, from GitHub or from file names is rendered
  through :mod:`gate.safe.untrusted` (controls, bidi and zero-width characters
  escaped, no workflow command), and made inert before it is put into Markdown:
  every ASCII punctuation character backslash-escaped (no emphasis, links,
  images, headings, lists, tables, fences, math), ``<`` and ``&`` as entities
  (no HTML, no HTML comment that could forge the sticky marker), a zero-width
  space after ``@``, ``#`` and the ``-`` of ``GH-`` (no @mention, no #reference in
  either spelling, ``#123`` or ``GH-123``), whitespace
  collapsed (no line break, no indented code); workflow commands are escaped
  per GitHub's rules (``%``, CR, LF; ``:`` and ``,`` in properties).
"""

from __future__ import annotations

import secrets as _secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from gate.decide.attempt import Attempt
from gate.decide.decision import MAX_DESCRIPTION, Decision, Family, State
from gate.diff import Coverage, SkipWhy
from gate.safe import redact, untrusted
from gate.safe.untrusted import md as md  # defined in gate.safe (the backtest writes Markdown too)

MAX_COMMENT_CHARS = 60_000  # GitHub refuses comments over 65,536 characters
MAX_LISTED_FILES = 200

_ICON = {
    "pass": "✅",
    "fail": "❌",
    "needs_human": "🟡",
    "incomplete": "⛔",
    "skipped": "⏸️",
    "error": "⛔",
}


#: what each family means, in the summary and the comment (who acts is issue 20's next step)
FAMILY_MEANING = {
    Family.PASS: "the review passed",
    Family.REJECTED: "the reviewer rejected the change: about the code",
    Family.NEEDS_HUMAN: "the reviewer's answer needs a human: about the code",
    Family.COVERAGE: "not all of the change was reviewed",
    Family.UNAVAILABLE: "the reviewer could not answer: not about the code",
    Family.CONFIG: "the gate's setup is wrong: not about the code",
}


@dataclass(frozen=True)
class Report:
    """Everything the action reports about one run."""

    decision: Decision
    state: str  # pass | fail | needs_human | incomplete | skipped | error (the `state` output)
    status: str  # the commit status posted last (or that would have been)
    description: str  # the status description posted
    context: str  # the status context
    subject: str  # "pull request #7" / "merge group abc1234"
    sha: str = ""  # the commit the status is on
    coverage: Coverage | None = None
    attempts: tuple[Attempt, ...] = ()
    digests: Mapping[str, str] = field(default_factory=dict)
    certificate_path: str | None = None
    run_url: str | None = None
    notes: tuple[str, ...] = ()  # superseded, override, warnings
    #: who can act on a block, and how (gate.action.next_step; Markdown, built there)
    next_step: str | None = None
    #: one row per chunk of a review in chunks (gate.review.chunked.chunk_rows)
    chunks: tuple[Mapping[str, Any], ...] = ()

    @property
    def verdict(self) -> str:
        return self.decision.verdict.verdict if self.decision.verdict is not None else ""

    @property
    def family(self) -> Family:
        return self.decision.family


# --- escaping ----------------------------------------------------------------------


def escape_data(text: str) -> str:
    """Escape a workflow command's message (GitHub's rules)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def code(text: str) -> str:
    """Inline code for a value that contains no backtick (digests, reasons codes, paths)."""
    clean = untrusted.visible(" ".join(redact.redact(text).split()))
    clean = clean.replace("`", "'").replace("|", "\\|")
    return f"`{clean}`" if clean else "—"


# --- masks, annotations, outputs -------------------------------------------------


class MaskCommand(str):
    """An ``::add-mask::`` line: :func:`emit` writes it as is (it must name the secret)."""

    __slots__ = ()


def mask_commands(values: Iterable[str | None]) -> list[str]:
    """``::add-mask::`` lines for every non-empty secret (each line of a multi-line one).

    The same values are registered for redaction (:func:`gate.safe.redact.remember`), so a
    secret masked in the log is redacted from every other sink too.
    """
    values = list(values)
    redact.remember(*values)
    lines: list[str] = []
    seen: set[str] = set()
    for value in values:
        if not value:
            continue
        for part in [value, *value.splitlines()]:
            part = part.strip()
            if part and part not in seen and len(part) >= redact.MIN_SECRET:
                seen.add(part)
                lines.append(MaskCommand(f"::add-mask::{escape_data(part)}"))
    return lines


def annotation_commands(report: Report) -> list[str]:
    """``::error::``/``::warning::`` commands: an error unless the gate passed."""
    out: list[str] = []
    title = escape_property(untrusted.line(f"{report.context}: {report.state}"))
    if report.state != "pass":
        message = untrusted.lines(report.description)
        if report.decision.detail and report.decision.detail not in report.description:
            message += "\n" + untrusted.lines(report.decision.detail)
        out.append(f"::error title={title}::{escape_data(message)}")
    for note in report.notes:
        context = escape_property(untrusted.line(report.context))
        out.append(f"::warning title={context}::{escape_data(untrusted.lines(note))}")
    return out


def emit(lines: Iterable[str], stream: TextIO) -> None:
    """Write log lines the gate built: each one redacted and made safe as a whole
    (:func:`gate.safe.untrusted.own_line`), except :class:`MaskCommand` lines."""
    for line in lines:
        text = line if isinstance(line, MaskCommand) else untrusted.own_line(line)
        stream.write(text + "\n")
    stream.flush()


def heredoc(name: str, value: str, *, token: str | None = None) -> str:
    """One output in GitHub's multi-line form with a delimiter that cannot occur in ``value``."""
    if not name or any(ch in name for ch in "<\r\n=") or name != name.strip():
        raise ValueError(f"invalid output name {name!r}")
    for _ in range(16):
        delimiter = f"ghadelimiter_{token or _secrets.token_hex(16)}"
        if delimiter not in value:
            return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
        token = None
    raise ValueError("could not find a delimiter absent from the value")  # pragma: no cover


def write_outputs(path: str | None, outputs: Mapping[str, str]) -> None:
    """Append step outputs to ``GITHUB_OUTPUT`` (nothing when the path is not set)."""
    if not path:
        return
    text = "".join(heredoc(name, redact.redact(value)) for name, value in outputs.items())
    with Path(path).open("a", encoding="utf-8", errors="replace") as handle:
        handle.write(text)


def append_summary(path: str | None, markdown: str) -> None:
    """Append to ``GITHUB_STEP_SUMMARY`` (nothing when the path is not set)."""
    if not path:
        return
    markdown = redact.redact(markdown)
    with Path(path).open("a", encoding="utf-8", errors="replace") as handle:
        handle.write(markdown if markdown.endswith("\n") else markdown + "\n")


def outputs_for(report: Report) -> dict[str, str]:
    return {
        "state": report.state,
        "verdict": report.verdict,
        "description": report.description,
        "certificate": report.certificate_path or "",
        "reason": report.decision.reason,
        "family": str(report.family),
        "status": report.status,
        "sha": report.sha,
        "diff-sha": report.digests.get("diff_sha", ""),
        # the files beside the certificate; the run fills them in (gate.export)
        "statement": "",
        "predicate": "",
        "sarif": "",
        # what the review cost; the run fills them in when a review ran (gate.review.cost)
        "input-tokens": "",
        "output-tokens": "",
        "cost": "",
        # the estimate before any request (gate.review.cost.preflight), filled in when made
        "cost-bound": "",
        "cost-likely": "",
    }


# --- markdown --------------------------------------------------------------------


def _coverage_md(coverage: Coverage) -> list[str]:
    lines = [f"### Coverage: {md(coverage.summary())}", ""]
    if coverage.source == "files":
        lines += ["The diff was rebuilt from the files API (GitHub refused the full diff).", ""]
    if not coverage.complete:
        lines += [
            "**Partial coverage**: some changed files were not reviewed "
            "(binary, no patch from GitHub, over the byte limit, or unparseable).",
            "",
        ]
    assets = [s.path for s in coverage.skipped if s.why is SkipWhy.BINARY_ASSET]
    if assets:
        lines += [
            f"{len(assets)} binary asset(s) (image, font, audio, video: by name and first "
            "bytes) are not reviewable and do not block (`binary_assets: block` would): "
            + ", ".join(code(p) for p in assets[:MAX_LISTED_FILES])
            + (" …" if len(assets) > MAX_LISTED_FILES else ""),
            "",
        ]
    if coverage.reviewed:
        lines.append("<details><summary>Reviewed files</summary>\n")
        for path in coverage.reviewed[:MAX_LISTED_FILES]:
            lines.append(f"- {code(path)}")
        if len(coverage.reviewed) > MAX_LISTED_FILES:
            lines.append(f"- … and {len(coverage.reviewed) - MAX_LISTED_FILES} more")
        lines += ["", "</details>", ""]
    if coverage.skipped:
        lines += ["| not reviewed | why | bytes |", "|---|---|---|"]
        for item in coverage.skipped[:MAX_LISTED_FILES]:
            lines.append(f"| {code(item.path)} | {code(str(item.why))} | {item.size} |")
        if len(coverage.skipped) > MAX_LISTED_FILES:
            lines.append(f"| … {len(coverage.skipped) - MAX_LISTED_FILES} more | | |")
        lines.append("")
    return lines


def _attempts_md(attempts: Sequence[Attempt]) -> list[str]:
    if not attempts:
        return []
    lines = [
        "### Attempts",
        "",
        "| # | complete | reason | finish | end | HTTP | bytes | raw sha256 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a in attempts:
        lines.append(
            f"| {a.number} | {'yes' if a.complete else 'no'} | {code(a.reason or 'ok')} "
            f"| {code(str(a.finish_reason))} | {code(str(a.end_reason))} "
            f"| {a.http_status if a.http_status is not None else '—'} | {a.bytes_received} "
            f"| {code(a.raw_sha256[:16])} |"
        )
    details = [a for a in attempts if a.detail]
    if details:
        lines.append("")
        for a in details:
            lines.append(f"- attempt {a.number}: {md(a.detail)}")
    lines.append("")
    return lines


def _verdict_md(decision: Decision) -> list[str]:
    if decision.verdict is None:
        return []
    v = decision.verdict
    lines = [
        f"### Verdict: {code(v.verdict)} (confidence {v.confidence:g}, source {decision.source})",
        "",
    ]
    lines += [f"- {md(reason)}" for reason in v.reasons[:50]]
    lines.append("")
    return lines


def _chunks_md(rows: Sequence[Mapping[str, Any]], limit: int = MAX_LISTED_FILES) -> list[str]:
    """The per-chunk table: chunk, files, bytes, state, reason (a missing chunk never
    passes), and for a carried chunk the run its answers came from (no call was made)."""
    if not rows:
        return []
    carried = sum(1 for row in rows if row.get("carried"))
    lines = [
        f"### Chunks: {len(rows)}" + (f" ({carried} carried, not sent again)" if carried else ""),
        "",
        "| chunk | files | bytes | state | reason | carried from |",
        "|---|---|---|---|---|---|",
    ]
    # every chunk that did not pass is shown first (up to the limit); passing chunks fill
    # the rest, so a blocking chunk is never hidden behind "more"
    rank = {"pass": 2, "split": 1}  # a split row is evidence, never what blocked
    order = sorted(range(len(rows)), key=lambda i: (rank.get(str(rows[i]["state"]), 0), i))
    shown = sorted(order[:limit])
    for row in (rows[i] for i in shown):
        lines.append(
            f"| {md(str(row['chunk']))}/{row['of']} | {row['files']} | {row['bytes']} "
            f"| {code(str(row['state']))} | {code(str(row['reason']))} "
            f"| {md(str(row['carried'])) if row.get('carried') else '—'} |"
        )
    hidden = [rows[i] for i in order[limit:]]
    if hidden:
        passed = all(row["state"] in ("pass", "split") for row in hidden)
        what = "all `pass` or split" if passed else "the certificate lists every chunk"
        lines.append(f"| … {len(hidden)} more ({what}) | | | | | |")
    lines.append("")
    return lines


def summary_markdown(report: Report) -> str:
    d = report.decision
    icon = _ICON.get(report.state, "")
    lines = [
        f"## {icon} review-gate: {report.state} — {md(report.subject)}",
        "",
        "| | |",
        "|---|---|",
        f"| status | {code(report.status)} on {code(report.sha[:12])} ({code(report.context)}) |",
        f"| description | {md(report.description)} |",
        f"| family | {code(str(report.family))}: {FAMILY_MEANING[report.family]} |",
        f"| reason | {code(d.reason)} |",
    ]
    if report.run_url:
        lines.append(f"| run | {report.run_url} |")
    lines.append("")
    if d.detail and d.detail not in report.description:
        lines += [md(d.detail), ""]
    if report.next_step:
        lines += [report.next_step, ""]
    for note in report.notes:
        lines += [f"> {md(note)}", ""]
    lines += _verdict_md(d)
    lines += _chunks_md(report.chunks)
    if report.coverage is not None:
        lines += _coverage_md(report.coverage)
    lines += _attempts_md(report.attempts)
    digests = {k: v for k, v in report.digests.items() if v}
    if digests or report.certificate_path:
        lines += ["### Digests", "", "| | sha256 |", "|---|---|"]
        lines += [f"| {md(name)} | {code(value)} |" for name, value in sorted(digests.items())]
        if report.certificate_path:
            lines.append(f"| certificate file | {code(report.certificate_path)} |")
        lines.append("")
    return "\n".join(lines)


#: the most of a block's reason the comment holds (the job summary holds all of it)
MAX_COMMENT_DETAIL = 4000
#: binary assets the comment names (the summary names more)
MAX_NAMED_ASSETS = 10


def with_assets(description: str, coverage: Coverage | None) -> str:
    """The status description with the binary assets left unreviewed counted at its end
    (``· 2 binary assets not reviewable``), within GitHub's 140 characters: a pass that
    did not look at an image says so where branch protection shows it. A description
    that already counts them (a pass on assets alone) is kept as it is."""
    phrase = "" if coverage is None else coverage.asset_phrase()
    if not phrase or description.endswith(phrase):
        return description
    tail = f" · {phrase}"
    room = MAX_DESCRIPTION - len(tail)
    head = description if len(description) <= room else description[: room - 3].rstrip() + "..."
    return head + tail


def comment_marker(context: str) -> str:
    """The hidden marker that identifies the sticky comment (one per status context)."""
    safe = "".join(ch for ch in context if ch.isalnum() or ch in "-_.:/")
    while "--" in safe:  # "--" may not appear inside an HTML comment
        safe = safe.replace("--", "-")
    return f"<!-- review-gate:sticky:{safe} -->"


def comment_body(report: Report) -> str:
    d = report.decision
    icon = _ICON.get(report.state, "")
    lines = [
        comment_marker(report.context),
        f"### {icon} review-gate: {report.state}",
        "",
        f"{md(report.description)}",
        "",
        f"Commit {code(report.sha[:12])} · status {code(report.status)} · "
        f"family {code(str(report.family))} · reason {code(d.reason)}",
        f"{FAMILY_MEANING[report.family].capitalize()}.",
    ]
    if report.coverage is not None:
        lines.append(f"Coverage: {md(report.coverage.summary())}")
        assets = [s.path for s in report.coverage.skipped if s.why is SkipWhy.BINARY_ASSET]
        if assets:
            listed = ", ".join(code(p) for p in assets[:MAX_NAMED_ASSETS])
            more = (
                f" and {len(assets) - MAX_NAMED_ASSETS} more"
                if len(assets) > MAX_NAMED_ASSETS
                else ""
            )
            lines.append(f"Not reviewable (binary asset): {listed}{more}")
    lines.append("")
    # a block's full reason, never only the 140-character description, then who can act
    if report.family is not Family.PASS and d.detail and d.detail not in report.description:
        cut = len(d.detail) > MAX_COMMENT_DETAIL
        lines += [
            md(d.detail[:MAX_COMMENT_DETAIL]) + (" … (the summary has it all)" if cut else ""),
            "",
        ]
    if report.next_step:
        lines += [report.next_step, ""]
    for note in report.notes:
        lines += [f"> {md(note)}", ""]
    lines += _verdict_md(d)
    lines += _chunks_md(report.chunks, limit=20)
    if report.run_url:
        lines.append(f"[Run, summary and certificate]({report.run_url})")
    text = redact.redact("\n".join(lines))  # before the cut
    if len(text) > MAX_COMMENT_CHARS:
        text = text[:MAX_COMMENT_CHARS] + "\n\n… (cut; see the job summary)"
    return text


def state_of(decision: Decision) -> str:
    return str(decision.state) if decision.state in tuple(State) else "error"
