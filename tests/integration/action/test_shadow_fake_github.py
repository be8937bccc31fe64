"""``mode: shadow`` through the whole action, against the fake GitHub.

A shadow run reviews as the required gate does and posts what it would have done under
its own context (``review-gate/shadow``) with its own kinds (``would_pass``,
``would_block``), as a ``success`` status or a ``neutral`` check run; it exits 0 whatever
it decided, writes no ledger entry, comment or review, and nothing it writes is read by a
later required run, which asks the model itself (gate/action/shadow.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gate.action.github.mark import of_status, plain
from gate.action.ledger import REF
from gate.errors import ExitCode
from gate.lab.sim import SimResponse
from gate.memory.stats import load_folder, shadow_rates
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import (
    HEAD,
    pr_payload,
    run_gate,
    setup_pull,
    verdict_text,
)

fake = base.fake
sim_factory = base.sim_factory

SHADOW = {"MODE": "shadow"}


def fail(req):
    return verdict_text(req, "fail")


def contexts(fake) -> set[str]:
    return {s["context"] for s in fake.status_list(HEAD)}


def nothing_required_reads(fake) -> None:
    """What a shadow run may never leave: a status or check run of the required context,
    a ledger entry, a sticky comment, a pull request review."""
    assert "review-gate" not in contexts(fake)
    assert all(run["name"] != "review-gate" for run in fake.check_runs.values())
    assert REF not in fake.git.refs
    assert not fake.comments.get(7)
    assert not fake.reviews.get(7)


def test_a_fail_answer_posts_would_block_under_its_own_context_and_exits_0(
    tmp_path, fake, sim_factory
):
    setup_pull(fake)
    sim = sim_factory(fail)
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs=SHADOW)
    assert result.code == ExitCode.PASS, result.stdout
    assert sim.count == 1
    (status,) = fake.status_list(HEAD)  # no pending: one write, the shadow's
    assert (status["context"], status["state"]) == ("review-gate/shadow", "success")
    assert plain(status["description"]).startswith("would block: ")
    marked = of_status(status["description"])
    assert marked.kind == "would_block"
    assert marked.tag is not None
    nothing_required_reads(fake)
    assert result.outputs["state"] == "fail"  # what the review decided, said as it is
    assert result.outputs["status"] == "success"
    assert result.outputs["description"].startswith("would block: ")
    shadow = result.certificate["context"]["shadow"]
    assert shadow["context"] == "review-gate/shadow"
    assert shadow["would"] == "would_block"
    assert len(shadow["question"]) == 64
    assert "::error" not in result.stdout  # a shadow block is no error of the job
    assert "::warning" in result.stdout


def test_a_pass_answer_posts_would_pass(tmp_path, fake, sim_factory):
    setup_pull(fake)
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload(), inputs=SHADOW)
    assert result.code == ExitCode.PASS
    (status,) = fake.status_list(HEAD)
    assert plain(status["description"]).startswith("would pass: ")
    assert of_status(status["description"]).kind == "would_pass"
    nothing_required_reads(fake)


def test_check_run_mode_posts_a_neutral_check_run(tmp_path, fake, sim_factory):
    setup_pull(fake, config="report: check-run\n")
    sim = sim_factory(fail)  # one reviewer address: one question
    result = run_gate(tmp_path, fake, sim, pr_payload(), inputs=SHADOW)
    assert result.code == ExitCode.PASS
    assert fake.status_list(HEAD) == []
    (run,) = fake.check_runs.values()
    assert (run["name"], run["status"], run["conclusion"]) == (
        "review-gate/shadow",
        "completed",
        "neutral",
    )
    assert run["external_id"].startswith("review-gate:neutral:would_block:q:")
    assert run["output"]["title"].startswith("would block: ")
    assert {a["annotation_level"] for a in run.get("annotations", [])} <= {"warning"}
    nothing_required_reads(fake)
    writes = [r for r in fake.requests if "/check-runs" in r.path and r.method != "GET"]
    again = run_gate(tmp_path, fake, sim, pr_payload("reopened"), inputs=SHADOW)
    assert again.code == ExitCode.PASS
    assert len(fake.check_runs) == 1  # the head shows it: nothing written
    assert [r for r in fake.requests if "/check-runs" in r.path and r.method != "GET"] == writes


def test_both_channels_and_a_required_gate_beside_it(tmp_path, fake, sim_factory):
    """``report: both``: a shadow status and a neutral check run; the required run on the
    same head then writes its own, and neither run reads the other's."""
    setup_pull(fake, config="report: both\n")
    assert run_gate(tmp_path, fake, sim_factory(fail), pr_payload(), inputs=SHADOW).code == 0
    assert contexts(fake) == {"review-gate/shadow"}
    assert [c["conclusion"] for c in fake.check_runs.values()] == ["neutral"]
    required = sim_factory()
    assert run_gate(tmp_path, fake, required, pr_payload("reopened")).code == 0
    assert required.count == 1
    by_name = {c["name"]: c["conclusion"] for c in fake.check_runs.values()}
    assert by_name == {"review-gate/shadow": "neutral", "review-gate": "success"}
    assert [s["state"] for s in fake.status_list(HEAD) if s["context"] == "review-gate"][-1] == (
        "success"
    )


def test_outage_and_config_problems_never_fail_the_job(tmp_path, fake, sim_factory):
    setup_pull(fake)
    cut = sim_factory(script=(SimResponse(cut_after=200),))
    result = run_gate(tmp_path, fake, cut, pr_payload(), inputs=SHADOW)
    assert result.code == ExitCode.PASS, result.stdout
    assert result.outputs["state"] == "incomplete"
    assert of_status(fake.status_list(HEAD)[-1]["description"]).kind == "would_block"
    fake.set_file(base.BASE, base.CONFIG_PATH, "min_confidence: 7\n")
    result = run_gate(tmp_path, fake, sim_factory(), pr_payload(), inputs=SHADOW)
    assert result.code == ExitCode.PASS, result.stdout
    assert result.outputs["family"] == "config"
    nothing_required_reads(fake)


def test_a_rerun_asks_again_and_writes_only_what_changes(tmp_path, fake, sim_factory):
    setup_pull(fake)
    answers = iter(["fail", "fail", "fail", "pass", "pass", "fail"])
    sim = sim_factory(lambda req: verdict_text(req, next(answers)))
    for i in range(6):
        env = {"GITHUB_RUN_ID": str(4300 + i)}  # a certificate per run
        assert (
            run_gate(tmp_path, fake, sim, pr_payload("reopened"), inputs=SHADOW, env=env).code == 0
        )
    assert sim.count == 6  # no memory: every run is an answer (as backtest counts them)
    kinds = [of_status(s["description"]).kind for s in fake.status_list(HEAD)]
    # the head showed it already: nothing written, until what it says changes
    assert kinds == ["would_block", "would_pass", "would_block"]
    # review-gate stats --shadow over the certificates: one question, six answers
    runs, _unreadable = load_folder(tmp_path)
    rates = shadow_rates(runs, since=datetime.now(UTC) - timedelta(days=1), until=datetime.now(UTC))
    assert (rates["cases"], rates["answers"]) == (1, 6)
    assert (rates["would_block"]["k"], rates["would_block"]["n"]) == (1, 1)
    assert rates["would_block"]["about_the_code"]["k"] == 1
    assert (rates["stable_rate"]["k"], rates["stable_rate"]["n"]) == (0, 1)


def test_a_later_required_run_asks_the_model_and_decides_on_its_own(tmp_path, fake, sim_factory):
    """Shadow said ``would pass``; the required run on the same head still asks, and its
    ``fail`` stands; then shadow again, which changes nothing the required run wrote."""
    setup_pull(fake)
    sim = sim_factory()
    assert run_gate(tmp_path, fake, sim, pr_payload(), inputs=SHADOW).code == 0
    strict = sim_factory(fail)
    result = run_gate(tmp_path, fake, strict, pr_payload("reopened"))
    assert strict.count == 1  # asked: the shadow's pass is nobody's memory
    assert result.code == 1
    required = [s for s in fake.status_list(HEAD) if s["context"] == "review-gate"]
    assert [s["state"] for s in required] == ["pending", "failure"]
    assert REF in fake.git.refs  # the required run's own entry
    ledger_before = dict(fake.git.refs)
    again = sim_factory()
    assert run_gate(tmp_path, fake, again, pr_payload("reopened"), inputs=SHADOW).code == 0
    assert again.count == 1  # shadow reads no memory either
    assert fake.git.refs == ledger_before
    assert [s["state"] for s in fake.status_list(HEAD) if s["context"] == "review-gate"] == [
        "pending",
        "failure",
    ]
    # the required gate's own memory still holds: its question is answered, not asked again
    kept = run_gate(tmp_path, fake, strict, pr_payload("reopened"))
    assert kept.code == 1
    assert strict.count == 1


def test_a_shadow_block_is_no_standing_block_for_the_required_run(tmp_path, fake, sim_factory):
    setup_pull(fake)
    assert run_gate(tmp_path, fake, sim_factory(fail), pr_payload(), inputs=SHADOW).code == 0
    kind = sim_factory()
    result = run_gate(tmp_path, fake, kind, pr_payload("reopened"))
    assert kind.count == 1
    assert result.code == 0
    assert fake.states(HEAD)[-1] == "success"
    assert fake.status_list(HEAD)[-1]["context"] == "review-gate"


def test_the_comment_command_is_not_the_shadows(tmp_path, fake, sim_factory):
    from tests.fakes.events import issue_comment_event

    setup_pull(fake)
    payload = issue_comment_event(repository=base.REPO, number=7, body="/review-gate review")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, payload, event="issue_comment", inputs=SHADOW)
    assert result.code == 0
    assert sim.count == 0
    assert fake.reactions == []
    assert fake.status_list(HEAD) == []


def test_a_usage_error_still_exits_2(tmp_path, fake, sim_factory):
    setup_pull(fake)
    result = run_gate(
        tmp_path, fake, sim_factory(), pr_payload(), inputs={**SHADOW, "FAIL-JOB": "maybe"}
    )
    assert result.code == ExitCode.USAGE
    assert fake.status_list(HEAD) == []
