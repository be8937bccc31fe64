"""Lossless structural-cut detection.

A JSON text is *structurally cut* when it ends outside any string, right after
a value whose end is self-evident (a closing quote of a value string, ``}``,
``]``, ``true``, ``false`` or ``null``), with only closing brackets owed. Then
appending those closers recovers exactly what was sent, nothing guessed. A cut
inside a string, after ``,`` ``:`` ``{`` ``[``, after an object key, inside or
right after a number (``0.9`` may have been ``0.95``) or mid-literal is not
provably lossless and :func:`find_structural_cut` returns ``None``.

The decision may use a repair only to *lower* an outcome: a repaired ``fail``
stays ``fail``, a repaired ``pass`` is ``needs_human``.
"""

from __future__ import annotations

from dataclasses import dataclass

_CLOSER = {"{": "}", "[": "]"}
_LITERALS = ("true", "false", "null")


@dataclass(frozen=True)
class Repair:
    text: str
    closers: str


def find_structural_cut(text: str) -> Repair | None:
    """Return the repaired text and the closers added, or None if not lossless."""
    stack: list[str] = []
    # What the last token was: "value" (self-delimiting complete value), "key",
    # "open", "comma", "colon", "number", "literal-part" or "" (nothing yet).
    last = ""
    expect_key = False
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char in " \t\r\n":
            index += 1
            continue
        if char == '"':
            end = _string_end(text, index)
            if end < 0:
                return None  # cut inside a string
            last = "key" if expect_key else "value"
            expect_key = False
            index = end + 1
            continue
        if char in "{[":
            stack.append(char)
            last = "open"
            expect_key = char == "{"
        elif char in "}]":
            if not stack or _CLOSER[stack.pop()] != char:
                return None  # not a cut: mismatched structure
            last = "value"
            expect_key = False
        elif char == ",":
            last = "comma"
            expect_key = bool(stack) and stack[-1] == "{"
        elif char == ":":
            last = "colon"
        elif char in "-0123456789":
            while index < length and text[index] in "+-0123456789.eE":
                index += 1
            last = "number"
            continue
        else:
            word = next((lit for lit in _LITERALS if text.startswith(lit, index)), None)
            if word is None:
                return None  # mid-literal or garbage
            index += len(word)
            last = "value"
            continue
        index += 1
    if not stack or last != "value":
        return None
    closers = "".join(_CLOSER[opener] for opener in reversed(stack))
    return Repair(text=text.rstrip() + closers, closers=closers)


def _string_end(text: str, start: int) -> int:
    """Index of the closing quote of the string opening at ``start``, or -1."""
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index
        index += 1
    return -1
