"""Class: gate blocks stripped one kind after the other (issue 31, finding 9).

Cause: the sticky comment was rebuilt from its text with the history block removed, then
the carry block removed. A carry block nested inside a history block (an asset's file
name can spell one; the comment shows file names) leaves a whole history block once the
carry block is gone, after the history pass has run: every later run read two history
blocks and was ``history_unreadable`` until a writer deleted the comment.

Fix: :func:`gate.action.history.visible_part` removes every kind of gate block together,
pass after pass, until a whole pass removes nothing
(:func:`gate.safe.untrusted.remove_every`).

Variants (Hypothesis): blocks of either kind nested in either kind at any depth and any
cut point, with text around them: what is left holds no block of any kind, and stripping
again changes nothing.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.action import carry
from gate.action.history import visible_part
from gate.memory import record

PAYLOAD = st.text("ABCDEFabcdef0123456789+/=", min_size=0, max_size=24)
KINDS = st.sampled_from(["history", "carry"])
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@st.composite
def nested(draw: st.DrawFn, depth: int = 3) -> str:
    kind = draw(KINDS)
    payload = draw(PAYLOAD)
    if depth > 0 and draw(st.booleans()):
        cut = draw(st.integers(0, len(payload)))
        payload = payload[:cut] + draw(nested(depth - 1)) + payload[cut:]
    return f"<!-- review-gate:{kind} {payload} -->"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TEXT, nested()), min_size=1, max_size=4), TEXT)
def test_no_gate_block_survives_the_strip(parts: list[tuple[str, str]], tail: str) -> None:
    body = "".join(text + block for text, block in parts) + tail
    left = visible_part(body)
    assert record.BLOCK.search(left) is None, left
    assert carry.BLOCK.search(left) is None, left
    assert visible_part(left) == left


def test_the_reported_nesting() -> None:
    """A carry block inside a history block's payload, as a file name spelled it: one
    kind after the other left a history block; together, none is left."""
    carried = "<!-- review-gate:carry QUJD -->"
    body = f"logo <!-- review-gate:history QU{carried}JD -->.png\n"
    one_after_other = record.BLOCK.sub("", body)
    one_after_other = carry.BLOCK.sub("", one_after_other)
    assert record.BLOCK.search(one_after_other) is not None  # the old way: a block is left
    assert record.BLOCK.search(visible_part(body)) is None
    assert carry.BLOCK.search(visible_part(body)) is None
