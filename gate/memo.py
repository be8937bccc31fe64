"""One remembered answer per function, for work a run asks of the same bytes again.

A review asks several stages for the same answer about the same diff: its digest (the
coverage, the binding, the question, the result, the chunk plan), the cut into chunks
(the cost estimate and the review), the whole-diff prompt's digest (the question and the
result). :func:`last_answer` keeps a function's last answer with the very ``bytes``
object it was asked of (immutable: the same object is the same bytes) and the other
arguments by equality; anything else (a ``bytearray`` that can change, other arguments)
is computed afresh. One entry only: nothing grows, and nothing outlives the next question.
``tests/adversarial/test_memo_staleness.py`` proves no answer outlives its inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def last_answer(fn: Callable[Concatenate[bytes, P], R]) -> Callable[Concatenate[bytes, P], R]:
    """``fn(data, *args)``, remembered for the last immutable ``data`` object and equal
    positional ``args`` (keyword arguments are always computed afresh)."""
    last: tuple[bytes, tuple[Any, ...], R] | None = None

    @functools.wraps(fn)
    def remembered(data: bytes, /, *args: P.args, **kwargs: P.kwargs) -> R:
        nonlocal last
        seen = last
        if not kwargs and seen is not None and seen[0] is data and seen[1] == args:
            return seen[2]
        answer = fn(data, *args, **kwargs)
        if type(data) is bytes and not kwargs:
            last = (data, args, answer)
        return answer

    def forget() -> None:
        nonlocal last
        last = None

    remembered.forget = forget  # type: ignore[attr-defined]
    return remembered
