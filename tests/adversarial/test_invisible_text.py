"""Class: verdict text a reader cannot see, or that is not text at all (issue 8, sections 9, 4).

Cause: ``check_shape`` accepted any reason for which ``str.strip()`` left something, so a pass
whose only reasons were ``"\\u200b"``, ``"\\u2800"``, ``"\\u3164"`` or ``"\\ufeff"`` (format
characters, the blank Braille pattern, a Hangul filler) passed with nothing said. And
``strict_loads`` let JSON escapes decode to lone surrogates (``"fine \\ud800"``): a string that
is no sequence of Unicode scalar values passed, then ``review`` crashed printing it (a strict
UTF-8 stream cannot encode it).

Fix: a reason needs a visible character: a letter, number, punctuation mark or symbol
(general categories L, N, P, S), not counting those that draw nothing (Hangul fillers, the
blank Braille pattern); else ``needs_human`` (``invisible_reason``). ``strict_loads`` refuses
a key or string holding a lone surrogate (``lone_surrogate``), so no such text reaches a
verdict, a terminal, ``--json`` or a certificate.

Variants (generated): every code point of the categories a reader cannot see (Z*, Cc, Cf, M*,
samples of Co and Cn) and the blank letters and symbols, alone, in runs and next to a visible
reason; visible controls from every L/N/P/S subcategory; every lone-surrogate shape in every
string field and in a key, for pass and fail; and the ``review`` CLI printing such verdicts,
as text and ``--json``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.decide.decision import Binding, Decision, State, decide
from gate.decide.envelope import seal
from gate.lab.sim import MODEL, ReviewerSimulator, extract_prompt
from gate.review.prompt import binding_in
from tests.verdicts import read_words

DIFF_SHA = hashlib.sha256(b"diff --git a/x b/x\n").hexdigest()
POLICY = "2026-11"
BINDING = Binding(DIFF_SHA, POLICY)
ISSUE_EXAMPLES = ("\u200b", "\u2800", "\u3164", "\ufeff")


def verdict(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "verdict": "pass",
        "reasons": ["tests cover the new branch"],
        "confidence": 0.9,
        "diff_sha": DIFF_SHA,
        "policy_version": POLICY,
        "read": read_words(DIFF_SHA, POLICY),
    }
    base.update(over)
    return base


def judge_text(json_text: str) -> Decision:
    return decide(seal(f"Review.\n```json\n{json_text}\n```\n".encode()), binding=BINDING)


def judge(obj: dict[str, Any], *, ascii_only: bool = True) -> Decision:
    return judge_text(json.dumps(obj, ensure_ascii=ascii_only))


# --- what a reader cannot see, generated from the Unicode database -------------------------


def _by_category() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue  # surrogates: the second half of this module
        found.setdefault(unicodedata.category(chr(code)), []).append(chr(code))
    return found


CATEGORIES = _by_category()
# Letters and symbols that draw nothing: the Hangul fillers and the blank Braille pattern
# (found by name, not copied from the gate).
BLANK_GRAPHICS = sorted(
    char
    for cat in ("Lo", "So")
    for char in CATEGORIES[cat]
    if ("FILLER" in unicodedata.name(char, "") and "HANGUL" in unicodedata.name(char, ""))
    or unicodedata.name(char, "") == "BRAILLE PATTERN BLANK"
)


def _spread(chars: list[str], count: int) -> list[str]:
    step = max(1, len(chars) // count)
    return chars[::step][:count]


def invisible_chars() -> list[str]:
    """Every separator, control, format character and mark; samples of Co and Cn."""
    chars: list[str] = []
    for cat in ("Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Mc", "Me"):
        chars += CATEGORIES[cat]
    chars += _spread(CATEGORIES["Co"], 40) + _spread(CATEGORIES["Cn"], 200)
    return chars + BLANK_GRAPHICS


INVISIBLE = invisible_chars()
VISIBLE = [
    char
    for cat in sorted(CATEGORIES)
    if cat[0] in "LNPS"
    for char in _spread([c for c in CATEGORIES[cat] if c not in BLANK_GRAPHICS], 8)
]


def test_the_generated_sets() -> None:
    assert set(ISSUE_EXAMPLES) <= set(INVISIBLE)
    assert {"\u115f", "\u1160", "\u3164", "\uffa0", "\u2800"} <= set(BLANK_GRAPHICS)
    assert len(INVISIBLE) > 2500
    assert len({unicodedata.category(c) for c in VISIBLE}) == 19  # every L, N, P, S category


def invisible_reasons() -> Iterator[list[str]]:
    """Reason lists holding at least one reason a reader cannot see."""
    for char in INVISIBLE:
        yield [char]  # alone
    for index in range(0, len(INVISIBLE), 7):
        yield ["".join(INVISIBLE[index : index + 5])]  # a run of different ones
        yield ["a visible reason", INVISIBLE[index] * 3]  # next to a visible reason


INVISIBLE_REASONS = list(invisible_reasons())


def test_the_issue_examples_are_needs_human() -> None:
    for char in ISSUE_EXAMPLES:
        decision = judge(verdict(reasons=[char]))
        assert (decision.state, decision.reason) == (State.NEEDS_HUMAN, "invisible_reason")
        assert decision.state is State.NEEDS_HUMAN


@pytest.mark.parametrize("kind", ["pass", "fail"])
def test_no_reason_without_a_visible_character(kind: str) -> None:
    seen: dict[str, int] = {}
    for reasons in INVISIBLE_REASONS:
        decision = judge(verdict(verdict=kind, reasons=reasons))
        assert decision.state is State.NEEDS_HUMAN, ([f"{ord(c):04X}" for c in reasons[-1]],)
        # whitespace alone was refused before as a blank reason; the rest is invisible_reason
        assert decision.reason in {"invisible_reason", "bad_reasons"}
        seen[decision.reason] = seen.get(decision.reason, 0) + 1
    assert seen["invisible_reason"] > seen.get("bad_reasons", 0)


def test_raw_invisible_characters_in_the_answer_are_needs_human_too() -> None:
    """Written raw, not as escapes (json.dumps still escapes the C0 controls)."""
    for char in INVISIBLE:
        decision = judge(verdict(reasons=[char]), ascii_only=False)
        assert decision.state is State.NEEDS_HUMAN, f"U+{ord(char):04X}"


def test_one_visible_character_is_enough() -> None:
    """No false block: a letter, number, punctuation mark or symbol, among invisibles."""
    for index, char in enumerate(VISIBLE):
        around = INVISIBLE[(index * 13) % len(INVISIBLE)]
        if unicodedata.category(around) == "Cc":
            around = "\u200b"
        decision = judge(verdict(reasons=[f"{around}{char}{around}"]), ascii_only=False)
        assert decision.state is State.PASS, (f"U+{ord(char):04X}", decision.detail)


# --- strings that are not Unicode scalar values ---------------------------------------------

LONE = {
    "high": "\\ud800",
    "last high": "\\udbff",
    "low": "\\udc00",
    "last low": "\\udfff",
    "reversed pair": "\\udc00\\ud800",
    "high then BMP": "\\ud83d\\u0041",
}
FIELDS = ("verdict", "reasons", "diff_sha", "policy_version", "key")


def with_surrogate(field: str, escape: str, where: str, kind: str) -> str:
    """The verdict's JSON text with ``escape`` written into one string field."""

    def put(value: str) -> str:
        return {"start": escape + value, "middle": value[:2] + escape + value[2:]}.get(
            where, value + escape
        )

    marker = "SURROGATE_HERE"
    obj = verdict(verdict=kind)
    if field == "key":
        obj[marker] = "x"
        return json.dumps(obj).replace(marker, put("note"))
    if field == "reasons":
        obj["reasons"] = ["first reason", marker]
        return json.dumps(obj).replace(marker, put("second reason"))
    obj[field] = marker
    return json.dumps(obj).replace(marker, put(verdict(verdict=kind)[field]))


SURROGATE_CASES = [
    (field, name, where, kind)
    for field in FIELDS
    for name in LONE
    for where in ("start", "middle", "end")
    for kind in ("pass", "fail")
]


def test_a_lone_surrogate_anywhere_is_needs_human() -> None:
    assert len(SURROGATE_CASES) == 180
    for field, name, where, kind in SURROGATE_CASES:
        text = with_surrogate(field, LONE[name], where, kind)
        decision = judge_text(text)
        label = (field, name, where, kind)
        assert (decision.state, decision.reason) == (State.NEEDS_HUMAN, "lone_surrogate"), label
        printed = "\n".join([decision.description, decision.detail])
        printed.encode("utf-8")  # what is printed is text: no surrogate reached it
        json.dumps(decision.to_json(), ensure_ascii=False).encode("utf-8")


def test_a_paired_surrogate_escape_is_one_character_and_passes() -> None:
    decision = judge_text(json.dumps(verdict(reasons=["ok "])).replace("ok ", "ok \\ud83d\\ude00"))
    assert decision.state is State.PASS
    assert decision.verdict is not None
    assert decision.verdict.reasons == ("ok \U0001f600",)


# --- printing: the review CLI, as text and as --json ---------------------------------------


def _responder(field: str) -> Callable[[dict[str, Any]], str]:
    """A reviewer answering a bound pass with a lone surrogate (or only U+200B) in ``field``."""
    invisible = field == "invisible"
    target, value = ("reasons", "\\u200b") if invisible else (field, "fine " + LONE["high"])

    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt("openai", request)[1])
        assert binding is not None
        obj = verdict(diff_sha=binding.diff_sha, policy_version=binding.policy_version)
        marker = "VALUE_HERE"
        if target == "key":
            obj[marker] = "x"
        elif target == "reasons":
            obj["reasons"] = [marker]
        else:
            obj[target] = marker
        text = json.dumps(obj).replace(marker, value)
        return f"Reviewed.\n```json\n{text}\n```\n"

    return respond


@pytest.mark.parametrize("output", ["text", "json"])
@pytest.mark.parametrize("field", [*FIELDS, "invisible"])
def test_review_prints_such_verdicts_without_crashing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    output: str,
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    diff = tmp_path / "change.diff"
    diff.write_bytes(b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    cert = tmp_path / "cert.json"
    argv = ["review", "--diff", str(diff), "--provider", "openai", "--model", MODEL]
    argv += ["--certificate", str(cert), *(["--json"] if output == "json" else [])]
    with ReviewerSimulator("openai", _responder(field)) as sim:
        code = main([*argv, "--base-url", sim.base_url])
    out, err = capsys.readouterr()  # a strict UTF-8 stream: a surrogate would have raised
    assert "internal error" not in err
    assert code == 3
    expected = "invisible_reason" if field == "invisible" else "lone_surrogate"
    if output == "json":
        summary = json.loads(out)
        assert (summary["state"], summary["reason"]) == ("needs_human", expected)
    else:
        assert out.startswith("needs_human")
        assert expected in out.splitlines()[0]
    certificate = json.loads(cert.read_text(encoding="utf-8"))
    assert certificate["decision"]["reason"] == expected
