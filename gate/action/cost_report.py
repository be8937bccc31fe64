"""The cost of a run for people: a job summary section and the step outputs.

The figures come from :func:`gate.review.cost.cost_of` (the provider's own token counts, the
config's prices); this module only renders them. Unknown is shown as unknown, never 0.
"""

from __future__ import annotations

from gate.action.report import code, md
from gate.prices import CURRENCY
from gate.review.cost import CostReport, Preflight, money


def _show(value: int | float | None, *, price: bool = False) -> str:
    if value is None:
        return "unknown"
    return money(float(value)) if price else str(value)


def summary_lines(report: CostReport) -> list[str]:
    """``### Cost``: per attempt and in total; why a figure is unknown."""
    if not report.attempts:
        if report.unbilled:
            return [f"### Cost ({code(report.model or 'no model')})", "",
                    f"Nothing to pay: none of the {report.unbilled} request(s) made could be "
                    "billed (not sent, or refused with an error status).", ""]  # fmt: skip
        return []
    lines = [
        f"### Cost ({code(report.model or 'no model')})",
        "",
        f"| attempt | input tokens | output tokens | cost ({CURRENCY}) |",
        "|---|---|---|---|",
    ]
    for usage in report.attempts:
        lines.append(
            f"| {usage.attempt} | {_show(usage.input_tokens)} | {_show(usage.output_tokens)} "
            f"| {_show(usage.cost, price=True)} |"
        )
    lines.append(
        f"| total | {_show(report.input_tokens)} | {_show(report.output_tokens)} "
        f"| {_show(report.cost, price=True)} |"
    )
    lines.append("")
    if report.price is None:
        lines += [
            "No price for this model, neither under `pricing` in the config nor in "
            "review-gate's price table: the cost is unknown.",
            "",
        ]
    elif report.price_source:
        lines += [f"Priced from {md(report.price_source)}.", ""]
    elif report.cost is None:
        lines += ["An attempt reported no token counts: the total is unknown.", ""]
    return lines


def estimate_lines(estimate: Preflight) -> list[str]:
    """``### Cost estimate``: the bound ``max_cost`` holds and the likely figure, made
    before any request."""
    return ["### Cost estimate", "", md(estimate.line()), ""]
