"""A status GitHub refuses ends the run as a block on every channel still open (issue 31).

GitHub keeps at most 1,000 statuses per commit and context and answers 422 to the next
(the fake enforces it). A head an older gate filled to the cap cannot take the run's
block as a status, so the block goes on the check run (``report: both``), the comment,
the job's annotations and its exit code, naming the cause and the push that clears it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.github import MAX_STATUSES, FakeGitHub
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    HEAD,
    pr_payload,
    run_gate,
    setup_pull,
)


@pytest.mark.parametrize("shown", ["success", "pending"])
def test_a_capped_context_blocks_on_the_check_run_and_the_comment(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory, shown: str
) -> None:
    fake = fake_github
    setup_pull(fake)
    fake.set_file(BASE, CONFIG_PATH, "report: both\n")
    for n in range(MAX_STATUSES):  # an older gate's statuses, to GitHub's cap
        fake.add_status(HEAD, state=shown, description=f"older gate {n}")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code != 0, result.stdout
    assert len(fake.status_list(HEAD)) == MAX_STATUSES  # nothing past the cap
    with fake.lock:
        runs = [r for r in fake.check_runs.values() if r["head_sha"] == HEAD]
    assert [r["conclusion"] for r in runs] == ["failure"], runs
    assert runs[0]["external_id"] == "review-gate:error:incomplete"
    comment = next(c["body"] for c in fake.comments[7] if "review-gate:sticky" in c["body"])
    for says in ("github_status_refused", "statuses per commit and context", "push a new commit"):
        assert says in comment, comment
    assert "GitHub refused the status" in result.stdout
    assert "github_status_refused" in result.summary
    assert sim.count == 0  # the run stopped at the refused write, before any review
    assert fake.violations == []
