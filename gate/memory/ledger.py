"""The question ledger's entries: one file per question key, read strictly.

The ledger (:mod:`gate.action.ledger` stores it at ``refs/review-gate/ledger``) is a git
tree sharded by the key's first two hex digits::

    <id[:2]>/<id>.json        one entry per question (QuestionKey.id, 64 hex)

Each entry (``review-gate.ledger/1``) holds the question's ``key`` (its id), the
``family`` of the decision, and the decision's :class:`~gate.memory.record.Record`
(decision, every answer counted, run, certificate digest, head, whether a writer's fresh
review made it). It is the memory of record: the sticky comment's history is a view.

Nothing here trusts what it reads: :func:`parse` takes exactly the schema's keys, the
record through :func:`gate.memory.record.from_json`, and refuses an entry whose record
did not answer the question it is filed under; :func:`check_root` and :func:`check_shard`
refuse a tree that is not the gate's shape (another kind of entry, another name, a
listing GitHub cut). Each refusal is a :class:`~gate.errors.LedgerError` naming what
and where; the caller blocks, and never writes over it (:func:`supersedes`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gate.decide.decision import Family, family_of
from gate.errors import LedgerError
from gate.memory.question import QuestionKey
from gate.memory.record import Record, RecordError, from_json, strict_dumps
from gate.memory.standing import passed, stands
from gate.safe import strictjson

SCHEMA = "review-gate.ledger/1"
#: the largest entry the gate reads (an entry is about 1 KB)
MAX_ENTRY_BYTES = 16 * 1024
#: git's modes and types of the ledger's two kinds of entries
TREE_MODE, BLOB_MODE = "040000", "100644"

_SHARD = r"[0-9a-f]{2}"
_NAME = r"[0-9a-f]{64}\.json"


def shard_of(key_id: str) -> str:
    """The folder an entry lives in: the key's first two hex digits."""
    return key_id[:2]


def name_of(key_id: str) -> str:
    """The entry's file name in its folder."""
    return f"{key_id}.json"


@dataclass(frozen=True)
class Entry:
    """One decided question (module docstring)."""

    key: str
    family: str
    record: Record

    def encode(self) -> bytes:
        doc = {"schema": SCHEMA, "key": self.key, "family": self.family,
               "record": self.record.to_json()}  # fmt: skip
        return strict_dumps(doc).encode("ascii")


def entry_for(key: QuestionKey, record: Record) -> Entry:
    """The entry of ``record``, filed under ``key`` (the question the run asked)."""
    return Entry(key.id, str(family_of(record.state, record.reason)), record)


def parse(data: bytes, key: QuestionKey) -> Entry:
    """The entry of ``key`` from the bytes of its file, every field checked."""
    where = f"the ledger entry {key.id[:12]}"
    if len(data) > MAX_ENTRY_BYTES:
        raise LedgerError(f"{where} is larger than {MAX_ENTRY_BYTES} bytes")
    try:
        doc = strictjson.loads(data, what=where, error=LedgerError, max_depth=4)
    except LedgerError as err:  # strictjson names its own code: the reason is the ledger's
        raise LedgerError(err.message) from None
    if not isinstance(doc, dict) or set(doc) != {"schema", "key", "family", "record"}:
        raise LedgerError(f"{where} must hold exactly schema, key, family and record")
    if doc["schema"] != SCHEMA:
        raise LedgerError(f"{where}'s schema is not {SCHEMA}")
    if doc["key"] != key.id:
        raise LedgerError(f"{where} is filed under another question's name")
    try:
        record = from_json(doc["record"])
    except RecordError as err:
        raise LedgerError(f"{where}'s record does not parse: {err.message}") from None
    if not key.answered_by(record) or record.question_tag is not None:
        raise LedgerError(f"{where}'s record did not answer the question it is filed under")
    family = doc["family"]
    if family not in {str(f) for f in Family} or family != family_of(record.state, record.reason):
        raise LedgerError(f"{where}'s family is not its record's")
    return Entry(key.id, str(family), record)


def check_root(entries: Sequence[tuple[str, str, str]], *, truncated: bool) -> None:
    """The ledger's root tree holds only shard folders (``(path, mode, type)`` each)."""
    if truncated:
        raise LedgerError("GitHub cut the listing of the ledger's root tree")
    for path, mode, kind in entries:
        if not (re.fullmatch(_SHARD, path) and mode == TREE_MODE and kind == "tree"):
            raise LedgerError(f"the ledger's root tree holds {path[:40]!r} ({kind} {mode})")


def check_shard(shard: str, entries: Sequence[tuple[str, str, str]], *, truncated: bool) -> None:
    """A shard folder holds only entry files of keys that start with its name."""
    if truncated:
        raise LedgerError(f"GitHub cut the listing of the ledger's folder {shard}")
    for path, mode, kind in entries:
        named = re.fullmatch(_NAME, path) and path.startswith(shard)
        if not (named and mode == BLOB_MODE and kind == "blob"):
            raise LedgerError(f"the ledger's folder {shard} holds {path[:40]!r} ({kind} {mode})")


def worth_keeping(record: Record) -> bool:
    """Whether a decision is one the ledger keeps: a standing block or a clean pass (a
    guard's block made without an answer, an outage, decides nothing about the question)."""
    return stands(record) or passed(record)


def supersedes(new: Record, old: Entry | None) -> bool:
    """Whether ``new`` replaces the question's entry ``old``: when there is none, when a
    writer's fresh review made it, or when it is a standing block over a pass. A block
    never gives way to anything but a writer's fresh review, and a repetition of what
    the entry says writes nothing."""
    if not worth_keeping(new):
        return False
    if old is None or new.fresh:
        return True
    return stands(new) and not stands(old.record)
