"""A strict check of a value against the config's JSON Schema, without jsonschema.

The published contract stays ``gate/schemas/config.schema.json`` and jsonschema stays
the validator that words every error. This module only answers "does it conform?"
for the keywords that schema uses, so a valid config (every run's case) is read
without importing jsonschema (~0.2 s) or compiling a validator: :mod:`gate.config.schema`
asks here first and hands only a value that does not conform to jsonschema, which
then names each problem exactly as before.

It fails towards jsonschema: a keyword it does not know makes the value "not
conforming" (so jsonschema decides), never conforming. Draft 2020-12 semantics are
followed where they differ from Python's: ``1.0`` is an ``integer``, ``true`` is not
a number and never equals ``1`` (in ``enum`` and ``uniqueItems``), lengths count code
points. ``tests/unit/test_config_check.py`` proves the answer equal to jsonschema's
on generated configs, valid and invalid.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

#: keywords that only describe, never constrain
ANNOTATIONS = frozenset(
    {"$id", "$schema", "$comment", "title", "description", "default", "examples"}
)

Regex = Callable[[str], re.Pattern[str]]


def conforms(value: Any, schema: Mapping[str, Any], regex: Regex) -> bool:
    """Whether ``value`` is valid against ``schema`` (patterns read by ``regex``, the
    translation the jsonschema validator is given); False for any keyword not known."""
    for key, want in schema.items():
        if key in ANNOTATIONS:
            continue
        check = _CHECKS.get(key)
        if check is None or not check(value, want, schema, regex):
            return False
    return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    checks: dict[str, Callable[[Any], bool]] = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "number": _is_number,
    }
    known = checks.get(name)
    return known is not None and known(value)


def equal(one: Any, two: Any) -> bool:
    """JSON equality: a boolean equals only a boolean; ``1 == 1.0``; deep for containers."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(equal(one[k], two[k]) for k in one)
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict | list) or isinstance(two, dict | list):
        return False
    return bool(one == two)


def _type(value: Any, want: Any, _schema: Mapping[str, Any], _regex: Regex) -> bool:
    names = [want] if isinstance(want, str) else list(want)
    return any(_is_type(value, name) for name in names)


def _enum(value: Any, want: Any, _schema: Mapping[str, Any], _regex: Regex) -> bool:
    return any(equal(value, option) for option in want)


def _string(test: Callable[[str, Any, Regex], bool]) -> Callable[..., bool]:
    def check(value: Any, want: Any, _schema: Mapping[str, Any], regex: Regex) -> bool:
        return not isinstance(value, str) or test(value, want, regex)

    return check


def _number(test: Callable[[float, Any], bool]) -> Callable[..., bool]:
    def check(value: Any, want: Any, _schema: Mapping[str, Any], _regex: Regex) -> bool:
        return not _is_number(value) or test(value, want)

    return check


def _array(test: Callable[[list[Any], Any, Regex], bool]) -> Callable[..., bool]:
    def check(value: Any, want: Any, _schema: Mapping[str, Any], regex: Regex) -> bool:
        return not isinstance(value, list) or test(value, want, regex)

    return check


def _unique(items: list[Any]) -> bool:
    return not any(equal(a, b) for i, a in enumerate(items) for b in items[i + 1 :])


def _properties(value: Any, want: Any, _schema: Mapping[str, Any], regex: Regex) -> bool:
    if not isinstance(value, dict):
        return True
    return all(conforms(value[k], sub, regex) for k, sub in want.items() if k in value)


def _additional(value: Any, want: Any, schema: Mapping[str, Any], regex: Regex) -> bool:
    if not isinstance(value, dict):
        return True
    extra = [k for k in value if k not in schema.get("properties", {})]
    if want is False:
        return not extra
    if want is True:
        return True
    return all(conforms(value[k], want, regex) for k in extra)


def _object(test: Callable[[dict[str, Any], Any, Regex], bool]) -> Callable[..., bool]:
    def check(value: Any, want: Any, _schema: Mapping[str, Any], regex: Regex) -> bool:
        return not isinstance(value, dict) or test(value, want, regex)

    return check


_CHECKS: dict[str, Callable[[Any, Any, Mapping[str, Any], Regex], bool]] = {
    "type": _type,
    "enum": _enum,
    "minLength": _string(lambda v, n, _r: len(v) >= n),
    "maxLength": _string(lambda v, n, _r: len(v) <= n),
    "pattern": _string(lambda v, p, r: r(p).search(v) is not None),
    "minimum": _number(lambda v, n: v >= n),
    "maximum": _number(lambda v, n: v <= n),
    "exclusiveMinimum": _number(lambda v, n: v > n),
    "exclusiveMaximum": _number(lambda v, n: v < n),
    "items": _array(lambda v, sub, r: all(conforms(item, sub, r) for item in v)),
    "minItems": _array(lambda v, n, _r: len(v) >= n),
    "maxItems": _array(lambda v, n, _r: len(v) <= n),
    "uniqueItems": _array(lambda v, want, _r: not want or _unique(v)),
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _object(lambda v, names, _r: all(name in v for name in names)),
    "minProperties": _object(lambda v, n, _r: len(v) >= n),
    "maxProperties": _object(lambda v, n, _r: len(v) <= n),
    "propertyNames": _object(lambda v, sub, r: all(conforms(k, sub, r) for k in v)),
}


def unknown_keywords(schema: Any) -> set[str]:
    """Every keyword in ``schema`` (at any depth) that :func:`conforms` does not know: a
    schema holding one is always handed to jsonschema (the test keeps the shipped schema
    free of them, so the fast path is the one taken)."""
    found: set[str] = set()
    if not isinstance(schema, dict):
        return found
    for key, value in schema.items():
        if key in ANNOTATIONS:
            continue
        if key not in _CHECKS:
            found.add(key)
        if key in ("properties",):
            for sub in value.values():
                found |= unknown_keywords(sub)
        elif key in ("items", "additionalProperties", "propertyNames"):
            found |= unknown_keywords(value)
    return found
