"""The action's ``mode: replay`` (the nightly job) against the fake GitHub and the simulator.

A stable night stays green; an unstable night (the simulator answers fail the second time)
fails the job and opens, then updates, the one tracking issue; a record whose diff no longer
matches is unreplayable; a repaired record is listed for audit. Every request is checked
against GitHub's OpenAPI description by the fake.
"""

from __future__ import annotations

from datetime import UTC, datetime

from gate.action.replay import TRACKING_TITLE
from gate.memory import record
from tests.integration.action.test_run_fake_github import (
    BASE,
    DIFF,
    HEAD,
    fake,
    pr_payload,
    run_gate,
    setup_pull,
    sim_factory,
    verdict_text,
)
from tests.integration.test_agreement_sim import scripted

__all__ = ["fake", "sim_factory"]  # the fixtures of the main suite, shared


def reviewed(tmp_path, fake, sim) -> None:
    """PR 7 reviewed once (its record in the sticky comment), updated just now."""
    setup_pull(fake)
    assert run_gate(tmp_path, fake, sim, pr_payload()).code in (0, 1)
    fake.pulls[7]["updated_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def nightly(tmp_path, fake, sim, **inputs: str):
    named = {"MODE": "replay", "IDENTITY": "github-actions[bot]", **inputs}
    return run_gate(tmp_path, fake, sim, {}, event="schedule", inputs=named)


def test_a_night_whose_token_identity_is_unknown_fails_loudly(tmp_path, fake, sim_factory):
    """The workflow's token may not call GET /user and a replay posts nothing first: no
    identity is guessed, and "no pull request carries a record" is never concluded."""
    sim = sim_factory(verdict_text)
    reviewed(tmp_path, fake, sim)
    result = nightly(tmp_path, fake, sim, IDENTITY="")
    assert result.code == 3
    assert "identity" in result.stdout
    assert "No pull request carries a record" not in result.summary
    assert sim.count == 1


def verdicts(*answers: str):
    respond = scripted(list(answers))
    return lambda request: respond(request)


def test_a_stable_night_stays_green(tmp_path, fake, sim_factory):
    sim = sim_factory(verdict_text)
    reviewed(tmp_path, fake, sim)
    result = nightly(tmp_path, fake, sim)
    assert result.code == 0, result.stdout
    assert sim.count == 2
    assert "| pass | pass | stable |" in result.summary
    assert result.outputs["state"] == "stable"
    assert fake.issues == {}


def test_an_unstable_night_fails_and_opens_then_updates_one_tracking_issue(
    tmp_path, fake, sim_factory
):
    sim = sim_factory(verdicts("pass", "fail", "fail"))
    reviewed(tmp_path, fake, sim)
    result = nightly(tmp_path, fake, sim)
    assert result.code == 1
    assert result.outputs["state"] == "unstable"
    [issue] = fake.issues.values()
    assert issue["title"] == TRACKING_TITLE
    assert "| pass | fail | unstable |" in issue["body"]
    assert f"tracked in issue #{issue['number']}" in result.summary
    again = nightly(tmp_path, fake, sim)
    assert again.code == 1
    assert len(fake.issues) == 1  # updated, not opened twice


def test_a_record_whose_diff_no_longer_matches_is_unreplayable(tmp_path, fake, sim_factory):
    sim = sim_factory(verdict_text)
    reviewed(tmp_path, fake, sim)
    fake.add_compare(BASE, HEAD, DIFF.replace(b"a + b", b"a * b"))
    result = nightly(tmp_path, fake, sim)
    assert result.code == 3
    assert "unreplayable" in result.summary
    assert "no longer hash to diff_sha" in result.summary
    assert sim.count == 1
    assert fake.issues == {}


def test_a_repaired_record_is_listed_for_audit(tmp_path, fake, sim_factory):
    sim = sim_factory(verdicts("fail"))
    reviewed(tmp_path, fake, sim)
    comment = fake.comments[7][0]
    recs = [
        record.from_json({**r.to_json(), "source": "repaired", "reason": "repaired_fail"})
        for r in record.parse_history(comment["body"])
    ]
    comment["body"] = record.strip_history(comment["body"]) + "\n" + record.encode_block(recs)
    result = nightly(tmp_path, fake, sim)
    assert result.code == 0
    assert "Degraded records" in result.summary
    assert "recorded from repaired" in result.summary


def test_old_records_and_other_authors_are_not_replayed(tmp_path, fake, sim_factory):
    sim = sim_factory(verdict_text)
    reviewed(tmp_path, fake, sim)
    result = nightly(tmp_path, fake, sim, SINCE="1m", **{"MAX-REPLAYS": "5"})
    # the record is seconds old: inside 1m; now age it out of the window
    assert sim.count == 2
    comment = fake.comments[7][0]
    old = [
        record.from_json({**r.to_json(), "time": "2020-01-01T00:00:00+00:00"})
        for r in record.parse_history(comment["body"])
    ]
    comment["body"] = record.strip_history(comment["body"]) + "\n" + record.encode_block(old)
    quiet = nightly(tmp_path, fake, sim)
    assert quiet.code == 0
    assert "No pull request carries a record" in quiet.summary
    assert result.code == 0


def test_bad_replay_inputs_are_usage_errors(tmp_path, fake, sim_factory):
    sim = sim_factory(verdict_text)
    assert nightly(tmp_path, fake, sim, SINCE="yesterday").code == 2
    assert nightly(tmp_path, fake, sim, **{"MAX-REPLAYS": "0"}).code == 2
