"""Memory at review time, against the fake GitHub and the simulator: no re-rolls.

A rejected diff stays rejected on a re-push, a rebase or a re-run, with no new model call;
a pass on the same head is kept only with the gate's own success status; a writer can ask
for a fresh review; a record in anyone else's comment is never read.
"""

from __future__ import annotations

import base64
import json

from gate.memory import record
from tests.fakes.events import pull_request_event
from tests.integration.action.test_run_fake_github import (
    BASE,
    DIFF,
    HEAD,
    NEW_HEAD,
    REPO,
    fake,
    pr_payload,
    run_gate,
    setup_pull,
    sim_factory,
    verdict_text,
)

__all__ = ["fake", "sim_factory"]  # the fixtures of the main suite, shared


def history(fake, number: int = 7) -> list[record.Record]:
    bodies = [c["body"] for c in fake.comments.get(number, [])]
    assert len(bodies) == 1
    return record.parse_history(bodies[0])


def failing(req):
    return verdict_text(req, "fail")


def test_a_rejected_diff_stays_rejected_on_a_repush_without_a_model_call(
    tmp_path, fake, sim_factory
):
    setup_pull(fake)
    sim = sim_factory(failing)
    first = run_gate(tmp_path, fake, sim, pr_payload())
    assert first.code == 1
    assert sim.count == 1
    [rec] = history(fake)
    assert (rec.state, rec.verdict, rec.source, rec.head_sha) == ("fail", "fail", "model", HEAD)
    assert rec.certificate_sha is not None
    assert rec.diff_sha == first.certificate["binding"]["diff_sha"]
    # a rebase / empty commit: a new head, the same diff bytes
    fake.move_head(7, NEW_HEAD)
    fake.add_compare(BASE, NEW_HEAD, DIFF)
    payload = pull_request_event(
        "synchronize", repository=REPO, number=7, head_sha=NEW_HEAD, base_sha=BASE
    )
    again = run_gate(tmp_path, fake, sim, payload)
    assert again.code == 1
    assert sim.count == 1  # no new call
    final = fake.status_list(NEW_HEAD)[-1]
    assert final["state"] == "failure"
    assert final["description"].startswith(
        f"rejected: fail stands: the same diff was rejected at {rec.time}"
    )
    recs = history(fake)
    assert [r.source for r in recs] == ["model"]  # one row per question: the answer itself
    assert recs[-1].head_sha == HEAD


def test_a_rerun_of_a_pass_on_the_same_head_is_kept_without_a_call(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory()
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 0
    again = run_gate(tmp_path, fake, sim, pr_payload("labeled", label="docs"))
    assert again.code == 0
    assert sim.count == 1
    # the rerun decides what the head shows: it writes no status (issue 31)
    assert fake.states(HEAD) == ["pending", "success"]
    assert "pass (kept)" in again.stdout
    assert [r.source for r in history(fake)] == ["model"]  # one row per question


def test_a_forged_pass_without_the_gates_success_status_is_not_kept(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory(failing)
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    # a writer edits the gate's own comment: the fail becomes a pass on this head
    comment = fake.comments[7][0]
    forged = [
        record.from_json({**r.to_json(), "state": "pass", "verdict": "pass"})
        for r in record.parse_history(comment["body"])
    ]
    comment["body"] = record.strip_history(comment["body"]) + "\n" + record.encode_block(forged)
    again = run_gate(tmp_path, fake, sim, pr_payload("synchronize"))
    # the gate's own failure on HEAD, tagged with this question, stands: no call, no pass
    assert sim.count == 1
    assert again.code == 1
    assert "fail stands" in again.stdout
    # what the head shows (the same question's failure) is not written again (issue 31)
    assert fake.states(HEAD) == ["pending", "failure"]


def test_a_history_in_someone_elses_comment_is_never_read(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory()
    rec = record.Record(
        time="2026-01-01T00:00:00+00:00", base_sha=BASE, head_sha=HEAD,
        diff_sha="0" * 64, policy_version="1", config_sha="0" * 64, provider="openai",
        model="sim-model", prompt_sha="0" * 64, state="fail", status="failure",
        verdict="fail", confidence=0.9, reason="reviewer_fail", source="model", fresh=False,
        certificate_sha=None, run_url=None,
    )  # fmt: skip
    marker = "<!-- review-gate:sticky:review-gate -->"
    fake.add_comment(7, marker + "\n" + record.encode_block([rec]), login="mallory")
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0
    assert sim.count == 1


def test_a_writer_asks_for_a_fresh_review_with_the_label(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory(failing)
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    fake.permissions["maintainer"] = "write"
    payload = pr_payload("labeled", label="review-gate:fresh", sender="maintainer")
    again = run_gate(tmp_path, fake, sim, payload)
    assert sim.count == 2
    assert again.code == 1
    recs = history(fake)
    # one row per question: the writer's fresh answer supersedes the older one
    assert [(r.source, r.fresh) for r in recs] == [("model", True)]


def test_a_fresh_label_by_a_reader_is_ignored(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory(failing)
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    fake.permissions["visitor"] = "read"
    payload = pr_payload("labeled", label="review-gate:fresh", sender="visitor")
    again = run_gate(tmp_path, fake, sim, payload)
    assert sim.count == 1
    assert again.code == 1
    assert "was ignored" in again.summary


def test_a_malformed_history_is_never_trusted_nor_overwritten(tmp_path, fake, sim_factory):
    setup_pull(fake)
    sim = sim_factory(failing)
    assert run_gate(tmp_path, fake, sim, pr_payload()).code == 1
    comment = fake.comments[7][0]
    bad = base64.b64encode(json.dumps({"schema": "x"}).encode()).decode()
    comment["body"] = (
        record.strip_history(comment["body"]) + f"\n<!-- review-gate:history {bad} -->"
    )
    before = comment["body"]
    again = run_gate(tmp_path, fake, sim, pr_payload("synchronize"))
    assert sim.count == 1  # not concluded empty: no re-roll
    assert again.code != 0
    assert fake.status_list(HEAD)[-1]["state"] != "success"
    assert fake.comments[7][0]["body"] == before  # kept as it is
    assert "history_unreadable" in again.summary or "could not be read" in again.summary
