"""``review-gate stats --shadow`` states the rates ``review-gate backtest`` states, from the
same decisions: one definition of each rate (gate/backtest/rates.py), read once from a
backtest's answers and once from a shadow run's certificates on disk."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.backtest.cases import Case, Plan
from gate.backtest.rates import about_the_code
from gate.backtest.report import summarise
from gate.decide.decision import family_of
from gate.memory.stats import Run, health, load_folder, shadow_lines, shadow_rates

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WEEK = NOW - timedelta(days=7)

#: answers as the review gives them: a pass, a fail, answer-derived and other blocks
ANSWERS = [
    ("pass", "reviewer_pass"),
    ("fail", "reviewer_fail"),
    ("needs_human", "low_confidence"),
    ("needs_human", "multiple_fences"),
    ("incomplete", "http_429"),
    ("needs_human", "partial_coverage"),
]
decisions = st.lists(
    st.lists(st.sampled_from(ANSWERS), min_size=1, max_size=4), min_size=1, max_size=12
)
costs = st.sampled_from([0.0, 0.001, 0.25])


def backtest_config(cases: list[list[tuple[str, str]]], cost: float) -> dict[str, Any]:
    """The backtest report's config of these answers (each case presumed good, as a
    merged change that no commit reverts)."""
    plan = Plan(tuple(Case(f"q{i}", "allow", True, "history") for i in range(len(cases))), "h")
    rows, questions = [], {}
    for i, answers in enumerate(cases):
        for repeat, (state, reason) in enumerate(answers):
            questions[("A", f"q{i}", repeat)] = f"question-{i}"
            rows.append(
                {
                    "config": "A",
                    "case": f"q{i}",
                    "repeat": repeat,
                    "question": f"question-{i}",
                    "state": state,
                    "reason": reason,
                    "family": str(family_of(state, reason)),
                    "about_the_code": about_the_code(state, reason),
                    "asked": True,
                    "cost": cost,
                    "latency_s": 1.0,
                    "certificate": f"c/{i}-{repeat}.json",
                }
            )
    report = summarise(plan, ["A"], rows, questions, {"complete": True})
    return report["configs"][0]


def shadow_certificate(when: datetime, question: str, state: str, reason: str, cost: float):
    return {
        "schema": "review-gate.certificate/1",
        "created_at": when.isoformat(timespec="seconds"),
        "decision": {"state": state, "reason": reason},
        "context": {
            "github": {"repository": "o/r", "pull_request": 7},
            "shadow": {"context": "review-gate/shadow", "would": "x", "question": question},
            "cost": {"cost": cost},
        },
    }


def write_shadow(folder: Path, cases: list[list[tuple[str, str]]], cost: float) -> None:
    for i, answers in enumerate(cases):
        for repeat, (state, reason) in enumerate(answers):
            when = WEEK + timedelta(hours=1 + i, minutes=repeat)
            cert = shadow_certificate(when, f"{i:064x}", state, reason, cost)
            (folder / f"{i}-{repeat}.certificate.json").write_text(json.dumps(cert))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cases=decisions, cost=costs)
def test_stats_over_shadow_certificates_gives_the_backtests_rates(
    tmp_path_factory, cases, cost
) -> None:
    folder = tmp_path_factory.mktemp("shadow")
    write_shadow(folder, cases, cost)
    runs, unreadable = load_folder(folder)
    assert unreadable == 0
    shadow = shadow_rates(runs, since=WEEK, until=NOW)
    backtest = backtest_config(cases, cost)
    assert shadow["name"] == "shadow"
    for key in ("cases", "answers", "would_block", "stable_rate", "families"):
        assert shadow[key] == backtest[key], key
    assert shadow["cost"]["total"] == backtest["cost"]["total"]
    assert shadow["cost"]["per_case"] == backtest["cost"]["per_case"]


def test_the_rates_read_as_the_script_implies(tmp_path: Path) -> None:
    """Four questions: one blocks on the code, one on an outage, two pass; one of the two
    asked twice disagreed."""
    cases = [
        [("fail", "reviewer_fail")],
        [("incomplete", "http_429")],
        [("pass", "reviewer_pass"), ("pass", "reviewer_pass")],
        [("pass", "reviewer_pass"), ("fail", "reviewer_fail")],  # a tie blocks
    ]
    write_shadow(tmp_path, cases, 0.5)
    runs, _ = load_folder(tmp_path)
    rates = shadow_rates(runs, since=WEEK, until=NOW)
    block = rates["would_block"]
    assert (block["k"], block["n"]) == (3, 4)
    assert block["about_the_code"]["k"] == 2
    assert block["not_about_the_code"]["k"] == 1
    assert (rates["stable_rate"]["k"], rates["stable_rate"]["n"]) == (1, 2)
    assert rates["cost"]["total"] == 3.0
    text = "\n".join(shadow_lines(rates))
    assert "would_block: 75.0% [" in text
    assert "stable_rate: 50.0% [" in text


def test_shadow_answers_are_not_the_gates_runs() -> None:
    """The health report counts the gate's decisions: a shadow answer is none."""
    runs = [
        Run(WEEK + timedelta(hours=1), "fail", "reviewer_fail", shadow=True, question="a"),
        Run(WEEK + timedelta(hours=2), "pass", "reviewer_pass"),
    ]
    assert health(runs, since=WEEK, until=NOW).runs == 1
    assert shadow_rates(runs, since=WEEK, until=NOW)["cases"] == 1


def test_the_command_reports_the_shadow_rates(tmp_path: Path, capsys) -> None:
    from gate.cli import main

    now = datetime.now(UTC)
    for i, (state, reason) in enumerate([("fail", "reviewer_fail"), ("pass", "reviewer_pass")]):
        cert = shadow_certificate(now - timedelta(hours=1), f"{i:064x}", state, reason, 0.01)
        (tmp_path / f"{i}.certificate.json").write_text(json.dumps(cert))
    assert main(["stats", str(tmp_path), "--shadow", "--json"]) == 0
    rates = json.loads(capsys.readouterr().out)
    assert (rates["would_block"]["k"], rates["would_block"]["n"]) == (1, 2)
    assert main(["stats", str(tmp_path)]) == 0  # the health report: no run of the gate's
    assert "0 runs" in capsys.readouterr().out
