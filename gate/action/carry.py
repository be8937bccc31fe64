"""Incremental review in the action: the chunk answers a run leaves for the next push.

The ledger (:class:`gate.review.carry.Ledger`) of the action is a hidden block in the
gate's own sticky comment, beside the history block (:mod:`gate.memory.record`)::

    <!-- review-gate:carry BASE64(zlib(JSON)) -->

The JSON (``review-gate.carry/1``) lists, for each chunk of the run's review in chunks
that was decided ``pass`` or ``fail``, its question, its digest, its sealed envelopes
(as text; one per ``agreement`` answer) and where they were first recorded (the run URL
and the certificate digest). The next run reads it only from the comment the token's
own identity wrote (:meth:`GitHubClient.own_comment`, the same adoption rule as the
history), never when a writer asked for a fresh review, and every envelope in it is
decided again against the new chunk's binding before anything is carried
(:func:`gate.review.carry.settle`). A comment can be edited by anyone with write access:
a record read from it is worth what the override label is worth (docs/security.md).

Bounds: at most :data:`MAX_BLOCK_CHARS` characters (fails are kept first; passes that do
not fit are dropped, so they are asked again), at most :data:`MAX_RAW_BYTES` once
inflated (a block that inflates further is refused), at most :data:`MAX_ENTRIES`
entries. A block that is not exactly well-formed carries nothing, with a note.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Sequence
from typing import Any

from gate.decide.decision import State
from gate.diff import SHA256_HEX
from gate.review.carry import RUN_TEXT, Book, Carried, CarryError
from gate.safe import strictjson

SCHEMA = "review-gate.carry/1"
#: the largest carry block, in characters (the comment's limit is 65,536, shared with
#: the visible report and the history block)
MAX_BLOCK_CHARS = 24_000
#: the most bytes a block may inflate to
MAX_RAW_BYTES = 1 << 20
#: the most chunk entries a block may hold
MAX_ENTRIES = 1000

BLOCK = re.compile(r"<!-- review-gate:carry ([A-Za-z0-9+/=]{0,60000}) -->")


def entries_of(result: Any, *, run_url: str | None, certificate_sha: str | None) -> list[Carried]:
    """The chunk answers of ``result`` (a :class:`gate.review.pipeline.ReviewResult`) worth
    carrying: each chunk decided ``pass`` or ``fail`` with every envelope present and
    UTF-8, fails first. A carried chunk keeps where it was first recorded."""
    chunks = result.extra.get("chunks") if result is not None else None
    question = chunks.get("question") if isinstance(chunks, dict) else None
    if not isinstance(question, str) or not SHA256_HEX.fullmatch(question):
        return []
    here = run_url if run_url and RUN_TEXT.fullmatch(run_url) else "an earlier run"
    sha = certificate_sha if certificate_sha and SHA256_HEX.fullmatch(certificate_sha) else ""
    fails: list[Carried] = []
    passes: list[Carried] = []
    for review in result.chunks:
        decision = review.decision
        if review.split or decision is None or decision.state not in (State.PASS, State.FAIL):
            continue
        envelopes = (
            tuple(a.envelope for a in review.answers)
            if len(review.answers) > 1
            else (review.outcome.envelope,)
        )
        if any(env is None for env in envelopes):
            continue
        origin = review.carried
        entry = Carried(
            question=question,
            diff_sha=review.chunk.sha,
            envelopes=tuple(env for env in envelopes if env is not None),
            run=origin.run if origin is not None else here,
            certificate_sha=origin.certificate_sha if origin is not None else sha,
        )
        (fails if decision.state is State.FAIL else passes).append(entry)
    return fails + passes


def _entry_json(entry: Carried) -> dict[str, Any] | None:
    try:
        texts = [env.decode("utf-8") for env in entry.envelopes]
    except UnicodeDecodeError:
        return None
    return {
        "question": entry.question,
        "diff_sha": entry.diff_sha,
        "envelopes": texts,
        "run": entry.run,
        "certificate_sha": entry.certificate_sha,
    }


def block(entries: Sequence[Carried]) -> str:
    """The hidden block holding ``entries`` (in order, the last dropped first until it
    fits :data:`MAX_BLOCK_CHARS`); ``""`` when there is nothing to carry."""
    rows = [row for row in map(_entry_json, entries[:MAX_ENTRIES]) if row is not None]
    while rows:
        raw = json.dumps(
            {"schema": SCHEMA, "chunks": rows},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
        )
        packed = base64.b64encode(zlib.compress(raw.encode("ascii"), 9)).decode("ascii")
        text = f"<!-- review-gate:carry {packed} -->"
        if len(text) <= MAX_BLOCK_CHARS:
            return text
        rows = rows[: max(0, len(rows) - max(1, len(rows) // 8))]
    return ""


def _inflate(packed: str) -> bytes:
    try:
        data = base64.b64decode(packed, validate=True)
    except (binascii.Error, ValueError) as err:
        raise CarryError("the carry block is not valid base64") from err
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_RAW_BYTES)
    except zlib.error as err:
        raise CarryError("the carry block is not valid zlib data") from err
    if inflater.unconsumed_tail or not inflater.eof:
        raise CarryError(f"the carry block inflates past {MAX_RAW_BYTES} bytes or is cut")
    return raw


def _entry(row: Any) -> Carried:
    if not isinstance(row, dict) or set(row) != {
        "question",
        "diff_sha",
        "envelopes",
        "run",
        "certificate_sha",
    }:
        raise CarryError("a carry entry does not have exactly the five fields")
    question, diff_sha, texts = row["question"], row["diff_sha"], row["envelopes"]
    run, sha = row["run"], row["certificate_sha"]
    if not (isinstance(question, str) and SHA256_HEX.fullmatch(question)):
        raise CarryError("a carry entry's question is not a SHA-256")
    if not (isinstance(diff_sha, str) and SHA256_HEX.fullmatch(diff_sha)):
        raise CarryError("a carry entry's diff_sha is not a SHA-256")
    if not isinstance(texts, list) or not 1 <= len(texts) <= 5:
        raise CarryError("a carry entry must hold 1 to 5 envelopes")
    if not all(isinstance(text, str) for text in texts):
        raise CarryError("a carry entry's envelopes must be text")
    if not (isinstance(run, str) and RUN_TEXT.fullmatch(run)):
        raise CarryError("a carry entry's run is not printable text of 1 to 300 characters")
    if not (isinstance(sha, str) and (sha == "" or SHA256_HEX.fullmatch(sha))):
        raise CarryError("a carry entry's certificate_sha is not a SHA-256")
    envelopes = tuple(text.encode("utf-8") for text in texts)
    return Carried(question, diff_sha, envelopes, run=run, certificate_sha=sha)


def read(body: str | None) -> Book:
    """The chunk answers of the carry block in ``body`` (a comment the caller trusts as far
    as its author goes): an empty book when there is none; :class:`CarryError` when there
    is more than one block or it is not exactly well-formed."""
    found = BLOCK.findall(body or "")
    if not found:
        return Book()
    if len(found) > 1:
        raise CarryError("the comment holds more than one carry block")
    doc = strictjson.loads(_inflate(found[0]), what="the carry block", error=CarryError)
    if not isinstance(doc, dict) or set(doc) != {"schema", "chunks"} or doc["schema"] != SCHEMA:
        raise CarryError(f"the carry block must hold exactly schema ({SCHEMA}) and chunks")
    rows = doc["chunks"]
    if not isinstance(rows, list) or len(rows) > MAX_ENTRIES:
        raise CarryError(f"the carry block must list at most {MAX_ENTRIES} chunks")
    return Book.of(_entry(row) for row in rows)


__all__ = ["BLOCK", "MAX_BLOCK_CHARS", "SCHEMA", "block", "entries_of", "read"]
