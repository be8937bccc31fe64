"""The health report: runs by family and reason, the false blocks, the median wait."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gate.decide.decision import Family
from gate.memory.stats import Run, health, load_folder, run_of_certificate

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WEEK = NOW - timedelta(days=7)


def cert(when: datetime, state: str, reason: str, pull: int | None = 7) -> dict[str, Any]:
    return {
        "schema": "review-gate.certificate/1",
        "created_at": when.isoformat(timespec="seconds"),
        "decision": {"state": state, "reason": reason},
        "context": {"github": {"repository": "o/r", "pull_request": pull}},
    }


def example_runs() -> list[Run]:
    """The issue's example: 120 runs over the week."""
    spec = [
        ("pass", "reviewer_pass", 82),
        ("fail", "reviewer_fail", 20),
        ("needs_human", "multiple_fences", 5),
        ("needs_human", "low_confidence", 4),
        ("incomplete", "http_429", 7),
        ("incomplete", "connection_cut", 2),
    ]
    runs = []
    minute = 0
    for state, reason, count in spec:
        for _ in range(count):
            minute += 1
            runs.append(Run(WEEK + timedelta(minutes=minute), state, reason))
    return runs


def test_the_issues_example_reads_as_the_issue_wrote_it() -> None:
    report = health(example_runs(), since=WEEK, until=NOW)
    assert report.line() == (
        "last 7 days: 120 runs; pass 82, rejected 20 (reviewer_fail 20), needs_human 9 "
        "(multiple_fences 5, low_confidence 4), unavailable 9 (http_429 7, connection_cut 2)"
    )
    assert report.false_blocks == 18
    assert "18 of 120 runs (15%)" in "\n".join(report.lines())
    assert report.to_json()["families"]["unavailable"] == {"connection_cut": 2, "http_429": 7}


def test_runs_outside_the_window_are_not_counted() -> None:
    runs = [
        Run(WEEK - timedelta(seconds=1), "fail", "reviewer_fail"),
        Run(WEEK, "pass", "reviewer_pass"),
        Run(NOW, "pass", "reviewer_pass"),  # the window is half-open
    ]
    report = health(runs, since=WEEK, until=NOW)
    assert report.runs == 1
    assert report.count(Family.PASS) == 1


def test_the_median_wait_runs_from_the_first_block_to_the_next_pass_or_rejection() -> None:
    t = WEEK + timedelta(hours=1)
    runs = [
        Run(t, "needs_human", "low_confidence", "a"),
        Run(t + timedelta(hours=1), "incomplete", "http_429", "a"),  # still waiting
        Run(t + timedelta(hours=5), "pass", "override", "a"),  # 5 h
        Run(t, "incomplete", "quota_exhausted", "b"),
        Run(t + timedelta(hours=2), "fail", "reviewer_fail", "b"),  # 2 h
        Run(t, "needs_human", "config_invalid", "c"),
        Run(t + timedelta(hours=9), "pass", "reviewer_pass", "c"),  # 9 h
        Run(t, "needs_human", "partial_coverage", "d"),  # never answered
        Run(t, "needs_human", "unstable", ""),  # no pull request: not a wait
    ]
    report = health(runs, since=WEEK, until=NOW)
    assert sorted(report.waits_hours) == [2.0, 5.0, 9.0]
    assert report.median_wait_hours == 5.0
    assert report.still_waiting == 1
    assert "median wait for a human: 5.0 h over 3 pull requests" in report.lines()


def test_a_folder_of_certificates_and_records(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(
        json.dumps(cert(NOW - timedelta(hours=3), "fail", "reviewer_fail"))
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text(
        json.dumps(cert(NOW - timedelta(hours=2), "needs_human", "no_reasons", pull=8))
    )
    (tmp_path / "junk.json").write_text('{"schema": "something else"}')
    (tmp_path / "dup.json").write_text('{"a": 1, "a": 2}')  # strict: refused, counted
    (tmp_path / "bad-state.json").write_text(json.dumps(cert(NOW, "maybe", "x")))
    runs, unreadable = load_folder(tmp_path)
    assert sorted(r.reason for r in runs) == ["no_reasons", "reviewer_fail"]
    assert unreadable == 3
    assert {r.pull for r in runs} == {"o/r#7", "o/r#8"}


@pytest.mark.parametrize(
    "broken",
    [
        {},
        {"schema": "review-gate.certificate/1"},
        {"schema": "review-gate.certificate/1", "created_at": "yesterday", "decision": {}},
        {**cert(NOW, "pass", "reviewer_pass"), "created_at": "2026-12-01T12:00:00"},  # no offset
        {**cert(NOW, "pass", "reviewer_pass"), "decision": {"state": "pass", "reason": 3}},
    ],
)
def test_a_certificate_lacking_a_field_is_not_a_run(broken: dict[str, Any]) -> None:
    assert run_of_certificate(broken) is None


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gate.cli import main

    now = datetime.now(UTC)
    for index, (state, reason) in enumerate(
        [("pass", "reviewer_pass"), ("incomplete", "http_429"), ("needs_human", "config_yaml")]
    ):
        (tmp_path / f"{index}.json").write_text(
            json.dumps(cert(now - timedelta(hours=index + 1), state, reason))
        )
    assert main(["stats", str(tmp_path), "--days", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "last 1 day: 3 runs; pass 1, unavailable 1 (http_429 1), config 1 (config_yaml 1)"
    )
    assert main(["stats", str(tmp_path), "--json", "--family", "unavailable"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"] == 1
    assert main(["stats", str(tmp_path), "--family", "outage"]) == 2
    assert "not a family" in capsys.readouterr().err
    assert main(["stats", str(tmp_path / "nope")]) == 2
