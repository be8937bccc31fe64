"""The durable record of a decision, and the history block that indexes a PR's records.

Every final decision of the action leaves one :class:`Record` (schema
``review-gate.record/1``, ``gate/schemas/record.schema.json``): what was reviewed
(base and head SHAs, ``diff_sha``, the chunk manifest digest if any, the policy version,
the config digest, provider, model, prompt digest), what was decided (state, status,
verdict, confidence, reason, and the ``source``: ``model``, ``repaired``, ``override``,
``cached``, or ``gate`` for a block made before or without an answer), and where the
evidence is (certificate digest, run URL, time).

Where it lives (docs/security.md, "The state machine"): the commit status is the trusted
statement (append-only, its creator recorded by GitHub, ``target_url`` the run with the
certificate artifact); the sticky comment holds a hidden, bounded history block of the
PR's records (:func:`gate.memory.standing.history_block` chooses them, :func:`encode_block`
writes them), the index a later run or the nightly replay reads. A comment can be edited
by anyone with write access, so a record read from it is worth what the override label is
worth, and is read only from a comment the token's own identity wrote.
:func:`parse_history` reads it back strictly (one strict JSON loader, every field checked,
unknown keys refused); anything malformed is never trusted, and never overwritten.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any

from gate.decide.decision import State, Status
from gate.diff import COMMIT_ID, SHA256_HEX
from gate.errors import GateError
from gate.safe import strictjson, untrusted

SCHEMA = "review-gate.record/1"
HISTORY_SCHEMA = "review-gate.history/1"
#: the most records kept in the comment (one per question: gate.memory.record.compact)
MAX_RECORDS = 60
#: the largest history block, in characters (GitHub's comment limit is 65536; the
#: visible part of the comment is cut to leave room for it)
MAX_BLOCK_CHARS = 24_000
SOURCES = ("model", "repaired", "override", "cached", "gate")
STATES = (*(str(state) for state in State), "skipped")
STATUSES = tuple(str(status) for status in Status)

_HEX16 = re.compile(r"[0-9a-f]{16}")
_TEXT = re.compile(r"[\x20-\x7e]*")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00")
_ANSWER = r"(pass|fail|needs_human|incomplete)=[0-9]{1,5}"
_TALLY = re.compile(rf"{_ANSWER}(,{_ANSWER}){{0,3}}")
BLOCK = re.compile(r"<!-- review-gate:history ([A-Za-z0-9+/=]{0,24000}) -->")


class RecordError(GateError):
    """A record or history block that is not exactly of the record schema."""

    reason = "bad_record"


@dataclass(frozen=True)
class Record:
    """One final decision, as ``review-gate.record/1`` spells it."""

    time: str
    base_sha: str
    head_sha: str
    diff_sha: str | None
    policy_version: str
    config_sha: str | None
    provider: str
    model: str
    prompt_sha: str | None
    state: str
    status: str
    verdict: str | None
    confidence: float | None
    reason: str
    source: str
    fresh: bool
    certificate_sha: str | None
    run_url: str | None
    chunks_sha: str | None = None
    #: every answer's verdict, counted (``pass=2,fail=1``): agreement sets and chunks
    #: included, so an answer set holding any fail is known as such (gate.memory.stands)
    answers: str | None = None
    #: the question's tag (16 hex, :func:`gate.memory.question.tag`) of a row recovered
    #: from the gate's own tagged ``failure`` on an earlier head of the pull request
    #: (:mod:`gate.action.earlier`), whose full question is not known: the row stands for
    #: that tag alone, and carries it forward
    question_tag: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"schema": SCHEMA, **asdict(self)}
        if self.question_tag is None:  # only a recovered row has one (older readers)
            del out["question_tag"]
        return out


def now() -> str:
    """The record's time format: UTC, seconds, ``+00:00``."""
    return datetime.now(UTC).isoformat(timespec="seconds")


# --- strict reading -------------------------------------------------------------------

#: the fields that may be null (a decision made before the diff or the config was read)
_NULLABLE = frozenset(
    {"diff_sha", "config_sha", "prompt_sha", "verdict", "confidence", "certificate_sha"}
    | {"run_url", "chunks_sha", "answers", "question_tag"}
)


def _check_field(name: str, value: Any) -> None:
    def bad(why: str) -> RecordError:
        return RecordError(f"the record's {name} {why}")

    if value is None:
        if name not in _NULLABLE:
            raise bad("may not be null")
        return
    if name == "fresh":
        if not isinstance(value, bool):
            raise bad("must be true or false")
        return
    if name == "confidence":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise bad("must be a number from 0 to 1")
        return
    if not isinstance(value, str):
        raise bad("must be a string")
    checks: dict[str, tuple[re.Pattern[str] | tuple[str, ...], int]] = {
        "time": (_TIME, 25),
        "base_sha": (COMMIT_ID, 64),
        "head_sha": (COMMIT_ID, 64),
        "diff_sha": (SHA256_HEX, 64),
        "config_sha": (SHA256_HEX, 64),
        "prompt_sha": (SHA256_HEX, 64),
        "certificate_sha": (SHA256_HEX, 64),
        "chunks_sha": (SHA256_HEX, 64),
        "answers": (_TALLY, 200),
        "question_tag": (_HEX16, 16),
        "policy_version": (_TEXT, 64),
        "provider": (_TEXT, 40),
        "model": (_TEXT, 200),
        "reason": (_TEXT, 80),
        "run_url": (_TEXT, 300),
        "state": (STATES, 20),
        "status": (STATUSES, 20),
        "verdict": (("pass", "fail"), 10),
        "source": (SOURCES, 20),
    }
    rule, limit = checks[name]
    if len(value) > limit:
        raise bad(f"is longer than {limit} characters")
    if isinstance(rule, tuple):
        if value not in rule:
            raise bad(f"must be one of {', '.join(rule)}")
    elif not rule.fullmatch(value):
        raise bad("is not of the record's format")


def from_json(data: Any) -> Record:
    """A :class:`Record` from its JSON object, every field checked; RecordError otherwise."""
    if not isinstance(data, dict):
        raise RecordError("a record must be a JSON object")
    if data.get("schema") != SCHEMA:
        raise RecordError(f"the record's schema is not {SCHEMA}")
    names = {f.name for f in fields(Record)}
    extra = sorted(set(data) - names - {"schema"})
    if extra:
        raise RecordError(f"the record has unknown keys: {', '.join(extra[:5])}")
    missing = sorted(names - set(data) - {"chunks_sha", "answers", "question_tag"})
    if missing:
        raise RecordError(f"the record lacks: {', '.join(missing)}")
    values = {name: data.get(name) for name in names}
    for name, value in values.items():
        _check_field(name, value)
    if values["confidence"] is not None:
        values["confidence"] = float(values["confidence"])
    return Record(**values)  # type: ignore[arg-type]  # each field checked above


def check(record: Record) -> Record:
    """``record`` if it would read back as itself (the writer's own check)."""
    return from_json(record.to_json())


# --- the history block in the sticky comment -------------------------------------------


def encode_block(records: Sequence[Record]) -> str:
    """The hidden block for the sticky comment holding exactly ``records``; RecordError
    when they exceed the bounds (:func:`gate.memory.standing.history_block` chooses them).

    Base64 keeps the JSON out of Markdown and out of the HTML comment's syntax (no
    ``--``, no ``>``)."""
    if len(records) > MAX_RECORDS:
        raise RecordError(f"the history holds at most {MAX_RECORDS} records")
    doc = {"schema": HISTORY_SCHEMA, "records": [check(r).to_json() for r in records]}
    raw = strict_dumps(doc).encode("ascii")
    block = f"<!-- review-gate:history {base64.b64encode(raw).decode('ascii')} -->"
    if len(block) > MAX_BLOCK_CHARS:
        raise RecordError(f"the history is longer than {MAX_BLOCK_CHARS} characters")
    return block


def strict_dumps(value: Any) -> str:
    """Compact, sorted, ASCII JSON (the block's one spelling)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def parse_history(body: str) -> list[Record]:
    """The records of the history block in ``body`` (a comment the caller trusts as far as
    its author goes); RecordError if the block is present but not exactly well-formed,
    ``[]`` when there is none."""
    found = BLOCK.findall(body)
    if not found:
        return []
    if len(found) > 1:
        raise RecordError("the comment holds more than one history block")
    try:
        raw = base64.b64decode(found[0], validate=True)
    except (binascii.Error, ValueError) as err:
        raise RecordError("the history block is not valid base64") from err
    doc = strictjson.loads(raw, what="the history block", error=RecordError, max_depth=4)
    if not isinstance(doc, dict) or set(doc) != {"schema", "records"}:
        raise RecordError("the history block must hold exactly schema and records")
    if doc["schema"] != HISTORY_SCHEMA:
        raise RecordError(f"the history block's schema is not {HISTORY_SCHEMA}")
    rows = doc["records"]
    if not isinstance(rows, list) or len(rows) > MAX_RECORDS:
        raise RecordError(f"the history block must list at most {MAX_RECORDS} records")
    return [from_json(row) for row in rows]


def strip_history(body: str) -> str:
    """``body`` without its history block (to rebuild the comment around a new one)."""
    return untrusted.remove_all(BLOCK, body).rstrip()
