"""The verdict contract: one fence, strict JSON, exact shape, binding.

:func:`extract_fence` finds exactly one ```` ```json ```` block, by two counts
that must agree: the gate's own (:func:`fence_by_lines`: lines split at every
CommonMark line ending, any other fence line anywhere makes the count wrong,
and no reader that breaks lines elsewhere may see another fence) and GitHub's
renderer's (:func:`rendered_code_blocks`: cmark-gfm, through cmarkgfm, must
draw exactly one code block, a ``json`` one holding the same text).
:func:`strict_loads` parses JSON with duplicate keys, ``NaN``/``Infinity``,
excessive depth, lone surrogates and non-object tops refused;
:func:`check_shape` and :func:`check_binding` enforce the exact key set, types,
enum, range, visible reasons and the ``diff_sha``/``policy_version`` the gate
sent. Every failure raises a :class:`~gate.errors.VerdictError` subclass with a
specific ``reason`` code. Nothing here scans raw text for keywords.
docs/verdict.md describes the format.
"""

from __future__ import annotations

import html
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import cmarkgfm  # type: ignore[import-untyped]

from gate.decide.readback import PARTS, check_read
from gate.errors import (
    BindingError,
    FenceAmbiguous,
    FenceError,
    InvisibleReason,
    LoneSurrogate,
    PromptUnread,
    ShapeError,
    StrictJSONError,
)
from gate.safe import strictjson
from gate.safe.redact import redact

KEYS = ("verdict", "reasons", "confidence", "diff_sha", "policy_version", "read")
#: the keys of a verdict made before the ``read`` member (gate.decide.readback): what a
#: certificate that records no read words was decided by (docs/verdict.md)
KEYS_WITHOUT_READ = KEYS[:5]
VERDICTS = ("pass", "fail")
MAX_DEPTH = 16
OPEN_FENCE = "```json"
# Any line that could open or close a fence in any Markdown reader, counted
# generously: after indentation, a BOM or zero-width characters, blockquote
# markers (``>``), list markers (``-``, ``*``, ``+``, ``1.``, ``1)``) or footnote
# labels (``[^1]:``, GitHub's footnotes). A generous count can only make the gate stricter.
_FENCE_LINE = re.compile(
    "^(?:[\\s>*+\\-.)0-9\ufeff\u200b\u200c\u200d\u2060]|\\[\\^[^\\]]*\\]:)*(`{3,}|~{3,})"
)
# CommonMark (0.31.2, section 2.1) and cmark-gfm end a line at LF, CRLF and a bare CR,
# and nowhere else: not at VT, FF, U+0085, U+2028 or U+2029 (see docs/verdict.md).
_LINE_ENDING = re.compile("\r\n|\r|\n")
# GitHub's renderer draws every code block, fenced or indented, as <pre>: with an info
# string, <pre lang="FIRST-WORD">; text is HTML-escaped. Raw HTML is kept (the HTML is
# only counted, never shown), so a <pre> written as HTML counts as a code block too.
_RENDERED_BLOCK = re.compile(r'<pre(?: lang="([^"<>]*)")?><code>([^<]*)</code></pre>')
_ANY_PRE = re.compile("<pre", re.IGNORECASE)
# Letters, numbers, punctuation and symbols are what a reader sees (Unicode general
# categories L, N, P, S); marks, separators and "other" (Cc, Cf, Cs, Co, Cn) are not.
_VISIBLE_CATEGORIES = frozenset("LNPS")
# ...except these letters and symbols, which draw nothing: the Hangul fillers (Lo, yet
# Default_Ignorable_Code_Point), the blank Braille pattern, the ideographic half fill
# space and the musical null notehead (So).
_BLANK_GRAPHICS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u303f\U0001d159")
_SURROGATE = re.compile("[\ud800-\udfff]")
_PLAIN_KEY = re.compile("[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Verdict:
    """A verdict of the exact shape (binding checked separately)."""

    verdict: str
    reasons: tuple[str, ...]
    confidence: float
    diff_sha: str
    policy_version: str
    #: the read words by part (gate.decide.readback.PARTS); empty in a verdict made before them
    read: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "confidence": self.confidence,
            "diff_sha": self.diff_sha,
            "policy_version": self.policy_version,
            **({"read": dict(self.read)} if self.read else {}),
        }


def split_lines(content: str) -> list[str]:
    """The lines of ``content`` as CommonMark reads them (LF, CRLF or a bare CR ends one)."""
    return _LINE_ENDING.split(content)


def fence_by_lines(content: str) -> list[str]:
    """The gate's own count: the lines inside the one ```` ```json ```` fence, or FenceError.

    Fence lines are counted in the CommonMark lines; a reader that also ends a line at
    VT, FF, U+001C-U+001E, U+0085, U+2028 or U+2029 (Python's ``str.splitlines``,
    Unicode's mandatory breaks) must not see more of them (``fence_ambiguous``).
    """
    lines = split_lines(content)
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
    broken = sum(1 for line in content.splitlines() if _FENCE_LINE.match(line))
    if broken != len(fences):
        raise FenceAmbiguous(
            f"{broken} fence lines where a reader also ends lines at VT, FF, U+0085, U+2028 "
            "or U+2029, but 2 where only CommonMark's line endings count: a fence hidden "
            "behind a character that is no CommonMark line ending; send plain LF line endings",
        )
    return lines[opening_index + 1 : closing_index]


@dataclass(frozen=True)
class CodeBlock:
    """A code block as GitHub's renderer draws it."""

    language: str  # the first word of a fence's info string; "" for none (or indented)
    text: str  # its text, each line ended by LF


def rendered_code_blocks(content: str) -> list[CodeBlock]:
    """Every code block, fenced or indented, that GitHub's renderer (cmark-gfm) draws."""
    # As github.com: footnotes (a fence in a footnote is drawn at the end), raw HTML.
    options = cmarkgfm.Options.CMARK_OPT_FOOTNOTES | cmarkgfm.Options.CMARK_OPT_UNSAFE
    try:
        rendered: str = cmarkgfm.github_flavored_markdown_to_html(content, options)
    except ValueError as err:  # text that is not UTF-8 (lone surrogates), or cmark gave up
        raise FenceAmbiguous(
            f"GitHub's renderer (cmark-gfm) cannot read the answer ({type(err).__name__}), "
            "so its fences cannot be counted"
        ) from None
    blocks = [
        CodeBlock(language=html.unescape(lang), text=html.unescape(text))
        for lang, text in _RENDERED_BLOCK.findall(rendered)
    ]
    if len(_ANY_PRE.findall(rendered)) != len(blocks):
        raise FenceAmbiguous(
            "GitHub's renderer (cmark-gfm) shows preformatted text this gate cannot read as "
            "a code block (a <pre> written as HTML?); send exactly one ```json fence and no "
            "other code block"
        )
    return blocks


def extract_fence(content: str) -> str:
    """Return the text inside the one ```` ```json ```` fence, or raise FenceError.

    Exactly one fence by both counts: the gate's own (:func:`fence_by_lines`) and
    GitHub's renderer's (:func:`rendered_code_blocks`), which must draw exactly one
    code block of any kind, a ``json`` one, holding the very lines the gate read.
    Any disagreement is :class:`~gate.errors.FenceAmbiguous` (``fence_ambiguous``).
    """
    body = fence_by_lines(content)
    blocks = rendered_code_blocks(content)
    json_blocks = sum(1 for block in blocks if block.language == "json")
    if len(blocks) != 1 or json_blocks != 1:
        raise FenceAmbiguous(
            f"the gate counts one ```json fence, but GitHub's renderer (cmark-gfm) draws "
            f"{len(blocks)} code block(s), {json_blocks} of them json (a fence hidden in "
            "HTML or behind a line ending, or an indented code block); send exactly one "
            "```json fence and no other code block"
        )
    if blocks[0].text != "".join(line + "\n" for line in body):
        raise FenceAmbiguous(
            "the gate and GitHub's renderer (cmark-gfm) read different text in the one "
            "```json fence (a NUL byte, or the fence is not where the gate sees it)"
        )
    return "\n".join(body)


def strict_loads(text: str) -> dict[str, Any]:
    """Parse one JSON object strictly (:func:`gate.safe.strictjson.loads`), or StrictJSONError."""
    value = strictjson.loads(
        text, what="the verdict JSON", error=StrictJSONError, max_depth=MAX_DEPTH
    )
    if not isinstance(value, dict):
        raise StrictJSONError(
            f"the fenced JSON is a {type(value).__name__}, not an object", reason="not_object"
        )
    _no_surrogates(value)
    return value


def _no_surrogates(value: Any, where: str = "") -> None:
    """Raise LoneSurrogate if a key or string in ``value`` holds a lone surrogate."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is not None:
            raise LoneSurrogate(
                f"{where or 'the verdict'} holds U+{ord(found.group()):04X} at character "
                f"{found.start() + 1}, a lone surrogate (a \\uD800-\\uDFFF escape without its "
                "pair): not a Unicode scalar value, so it cannot be shown or stored as text"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_surrogates(key, f"a key in {where or 'the verdict'}")
            name = key if _PLAIN_KEY.fullmatch(key) else json.dumps(key)
            _no_surrogates(item, f"{where}.{name}" if where else name)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _no_surrogates(item, f"{where}[{index}]")


def check_shape(obj: Mapping[str, Any], *, read: bool = True) -> Verdict:
    """Check the exact key set, types, enum and range; return the Verdict. ``read=False``
    reads a verdict made before the ``read`` member (:data:`KEYS_WITHOUT_READ`)."""
    expected = KEYS if read else KEYS_WITHOUT_READ
    keys = set(obj)
    missing = [key for key in expected if key not in keys]
    extra = sorted(keys - set(expected))
    if extra:
        raise ShapeError(f"unexpected key(s) {', '.join(map(repr, extra))}", reason="extra_key")
    if missing == ["read"]:
        raise PromptUnread(
            "the verdict has no read member (the four read words the prompt carries): the "
            "model did not see the output contract, which the system message holds; use a "
            "chat template that keeps the system message, and a context that holds the "
            "whole prompt (docs/verdict.md)"
        )
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
        if not visible(item):
            raise InvisibleReason(
                f"reasons[{index}] has no visible character (a letter, digit, punctuation "
                f"mark or symbol), only {_show(item)}: a reason must say something"
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
    words = _read_words(obj["read"]) if read else {}
    return Verdict(
        verdict=verdict,
        reasons=tuple(reasons),
        confidence=float(confidence),
        diff_sha=obj["diff_sha"],
        policy_version=obj["policy_version"],
        read=words,
    )


def _read_words(value: Any) -> dict[str, str]:
    """The ``read`` member: an object of exactly one string per part of the prompt."""
    if (
        not isinstance(value, dict)
        or set(value) != set(PARTS)
        or not all(isinstance(word, str) for word in value.values())
    ):
        raise ShapeError(
            f"read must be an object of exactly the strings {', '.join(PARTS)} (the read "
            f"word of each part of the prompt), got {_show(value)}",
            reason="bad_read",
        )
    return {part: value[part] for part in PARTS}


def visible(text: str) -> bool:
    """True if ``text`` holds a letter, number, punctuation mark or symbol that draws ink."""
    return any(
        unicodedata.category(char)[0] in _VISIBLE_CATEGORIES and char not in _BLANK_GRAPHICS
        for char in text
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
    """Fence, strict JSON, shape, binding and the read words, in that order."""
    obj = strict_loads(extract_fence(content))
    verdict = check_shape(obj)
    check_binding(verdict, diff_sha=diff_sha, policy_version=policy_version)
    check_read(verdict.read, diff_sha=diff_sha, policy_version=policy_version)
    return verdict


def _show(value: Any) -> str:
    text = redact(json.dumps(value, ensure_ascii=True))  # before the cut
    return text if len(text) <= 40 else text[:37] + "..."
