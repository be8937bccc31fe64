"""The gate's mark on what it posts: its kind, its question and its count, by structure.

Every commit status the gate posts ends with a mark (`` [rg:f3:<16 hex>]``: a one-letter
kind, :data:`CODES`, the count, the question), and every check run it completes
names one in its ``external_id``: what the status is (its :data:`KINDS`: a model's
``pass``, a writer's ``override``, a ``fail``, a ``needs_human`` or ``incomplete`` block, a
``pending``, a ``skipped`` draft), the question it answered when one was asked (16 hex,
:attr:`gate.memory.question.QuestionKey.tag_hex`) and, on a status, how many statuses its
context holds on the commit once it is written (``n``: GitHub keeps at most 1,000, and a
``success`` is posted only while room for a block after it remains,
docs/decisions/0042-writes-bounded-by-decisions.md). The gate reads its own evidence by
this mark only: no description's words (``superseded by``, an override's ``overridden by
@``) are ever read as a verdict. A status with no mark (an older gate's, another tool's)
has no kind: it confirms nothing and hides no block; only its question tag (``[q:…]``,
the older form on ``failure``) is still read.

A ``mode: shadow`` run (:mod:`gate.action.shadow`) marks what it posts with a kind of its
own, :data:`SHADOW_KINDS` (``would_pass``, ``would_block``), under a context of its own,
and its check runs stand for ``neutral``: no reader of the gate's evidence takes either
kind for a decision (a ``success`` decides only as ``pass``, a block stands only as a
``failure``), whatever the words say (docs/decisions/0048-shadow-mode.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: what a ``mode: shadow`` run posts: what the gate would have done; never a decision
SHADOW_KINDS = ("would_pass", "would_block")
#: what a posted status or check run is; a ``success`` decides a question only as ``pass``
KINDS = (
    "pass", "override", "fail", "needs_human", "incomplete", "pending", "skipped", *SHADOW_KINDS
)  # fmt: skip

#: each kind's one letter in a status's mark (a description has 140 characters in all)
CODES = {
    "pass": "p", "override": "o", "fail": "f", "needs_human": "h", "incomplete": "i",
    "pending": "w", "skipped": "s", "would_pass": "y", "would_block": "x",
}  # fmt: skip
_KIND_OF = {code: kind for kind, code in CODES.items()}

#: the mark at the end of a status description: `` [rg:<code><n>]`` or
#: `` [rg:<code><n>:<16 hex>]`` (``[rg:f3:0123456789abcdef]``: the third status of the
#: context, a ``fail`` of that question)
_STATUS_MARK = re.compile(r" \[rg:([a-z])([0-9]{1,4})(?::([0-9a-f]{16}))?\]\Z")
#: an older gate's question tag on a ``failure``: `` [q:<16 hex>]``
_LEGACY_TAG = re.compile(r" \[q:([0-9a-f]{16})\]\Z")
#: a completed check run's ``external_id``: the status it stands for, its kind, its question
_CHECK_MARK = re.compile(
    r"review-gate:(success|failure|error|neutral):([a-z_]+)(?::q:([0-9a-f]{16}))?\Z"
)
#: an older gate's ``external_id`` (no kind)
_LEGACY_CHECK = re.compile(r"review-gate:(success|failure|error)(?::q:([0-9a-f]{16}))?\Z")


@dataclass(frozen=True)
class Mark:
    """What the gate says a status or check run is: ``kind`` (one of :data:`KINDS`, or
    None for an unmarked one), ``tag`` (its question, or None) and ``count`` (statuses in
    its context on the commit with it, or None where not written)."""

    kind: str | None
    tag: str | None = None
    count: int | None = None

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in KINDS:
            raise ValueError(f"unknown mark kind {self.kind!r}")

    @property
    def decides_pass(self) -> bool:
        """A ``success`` of this kind is a model's pass (reviewed or kept): an override,
        an unmarked success or anything else is not."""
        return self.kind == "pass"

    def same_as(self, other: Mark | None) -> bool:
        """The same thing said: kind and question (the count is where, not what)."""
        return other is not None and (self.kind, self.tag) == (other.kind, other.tag)


def kind_for(status: str, state: str, reason: str) -> str:
    """The kind of a status the gate posts: ``status`` (GitHub's), the decision's ``state``
    (or ``skipped``) and ``reason``."""
    if status == "pending":
        return "skipped" if state == "skipped" else "pending"
    if status == "success":
        return "override" if reason == "override" else "pass"
    return state if state in KINDS and state != "pass" else "incomplete"


def stamp(description: str, mark: Mark, *, limit: int) -> str:
    """``description`` ending with ``mark``, cut so the whole fits ``limit`` characters."""
    if mark.kind is None or mark.count is None:
        raise ValueError("only a mark with a kind and a count is written on a status")
    suffix = f" [rg:{CODES[mark.kind]}{mark.count}" + (f":{mark.tag}" if mark.tag else "") + "]"
    room = max(0, limit - len(suffix))
    text = description if len(description) <= room else description[: max(0, room - 1)] + "…"
    return text.rstrip() + suffix


def of_status(description: str) -> Mark:
    """The mark a status description ends with (an unmarked one: no kind, and the older
    ``[q:…]`` tag if any)."""
    found = _STATUS_MARK.search(description)
    if found is not None and found.group(1) in _KIND_OF:
        return Mark(_KIND_OF[found.group(1)], found.group(3), int(found.group(2)))
    legacy = _LEGACY_TAG.search(description)
    return Mark(None, legacy.group(1) if legacy else None)


def plain(description: str) -> str:
    """``description`` without its mark: the words the gate wrote for people."""
    return _STATUS_MARK.sub("", description)


def check_external_id(status: str, mark: Mark) -> str:
    """The ``external_id`` of a completed check run standing for ``status`` with ``mark``."""
    return f"review-gate:{status}:{mark.kind}" + (f":q:{mark.tag}" if mark.tag else "")


def of_check(external_id: str) -> tuple[str, Mark] | None:
    """(the status a completed check run stands for, its mark) from its ``external_id``,
    or None when the gate did not write it."""
    found = _CHECK_MARK.fullmatch(external_id)
    # a shadow kind stands for ``neutral`` only, and ``neutral`` for a shadow kind only
    if found is not None and found.group(2) in KINDS:
        if (found.group(1) == "neutral") == (found.group(2) in SHADOW_KINDS):
            return found.group(1), Mark(found.group(2), found.group(3))
        return None
    legacy = _LEGACY_CHECK.fullmatch(external_id)
    if legacy is not None:
        return legacy.group(1), Mark(
            None, legacy.group(2) if legacy.group(1) == "failure" else None
        )
    return None
