"""Class: the carry block of the sticky comment read loosely.

The action's ledger of chunk answers lives in a hidden block of a comment
(:mod:`gate.action.carry`). The hole: a block that is cut, doubled, inflates without
bound, has another schema, extra or missing fields, or fields of another type being
read in part, so that whatever parsed is carried. The fix lives in
:func:`gate.action.carry.read`: exactly one block, inflated within a bound, strict JSON,
exactly the schema's fields, or :class:`~gate.review.carry.CarryError` (the action then
carries nothing, with a note).

Variants: a well-formed block made from a real entry, then every mutation below (and
every cut of its base64 text at a stride); none may return a book.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from gate.action import carry
from gate.review.carry import Carried, CarryError

ENTRY = Carried("a" * 64, "b" * 64, (b"MC1 5 x\nhello",), run="https://x/runs/1")
GOOD = carry.block([ENTRY])


def _doc() -> dict[str, Any]:
    packed = GOOD.split(" ")[2]
    raw = zlib.decompress(base64.b64decode(packed))
    doc: dict[str, Any] = json.loads(raw)
    return doc


def _pack(doc: Any, *, raw: bytes | None = None) -> str:
    data = raw if raw is not None else json.dumps(doc).encode()
    return f"<!-- review-gate:carry {base64.b64encode(zlib.compress(data)).decode()} -->"


def _with(path: tuple[Any, ...], value: Any) -> str:
    doc = _doc()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return _pack(doc)


def _without(path: tuple[Any, ...]) -> str:
    doc = _doc()
    node = doc
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return _pack(doc)


MUTATIONS: dict[str, Callable[[], str]] = {
    "two_blocks": lambda: GOOD + "\n" + GOOD,
    "other_schema": lambda: _with(("schema",), "review-gate.carry/2"),
    "extra_top_key": lambda: _with(("extra",), 1),
    "no_chunks": lambda: _without(("chunks",)),
    "chunks_not_list": lambda: _with(("chunks",), {}),
    "extra_entry_key": lambda: _with(("chunks", 0, "state"), "pass"),
    "missing_envelopes": lambda: _without(("chunks", 0, "envelopes")),
    "envelopes_empty": lambda: _with(("chunks", 0, "envelopes"), []),
    "six_envelopes": lambda: _with(("chunks", 0, "envelopes"), ["x"] * 6),
    "envelope_not_text": lambda: _with(("chunks", 0, "envelopes"), [1]),
    "question_short": lambda: _with(("chunks", 0, "question"), "a" * 63),
    "question_upper": lambda: _with(("chunks", 0, "question"), "A" * 64),
    "diff_sha_not_hex": lambda: _with(("chunks", 0, "diff_sha"), "z" * 64),
    "run_with_newline": lambda: _with(("chunks", 0, "run"), "run\n::error::x"),
    "run_empty": lambda: _with(("chunks", 0, "run"), ""),
    "certificate_sha_bad": lambda: _with(("chunks", 0, "certificate_sha"), "x"),
    "duplicate_key": lambda: _pack(None, raw=b'{"schema":"a","schema":"b","chunks":[]}'),
    "nan": lambda: _pack(None, raw=b'{"schema":"review-gate.carry/1","chunks":[NaN]}'),
    "not_json": lambda: _pack(None, raw=b"{"),
    "not_utf8": lambda: _pack(None, raw=b'{"schema":"\xff"}'),
    "bomb": lambda: _pack(None, raw=b" " * (carry.MAX_RAW_BYTES + 10)),
    "not_zlib": lambda: "<!-- review-gate:carry " + base64.b64encode(b"plain").decode() + " -->",
}


def test_the_good_block_reads_back() -> None:
    book = carry.read("report\n\n" + GOOD)
    assert book.find("a" * 64, "b" * 64) == ENTRY


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_mutated_block_is_refused_whole(name: str) -> None:
    with pytest.raises(CarryError):
        carry.read("report\n\n" + MUTATIONS[name]())


@pytest.mark.parametrize("cut", range(24, len(GOOD) - 4, 7))
def test_a_cut_block_is_refused_or_absent(cut: int) -> None:
    text = GOOD[:cut] + GOOD[-4:]  # the base64 cut short, the comment still closed
    try:
        book = carry.read(text)
    except CarryError:
        return
    assert len(book) == 0  # no block matched at all: nothing carried
