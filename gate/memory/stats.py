"""Is the gate livable? Runs by family and reason over a window, and how long PRs waited.

The health report reads what the gate already keeps (certificates, records) and counts, over
a window, the runs by family (:class:`gate.decide.decision.Family`) and, within each, by reason:
``last 7 days: 120 runs; pass 82, rejected 20, needs_human 9 (multiple_fences 5,
low_confidence 4), unavailable 9 (http_429 7)``. The blocks that were not a rejection are
the gate's false-block rate on the team's own traffic: each one stopped a merge without the
reviewer saying the code was wrong. The median wait is how long a pull request stood
blocked (any family but ``pass`` and ``rejected``) before its next ``pass`` or ``rejected``.

A ``mode: shadow`` run's certificates (``context.shadow``, :mod:`gate.action.shadow`) are
not the gate's decisions: :func:`health` leaves them out, and :func:`shadow_rates` counts
them as ``review-gate backtest`` counts its answers (one definition of each rate,
:mod:`gate.backtest.rates`): a case is a question, each certificate one answer to it.

Pure: :func:`run_of_certificate`, :func:`run_of_record`, :func:`health` and
:func:`shadow_rates` take parsed values; :func:`load_folder` is the one reader, bounded in
files and bytes, each file through the strict JSON loader, and a file it cannot read is
counted, never guessed.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gate.backtest.rates import about_the_code, blocking, case_outcome, stable
from gate.decide.decision import Family, family_of
from gate.memory.record import HISTORY_SCHEMA, RecordError, from_json
from gate.review.certificate import SCHEMA as CERTIFICATE_SCHEMA
from gate.safe.strictjson import loads

#: the most files one report reads, and the most bytes of each (certificates are small)
MAX_FILES = 20_000
MAX_FILE_BYTES = 8 * 1024 * 1024
#: reasons shown per family, most frequent first
TOP_REASONS = 3
#: families in the order a report lists them
ORDER = (
    Family.PASS,
    Family.REJECTED,
    Family.NEEDS_HUMAN,
    Family.COVERAGE,
    Family.UNAVAILABLE,
    Family.CONFIG,
)
#: a pull request waits for a human while its newest decision is in one of these
WAITING = frozenset(ORDER) - {Family.PASS, Family.REJECTED}


@dataclass(frozen=True)
class Run:
    """One decision the gate made: when, what, and which pull request (``""``: unknown)."""

    time: datetime
    state: str
    reason: str
    pull: str = ""
    #: a ``mode: shadow`` run's answer: what the gate would have done, not a decision
    shadow: bool = False
    #: the question it answered (its key's id; ``""``: none was asked)
    question: str = ""
    #: what its review cost (0.0: no request was paid; None: unknown)
    cost: float | None = 0.0

    @property
    def family(self) -> Family:
        return family_of(self.state, self.reason)


@dataclass(frozen=True)
class Health:
    """The report over ``[since, until)``."""

    since: datetime
    until: datetime
    runs: int
    by_family: Mapping[Family, Mapping[str, int]]
    waits_hours: tuple[float, ...]
    still_waiting: int
    unreadable: int = 0

    def count(self, family: Family) -> int:
        return sum(self.by_family.get(family, {}).values())

    @property
    def false_blocks(self) -> int:
        """Blocks that were not a rejection: needs_human, coverage, unavailable, config."""
        return sum(self.count(f) for f in WAITING)

    @property
    def median_wait_hours(self) -> float | None:
        return statistics.median(self.waits_hours) if self.waits_hours else None

    def line(self) -> str:
        """``last 7 days: 120 runs; pass 82, rejected 20, needs_human 9 (…), …``."""
        days = max(1, round((self.until - self.since) / timedelta(days=1)))
        parts = []
        for family in ORDER:
            reasons = self.by_family.get(family, {})
            total = sum(reasons.values())
            if not total:
                continue
            text = f"{family} {total}"
            if family is not Family.PASS:
                top = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_REASONS]
                text += " (" + ", ".join(f"{reason} {n}" for reason, n in top) + ")"
            parts.append(text)
        plural = "run" if self.runs == 1 else "runs"
        body = "; " + ", ".join(parts) if parts else ""
        return f"last {days} day{'s' * (days != 1)}: {self.runs} {plural}{body}"

    def lines(self) -> list[str]:
        out = [self.line()]
        if self.runs:
            share = 100.0 * self.false_blocks / self.runs
            out.append(
                f"blocked without a rejection (needs_human, coverage, unavailable, config): "
                f"{self.false_blocks} of {self.runs} runs ({share:.0f}%)"
            )
        median = self.median_wait_hours
        if median is not None:
            out.append(
                f"median wait for a human: {median:.1f} h over {len(self.waits_hours)} "
                f"pull request{'s' * (len(self.waits_hours) != 1)}"
            )
        if self.still_waiting:
            out.append(f"still waiting at the end of the window: {self.still_waiting}")
        if self.unreadable:
            out.append(f"files that are neither a certificate nor a record: {self.unreadable}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat(timespec="seconds"),
            "until": self.until.isoformat(timespec="seconds"),
            "runs": self.runs,
            "families": {str(f): dict(sorted(self.by_family.get(f, {}).items())) for f in ORDER},
            "false_blocks": self.false_blocks,
            "median_wait_hours": self.median_wait_hours,
            "waits": len(self.waits_hours),
            "still_waiting": self.still_waiting,
            "unreadable": self.unreadable,
        }


def parse_time(text: object) -> datetime | None:
    """An ISO 8601 time with an offset, as UTC; None for anything else (never guessed)."""
    if not isinstance(text, str) or len(text) > 40:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value.astimezone(UTC) if value.tzinfo is not None else None


def run_of_certificate(cert: Mapping[str, Any]) -> Run | None:
    """The run a certificate records, or None when it is not one (or lacks a field)."""
    if cert.get("schema") != CERTIFICATE_SCHEMA:
        return None
    decision = cert.get("decision")
    when = parse_time(cert.get("created_at"))
    if not isinstance(decision, Mapping) or when is None:
        return None
    state, reason = decision.get("state"), decision.get("reason")
    if not isinstance(state, str) or not isinstance(reason, str):
        return None
    try:
        family_of(state, reason)
    except ValueError:
        return None
    context = cert.get("context")
    context = context if isinstance(context, Mapping) else {}
    github = context.get("github")
    pull = ""
    if isinstance(github, Mapping) and isinstance(github.get("pull_request"), int):
        pull = f"{github.get('repository') or ''}#{github['pull_request']}"
    shadow = context.get("shadow")
    if not isinstance(shadow, Mapping):
        return Run(when, state, reason, pull)
    question = shadow.get("question")
    return Run(
        when,
        state,
        reason,
        pull,
        shadow=True,
        question=question if isinstance(question, str) else "",
        cost=_cost_of(context.get("cost")),
    )


def _cost_of(spent: object) -> float | None:
    """A certificate's ``context.cost``: 0.0 when no review was paid, None when unknown."""
    if spent is None:
        return 0.0
    value = spent.get("cost") if isinstance(spent, Mapping) else None
    return float(value) if isinstance(value, int | float) else None


def run_of_record(data: Any, *, pull: str = "") -> Run | None:
    """The run a ``review-gate.record/1`` object records, or None when it is not one."""
    try:
        record = from_json(data)
    except RecordError:
        return None
    when = parse_time(record.time)
    if when is None or record.state == "skipped" or record.question_tag is not None:
        return None  # a row recovered from an earlier head's status is not a run
    return Run(when, record.state, record.reason, pull)


def health(runs: Iterable[Run], *, since: datetime, until: datetime, unreadable: int = 0) -> Health:
    """Count ``runs`` in ``[since, until)`` by family and reason; measure each pull request's
    waits (from its first waiting decision to its next pass or rejection)."""
    inside = sorted(
        (r for r in runs if since <= r.time < until and not r.shadow), key=lambda r: r.time
    )
    by_family: dict[Family, Counter[str]] = {}
    for run in inside:
        by_family.setdefault(run.family, Counter())[run.reason] += 1
    waits, still = _waits(inside)
    return Health(
        since=since,
        until=until,
        runs=len(inside),
        by_family={f: dict(c) for f, c in by_family.items()},
        waits_hours=tuple(waits),
        still_waiting=still,
        unreadable=unreadable,
    )


#: what ``would_block`` presumes of the pull requests a shadow run answered
SHADOW_PRESUMPTION = (
    "would_block counts every question a shadow run answered as presumed good: most pull "
    "requests a team opens are merged; read the blocked ones before trusting the rate"
)


def shadow_rates(runs: Iterable[Run], *, since: datetime, until: datetime) -> dict[str, Any]:
    """The backtest's rates over the shadow answers in ``[since, until)`` (module
    docstring): ``would_block`` with its interval and its split about the code, and
    ``stable_rate`` over the questions answered more than once, the keys a backtest
    report's config has (``name``, ``cases``, ``would_block``, ``stable_rate``, ``cost``);
    an answer with no question (the run stopped before one was asked) is a case alone."""
    cases: dict[str, list[Run]] = {}
    for number, run in enumerate(r for r in runs if r.shadow and since <= r.time < until):
        cases.setdefault(run.question or f"unasked-{number}", []).append(run)
    answers = [
        [(r.state, about_the_code(r.state, r.reason)) for r in found] for found in cases.values()
    ]
    steady = stable([r.state for r in found] for found in cases.values())
    flat = [r for found in cases.values() for r in found]
    known = all(r.cost is not None for r in flat)
    total = sum(r.cost or 0.0 for r in flat) if known else None
    return {
        "name": "shadow",
        "since": since.isoformat(timespec="seconds"),
        "until": until.isoformat(timespec="seconds"),
        "presumption": SHADOW_PRESUMPTION,
        "cases": len(cases),
        "answers": len(flat),
        "would_block": blocking([case_outcome(found) for found in answers]),
        "stable_rate": steady.to_json() if steady is not None else None,
        "families": dict(sorted(Counter(str(r.family) for r in flat).items())),
        "cost": {
            "currency": "USD",
            "total": total,
            "per_case": total / len(cases) if total is not None and cases else None,
        },
    }


def shadow_lines(rates: Mapping[str, Any]) -> list[str]:
    """:func:`shadow_rates` for a terminal."""
    from gate.backtest.rates import Rate

    def text(obj: Mapping[str, Any] | None) -> str:
        return "-" if obj is None else Rate(obj["k"], obj["n"]).text()

    block, cost = rates["would_block"], rates["cost"]
    money = "unknown" if cost["total"] is None else f"{cost['total']:.4f} {cost['currency']}"
    per = "" if cost["per_case"] is None else f" ({cost['per_case']:.4f} per question)"
    return [
        f"shadow: {rates['cases']} questions, {rates['answers']} answers",
        f"would_block: {text(block)}; about the code {text(block['about_the_code'])}; "
        f"not about the code {text(block['not_about_the_code'])}",
        f"stable_rate: {text(rates['stable_rate'])} (questions answered more than once)",
        f"cost: {money}{per}",
        rates["presumption"],
    ]


def _waits(runs: Sequence[Run]) -> tuple[list[float], int]:
    started: dict[str, datetime] = {}
    waits: list[float] = []
    for run in runs:
        if not run.pull:
            continue
        if run.family in WAITING:
            started.setdefault(run.pull, run.time)
        elif run.pull in started:
            waits.append((run.time - started.pop(run.pull)) / timedelta(hours=1))
    return waits, len(started)


def load_folder(folder: Path) -> tuple[list[Run], int]:
    """Every certificate and record under ``folder`` (``*.json``, recursively, at most
    :data:`MAX_FILES`), and how many files were neither. A history block's records are read
    too (``{"schema": "review-gate.history/1", "records": [...]}``), keyed to their file."""
    runs: list[Run] = []
    unreadable = 0
    for count, path in enumerate(sorted(folder.rglob("*.json"))):
        if count >= MAX_FILES:
            break
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                unreadable += 1
                continue
            data = loads(path.read_bytes(), what=str(path), error=RecordError)
        except (OSError, RecordError):
            unreadable += 1
            continue
        found = _runs_in(data, pull=str(path))
        if found:
            runs.extend(found)
        else:
            unreadable += 1
    return runs, unreadable


def _runs_in(data: Any, *, pull: str) -> list[Run]:
    if not isinstance(data, dict):
        return []
    if data.get("schema") == HISTORY_SCHEMA and isinstance(data.get("records"), list):
        found = (run_of_record(item, pull=pull) for item in data["records"][:1000])
        return [run for run in found if run is not None]
    run = run_of_certificate(data) if "decision" in data else run_of_record(data)
    return [run] if run is not None else []
