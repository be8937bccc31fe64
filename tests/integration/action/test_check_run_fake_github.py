"""``report: check-run | both`` through the whole action, against the fake GitHub (every
request checked against the OpenAPI description; the fake refuses more than 50 annotations
in one request, as GitHub does)."""

from __future__ import annotations

import pytest

from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_findings_fake_github import answer
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory


def big_diff(lines: int) -> bytes:
    body = "".join(f"+line {i}\n" for i in range(1, lines + 1))
    return (
        "diff --git a/src/big.py b/src/big.py\nnew file mode 100644\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/src/big.py\n@@ -0,0 +1,{lines} @@\n{body}"
    ).encode()


def check_requests(fake):
    return [r for r in fake.requests if "/check-runs" in r.path and r.method != "GET"]


def test_a_check_run_carries_the_summary_and_more_than_50_annotations(tmp_path, fake, sim_factory):
    setup_pull(fake, diff=big_diff(130), config="report: check-run\n")
    reasons = [f"src/big.py:{i}: problem {i}" for i in range(1, 121)] + ["src/big.py:999: far"]
    result = run_gate(tmp_path, fake, sim_factory(answer(reasons)), pr_payload())
    assert result.code == 1, result.stdout
    assert fake.status_list(HEAD) == []  # check-run only: no commit status
    (run,) = fake.check_runs.values()
    assert (run["name"], run["head_sha"]) == ("review-gate", HEAD)
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert [a["start_line"] for a in run["annotations"]] == list(range(1, 121))
    assert {a["annotation_level"] for a in run["annotations"]} == {"failure"}
    assert run["output"]["summary"].startswith("## ❌ review-gate: fail")
    assert "src/big.py:999" in run["output"]["summary"]
    pages = [
        len(r.json_body()["output"].get("annotations", []))
        for r in check_requests(fake)
        if r.operation == "checks/update" and "annotations" in r.json_body().get("output", {})
    ]
    assert pages == [50, 50, 20]
    ops = [r.operation for r in check_requests(fake)]
    assert ops[0] == "checks/create"
    first = check_requests(fake)[0].json_body()
    assert first["status"] == "in_progress"


@pytest.mark.parametrize("mode", ["status", "both"])
def test_status_modes(tmp_path, fake, sim_factory, mode):
    setup_pull(fake, config=f"report: {mode}\n")
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload())
    assert result.code == 0, result.stdout
    assert fake.states(HEAD) == ["pending", "success"]
    if mode == "status":
        assert fake.check_runs == {}
    else:
        (run,) = fake.check_runs.values()
        assert (run["status"], run["conclusion"]) == ("completed", "success")


def test_a_skipped_draft_leaves_the_check_in_progress_never_neutral(tmp_path, fake, sim_factory):
    setup_pull(fake, config="report: check-run\n", draft=True)
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload(draft=True))
    assert result.outputs["state"] == "skipped"
    (run,) = fake.check_runs.values()
    assert run["status"] == "in_progress"
    assert run.get("conclusion") is None
