"""gate.export.sarif: one run, results on lines, levels from the decision, fingerprints
that survive a push."""

from __future__ import annotations

import pytest

from gate import __version__
from gate.export import sarif
from gate.findings import findings_for
from tests.export_oracles import check_sarif

DIFF = (
    b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
    b"@@ -1 +1,3 @@\n-a = 0\n+a = 1\n+b = 2\n+c = 3\n"
)
MOVED = (
    b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
    b"@@ -1 +1,5 @@\n-a = 0\n+x = 0\n+y = 0\n+a = 1\n+b = 2\n+c = 3\n"
)


def log_for(reasons: list[str], diff: bytes, state: str = "fail") -> dict[str, object]:
    found = findings_for(reasons, diff)
    return sarif.build(found, state=state, reason=f"reviewer_{state}", policy_version="7")


@pytest.mark.parametrize(
    ("state", "level"),
    [("fail", "error"), ("pass", "warning"), ("needs_human", "warning"), ("incomplete", "warning")],
)
def test_level_follows_the_decision(state: str, level: str) -> None:
    log = log_for(["app.py:2: b is set twice"], DIFF, state)
    check_sarif(log)
    [result] = log["runs"][0]["results"]  # type: ignore[index]
    assert result["level"] == level
    driver = log["runs"][0]["tool"]["driver"]  # type: ignore[index]
    assert (driver["name"], driver["version"]) == ("review-gate", __version__)


def test_the_same_finding_after_a_push_keeps_its_fingerprint() -> None:
    """The line moved (2 -> 4) and the reviewer counted differently: one alert still."""
    before = log_for(["app.py:2: b is set 2 times; Check it."], DIFF)
    after = log_for(["app.py:4: B is set 3 times  check it"], MOVED)
    first = before["runs"][0]["results"][0]  # type: ignore[index]
    second = after["runs"][0]["results"][0]  # type: ignore[index]
    assert first["locations"] != second["locations"]
    assert first["partialFingerprints"] == second["partialFingerprints"]


def test_another_file_policy_or_finding_is_another_alert() -> None:
    base = sarif.fingerprint("app.py", "b is set twice", "7")
    assert sarif.fingerprint("lib.py", "b is set twice", "7") != base
    assert sarif.fingerprint("app.py", "b is set twice", "8") != base
    assert sarif.fingerprint("app.py", "a is never read", "7") != base


def test_a_range_is_a_region_and_a_blocked_run_has_no_results() -> None:
    log = log_for(["app.py:1-3: these three lines"], DIFF)
    region = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]  # type: ignore[index]
    assert region == {"startLine": 1, "endLine": 3}
    blocked = sarif.build((), state="incomplete", reason="connection_cut", policy_version="7")
    check_sarif(blocked)
    run = blocked["runs"][0]
    assert run["results"] == []
    assert run["invocations"][0]["executionSuccessful"] is False
    note = run["invocations"][0]["toolExecutionNotifications"][0]
    assert note["message"]["text"] == "review-gate decided incomplete (connection_cut)"
