"""Asking: every case under every config, ``repeat`` times, through the review the action runs.

Each answer is one call of the same steps ``review-gate review`` takes (selection
:func:`~gate.review.scope.select_diff`, :func:`~gate.review.scope.before_any_request`
(nothing in scope, nothing to review, files left out), the config's own ``max_cost`` guard
:func:`~gate.review.cost.over_budget`, then :func:`~gate.review.pipeline.review_diff`:
prompt, chunks, agreement, binding, decision, fallbacks), with memory off (nothing is
carried or recalled). What the backtest adds around it:

- **the whole backtest's ``--max-cost``**, checked before every review: the review's bound
  (:func:`~gate.review.cost.preflight`'s, every attempt at its full prompt and
  ``max_tokens``, each fallback in full) is reserved against what was spent and what the
  reviews under way hold; a review whose bound would cross the limit is not asked, and
  nothing after it starts (:class:`Budget`). What was spent in the same ``--out`` before
  counts: the limit is for the backtest, not for one invocation;
- **bounded concurrency** (``jobs`` threads, at most ``2 x jobs`` tasks queued, so memory
  is flat in the number of cases), and **a Retry-After for everyone**: an attempt answered
  429 or 503 makes the wait before its retry a pause that every job waits out before its
  next review (:class:`Pause`), as :class:`gate.reviewers.pool.Pacer` does for chunks;
- **resumable**: each answer is one line of ``results.jsonl`` (:class:`Results`: appended
  whole, flushed and synced, a torn last line dropped on the next start); a task whose
  (config, case, repeat, question id) is already there is not asked again. The question
  (:func:`gate.memory.question.key_for`) holds the diff's digest, the policy, the config's
  digest, the model and the prompt's digest, so a changed config asks again;
- one certificate per answer under ``certificates/CONFIG/``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.backtest.cases import Case, CaseTooLarge, Plan
from gate.backtest.headfiles import head_files
from gate.backtest.rates import about_the_code
from gate.config.model import Config
from gate.decide.attempt import Attempt
from gate.decide.decision import Decision, State, blocked
from gate.diff import SelectedDiff
from gate.errors import ConfigError, GateError, UsageError
from gate.memory.question import key_for
from gate.review import certificate, cost
from gate.review.context import HeadFiles, file_text, paths_to_fetch
from gate.review.pipeline import review_diff
from gate.review.result import blocked_certificate
from gate.review.scope import before_any_request, select_diff

RESULTS = "results.jsonl"
#: seconds a stopped run waits for the reviews under way (a later answer is still written,
#: after the report)
GRACE_S = 5.0
#: statuses whose wait before the retry is a pause for every job
RATE_LIMITED = frozenset({429, 503})


@dataclass(frozen=True)
class Variant:
    """One config the backtest compares, with the keys its reviewers need."""

    name: str
    config: Config
    api_key: str | None = field(default=None, repr=False)
    fallback_keys: tuple[str | None, ...] | None = None


class Results:
    """``results.jsonl``: one answer a line, appended whole (flushed, synced) under a lock."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / RESULTS
        self._lock = threading.Lock()
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):  # a line torn by a kill: not an answer
                with self.path.open("r+b") as handle:
                    handle.truncate(data.rfind(b"\n") + 1)

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every whole row, in order (a line that is not a JSON object is skipped)."""
        for _, row in self.numbered():
            yield row

    def numbered(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every whole row with its line number (1 for the first line)."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    yield number, row

    def append(self, *rows: Mapping[str, Any]) -> None:
        """Each row a whole line, then one sync for them all."""
        lines = b"".join(
            (json.dumps(row, sort_keys=True, ensure_ascii=True) + "\n").encode() for row in rows
        )
        with self._lock, self.path.open("ab") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())


class Writer:
    """One thread that writes each answer's certificate, then its row: the jobs hand an
    answer over and ask the next case at once (on one disk the syncs of a verified write
    queue up; eight jobs finishing together would each wait for the others' syncs). The
    queue is bounded, so memory stays flat; an error in the writer (or Ctrl-C raised by
    the progress line) is raised again in the run's loop (:meth:`check`)."""

    def __init__(self, write: Callable[[list[tuple[Any, ...]]], None], depth: int) -> None:
        self._write = write
        self._queue: queue.Queue[tuple[Any, ...] | None] = queue.Queue(maxsize=depth)
        self._closed = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="backtest-writer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        """Take what is queued (at least one answer), write it together: one sync of the
        results file for all of their rows."""
        done = False
        while not done:
            jobs = [self._queue.get()]
            while len(jobs) < self._queue.maxsize and not self._queue.empty():
                jobs.append(self._queue.get_nowait())
            done = None in jobs
            batch = [job for job in jobs if job is not None]
            if batch and self.error is None:
                try:
                    self._write(batch)
                except BaseException as err:  # noqa: BLE001 (raised again in the run's loop)
                    self.error = err

    def put(self, job: tuple[Any, ...]) -> None:
        if self._closed:  # an answer that ended after the run stopped: written here
            self._write([job])
        else:
            self._queue.put(job)

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Write what is queued, then stop."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()


class Budget:
    """The backtest's ``--max-cost``: reserve a review's bound before it is asked."""

    def __init__(self, limit: float | None, spent: float = 0.0) -> None:
        self.limit = limit
        self.spent = spent
        self._held = 0.0
        self._lock = threading.Lock()

    def reserve(self, bound: float | None) -> bool:
        """Hold ``bound`` for a review about to be asked; False when it would cross the
        limit (or cannot be estimated: an unknown cost is not under a limit)."""
        with self._lock:
            if self.limit is None:
                return True
            if bound is None or self.spent + self._held + bound > self.limit:
                return False
            self._held += bound
            return True

    def settle(self, bound: float | None, actual: float | None) -> None:
        """The review ended: its hold is released and what it cost (its bound, when the
        provider did not say) is spent."""
        with self._lock:
            if self.limit is not None and bound is not None:
                self._held -= bound
            self.spent += actual if actual is not None else bound or 0.0


class Pause:
    """A Retry-After (or a rate limit's backoff) heard by one job, waited out by every job."""

    def __init__(self, sleep: Callable[[float], None] = time.sleep) -> None:
        self._sleep = sleep
        self._until = 0.0
        self._lock = threading.Lock()
        self._mine = threading.local()

    def saw(self, attempt: Attempt) -> None:
        """``on_attempt``: remember whether this thread's last attempt was rate limited."""
        self._mine.limited = attempt.http_status in RATE_LIMITED and not attempt.complete

    def sleep(self, seconds: float) -> None:
        """The review's pause before a retry: shared when the attempt was rate limited."""
        if getattr(self._mine, "limited", False):
            with self._lock:
                self._until = max(self._until, time.monotonic() + seconds)
            self._mine.limited = False
            self.wait()
        else:
            self._sleep(seconds)

    def wait(self) -> None:
        """Wait out the shared pause (before a review starts)."""
        with self._lock:
            left = self._until - time.monotonic()
        if left > 0:
            self._sleep(left)


@dataclass
class Outcome:
    """How the run ended and which question each task asked (the report reads only those)."""

    questions: dict[tuple[str, str, int], str] = field(default_factory=dict)
    asked: int = 0
    skipped: int = 0
    stopped: str | None = None
    interrupted: bool = False


def safe_name(text: str) -> str:
    """A file-name part for a case or config id (digest-suffixed when changed)."""
    clean = re.sub(r"[^A-Za-z0-9._-]", "_", text)[:60].strip(".") or "case"
    if clean != text:
        clean += "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return clean


def _spent(path: Path, number: int, paid: object) -> float:
    """What one row of ``results.jsonl`` says was paid: a finite amount of at least zero.
    Anything else (``NaN``, ``-Infinity``, a negative number, a string) would lower or void
    what ``--max-cost`` counts as spent, so it is a usage error naming the line."""
    if paid is None:
        return 0.0
    amount = paid if isinstance(paid, int | float) and not isinstance(paid, bool) else -1.0
    if math.isfinite(amount) and amount >= 0:
        return float(amount)
    raise UsageError(
        f"{path.name} line {number}: the amount paid {paid!r} is not a finite number of at "
        f"least 0, so what --max-cost counts as spent is unknown; the file was edited or "
        f"damaged: remove that line (its answer is asked again) or use another --out"
    )


def _too_large(case: Case, detail: str) -> Decision:
    return blocked(
        State.NEEDS_HUMAN,
        "too_large",
        f"case {case.id}: the diff is {detail}, over what a backtest reads; it was not sent",
    )


class Runner:
    """One backtest run over a plan (module docstring)."""

    def __init__(
        self,
        plan: Plan,
        variants: Sequence[Variant],
        *,
        out: Path,
        repeat: int = 1,
        jobs: int = 1,
        max_cost: float | None = None,
        on_answer: Callable[[dict[str, Any], Budget], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.plan, self.variants, self.out = plan, list(variants), out
        self.repeat, self.jobs = repeat, max(1, jobs)
        self.results = Results(out)
        self.done: set[tuple[str, str, int, str]] = set()
        spent = 0.0
        for number, row in self.results.numbered():
            key = (row.get("config"), row.get("case"), row.get("repeat"), row.get("question"))
            if all(isinstance(part, str | int) for part in key):
                self.done.add(key)  # type: ignore[arg-type]
            paid = row.get("cost") if row.get("cost") is not None else row.get("bound")
            spent += _spent(self.results.path, number, paid)
        self.budget = Budget(max_cost, spent)
        self.pause = Pause(sleep)
        self.outcome = Outcome()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._on_answer = on_answer
        self._writer = Writer(self._write, 4 * self.jobs)

    @property
    def total(self) -> int:
        return len(self.plan.cases) * len(self.variants) * self.repeat

    def tasks(self) -> Iterator[tuple[Variant, Case, int]]:
        """Case by case, every config and repeat of it together (pairs finish together)."""
        for case in self.plan.cases:
            for variant in self.variants:
                for repeat in range(self.repeat):
                    yield variant, case, repeat

    def run(self) -> Outcome:
        """Ask every task; Ctrl-C stops starting new ones and is raised again."""
        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="backtest")
        running: set[Future[None]] = set()

        def settle(limit: int) -> None:
            nonlocal running
            while len(running) > limit:
                finished, running = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                self._writer.check()
                for future in finished:
                    future.result()

        try:
            for task in self.tasks():
                if self._stop.is_set():
                    break
                settle(2 * self.jobs - 1)
                running.add(pool.submit(self._ask, *task))
            settle(0)
            self._writer.close()
            self._writer.check()
        except BaseException as err:
            self._stop.set()
            self.outcome.interrupted = isinstance(err, KeyboardInterrupt)
            pool.shutdown(wait=False, cancel_futures=True)
            wait(running, timeout=GRACE_S)  # answers about to end are kept, not paid twice
            self._writer.close()
            raise
        pool.shutdown(wait=True)
        return self.outcome

    def _ask(self, variant: Variant, case: Case, repeat: int) -> None:
        if self._stop.is_set():
            return
        self.pause.wait()
        config = variant.config
        try:
            data = case.load()
        except CaseTooLarge as err:
            self._answer_blocked(variant, case, repeat, b"", _too_large(case, str(err)), None)
            return
        selected = select_diff(data, config)
        try:
            self._ask_selected(variant, case, repeat, selected)
        except (UsageError, ConfigError):
            raise  # the backtest's own setting: it stops, as before any case
        except GateError as err:
            # what the diff causes (a prompt carrying its own read word, ...): the action
            # blocks on it (action/run.py), so the case is a blocked row, not a crash
            question = f"{hashlib.sha256(selected.data).hexdigest()[:16]}:{err.reason}"
            with self._lock:
                self.outcome.questions[(variant.name, case.id, repeat)] = question
                if (variant.name, case.id, repeat, question) in self.done:
                    self.outcome.skipped += 1
                    return
            decision = blocked(State.INCOMPLETE, err.reason, err.message)
            self._answer_blocked(variant, case, repeat, selected.data, decision, question)

    def _ask_selected(
        self, variant: Variant, case: Case, repeat: int, selected: SelectedDiff
    ) -> None:
        config = variant.config
        head = files_of(case, selected.data, config)
        question = key_for(selected.data, config, head=head)
        with self._lock:
            self.outcome.questions[(variant.name, case.id, repeat)] = question.id
            if (variant.name, case.id, repeat, question.id) in self.done:
                self.outcome.skipped += 1
                return
        coverage = selected.coverage
        early = before_any_request(coverage, config) or cost.over_budget(
            selected.data, config, coverage, head
        )
        if early is not None:
            self._answer_blocked(variant, case, repeat, selected.data, early, question.id)
            return
        bound = bound_of(selected.data, config, coverage, head)
        if not self.budget.reserve(bound):
            self._stop_for(case, variant, bound)
            return
        started = time.monotonic()
        actual: float | None = 0.0
        try:
            result = review_diff(
                selected.data,
                config,
                api_key=variant.api_key,
                fallback_keys=variant.fallback_keys,
                extra_cert=self._context(variant, case, repeat),
                coverage=coverage,
                sleep=self.pause.sleep,
                on_attempt=self.pause.saw,
                question=question,
                head=head,
            )
            actual = cost.cost_of(result.paid_attempts(), config, models=result.paid_models()).cost
        finally:
            self.budget.settle(bound, actual)
        latency = time.monotonic() - started
        self._record(
            variant,
            case,
            repeat,
            question.id,
            result.decision,
            result.certificate,
            actual,
            bound,
            latency,
        )

    def _answer_blocked(
        self,
        variant: Variant,
        case: Case,
        repeat: int,
        data: bytes,
        decision: Decision,
        question: str | None,
    ) -> None:
        """A review decided before any request (nothing in scope, coverage, the config's
        max_cost, too large)."""
        config = variant.config
        if question is None:  # too large: the question of the bytes a backtest could read
            question = key_for(data, config).id + ":too_large"
            with self._lock:
                self.outcome.questions[(variant.name, case.id, repeat)] = question
                if (variant.name, case.id, repeat, question) in self.done:
                    self.outcome.skipped += 1
                    return
        selected = select_diff(data, config)
        cert = blocked_certificate(
            decision,
            selected.data,
            config,
            coverage=selected.coverage,
            extra_cert=self._context(variant, case, repeat),
        )
        self._record(variant, case, repeat, question, decision, cert, 0.0, 0.0, 0.0)

    def _context(self, variant: Variant, case: Case, repeat: int) -> dict[str, Any]:
        return {
            "command": "backtest",
            "backtest": {
                "config": variant.name,
                "case": case.id,
                "label": case.label,
                "presumed": case.presumed,
                "repeat": repeat,
                "source": case.source,
            },
        }

    def _record(
        self,
        variant: Variant,
        case: Case,
        repeat: int,
        question: str,
        decision: Decision,
        cert: Mapping[str, Any],
        actual: float | None,
        bound: float | None,
        latency: float,
    ) -> None:
        path = self.out / "certificates" / safe_name(variant.name)
        path = path / f"{safe_name(case.id)}-{repeat + 1}.json"
        secrets = [k for k in (variant.api_key, *(variant.fallback_keys or ())) if k]
        state, reason = str(decision.state), decision.reason
        row = {
            "config": variant.name,
            "case": case.id,
            "repeat": repeat,
            "question": question,
            "label": case.label,
            "presumed": case.presumed,
            "state": state,
            "reason": reason,
            "family": str(decision.family),
            "about_the_code": about_the_code(state, reason),
            "asked": latency > 0,
            "cost": actual,
            "bound": bound,
            "latency_s": round(latency, 4),
            "certificate": str(path.relative_to(self.out)),
        }
        self._writer.put((path, cert, secrets, row))

    def _write(self, batch: list[tuple[Any, ...]]) -> None:
        """Each certificate, then the rows that name them (a row never names a missing file)."""
        for path, cert, secrets, _ in batch:
            path.parent.mkdir(parents=True, exist_ok=True)
            certificate.write(path, cert, secrets=secrets)
        self.results.append(*(row for *_, row in batch))
        with self._lock:
            self.outcome.asked += len(batch)
        if self._on_answer is not None:
            for *_, row in batch:
                self._on_answer(row, self.budget)

    def _stop_for(self, case: Case, variant: Variant, bound: float | None) -> None:
        with self._lock:
            if self.outcome.stopped is None:
                limit = self.budget.limit
                what = "cannot be estimated (no price)" if bound is None else f"{bound:.6f}"
                self.outcome.stopped = (
                    f"--max-cost {limit:g} reached: case {case.id} under {variant.name} was not "
                    f"asked (its bound {what}, with {self.budget.spent:.6f} spent); nothing after "
                    "it was started. Raise --max-cost and run again with the same --out to go on"
                )
            self._stop.set()


def files_of(case: Case, data: bytes, config: Config) -> HeadFiles | None:
    """The files ``context: files`` shows for ``case`` (None with ``context: diff``): read
    from git at the case's head; a case from a file has no head, so every file is left
    out, named (the review runs on the diff, as the action's does when it cannot fetch)."""
    if config.context != "files":
        return None
    if case.repo is None or case.head is None:
        why = "a case from a cases file names no head commit to read files at"
        return HeadFiles(
            "none", tuple(file_text(p, None, missing=why) for p in paths_to_fetch(data, config))
        )
    return head_files(case.repo, case.head, data, config)


def bound_of(
    data: bytes, config: Config, coverage: Any, head: HeadFiles | None = None
) -> float | None:
    """The most one review can cost: the preflight bound of the reviewer and of each
    fallback asked in full (None when any has no price)."""
    total = 0.0
    for each in config.chain():
        bound = cost.preflight(data, each, coverage, head).bound
        if bound is None:
            return None
        total += bound
    return total
