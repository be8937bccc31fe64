"""The findings of one decision as SARIF 2.1.0, for code scanning.

One run; ``tool.driver`` names review-gate and its version, with one rule
(:data:`RULE_ID`). Each **anchored** finding (:mod:`gate.findings`: on the right side of
the reviewed diff) is one result at its ``path:start-end`` on the head, ``level`` from
the decision (``error`` on fail, ``warning`` otherwise), with a partial fingerprint
(:func:`fingerprint`: the path, the finding's text normalised, the policy version) that
stays the same across pushes, so code scanning keeps one alert per finding while the
lines move. Every other finding (outside the diff, or naming no line) and the decision
itself are notifications of the run's invocation. ``executionSuccessful`` is true only
when the reviewer's verdict decided (``pass`` or ``fail``).

Reviewer text is inert (:func:`inert`): secrets redacted, control, bidi and zero-width
characters escaped (:mod:`gate.safe.untrusted`), then SARIF's own message syntax escaped
(SARIF 2.1.0 §3.11.5 placeholders ``{0}`` as ``{{``/``}}``, §3.11.6 embedded links
``[text](target)`` with ``\\[``, ``\\]`` and ``\\\\``), so a reason can neither link
anywhere nor pull in an argument. Paths go into URIs percent-encoded
(:func:`uri_of`), so a file name is a name, never a scheme or a query.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from gate import FILES_URL, REPOSITORY_URL, __version__
from gate.decide.decision import State
from gate.errors import AtomicWriteError
from gate.findings import Anchor, Finding
from gate.safe import redact, untrusted
from gate.safe.atomic import atomic_write

SARIF_VERSION = "2.1.0"
#: the OASIS Standard's schema (SARIF 2.1.0 Errata 01), as ``$schema``
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
RULE_ID = "review-gate/finding"
DECISION_NOTE = "review-gate/decision"
UNANCHORED_NOTE = "review-gate/unanchored-finding"
#: the partial fingerprint's name (a new way of computing it is a new version)
FINGERPRINT = "reviewGateFinding/v1"
SUFFIX = ".sarif"

_SARIF_SPECIAL = re.compile(r"[\\\[\]{}]")
_SARIF_ESCAPES = {"\\": "\\\\", "[": "\\[", "]": "\\]", "{": "{{", "}": "}}"}
_NON_WORD = re.compile(r"[^\w]+")
_DIGITS = re.compile(r"\d+")


def inert(text: str) -> str:
    """Reviewer text as a SARIF plain-text message that means only itself."""
    shown = untrusted.lines(text)
    return _SARIF_SPECIAL.sub(lambda m: _SARIF_ESCAPES[m.group()], shown)


def uri_of(path: str) -> str:
    """A reviewed file's path as a relative URI reference (every byte but letters, digits,
    ``-._~`` and ``/`` percent-encoded; a leading ``/`` cannot make it absolute)."""
    return quote(path.lstrip("/"), safe="/")


def normalised(text: str) -> str:
    """A finding's words for its fingerprint: NFKC, case folded, numbers as ``0``,
    punctuation and runs of space as one space (a reworded count or a moved line number
    is the same finding)."""
    folded = unicodedata.normalize("NFKC", redact.redact(text)).casefold()
    return " ".join(_NON_WORD.sub(" ", _DIGITS.sub("0", folded)).split())


def fingerprint(path: str, text: str, policy_version: str) -> str:
    """The partial fingerprint: the same for the same finding on the same file under the
    same policy, whatever line it sits on in this push."""
    material = "\0".join(("v1", path, normalised(text), policy_version))
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def _result(finding: Finding, level: str, policy_version: str) -> dict[str, Any]:
    return {
        "ruleId": RULE_ID,
        "ruleIndex": 0,
        "level": level,
        "message": {"text": inert(finding.text)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri_of(finding.path), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": finding.start, "endLine": finding.end},
                }
            }
        ],
        "partialFingerprints": {
            FINGERPRINT: fingerprint(finding.path, finding.text, policy_version)
        },
    }


def _placeable(finding: Finding) -> bool:
    """Anchored, on a path that holds no secret (a redacted name would be another file)."""
    return finding.anchored and redact.redact(finding.path) == finding.path


def _note(finding: Finding, level: str) -> dict[str, Any]:
    where = "outside the reviewed diff" if finding.anchor is Anchor.OUTSIDE else "no line"
    if finding.anchored:
        where = "a file name that cannot be shown"
    prefix = f"{finding.location} ({where}): " if finding.path else ""
    return {
        "descriptor": {"id": UNANCHORED_NOTE},
        "level": level,
        "message": {"text": inert(prefix + finding.text)},
    }


def build(
    findings: Sequence[Finding],
    *,
    state: str,
    reason: str,
    policy_version: str,
    diff_sha: str = "",
    commit: str | None = None,
) -> dict[str, Any]:
    """The SARIF log of one decision (``state``, ``reason``: the gate's codes)."""
    failed = state == State.FAIL
    level = "error" if failed else "warning"
    results = [_result(f, level, policy_version) for f in findings if _placeable(f)]
    notes = [_note(f, level) for f in findings if not _placeable(f)]
    decided = state in (State.PASS, State.FAIL)
    notes.insert(
        0,
        {
            "descriptor": {"id": DECISION_NOTE},
            "level": "error" if failed or not decided else "note",
            "message": {"text": inert(f"review-gate decided {state} ({reason})")},
        },
    )
    rule = {
        "id": RULE_ID,
        "name": "ReviewerFinding",
        "shortDescription": {"text": "A finding of the reviewer model on a changed line"},
        "fullDescription": {
            "text": "A reason the reviewer model gave, placed on the lines of the reviewed "
            "diff it names. The gate's decision (pass, fail) sets its level."
        },
        "helpUri": f"{FILES_URL}/docs/security.md",
        "defaultConfiguration": {"level": "warning"},
    }
    properties: dict[str, Any] = {
        "state": str(state),
        "reason": reason,
        "policy_version": policy_version,
        "diff_sha": diff_sha,
    }
    if commit:
        properties["commit"] = commit
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "review-gate",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": REPOSITORY_URL,
                        "rules": [rule],
                    }
                },
                "invocations": [
                    {"executionSuccessful": decided, "toolExecutionNotifications": notes}
                ],
                "columnKind": "unicodeCodePoints",
                "results": results,
                "properties": {"reviewGate": properties},
            }
        ],
    }


def dumps(log: Mapping[str, Any]) -> bytes:
    return (json.dumps(log, indent=2, ensure_ascii=True) + "\n").encode("ascii")


def write(path: str | os.PathLike[str], log: Mapping[str, Any]) -> str:
    """Write the SARIF log atomically; return its SHA-256. A registered secret found in
    it refuses the write (every text was redacted: this is the last guard)."""
    data = dumps(log)
    if redact.active().found(data.decode("ascii")):
        raise AtomicWriteError(
            "refusing to write a SARIF file that contains a secret; this is a bug in "
            "review-gate, please report it (the secret itself is not shown)"
        )
    return atomic_write(path, data)
