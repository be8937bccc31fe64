"""One strict JSON loader for every JSON input the gate reads.

Verdicts, provider frames, tool results, certificates and event payloads all
pass through :func:`loads`, so each of them refuses the same things and no
input can make the loader raise anything but the caller's typed error:

* bytes that are not strict UTF-8 (``not_utf8``; ``json.loads`` would guess
  UTF-16/32 from a byte string, the gate never guesses);
* anything ``json.loads`` rejects (``json_syntax``);
* a key twice in one object (``duplicate_key``: never last-wins);
* ``NaN``, ``Infinity``, ``-Infinity``, and numbers that overflow a float to
  infinity (``non_finite``);
* an integer Python will not convert (more than 4300 digits raise
  ``ValueError`` in ``int()``) (``bad_number``);
* nesting deeper than ``max_depth`` (``too_deep``), measured before parsing so
  the recursive decoder never gets near the interpreter's recursion limit
  (``RecursionError`` is caught as well, should it happen anyway).

The caller names the input (``what``) and gives the error class (or factory)
to raise, called as ``error(message, reason=code)`` with one of the codes
above; :class:`~gate.errors.GateError` subclasses fit as they are.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Protocol

from gate.errors import GateError

NOT_UTF8 = "not_utf8"
JSON_SYNTAX = "json_syntax"
DUPLICATE_KEY = "duplicate_key"
NON_FINITE = "non_finite"
BAD_NUMBER = "bad_number"
TOO_DEEP = "too_deep"
#: every reason code :func:`loads` gives
REASONS = frozenset({NOT_UTF8, JSON_SYNTAX, DUPLICATE_KEY, NON_FINITE, BAD_NUMBER, TOO_DEEP})

#: nesting allowed when the caller does not say (no input of the gate needs more)
DEFAULT_MAX_DEPTH = 64

# A JSON string (skipped whole, so brackets inside it do not count) or a bracket.
# An unterminated string runs to the end of the text (the decoder stops at it before
# any bracket after it, so those need no counting). Possessive and closed at the end,
# so no match ever fails and is retried from a later quote: one pass, linear. (The
# old form, which failed on an unterminated string, was tried again from every quote
# inside it: '"' + '\\"' * 16000 took 13 s, a 4 MiB answer would take days.)
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*+(?:\\(?:.|\Z)[^"\\]*+)*+(?:"|\Z)|[\[\]{}]', re.DOTALL)


class ErrorFactory(Protocol):
    """What :func:`loads` calls to build the error it raises."""

    def __call__(self, message: str, *, reason: str | None = ...) -> GateError: ...


def nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text`` (brackets in strings ignored)."""
    depth = deepest = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def loads(
    data: str | bytes,
    *,
    what: str,
    error: ErrorFactory,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """Parse one JSON document strictly; raise ``error(message, reason=code)`` on any fault.

    ``what`` names the input in messages (e.g. ``"the tool result"``). The value
    may be of any JSON type: checking it is an object is the caller's business.
    """
    if isinstance(data, bytes | bytearray):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as err:
            raise error(
                f"{what} is not UTF-8 (byte {err.start}); JSON must be UTF-8",
                reason=NOT_UTF8,
            ) from None
    else:
        text = data
    depth = nesting_depth(text)
    if depth > max_depth:
        raise error(
            f"{what} nests {depth} levels deep; at most {max_depth} are allowed",
            reason=TOO_DEEP,
        )

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise error(
                    f"{what} has the key {key[:40]!r} twice; duplicate keys are refused "
                    "(never last-wins)",
                    reason=DUPLICATE_KEY,
                )
            result[key] = value
        return result

    def no_constant(name: str) -> Any:
        raise error(f"{what} contains {name}, which is not a JSON number", reason=NON_FINITE)

    def finite_float(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise error(
                f"{what} has the number {literal[:20]}..., too large for a float",
                reason=NON_FINITE,
            )
        return value

    try:
        return json.loads(
            text,
            object_pairs_hook=no_duplicates,
            parse_constant=no_constant,
            parse_float=finite_float,
            strict=True,
        )
    except json.JSONDecodeError as err:
        raise error(
            f"{what} is not JSON: {err.msg} at line {err.lineno} column {err.colno}",
            reason=JSON_SYNTAX,
        ) from None
    except ValueError:  # int() refuses more than 4300 digits
        raise error(
            f"{what} has an integer of more than 4300 digits, which is not read",
            reason=BAD_NUMBER,
        ) from None
    except RecursionError:
        raise error(
            f"{what} nests too deeply to be read; at most {max_depth} levels are allowed",
            reason=TOO_DEEP,
        ) from None
