"""The backtest's report: the answers of ``results.jsonl`` turned into rates, per config.

:func:`summarise` builds one JSON object (the ``--json`` output and ``report.json``); the
terminal table and the Markdown report (:func:`terminal`, :func:`markdown`) and the HTML
report (:mod:`gate.backtest.html`) are drawn from it, so every output says the same.

A case's outcome under a config is ``block`` when at least half its answers block (a tie
blocks: fail closed), and the block is *about the code* when at least half its blocking
answers are (:func:`gate.backtest.rates.case_outcome`, one definition of each rate). Per
config:

- ``would_block``: blocked cases among the presumed-good history (merged changes no
  commit reverts; a presumption, said in the report), split about the code / not;
- ``catch_rate``: blocked cases among those labelled ``block`` (reverted, or the file's);
- ``false_block_rate``: blocked cases among those labelled ``allow`` in a cases file;
- ``stable_rate``: cases whose answers (``--repeat K``, K > 1) all have the same state;
- cost (the sum of every answer's actual cost; unknown when any is) and its projection
  at the repository's own merge rate (30 days); latency p50/p90 of the answers asked.

Every rate carries its Wilson 95% interval. Two or more configs are compared pairwise
(the first against each other) on the cases both answered: the paired difference of each
rate and the exact McNemar p-value of its discordant pairs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gate.backtest.cases import Plan
from gate.backtest.rates import Rate, blocking, case_outcome, mcnemar, percentile, stable
from gate.safe import untrusted

SCHEMA = "review-gate.backtest/1"
CURRENCY = "USD"
PRESUMPTION = (
    "would_block counts merged changes that no later commit reverts, presumed good: merged "
    "changes are what the team accepted, not proven correct"
)
RATES = ("would_block", "catch_rate", "false_block_rate")
#: the split of a block rate that only ``would_block`` states
SPLIT = ("about_the_code", "not_about_the_code")


def _case_outcome(answers: Sequence[Mapping[str, Any]]) -> tuple[bool, bool]:
    """(blocked, about the code) of one case's answers (:func:`rates.case_outcome`)."""
    return case_outcome([(a["state"], bool(a["about_the_code"])) for a in answers])


def summarise(
    plan: Plan,
    names: Sequence[str],
    rows: Iterable[Mapping[str, Any]],
    questions: Mapping[tuple[str, str, int], str],
    status: Mapping[str, Any],
) -> dict[str, Any]:
    """The report (module docstring) of the rows asked under this run's questions."""
    answers: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        key = (row.get("config"), row.get("case"), row.get("repeat"))
        if questions.get(key) == row.get("question"):  # type: ignore[arg-type]
            answers[(str(row["config"]), str(row["case"]))].append(row)
    configs = [_config(name, plan, answers) for name in names]
    cases = [
        {
            "id": case.id,
            "label": case.label,
            "presumed": case.presumed,
            "source": case.source,
            "decisions": {
                name: [_decision(a) for a in sorted(found, key=lambda a: a["repeat"])]
                for name in names
                if (found := answers.get((name, case.id)))
            },
        }
        for case in plan.cases
    ]
    return {
        "schema": SCHEMA,
        "source": plan.source,
        "presumption": PRESUMPTION,
        "status": dict(status),
        "merges_per_30_days": plan.merges_per_30_days,
        "configs": configs,
        "comparisons": [_compare(names[0], other, plan, answers) for other in names[1:]],
        "cases": cases,
    }


def _decision(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("state", "reason", "family", "about_the_code", "certificate")}


def _subsets(plan: Plan) -> dict[str, list[str]]:
    """The cases each rate counts, by id."""
    return {
        "would_block": [c.id for c in plan.cases if c.label == "allow" and c.presumed],
        "catch_rate": [c.id for c in plan.cases if c.label == "block"],
        "false_block_rate": [c.id for c in plan.cases if c.label == "allow" and not c.presumed],
    }


def _config(
    name: str, plan: Plan, answers: Mapping[tuple[str, str], list[Mapping[str, Any]]]
) -> dict[str, Any]:
    mine = {case: found for (config, case), found in answers.items() if config == name}
    outcome = {case: _case_outcome(found) for case, found in mine.items()}
    out: dict[str, Any] = {"name": name, "cases": len(mine)}
    for rate, ids in _subsets(plan).items():
        counted = blocking([outcome[i] for i in ids if i in outcome])
        if rate != "would_block":  # the split is read on presumed-good history only
            counted = {k: v for k, v in counted.items() if k not in SPLIT}
        out[rate] = counted
    steady = stable([a["state"] for a in found] for found in mine.values())
    out["stable_rate"] = steady.to_json() if steady is not None else None
    flat = [a for found in mine.values() for a in found]
    out["answers"] = len(flat)
    out["families"] = dict(sorted(_count(a["family"] for a in flat).items()))
    out["cost"] = _cost(flat, len(mine), plan.merges_per_30_days)
    asked = [float(a["latency_s"]) for a in flat if a.get("asked")]
    out["latency_s"] = {"p50": percentile(asked, 50), "p90": percentile(asked, 90)}
    return out


def _count(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return counts


def _cost(flat: Sequence[Mapping[str, Any]], cases: int, rate: float | None) -> dict[str, Any]:
    known = all(a.get("cost") is not None for a in flat)
    total = sum(float(a.get("cost") or 0.0) for a in flat) if known else None
    per_case = total / cases if total is not None and cases else None
    projection = per_case * rate if per_case is not None and rate is not None else None
    return {
        "currency": CURRENCY,
        "total": total,
        "per_case": per_case,
        "merges_per_30_days": rate,
        "projection_30_days": projection,
        "note": "priced by the config's pricing, else review-gate's dated table (US dollars); "
        "null when a price or a token count is unknown",
    }


def _compare(
    first: str, other: str, plan: Plan, answers: Mapping[tuple[str, str], list[Mapping[str, Any]]]
) -> dict[str, Any]:
    """``other`` against ``first`` on the cases both answered, rate by rate."""
    out: dict[str, Any] = {"a": first, "b": other}
    for rate, ids in _subsets(plan).items():
        pairs = [
            (_case_outcome(answers[(first, i)])[0], _case_outcome(answers[(other, i)])[0])
            for i in ids
            if (first, i) in answers and (other, i) in answers
        ]
        a_only = sum(1 for a, b in pairs if a and not b)
        b_only = sum(1 for a, b in pairs if b and not a)
        n = len(pairs)
        out[rate] = {
            "pairs": n,
            "a": sum(1 for a, _ in pairs if a) / n if n else None,
            "b": sum(1 for _, b in pairs if b) / n if n else None,
            "difference": (b_only - a_only) / n if n else None,
            "a_only": a_only,
            "b_only": b_only,
            "p_value": mcnemar(a_only, b_only),
        }
    return out


# --- text ----------------------------------------------------------------------------------


def _rate(obj: Mapping[str, Any] | None) -> str:
    return "-" if obj is None else Rate(obj["k"], obj["n"]).text()


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f} {CURRENCY}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def config_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """The per-config table, header first (the terminal, Markdown and HTML share it)."""
    rows = [
        [
            "config",
            "cases",
            "would block",
            "about the code",
            "not about the code",
            "catch",
            "false block",
            "stable",
            "cost",
            "30-day projection",
            "p50 / p90",
        ]
    ]
    for c in report["configs"]:
        wb = c["would_block"]
        rows.append(
            [
                untrusted.line(c["name"]),
                str(c["cases"]),
                _rate(wb),
                _rate(wb["about_the_code"]),
                _rate(wb["not_about_the_code"]),
                _rate(c["catch_rate"]),
                _rate(c["false_block_rate"]),
                _rate(c["stable_rate"]),
                _money(c["cost"]["total"]),
                _money(c["cost"]["projection_30_days"]),
                f"{_seconds(c['latency_s']['p50'])} / {_seconds(c['latency_s']['p90'])}",
            ]
        )
    return rows


def comparison_rows(report: Mapping[str, Any]) -> list[list[str]]:
    rows = [["comparison", "rate", "pairs", "A", "B", "B - A", "A only", "B only", "McNemar p"]]
    for comp in report["comparisons"]:
        for rate in RATES:
            r = comp[rate]
            if not r["pairs"]:
                continue
            rows.append(
                [
                    f"{untrusted.line(comp['a'])} vs {untrusted.line(comp['b'])}",
                    rate,
                    str(r["pairs"]),
                    f"{100 * r['a']:.1f}%",
                    f"{100 * r['b']:.1f}%",
                    f"{100 * r['difference']:+.1f} pts",
                    str(r["a_only"]),
                    str(r["b_only"]),
                    f"{r['p_value']:.4g}",
                ]
            )
    return rows


def _status_line(report: Mapping[str, Any]) -> str:
    status = report["status"]
    if status.get("complete"):
        return f"complete: {status['asked']} answers asked, {status['skipped']} kept from before"
    why = status.get("stopped") or ("interrupted (Ctrl-C)" if status.get("interrupted") else "")
    return (
        f"PARTIAL ({why}): {status['asked']} asked, {status['skipped']} kept of {status['total']}"
    )


def terminal(report: Mapping[str, Any]) -> str:
    """The tables as aligned text, for a terminal."""
    out = [f"backtest of {untrusted.line(report['source'])}", _status_line(report), ""]
    for table in (config_rows(report), comparison_rows(report)):
        if len(table) < 2:
            continue
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        out += [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in table
        ]
        out.append("")
    out.append(f"note: {PRESUMPTION}")
    return "\n".join(out)


def _md_table(rows: Sequence[Sequence[str]]) -> list[str]:
    # a merge's subject is a pull request's title, a case's id and source a file's words:
    # every cell renders as exactly its text (no tag, link, comment, mention or reference)
    md = untrusted.md
    lines = ["| " + " | ".join(md(c) for c in rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows[1:]]
    return lines


def case_rows(report: Mapping[str, Any]) -> list[list[str]]:
    names = [c["name"] for c in report["configs"]]
    rows = [["case", "label", *names, "source"]]
    for case in report["cases"]:
        label = case["label"] + (" (presumed)" if case["presumed"] else "")
        cells = [
            ", ".join(f"{d['state']} ({d['reason']}) {d['certificate']}" for d in found) or "-"
            for found in (case["decisions"].get(name, []) for name in names)
        ]
        rows.append([case["id"], label, *cells, case["source"]])
    return rows


def markdown(report: Mapping[str, Any]) -> str:
    """The report for a job summary: the tables, the note, one row per case."""
    out = [
        "## review-gate backtest",
        "",
        untrusted.md(f"{report['source']}: {_status_line(report)}"),
        "",
    ]
    out += [*_md_table(config_rows(report)), ""]
    if len(comparison := comparison_rows(report)) > 1:
        out += ["### Paired comparison (exact McNemar test on discordant cases)", ""]
        out += [*_md_table(comparison), ""]
    out += [f"> {PRESUMPTION}", "", "### Cases", ""]
    out += _md_table(case_rows(report))
    return "\n".join(out) + "\n"
