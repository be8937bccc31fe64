"""gate.backtest.rates: Wilson intervals, the exact McNemar test and percentiles against
values computed independently (by hand from the binomial, and published examples)."""

from __future__ import annotations

import math

import pytest

from gate.backtest.rates import Rate, mcnemar, percentile, wilson


def test_wilson_matches_the_closed_form_at_known_points() -> None:
    # 5 of 10: centre 0.5, half-width z*sqrt(.025 + z^2/400)/(1 + z^2/10)
    low, high = wilson(5, 10) or (0, 0)
    assert low == pytest.approx(0.236593, abs=1e-6)
    assert high == pytest.approx(0.763407, abs=1e-6)
    # none of 10: the lower end is 0, the upper z^2/(n + z^2)
    z2 = 1.959964**2
    assert wilson(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    assert wilson(10, 10) == pytest.approx((10 / (10 + z2), 1.0))
    assert wilson(0, 0) is None
    with pytest.raises(ValueError, match="successes"):
        wilson(11, 10)


def test_the_interval_holds_the_rate_and_stays_in_bounds() -> None:
    for n in range(1, 40):
        for k in range(n + 1):
            low, high = wilson(k, n) or (0, 0)
            assert 0.0 <= low <= k / n <= high <= 1.0


def test_mcnemar_is_the_exact_binomial_two_sided_p() -> None:
    assert mcnemar(0, 0) == 1.0
    assert mcnemar(0, 3) == 0.25  # 2 * (1/2)^3
    assert mcnemar(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar(5, 5) == 1.0  # capped
    assert mcnemar(2, 8) == mcnemar(8, 2)
    by_hand = 2 * sum(math.comb(20, i) for i in range(5)) / 2**20
    assert mcnemar(4, 16) == pytest.approx(by_hand)


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 11)], 90) == 9.0
    assert percentile([7.0], 90) == 7.0


def test_rate_text_and_json() -> None:
    assert Rate(0, 0).text() == "-"
    assert Rate(1, 4).text().startswith("25.0% [")
    assert Rate(1, 4).to_json()["rate"] == 0.25
