"""``review-gate selftest``: show that this installation fails closed."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.decide.decision import Binding

NAME = "selftest"
ORDER = 24
HELP = "mutate a valid response every way and check that nothing passes"
DESCRIPTION = """\
The exhaustive loop anyone can run to see that their installation fails
closed. Starting from a valid, passing MC1 envelope (a built-in one, or
RESPONSE), it decides on:

  - every truncation (each prefix, 0 .. len-1 bytes);
  - every single-byte flip (each bit of each byte; --all-values tries all
    255 other values of each byte);
  - forgeries: the END sentinel removed with length and digest fixed, a byte
    appended, the envelope repeated, a CRLF header; and resealed answers: a
    fail fence hidden behind bare CRs, U+2028 or U+0085 before the verdict, the
    verdict inside an HTML comment, invisible reasons, a lone surrogate.

None may pass. Prints the counts and the reasons seen; exits 1 if any
mutation passed, 2 if RESPONSE itself does not pass.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "response", metavar="RESPONSE", nargs="?", help="a passing MC1 envelope (default: built-in)"
    )
    parser.add_argument(
        "--all-values", action="store_true", help="try all 255 substitutes for each byte"
    )
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")


def _binding_of(raw: bytes) -> Binding:
    """The response's own binding (the most lenient one: mutations must still fail)."""
    from gate.decide.decision import Binding
    from gate.decide.envelope import verify_text
    from gate.decide.verdict import check_shape, extract_fence, strict_loads
    from gate.errors import GateError, UsageError

    try:
        verdict = check_shape(strict_loads(extract_fence(verify_text(raw))))
    except GateError as err:
        raise UsageError(f"RESPONSE is not a valid verdict envelope: {err.message}") from err
    return Binding(verdict.diff_sha, verdict.policy_version)


def run(args: argparse.Namespace) -> int:
    from gate.commands._io import read_input, say, say_json
    from gate.decide.decision import State
    from gate.errors import ExitCode, UsageError
    from gate.lab import selftest

    if args.response is None:
        raw, binding = selftest.builtin_envelope()
    else:
        raw = read_input(args.response, what="response")
        binding = _binding_of(raw)
    started = time.monotonic()
    report = selftest.run(raw, binding, all_values=args.all_values)
    elapsed = time.monotonic() - started
    if report.baseline.state is not State.PASS:
        raise UsageError(
            f"RESPONSE does not pass on its own ({report.baseline.description}); "
            "selftest needs a passing response to mutate"
        )
    rows = [
        ("truncations", report.truncations),
        ("byte flips", report.flips),
        ("forgeries", report.forgeries),
    ]
    if args.json:
        say_json(
            {
                name.replace(" ", "_"): {
                    "checked": tally.checked,
                    "passed": len(tally.passed),
                    "reasons": tally.states,
                }
                for name, tally in rows
            }
            | {"ok": report.ok, "envelope_bytes": len(raw)}
        )
    else:
        say(f"baseline ({len(raw)} bytes): {report.baseline.description}")
        for name, tally in rows:
            reasons = ", ".join(f"{k}={v}" for k, v in sorted(tally.states.items()))
            say(f"{name:12} checked={tally.checked:<7} passed={len(tally.passed)}  ({reasons})")
        total = sum(t.checked for _, t in rows)
        verdict = "OK: no mutation passed" if report.ok else "FAILED: some mutations passed"
        say(f"{verdict} ({total} mutations in {elapsed:.1f}s)")
    for _, tally in rows:
        for label in tally.passed[:20]:
            say(f"PASSED (must not): {label}", err=True)
    return ExitCode.PASS if report.ok else ExitCode.FAIL
