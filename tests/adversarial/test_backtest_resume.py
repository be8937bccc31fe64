"""Class: a results.jsonl that lowers what the backtest's ``--max-cost`` says was spent.

``--max-cost`` bounds the whole backtest: on a resume, what the same ``--out`` already
spent is read back from ``results.jsonl`` (each row's ``cost``, else its ``bound``). JSON
as Python reads it takes ``NaN``, ``-Infinity`` and negative numbers: one edited or
damaged row made the spent total ``nan`` (every comparison with the limit false, so every
review was under it) or far below zero, and the limit no longer bounded anything; a row
whose cost is a string stopped the run with a traceback. A spent amount the gate cannot
trust is a usage error that names the line, before anything is asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.backtest.cases import Case, Plan
from gate.backtest.runner import RESULTS, Runner
from gate.errors import UsageError

PLAN = Plan((Case("c1", "allow", False, "", text=b"x\n"),), "cases test")


def _resume(out: Path, *rows: str) -> Runner:
    (out / RESULTS).write_text("".join(row + "\n" for row in rows))
    return Runner(PLAN, [], out=out, max_cost=1.0)


@pytest.mark.parametrize(
    "paid",
    ['{"cost": NaN}', '{"cost": -Infinity}', '{"cost": -1000.0}', '{"bound": -5}',
     '{"cost": null, "bound": Infinity}', '{"cost": "0.1"}', '{"cost": true}'],
)  # fmt: skip
def test_a_spent_amount_that_cannot_be_trusted_is_refused(tmp_path: Path, paid: str) -> None:
    with pytest.raises(UsageError) as caught:
        _resume(tmp_path, '{"cost": 0.9}', paid)
    assert f"{RESULTS} line 2" in caught.value.message


def test_what_was_spent_before_counts(tmp_path: Path) -> None:
    runner = _resume(tmp_path, '{"cost": 0.5}', '{"cost": null, "bound": 0.4}', '{"cost": 0}')
    assert runner.budget.spent == pytest.approx(0.9)
    assert not runner.budget.reserve(0.2)
