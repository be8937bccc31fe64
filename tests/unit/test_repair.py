"""Lossless structural-cut detection: repairs only what is provably lossless."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.repair import find_structural_cut


@pytest.mark.parametrize(
    ("text", "closers"),
    [
        ('{"verdict": "pass"', "}"),
        ('{"a": ["x", "y"', "]}"),
        ('{"a": true', "}"),
        ('{"a": false', "}"),
        ('{"a": {"b": null', "}}"),
        ('{"a": [1, 2]', "}"),
        ('{"a": {"b": [{}]', "}}"),
        ('[{"a": "b"}', "]"),
        ('{"a": "quote \\" inside"', "}"),
        ('{"a": "x"   \n', "}"),
    ],
)
def test_lossless_cuts_are_repaired(text: str, closers: str) -> None:
    repair = find_structural_cut(text)
    assert repair is not None
    assert repair.closers == closers
    json.loads(repair.text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "unterminated',  # inside a string
        '{"a": "ends with escape \\',  # inside a string, after a backslash
        '{"a": "b",',  # after a comma
        '{"a":',  # after a colon
        '{"a"',  # after a key
        "{",  # after an opener
        '{"a": [',  # after an opener
        '{"a": 0.9',  # a number may have had more digits
        '{"a": 1',  # a number
        '{"a": tr',  # mid-literal
        '{"a": nul',  # mid-literal
        "{}",  # complete: nothing owed
        '"just a string"',  # complete scalar
        '{"a": 1}]',  # mismatched
        '{"a": x',  # garbage
        "",
    ],
)
def test_lossy_or_complete_texts_are_not_repaired(text: str) -> None:
    assert find_structural_cut(text) is None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.text(max_size=8)
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(json_values.filter(lambda v: isinstance(v, dict | list)), st.data())
def test_a_repair_only_ever_adds_closers(value: object, data: st.DataObject) -> None:
    text = json.dumps(value)
    prefix = text[: data.draw(st.integers(0, len(text)))]
    repair = find_structural_cut(prefix)
    if repair is None:
        return
    assert set(repair.closers) <= {"]", "}"}
    assert repair.text == prefix.rstrip() + repair.closers
    json.loads(repair.text)


@settings(max_examples=400, deadline=None)
@given(json_values.filter(lambda v: isinstance(v, dict | list)), st.data())
def test_when_only_closers_are_missing_the_repair_is_exact(
    value: object, data: st.DataObject
) -> None:
    text = json.dumps(value)
    run = len(text) - len(text.rstrip("]}"))
    owed = data.draw(st.integers(1, run))
    prefix = text[:-owed]
    if prefix.endswith(("[", "{")) or prefix[-1].isdigit():
        return  # an empty container's opener, or a number (never provably complete)
    repair = find_structural_cut(prefix)
    assert repair is not None, prefix
    assert repair.text == text
    assert json.loads(repair.text) == value
