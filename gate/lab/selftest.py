"""The exhaustive fail-closed loop behind ``review-gate selftest``.

Takes a valid, passing envelope and checks that every truncation, every
single-byte substitution and a few forgeries (sentinel removed and resealed, a
byte appended; resealed answers with a fail fence hidden behind bare CRs or
U+2028, the verdict hidden in an HTML comment, invisible reasons, a lone
surrogate) are *not* a pass. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gate.decide.decision import Binding, Decision, State, decide
from gate.decide.envelope import SENTINEL, seal, verify_text
from gate.decide.readback import words_for
from gate.decide.verdict import extract_fence, strict_loads
from gate.errors import GateError

BUILTIN_DIFF = b"""diff --git a/app/util.py b/app/util.py
--- a/app/util.py
+++ b/app/util.py
@@ -1,3 +1,4 @@
 def clamp(value, low, high):
-    return max(low, min(value, high))
+    if low > high:
+        raise ValueError("low > high")
+    return max(low, min(value, high))
"""
BUILTIN_POLICY = "selftest-1"


def builtin_envelope() -> tuple[bytes, Binding]:
    """A valid envelope holding a confident, bound ``pass`` and its binding."""
    binding = Binding(hashlib.sha256(BUILTIN_DIFF).hexdigest(), BUILTIN_POLICY)
    content = (
        "The change adds an argument check and keeps behaviour otherwise.\n\n"
        "```json\n"
        '{"verdict": "pass", "reasons": ["argument check is correct", "no behaviour change"], '
        f'"confidence": 0.93, "read": {json.dumps(words_for(binding.diff_sha, BUILTIN_POLICY))}, '
        f'"diff_sha": "{binding.diff_sha}", '
        f'"policy_version": "{binding.policy_version}"}}\n'
        "```\n"
    )
    return seal(content.encode("utf-8")), binding


@dataclass
class Tally:
    checked: int = 0
    passed: list[str] = field(default_factory=list)
    states: dict[str, int] = field(default_factory=dict)

    def record(self, label: str, decision: Decision) -> None:
        self.checked += 1
        self.states[decision.reason] = self.states.get(decision.reason, 0) + 1
        if decision.state is State.PASS:
            self.passed.append(label)


@dataclass
class SelftestReport:
    baseline: Decision
    truncations: Tally = field(default_factory=Tally)
    flips: Tally = field(default_factory=Tally)
    forgeries: Tally = field(default_factory=Tally)

    @property
    def ok(self) -> bool:
        return not (self.truncations.passed or self.flips.passed or self.forgeries.passed)


def truncations(raw: bytes) -> Iterator[tuple[str, bytes]]:
    for cut in range(len(raw)):
        yield f"truncated to {cut} bytes", raw[:cut]


def flips(raw: bytes, *, all_values: bool) -> Iterator[tuple[str, bytes]]:
    for offset, original in enumerate(raw):
        values = range(256) if all_values else (original ^ (1 << bit) for bit in range(8))
        for value in values:
            if value == original:
                continue
            mutated = bytearray(raw)
            mutated[offset] = value
            yield f"byte {offset} {original:#04x}->{value:#04x}", bytes(mutated)


def forgeries(raw: bytes) -> Iterator[tuple[str, bytes]]:
    body = raw.split(b"\n", 1)[1] if b"\n" in raw else raw
    if body.endswith(SENTINEL):
        # Remove the sentinel and make length and digest agree again.
        stripped = body[: -len(SENTINEL)]
        digest = hashlib.sha256(stripped).hexdigest().encode()
        yield "sentinel removed, resealed", b"MC1 %d %s\n" % (len(stripped), digest) + stripped
    yield "one byte appended", raw + b"\n"
    yield "envelope repeated", raw + raw
    yield "CRLF header", raw.replace(b"\n", b"\r\n", 1)
    yield from verdict_forgeries(raw)


def verdict_forgeries(raw: bytes) -> Iterator[tuple[str, bytes]]:
    """Resealed answers around the verdict that a reader could see otherwise (issue 8)."""
    try:
        content = verify_text(raw)
        obj = strict_loads(extract_fence(content))
    except (GateError, UnicodeDecodeError):
        return  # not a verdict to forge from: the baseline says so

    def answer(value: dict[str, Any]) -> str:
        return f"```json\n{json.dumps(value)}\n```\n"

    fail = answer(dict(obj, verdict="fail"))
    for name, ending in (("bare CR", "\r"), ("U+2028", "\u2028"), ("U+0085", "\x85")):
        hidden = "My real verdict:" + ending + fail.replace("\n", ending)
        yield f"fail fence behind {name} before the verdict", seal((hidden + content).encode())
    if "-->" not in content:
        hidden = f"<!--\n{content}\n-->\n"
        yield "verdict inside an HTML comment", seal(hidden.encode())
    for invisible in ("\u200b", "\u2800", "\u3164", "\ufeff"):
        forged = answer(dict(obj, reasons=[invisible]))
        yield f"reasons made {invisible!a}", seal(forged.encode())
    forged = answer(dict(obj, reasons=["fine \ud800"]))  # json.dumps writes the escape
    yield "lone surrogate in a reason", seal(forged.encode())


def run(
    raw: bytes,
    binding: Binding,
    *,
    min_confidence: float = 0.8,
    all_values: bool = False,
    progress: Callable[[str], None] | None = None,
) -> SelftestReport:
    def judge(data: bytes) -> Decision:
        return decide(data, binding=binding, min_confidence=min_confidence)

    report = SelftestReport(baseline=judge(raw))
    for kind, tally, cases in (
        ("truncations", report.truncations, truncations(raw)),
        ("flips", report.flips, flips(raw, all_values=all_values)),
        ("forgeries", report.forgeries, forgeries(raw)),
    ):
        if progress is not None:
            progress(kind)
        for label, data in cases:
            tally.record(label, judge(data))
    return report
