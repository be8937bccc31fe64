"""gate.backtest.runner's parts: the whole run's cost reservation, the shared Retry-After
pause, the results file (a torn line dropped), file names from ids."""

from __future__ import annotations

import threading
from pathlib import Path

from gate.backtest.runner import Budget, Pause, Results, about_the_code, safe_name
from gate.decide.attempt import Attempt, EndReason


def attempt(status: int | None, *, complete: bool = False) -> Attempt:
    return Attempt(
        1,
        "openai",
        complete,
        "" if complete else "http_429",
        "",
        EndReason.TRAILER if complete else EndReason.HTTP_ERROR,
        http_status=status,
    )


def test_a_bound_is_reserved_before_and_settled_after() -> None:
    budget = Budget(1.0)
    assert budget.reserve(0.6)
    assert not budget.reserve(0.5)  # 0.6 held + 0.5 > 1.0: not asked
    budget.settle(0.6, 0.1)  # it cost 0.1
    assert budget.reserve(0.5)  # 0.1 spent + 0.5 held <= 1.0
    budget.settle(0.5, None)  # unknown: its bound is spent
    assert budget.spent == 0.6
    assert not budget.reserve(None)  # no price: not under a limit
    assert Budget(None).reserve(None)  # no limit


def test_a_rate_limited_wait_pauses_every_job() -> None:
    slept: list[float] = []
    pause = Pause(slept.append)
    pause.saw(attempt(503))
    pause.sleep(2.0)  # this job's retry waits; the pause is now shared
    assert slept
    assert 0 < slept[0] <= 2.0
    other: list[float] = []

    def job() -> None:
        pause.wait()  # another job, before its next review

    pause._sleep = other.append  # type: ignore[method-assign]
    worker = threading.Thread(target=job)
    worker.start()
    worker.join()
    assert other
    assert 0 < other[0] <= 2.0
    # a plain backoff (a cut stream) is this job's own
    pause.saw(attempt(None))
    pause.sleep(0.5)
    assert other[-1] == 0.5


def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    results = Results(tmp_path)
    results.append({"a": 1}, {"a": 2})
    with results.path.open("ab") as handle:
        handle.write(b'{"a": 3, "b"')  # killed mid-write
    again = Results(tmp_path)
    assert [r["a"] for r in again.rows()] == [1, 2]
    again.append({"a": 4})
    assert [r["a"] for r in again.rows()] == [1, 2, 4]


def test_names_and_families() -> None:
    assert safe_name("abc123def456") == "abc123def456"
    assert safe_name("../x y").startswith("_x_y-")
    assert safe_name("a/b") != safe_name("a_b")
    assert about_the_code("fail", "reviewer_fail")
    assert about_the_code("needs_human", "low_confidence")
    assert not about_the_code("needs_human", "multiple_fences")
    assert not about_the_code("incomplete", "token_exhaustion")
    assert not about_the_code("needs_human", "partial_coverage")
