"""The backtest's progress line: done/total, the ETA and the cost so far.

On a terminal, one line redrawn in place with a bar; elsewhere (CI, a pipe) a plain line at
most every :data:`PLAIN_EVERY_S` seconds and at the end, so a log stays short.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from gate.backtest.report import CURRENCY
from gate.backtest.runner import Budget

PLAIN_EVERY_S = 10.0
BAR = 24


class Progress:
    """Counts answers (``on_answer``) and writes the line to ``stream``."""

    def __init__(
        self,
        total: int,
        *,
        stream: TextIO | None = None,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self._clock = clock
        self._start = clock()
        self._last = -PLAIN_EVERY_S
        self._lock = threading.Lock()
        self.done = 0
        self.spent = 0.0

    def line(self) -> str:
        elapsed = self._clock() - self._start
        eta = "-"
        if self.done:
            eta = f"{elapsed / self.done * (self.total - self.done):.0f}s"
        bar = ""
        if self.tty:
            filled = int(BAR * self.done / self.total) if self.total else BAR
            bar = "[" + "#" * filled + "." * (BAR - filled) + "] "
        return (
            f"{bar}{self.done}/{self.total} answers, ETA {eta}, "
            f"cost so far {self.spent:.4f} {CURRENCY}"
        )

    def on_answer(self, row: dict[str, Any], budget: Budget) -> None:
        with self._lock:
            self.done += 1
            self.spent = budget.spent
            now = self._clock()
            if self.tty:
                self.stream.write("\r" + self.line())
            elif now - self._last >= PLAIN_EVERY_S or self.done == self.total:
                self._last = now
                self.stream.write(self.line() + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
