"""Incremental review through the action: the fake GitHub, the simulator, two pushes.

A 40-file pull request is reviewed in chunks; the gate's sticky comment carries each
chunk's bound answer. A second push changes one file: only the chunks holding it are
sent, the others are carried (named in the summary, the comment and the certificate),
and the run passes. A cut on the fresh chunk blocks; a config change, a writer's fresh
label, or a carry block in someone else's comment carries nothing; a block that is not
well-formed carries nothing, with a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gate.action import carry
from gate.lab.demo import ScriptedModel, request_text
from gate.lab.sim import ReviewerSimulator, SimResponse
from gate.review.prompt import binding_in
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_chunked import CONFIG, large_diff
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    HEAD,
    NEW_HEAD,
    REPO,
    pr_payload,
    run_gate,
)

MARKER = "<!-- review-gate:sticky:review-gate -->"


def pushed(files: int = 40, changed: int = 17) -> bytes:
    """The 40-file diff with one file's added lines changed (a second push)."""
    old = f"+setting_3 = {changed * 3}\n".encode()
    data = large_diff(files)
    assert data.count(old) == 1
    return data.replace(old, f"+setting_3 = {changed * 3 + 1000}\n".encode())


def first_run(tmp_path: Path, fake: FakeGitHub, sim: ReviewerSimulator) -> Any:
    fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=large_diff())
    fake.set_file(BASE, CONFIG_PATH, CONFIG)
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout
    return result


def second_push(tmp_path: Path, fake: FakeGitHub, sim: ReviewerSimulator, **kw: Any) -> Any:
    fake.move_head(7, NEW_HEAD)
    fake.add_compare(BASE, NEW_HEAD, pushed())
    action = kw.pop("action", "synchronize")
    payload = pull_request_event(
        action, repository=REPO, number=7, head_sha=NEW_HEAD, base_sha=BASE, **kw
    )
    return run_gate(tmp_path, fake, sim, payload)


def sent_since(sim: ReviewerSimulator, mark: int) -> set[str]:
    out = set()
    for body in sim.requests[mark:]:
        binding = binding_in(request_text(body))
        assert binding is not None
        out.add(binding.diff_sha)
    return out


def reviews(result: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = result.certificate["context"]["chunks"]["reviews"]
    return rows


def test_a_push_that_changes_one_file_of_40_sends_only_its_chunks_and_passes(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    first = first_run(tmp_path, fake_github, sim)
    total = len(reviews(first))
    assert sim.count == total >= 4
    [comment] = fake_github.comments[7]
    assert len(carry.read(comment["body"])) == total  # every chunk's pass is carried forward

    mark = sim.count
    second = second_push(tmp_path, fake_github, sim)
    assert second.code == 0, second.stdout
    rows = reviews(second)
    fresh = [r for r in rows if "carried" not in r]
    kept = [r for r in rows if "carried" in r]
    assert 1 <= len(fresh) <= 2
    assert any("app/part17.py" in r["files"] for r in fresh)
    assert sent_since(sim, mark) == {r["diff_sha"] for r in fresh}
    assert sim.count - mark == len(fresh)
    run_url = f"https://github.example/{REPO}/actions/runs/4242"
    assert {r["carried"]["run"] for r in kept} == {run_url}
    assert second.certificate["context"]["chunks"]["carried"] == len(kept)
    # named as carried in the summary, the comment and the outputs' certificate
    assert f"({len(kept)} carried, not sent again)" in second.summary
    body = fake_github.comments[7][0]["body"]
    assert f"({len(kept)} carried, not sent again)" in body
    assert fake_github.status_list(NEW_HEAD)[-1]["state"] == "success"
    assert len(carry.read(body)) == total
    # each carried row names the run and the certificate its answers came from
    [cert_sha] = {r["carried"]["certificate_sha"] for r in kept}
    assert len(cert_sha) == 64
    for text in (second.summary, body):
        assert f"certificate {cert_sha[:12]}" in text


def test_a_cut_on_the_fresh_chunk_blocks_though_the_others_are_carried(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    first_run(tmp_path, fake_github, sim)
    for _ in range(6):  # every fresh request (and its retries) is cut mid-answer
        sim.queue(SimResponse(cut_after=150))
    second = second_push(tmp_path, fake_github, sim)
    assert second.code == 3, second.stdout
    assert second.outputs["state"] == "incomplete"
    assert fake_github.status_list(NEW_HEAD)[-1]["state"] == "error"
    rows = reviews(second)
    assert any("carried" in r for r in rows)
    assert {r["decision"]["state"] for r in rows if "carried" not in r} == {"incomplete"}


def test_a_config_change_carries_nothing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    first_run(tmp_path, fake_github, sim)
    fake_github.set_file(BASE, CONFIG_PATH, CONFIG + "instructions: Also block TODOs.\n")
    mark = sim.count
    second = second_push(tmp_path, fake_github, sim)
    assert second.code == 0, second.stdout
    assert not any("carried" in r for r in reviews(second))
    assert sim.count - mark == len(reviews(second))


def test_a_writers_fresh_label_carries_nothing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    first_run(tmp_path, fake_github, sim)
    fake_github.permissions["maintainer"] = "write"
    mark = sim.count
    second = second_push(
        tmp_path, fake_github, sim, action="labeled", label="review-gate:fresh", sender="maintainer"
    )
    assert second.code == 0, second.stdout
    assert not any("carried" in r for r in reviews(second))
    assert sim.count - mark == len(reviews(second))
    assert "a fresh review was asked" in second.summary


def test_a_carry_block_in_someone_elses_comment_carries_nothing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    first_run(tmp_path, fake_github, sim)
    body = fake_github.comments[7][0]["body"]
    # the gate's comment is gone; a visitor posts a copy of it, carry block and all
    fake_github.comments[7] = []
    fake_github.add_comment(7, body, login="mallory")
    mark = sim.count
    second = second_push(tmp_path, fake_github, sim)
    assert second.code == 0, second.stdout
    assert not any("carried" in r for r in reviews(second))
    assert sim.count - mark == len(reviews(second))


def test_a_carry_block_that_is_not_well_formed_carries_nothing_with_a_note(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    first_run(tmp_path, fake_github, sim)
    comment = fake_github.comments[7][0]
    found = re.search(r"<!-- review-gate:carry ([A-Za-z0-9+/=]+) -->", comment["body"])
    assert found is not None
    comment["body"] = comment["body"].replace(found.group(1), found.group(1)[:-8] + "AAAAAAAA")
    mark = sim.count
    second = second_push(tmp_path, fake_github, sim)
    assert second.code == 0, second.stdout
    assert not any("carried" in r for r in reviews(second))
    assert sim.count - mark == len(reviews(second))
    assert "carried chunk answers in the review\\-gate comment were not read" in second.summary


def test_a_writers_comment_command_carries_nothing(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    from tests.fakes.events import issue_comment_event

    sim = sim_factory(ScriptedModel("pass"))
    first_run(tmp_path, fake_github, sim)
    fake_github.permissions["maintainer"] = "write"
    fake_github.move_head(7, NEW_HEAD)
    fake_github.add_compare(BASE, NEW_HEAD, pushed())
    mark = sim.count
    event = issue_comment_event(
        repository=REPO, number=7, body="/review-gate review", login="maintainer"
    )
    second = run_gate(tmp_path, fake_github, sim, event, event="issue_comment")
    assert second.code == 0, second.stdout
    assert not any("carried" in r for r in reviews(second))
    assert sim.count - mark == len(reviews(second))
