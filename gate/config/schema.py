"""The config's JSON Schema: ``gate/schemas/config.schema.json`` (draft 2020-12), its
patterns read as ECMA-262, and a value's errors against it.

A conforming value (every run's case) is answered by :mod:`gate.config.check` without
importing jsonschema (~0.2 s); only a value that does not conform is handed to
jsonschema, whose errors :mod:`gate.config.wording` puts in words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from gate.config.check import conforms

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator


@cache
def schema() -> dict[str, Any]:
    """The config JSON Schema shipped with the package."""
    text = resources.files("gate").joinpath("schemas/config.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


#: ECMA-262 WhiteSpace and LineTerminator, what ``\s`` means in a JSON Schema pattern
_ECMA_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_ECMA_OUTSIDE = {
    "$": r"\Z",
    ".": "[^\n\r\u2028\u2029]",
    "\\s": f"[{_ECMA_SPACE}]",
    "\\S": f"[^{_ECMA_SPACE}]",
}


@cache
def schema_regex(pattern: str) -> re.Pattern[str]:
    """A JSON Schema ``pattern`` (an ECMA-262 regular expression) as a Python regex.

    JSON Schema patterns are ECMA-262, where ``$`` matches only at the very end; in
    Python ``$`` also matches before a final newline, so ``^[a-z]+$`` would accept
    ``"abc\\n"``. Every pattern of the shipped schemas is checked through this
    translation (the schemas stay standard for editors): ``$`` becomes ``\\Z``, ``.``
    excludes every ECMA line terminator, ``\\s``/``\\S`` are ECMA's white space, and
    ``\\d``, ``\\w``, ``\\b`` are ASCII (``re.ASCII``), as in ECMA-262. A construct
    this does not translate (``\\S`` inside a class) raises ValueError.
    """
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        pair = pattern[i : i + 2]
        if char == "\\":
            if in_class and pair == "\\s":
                out.append(_ECMA_SPACE)
            elif in_class and pair in ("\\S", "\\D", "\\W"):
                raise ValueError(f"pattern {pattern!r}: {pair} inside a class is not supported")
            else:
                out.append(_ECMA_OUTSIDE.get(pair, pair) if not in_class else pair)
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("[^]", i) or pattern.startswith("[]", i):
                raise ValueError(f"pattern {pattern!r}: an empty class is not supported")
        else:
            char = _ECMA_OUTSIDE.get(char, char)
        out.append(char)
        i += 1
    return re.compile("".join(out), re.ASCII)


def schema_errors(data: Any) -> list[ValidationError]:
    """jsonschema's errors for ``data``, or none when it conforms: a conforming config
    (:func:`gate.config.check.conforms`, proved equal to jsonschema on generated configs)
    is read without importing jsonschema; only a wrong one is handed over for words."""
    if conforms(data, schema(), schema_regex):
        return []
    return list(_validator().iter_errors(data))


@cache
def _validator() -> Validator:
    # imported here: jsonschema costs ~0.2 s to import, paid only when validating
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import ValidationError

    def pattern(
        validator: Validator, pattern: str, instance: Any, _schema: Any
    ) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not schema_regex(pattern).search(instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")

    Draft202012Validator.check_schema(schema())
    for found in patterns(schema()):
        schema_regex(found)  # a pattern the translation cannot read fails here, at once
    # jsonschema's extend() carries no annotations
    strict: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator, {"pattern": pattern}
    )
    return strict(schema())


def patterns(node: Any) -> Iterator[str]:
    """Every ``pattern`` in a schema (tests/adversarial/test_schema_patterns.py: in each one)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            else:
                yield from patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from patterns(item)


def schema_at(path: tuple[str | int, ...]) -> dict[str, Any]:
    """The schema of the value at ``path`` (empty where the schema says nothing of it)."""
    node: dict[str, Any] = schema()
    for key in path:
        if isinstance(key, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(key, {})
    return node
