"""Which records decide a question, and the history that never forgets them.

The rules :func:`gate.memory.recall` applies and the history block keeps, in one place:

* :func:`stands`: a record is a standing block when the reviewer answered and not with a
  clean pass (any ``fail`` verdict, any ``fail`` in its ``answers`` tally, a ``needs_human``
  from the answer); a transport failure (``incomplete``, no answer) does not stand;
* :func:`passed`: a clean pass posted as ``success``;
* :func:`decisive`: for one question, the newest standing block, else the newest pass
  (each: the answer itself rather than a cached repetition of it), among the records
  that count (down to the newest one a writer's fresh review made);
* :func:`history_block`: the comment's block, one row per question (the row
  :func:`decisive` picks), standing blocks never dropped: rows that decide nothing go
  first, then the oldest passes; when the blocks alone do not fit, RecordError, and the
  caller keeps the comment it has instead of writing one that forgets a fail.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gate.memory.question import QuestionKey, key_of_record
from gate.memory.record import Record, RecordError, encode_block

#: the sources whose decision answered the question (not a guard, not a human)
DECISIVE_SOURCES = frozenset({"model", "repaired", "cached"})
_TALLY_FAIL = re.compile(r"(?:^|,)fail=([1-9][0-9]*)")


def any_fail(record: Record) -> bool:
    """Whether any answer behind ``record`` said ``fail``."""
    if record.verdict == "fail" or record.state == "fail":
        return True
    return record.answers is not None and _TALLY_FAIL.search(record.answers) is not None


def stands(record: Record) -> bool:
    """Whether ``record`` is a standing block of its question (module docstring)."""
    if any_fail(record):
        return True
    return record.state == "needs_human" and record.source in DECISIVE_SOURCES


def passed(record: Record) -> bool:
    """A clean pass: the reviewer's (or a kept) pass, posted as success."""
    return (
        record.state == "pass"
        and record.status == "success"
        and record.source in DECISIVE_SOURCES
        and not stands(record)
    )


def decisive(records: Sequence[Record], key: QuestionKey) -> tuple[Record | None, Record | None]:
    """(the newest standing block, the newest pass) among the records of ``key`` that
    count: newest first, down to and including the newest one a writer's fresh review
    made (older records of the same question are superseded by it). A pass is returned
    only when no block was found among the records that count."""
    found: dict[tuple[bool, bool], Record] = {}  # (blocks, cached) -> the newest such
    for record in reversed(records):
        if not key.answered_by(record):
            continue
        blocks = stands(record)
        if blocks or passed(record):
            found.setdefault((blocks, record.source == "cached"), record)
            if record.fresh:
                break
    # the answer itself rather than a cached repetition of it
    block = found.get((True, False)) or found.get((True, True))
    kept = found.get((False, False)) or found.get((False, True))
    return block, (None if block is not None else kept)


def compact(records: Sequence[Record]) -> list[Record]:
    """One row per question, in time order: the row :func:`decisive` picks, else the
    question's newest record; records that answered no question are all kept."""
    chosen: set[int] = set()
    seen: set[QuestionKey] = set()
    for index in range(len(records) - 1, -1, -1):
        key = key_of_record(records[index])
        if key is None:
            chosen.add(index)
            continue
        if key in seen:
            continue
        seen.add(key)
        block, kept = decisive(records, key)
        row = block or kept
        found = index if row is None else next(i for i, r in enumerate(records) if r is row)
        chosen.add(found)
    return [r for i, r in enumerate(records) if i in chosen]


def history_block(records: Sequence[Record]) -> str:
    """The comment's history block (module docstring); RecordError rather than a block
    that drops a standing block."""
    kept = compact(records)
    while True:
        try:
            return encode_block(kept)
        except RecordError:
            spare = _first_spare(kept)
            if spare is None:
                raise RecordError(
                    f"the history would drop a decisive record: the {len(kept)} standing "
                    "blocks of this pull request do not fit in the comment"
                ) from None
            kept = kept[:spare] + kept[spare + 1 :]


def _first_spare(records: Sequence[Record]) -> int | None:
    """The oldest row that decides nothing, else the oldest pass; None when every row
    is a standing block."""
    for rule in (lambda r: not (stands(r) or passed(r)), passed):
        for index, record in enumerate(records):
            if rule(record) and not (rule is passed and key_of_record(record) is None):
                return index
    return None
