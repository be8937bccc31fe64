"""The statistics a backtest report states: a rate with its Wilson 95% interval, the exact
McNemar test on paired cases, percentiles. Pure; the standard library only.

- :func:`rate`: ``k`` of ``n`` with the Wilson score interval at 95% (z = 1.959964), which
  stays inside [0, 1] and is honest for small ``n`` and rates near 0 or 1 (the normal
  approximation is not);
- :func:`mcnemar`: two configs on the same cases; only the discordant pairs carry
  information (``b``: A blocks and B does not; ``c``: the reverse); the exact two-sided
  p-value is ``min(1, 2 * P(X <= min(b, c)))`` for X ~ Binomial(b + c, 1/2);
- :func:`percentile`: the nearest-rank percentile (a value that was observed).

And the one definition of each rate a report states, which the backtest's report
(:mod:`gate.backtest.report`) and ``review-gate stats --shadow`` over a ``mode: shadow``
run's certificates (:func:`gate.memory.stats.shadow_rates`) both use:

- :func:`about_the_code`: an answer's block is the reviewer's judgement of the code;
- :func:`case_outcome`: a case (one question) blocks when at least half its answers do
  (a tie blocks: fail closed), about the code when at least half its blocking answers are;
- :func:`blocking`: the share of cases that block, split about the code and not;
- :func:`stable`: the share of cases asked more than once whose answers all agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959964
#: needs_human reasons that come from a complete, bound answer (the reviewer's judgement):
#: with ``fail`` they are the blocks about the code; every other block is not
ANSWER_REASONS = frozenset({"low_confidence", "no_reasons", "unstable"})


@dataclass(frozen=True)
class Rate:
    """``k`` of ``n``, the share and its Wilson 95% interval (None when ``n`` is 0)."""

    k: int
    n: int

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.k, self.n)

    def to_json(self) -> dict[str, Any]:
        low, high = self.interval or (None, None)
        return {"k": self.k, "n": self.n, "rate": self.value, "low": low, "high": high}

    def text(self) -> str:
        """``12.5% [5.1-27.2] (4/32)``, or ``-`` when nothing was counted."""
        if not self.n:
            return "-"
        low, high = self.interval or (0.0, 0.0)
        return (
            f"{100 * self.k / self.n:.1f}% [{100 * low:.1f}-{100 * high:.1f}] ({self.k}/{self.n})"
        )


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` successes in ``n`` trials (None for ``n`` 0)."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"wilson: {k} successes out of {n}")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # the ends are exact at 0 and n (rounding would leave 1e-17 on the wrong side)
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def mcnemar(b: int, c: int) -> float:
    """The exact two-sided McNemar p-value of ``b`` and ``c`` discordant pairs (1.0 when
    there is none: no evidence of a difference)."""
    n = b + c
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of ``values``, None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def about_the_code(state: str, reason: str) -> bool:
    """Whether a block is the reviewer's judgement of the code (a ``fail``, or a
    ``needs_human`` of a complete, bound answer) rather than a malformed or missing
    answer, an outage, the coverage or the budget."""
    return state == "fail" or (state == "needs_human" and reason in ANSWER_REASONS)


def case_outcome(answers: Sequence[tuple[str, bool]]) -> tuple[bool, bool]:
    """(blocked, about the code) of one case from its answers, each (state, whether its
    block is about the code): blocked when at least half the answers block (a tie
    blocks), about the code when at least half the blocking answers are."""
    blocking = [code for state, code in answers if state != "pass"]
    blocked = 2 * len(blocking) >= len(answers)
    return blocked, blocked and 2 * sum(blocking) >= len(blocking)


def blocking(outcomes: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """The share of cases that block (``would_block`` on presumed-good cases, the catch
    or false-block rate on labelled ones), with the block split about the code and not."""
    n = len(outcomes)
    counted = Rate(sum(1 for b, _ in outcomes if b), n).to_json()
    counted["about_the_code"] = Rate(sum(1 for _, c in outcomes if c), n).to_json()
    counted["not_about_the_code"] = Rate(sum(1 for b, c in outcomes if b and not c), n).to_json()
    return counted


def stable(cases: Iterable[Sequence[str]]) -> Rate | None:
    """``stable_rate``: of the cases answered more than once (their answers' states), the
    ones whose answers all have the same state; None when no case was asked twice."""
    repeated = [states for states in cases if len(states) > 1]
    if not repeated:
        return None
    return Rate(sum(1 for states in repeated if len(set(states)) == 1), len(repeated))
