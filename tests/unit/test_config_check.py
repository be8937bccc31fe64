"""gate.config.check against jsonschema: the same answer on generated configs.

jsonschema (Draft 2020-12, with the gate's ECMA pattern translation) is the oracle.
Configs are generated from the shipped schema itself: each property either a value
drawn near its constraints (enum members, numbers at and past the bounds, integral
floats, strings at and past their lengths, strings made from the pattern) or any JSON
value, with unknown keys now and then, so both conforming and non-conforming configs
are common. Whatever is drawn, :func:`conforms` must say "valid" exactly when
jsonschema finds no error.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.config import schema as config_schema
from gate.config.check import conforms, equal, unknown_keywords
from gate.config.load import parse_config
from gate.config.schema import schema_regex

JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=6)
)
JUNK = st.recursive(
    JSON_LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)


def _number(schema: dict[str, Any], integral: bool) -> st.SearchStrategy[Any]:
    low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
    high = schema.get("maximum", low + 1000)
    edges = [low - 1, low, high, high + 1]
    ints = st.sampled_from(edges) | st.integers(int(low) - 2, int(min(high, low + 10**6)) + 2)
    floats = st.floats(low - 1, high + 1, allow_nan=False)
    out = ints | ints.map(float) | floats
    return out if integral else out | st.sampled_from([True, False])


def _string(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    parts: list[st.SearchStrategy[Any]] = [st.text(max_size=8)]
    if "enum" in schema:
        parts.append(st.sampled_from(schema["enum"]))
    for bound in ("maxLength", "minLength"):
        if bound in schema:
            n = schema[bound]
            parts.append(st.sampled_from([max(0, n - 1), n, n + 1]).map(lambda k: "a" * k))
    if "pattern" in schema:
        pattern = schema_regex(schema["pattern"])
        parts.append(st.from_regex(pattern, fullmatch=True).map(lambda s: s[:80]))
        parts.append(st.from_regex(re.compile(r"[a-z0-9./:_-]{1,20}"), fullmatch=True))
    return st.one_of(parts)


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values near ``schema``'s constraints, and any JSON value now and then."""
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        known = st.fixed_dictionaries({}, optional={k: values(v) for k, v in props.items()})
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            keys = _string(schema.get("propertyNames", {"type": "string"}))
            known = st.dictionaries(keys, values(extra), max_size=3)
        unknown = st.dictionaries(
            st.sampled_from(["bogus", "reviewer2", "Model"]), JUNK, max_size=1
        )
        built = st.builds(lambda a, b: {**a, **b}, known, unknown) | known
        return built | JUNK
    if kind == "array":
        items = values(schema.get("items", {}))
        top = schema.get("maxItems", 4) + 1
        return st.lists(items, max_size=min(top, 6)) | JUNK
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer") | JUNK
    if kind == "string" or "enum" in schema:
        return _string(schema) | JUNK
    return JUNK


SCHEMA = config_schema.schema()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values(SCHEMA))
def test_conforms_exactly_when_jsonschema_finds_no_error(data: Any) -> None:
    oracle = not list(config_schema._validator().iter_errors(data))
    assert conforms(data, SCHEMA, schema_regex) is oracle, data


@settings(max_examples=200, deadline=None)
@given(values(SCHEMA["properties"]["reviewer"]))
def test_the_reviewer_part_alone_agrees_too(data: Any) -> None:
    sub = {"reviewer": data}
    oracle = not list(config_schema._validator().iter_errors(sub))
    assert conforms(sub, SCHEMA, schema_regex) is oracle, data


def test_the_shipped_schema_uses_only_known_keywords() -> None:
    """Else every config would go to jsonschema: correct, but the fast path never taken."""
    assert unknown_keywords(SCHEMA) == set()


def test_json_semantics_where_python_differs() -> None:
    regex = schema_regex
    assert conforms(3.0, {"type": "integer"}, regex)
    assert not conforms(3.5, {"type": "integer"}, regex)
    assert not conforms(True, {"type": "integer"}, regex)
    assert not conforms(True, {"type": "number"}, regex)
    assert not conforms(1, {"enum": [True]}, regex)
    assert not equal([1, True], [1, 1])
    assert not conforms([1, 1.0], {"type": "array", "uniqueItems": True}, regex)
    assert conforms([0, False], {"type": "array", "uniqueItems": True}, regex)


def test_an_unknown_keyword_is_never_conforming() -> None:
    """It fails towards jsonschema: a keyword it cannot read hands the value over."""
    assert not conforms("x", {"type": "string", "format": "email"}, schema_regex)
    assert not conforms({}, {"$ref": "#/x"}, schema_regex)
    assert unknown_keywords({"properties": {"a": {"oneOf": []}}}) == {"oneOf"}


def test_a_valid_config_is_read_without_jsonschema() -> None:
    """The point of it, in this process: a conforming file never reaches the validator."""
    config_schema._validator.cache_clear()
    parsed = parse_config(
        "reviewer:\n  provider: openai\n  model: gpt-4o-mini\nmax_chunks: 10\n", source="t"
    )
    assert parsed.max_chunks == 10
    assert config_schema._validator.cache_info().currsize == 0
