"""The backtest report as one self-contained HTML page: a chart drawn as plain SVG, the
tables, one row per case. No script, no font, no request at view time: everything the page
shows is in the file. Every text from a config name, a commit subject or a reason is
escaped (:func:`html.escape`) after :func:`gate.safe.untrusted.line`.

The chart: one group of bars per rate (would block, catch, false block), one bar per
config in each, the would-block bar split into blocks about the code (solid) and not
(hatched), each bar with its Wilson 95% interval as a whisker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from gate.backtest.report import PRESUMPTION, comparison_rows, config_rows
from gate.safe import untrusted

WIDTH, HEIGHT = 760, 340
LEFT, TOP, BOTTOM = 56, 24, 64
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
GROUPS = (
    ("would_block", "would block (presumed good)"),
    ("catch_rate", "catch (block cases)"),
    ("false_block_rate", "false block (allow cases)"),
)


def _text(value: str) -> str:
    return escape(untrusted.line(value))


def _y(rate: float) -> float:
    return TOP + (1 - rate) * (HEIGHT - TOP - BOTTOM)


def _bar(x: float, width: float, obj: Mapping[str, Any], colour: str, split: bool) -> list[str]:
    """One bar (and its whisker) for a rate object; nothing when the rate counted no case."""
    if not obj["n"]:
        return [
            f'<text x="{x + width / 2:.1f}" y="{_y(0) - 4:.1f}" font-size="10" '
            'text-anchor="middle">n/a</text>'
        ]
    out = []
    rate, low, high = obj["rate"], obj["low"], obj["high"]
    if split:
        code = obj["about_the_code"]["rate"] or 0.0
        out.append(
            f'<rect x="{x:.1f}" y="{_y(code):.1f}" width="{width:.1f}" '
            f'height="{_y(0) - _y(code):.1f}" fill="{colour}"/>'
        )
        out.append(
            f'<rect x="{x:.1f}" y="{_y(rate):.1f}" width="{width:.1f}" '
            f'height="{_y(code) - _y(rate):.1f}" fill="url(#hatch)" stroke="{colour}"/>'
        )
    else:
        out.append(
            f'<rect x="{x:.1f}" y="{_y(rate):.1f}" width="{width:.1f}" '
            f'height="{_y(0) - _y(rate):.1f}" fill="{colour}"/>'
        )
    mid = x + width / 2
    out.append(
        f'<line x1="{mid:.1f}" x2="{mid:.1f}" y1="{_y(low):.1f}" y2="{_y(high):.1f}" '
        'stroke="#000" stroke-width="1.5"/>'
    )
    for end in (low, high):
        out.append(
            f'<line x1="{mid - 5:.1f}" x2="{mid + 5:.1f}" y1="{_y(end):.1f}" '
            f'y2="{_y(end):.1f}" stroke="#000" stroke-width="1.5"/>'
        )
    out.append(
        f'<text x="{mid:.1f}" y="{_y(high) - 4:.1f}" font-size="10" '
        f'text-anchor="middle">{100 * rate:.0f}%</text>'
    )
    return out


def chart(report: Mapping[str, Any]) -> str:
    """The SVG chart (module docstring)."""
    configs = report["configs"]
    plot = WIDTH - LEFT - 16
    group = plot / len(GROUPS)
    bar = min(48.0, (group - 24) / max(1, len(configs)))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="rates per config">',
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#888" stroke-width="3"/></pattern></defs>',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - 16}" y1="{_y(tick):.1f}" '
            f'y2="{_y(tick):.1f}" stroke="#ddd"/>'
        )
        parts.append(
            f'<text x="{LEFT - 6}" y="{_y(tick) + 4:.1f}" font-size="11" '
            f'text-anchor="end">{100 * tick:.0f}%</text>'
        )
    for g, (key, label) in enumerate(GROUPS):
        start = LEFT + g * group + (group - bar * len(configs)) / 2
        for i, config in enumerate(configs):
            colour = COLOURS[i % len(COLOURS)]
            parts += _bar(start + i * bar + 2, bar - 4, config[key], colour, key == "would_block")
        parts.append(
            f'<text x="{LEFT + g * group + group / 2:.1f}" y="{HEIGHT - BOTTOM + 18}" '
            f'font-size="12" text-anchor="middle">{escape(label)}</text>'
        )
    for i, config in enumerate(configs):
        x = LEFT + i * 150
        parts.append(
            f'<rect x="{x}" y="{HEIGHT - 26}" width="12" height="12" '
            f'fill="{COLOURS[i % len(COLOURS)]}"/>'
        )
        parts.append(
            f'<text x="{x + 16}" y="{HEIGHT - 16}" font-size="12">'
            f"{_text(config['name'])[:22]}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _table(rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{_text(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{_text(c)}</td>" for c in row) + "</tr>" for row in rows[1:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cases(report: Mapping[str, Any]) -> str:
    """One row per case; each answer links to its certificate (a path inside ``--out``,
    beside this page)."""
    names = [c["name"] for c in report["configs"]]
    head = "".join(f"<th>{_text(c)}</th>" for c in ["case", "label", *names, "source"])
    rows = []
    for case in report["cases"]:
        label = case["label"] + (" (presumed)" if case["presumed"] else "")
        cells = [
            ", ".join(
                f'<a href="{escape(d["certificate"], quote=True)}">'
                f"{_text(d['state'])} ({_text(d['reason'])})</a>"
                for d in case["decisions"].get(name, [])
            )
            or "-"
            for name in names
        ]
        row = [_text(case["id"]), _text(label), *cells, _text(case["source"])]
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


STYLE = (
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#111}"
    "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:3px 6px;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}.note{color:#555}"
)


NOTE = (
    "Bars: the share of cases blocked; whiskers: the Wilson 95% interval. The would-block bar "
    "is solid for blocks about the code, hatched for the rest (malformed or missing answers, "
    "outages, coverage, budget)."
)
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def page(report: Mapping[str, Any]) -> str:
    """The whole HTML document."""
    status = report["status"]
    state = "complete" if status.get("complete") else "PARTIAL"
    stopped = f": {_text(status['stopped'])}" if status.get("stopped") else ""
    counts = f"{status.get('asked', 0)} answers asked, {status.get('skipped', 0)} kept from before"
    comparison = comparison_rows(report)
    parts = [
        "<!doctype html>",
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>review-gate backtest</title><style>{STYLE}</style></head><body>",
        "<h1>review-gate backtest</h1>",
        f"<p>{_text(report['source'])}: {state}, {counts}{stopped}</p>",
        chart(report),
        f'<p class="note">{NOTE}</p>',
        "<h2>Per config</h2>",
        _table(config_rows(report)),
        "<h2>Paired comparison</h2>" + _table(comparison) if len(comparison) > 1 else "",
        f'<p class="note">{escape(PRESUMPTION)}</p>',
        "<h2>Cases</h2>",
        _cases(report),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
