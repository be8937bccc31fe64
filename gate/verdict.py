"""The verdict contract: one fence, strict JSON, exact shape, binding.

:func:`extract_fence` finds exactly one ```` ```json ```` block (any other fence
line anywhere makes the count wrong); :func:`strict_loads` parses JSON with
duplicate keys, ``NaN``/``Infinity``, excessive depth and non-object tops
refused; :func:`check_shape` and :func:`check_binding` enforce the exact key
set, types, enum, range and the ``diff_sha``/``policy_version`` the gate sent.
Every failure raises a :class:`~gate.errors.VerdictError` subclass with a
specific ``reason`` code. Nothing here scans raw text for keywords.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.errors import BindingError, FenceError, ShapeError, StrictJSONError
from gate.redact import redact

KEYS = ("verdict", "reasons", "confidence", "diff_sha", "policy_version")
VERDICTS = ("pass", "fail")
MAX_DEPTH = 16
OPEN_FENCE = "```json"
# Any line that could open or close a fence in any Markdown reader, counted
# generously: after indentation, a BOM or zero-width characters, blockquote
# markers (``>``) or list markers (``-``, ``*``, ``+``, ``1.``, ``1)``). A
# generous count can only make the gate stricter.
_FENCE_LINE = re.compile("^[\\s>*+\\-.)0-9\ufeff\u200b\u200c\u200d\u2060]*(`{3,}|~{3,})")


@dataclass(frozen=True)
class Verdict:
    """A verdict of the exact shape (binding checked separately)."""

    verdict: str
    reasons: tuple[str, ...]
    confidence: float
    diff_sha: str
    policy_version: str

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "confidence": self.confidence,
            "diff_sha": self.diff_sha,
            "policy_version": self.policy_version,
        }


def extract_fence(content: str) -> str:
    """Return the text inside the one ```` ```json ```` fence, or raise FenceError."""
    lines = content.split("\n")
    fences = [(i, line) for i, line in enumerate(lines) if _FENCE_LINE.match(line)]
    if not fences:
        raise FenceError(
            "no fenced block: the verdict must be inside exactly one ```json fence",
            reason="no_fence",
        )
    opening_index, opening = fences[0]
    if opening.rstrip(" \t") != OPEN_FENCE:
        raise FenceError(
            f"line {opening_index + 1}: fence opens with {opening.strip()[:20]!r}, "
            "expected exactly '```json'",
            reason="bad_fence_info",
        )
    if len(fences) == 1:
        raise FenceError(
            f"the ```json fence opened on line {opening_index + 1} is never closed",
            reason="unclosed_fence",
        )
    if len(fences) > 2:
        blocks = (len(fences) + 1) // 2
        raise FenceError(
            f"{len(fences)} fence lines (about {blocks} blocks) where exactly one ```json "
            "block is allowed (an echoed example or a second verdict?)",
            reason="multiple_fences",
        )
    closing_index, closing = fences[1]
    if closing.rstrip(" \t") != "```":
        raise FenceError(
            f"line {closing_index + 1}: a second fence opens ({closing.strip()[:20]!r}) "
            "where the ```json block should close",
            reason="multiple_fences",
        )
    return "\n".join(lines[opening_index + 1 : closing_index])


def _max_depth(text: str) -> int:
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise StrictJSONError(
                f"duplicate key {key!r} in the verdict JSON", reason="duplicate_key"
            )
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise StrictJSONError(f"non-finite number {name} in the verdict JSON", reason="non_finite")


def strict_loads(text: str) -> dict[str, Any]:
    """Parse one JSON object strictly, or raise StrictJSONError."""
    depth = _max_depth(text)
    if depth > MAX_DEPTH:
        raise StrictJSONError(f"JSON nesting depth {depth} exceeds {MAX_DEPTH}", reason="too_deep")
    try:
        value = json.loads(
            text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, strict=True
        )
    except json.JSONDecodeError as err:
        raise StrictJSONError(
            f"invalid JSON in the fence at line {err.lineno} column {err.colno}: {err.msg}",
            reason="json_syntax",
        ) from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise StrictJSONError(
            f"unparseable number in the verdict JSON: {err}", reason="bad_number"
        ) from None
    if not isinstance(value, dict):
        raise StrictJSONError(
            f"the fenced JSON is a {type(value).__name__}, not an object", reason="not_object"
        )
    return value


def check_shape(obj: Mapping[str, Any]) -> Verdict:
    """Check the exact key set, types, enum and range; return the Verdict."""
    keys = set(obj)
    missing = [key for key in KEYS if key not in keys]
    extra = sorted(keys - set(KEYS))
    if extra:
        raise ShapeError(f"unexpected key(s) {', '.join(map(repr, extra))}", reason="extra_key")
    if missing:
        raise ShapeError(f"missing key(s) {', '.join(map(repr, missing))}", reason="missing_key")
    verdict = obj["verdict"]
    if not isinstance(verdict, str) or verdict not in VERDICTS:
        raise ShapeError(
            f"verdict must be 'pass' or 'fail', got {_show(verdict)}", reason="bad_verdict"
        )
    reasons = obj["reasons"]
    if not isinstance(reasons, list):
        raise ShapeError(f"reasons must be a list, got {_show(reasons)}", reason="bad_reasons")
    for index, item in enumerate(reasons):
        if not isinstance(item, str) or not item.strip():
            raise ShapeError(
                f"reasons[{index}] must be a non-empty string, got {_show(item)}",
                reason="bad_reasons",
            )
    confidence = obj["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise ShapeError(
            f"confidence must be a number, got {_show(confidence)}", reason="bad_confidence"
        )
    if not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
        raise ShapeError(
            f"confidence must be within [0, 1], got {confidence!r}", reason="confidence_range"
        )
    for key in ("diff_sha", "policy_version"):
        if not isinstance(obj[key], str):
            raise ShapeError(f"{key} must be a string, got {_show(obj[key])}", reason="bad_type")
    return Verdict(
        verdict=verdict,
        reasons=tuple(reasons),
        confidence=float(confidence),
        diff_sha=obj["diff_sha"],
        policy_version=obj["policy_version"],
    )


def check_binding(verdict: Verdict, *, diff_sha: str, policy_version: str) -> None:
    """Raise BindingError unless the verdict repeats what the gate sent."""
    if verdict.diff_sha != diff_sha:
        at = next(
            (i for i, (a, b) in enumerate(zip(verdict.diff_sha, diff_sha, strict=False)) if a != b),
            min(len(verdict.diff_sha), len(diff_sha)),
        )
        start = max(0, at - 4)
        raise BindingError(
            f"diff_sha differs from the reviewed diff's at character {at + 1} "
            f"(...{verdict.diff_sha[start : at + 8]!r} vs ...{diff_sha[start : at + 8]!r}): "
            "a stale, foreign or corrupted verdict",
            reason="diff_sha_mismatch",
        )
    if verdict.policy_version != policy_version:
        raise BindingError(
            f"policy_version {verdict.policy_version[:20]!r} does not match "
            f"{policy_version[:20]!r}",
            reason="policy_version_mismatch",
        )


def parse_verdict(content: str, *, diff_sha: str, policy_version: str) -> Verdict:
    """Fence, strict JSON, shape and binding, in that order."""
    obj = strict_loads(extract_fence(content))
    verdict = check_shape(obj)
    check_binding(verdict, diff_sha=diff_sha, policy_version=policy_version)
    return verdict


def _show(value: Any) -> str:
    text = redact(json.dumps(value, ensure_ascii=True))  # before the cut
    return text if len(text) <= 40 else text[:37] + "..."
