"""Line-anchored findings through the whole action, against the fake GitHub (issue 14).

The reviewer simulator answers a verdict whose reasons start with ``path:line:``; the
action must annotate the ones on the right side of the reviewed diff, keep the others
in the summary only and say so. Every GitHub request is checked against the OpenAPI
description by the fake.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gate.lab.sim import extract_prompt
from gate.review.prompt import binding_in
from tests.fakes.runner import commands_in
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_chunked import large_diff
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull
from tests.verdicts import read_words

# the fixtures of the action's main integration module, under the same names
fake = base.fake
sim_factory = base.sim_factory


def answer(reasons: list[str], verdict: str = "fail", confidence: float = 0.9) -> Any:
    def respond(request: dict[str, Any]) -> str:
        _system, user = extract_prompt("openai", request)
        binding = binding_in(user)
        assert binding is not None
        body = {
            "verdict": verdict,
            "reasons": reasons,
            "confidence": confidence,
            "diff_sha": binding.diff_sha,
            "policy_version": binding.policy_version,
            "read": read_words(binding),
        }
        return "```json\n" + json.dumps(body) + "\n```\n"

    return respond


REASONS = [
    "src/calc.py:2: the sign is flipped back",
    "src/calc.py:1-3: no test covers add()",
    "src/calc.py:40: a line the diff does not show",
    "docs/other.md:1: a file the diff does not touch",
    "overall the change is risky",
]


def test_a_fail_annotates_anchored_lines_and_keeps_the_rest_in_the_summary(
    tmp_path, fake, sim_factory
):
    setup_pull(fake)
    result = run_gate(tmp_path, fake, sim_factory(answer(REASONS)), pr_payload())
    assert result.code == 1, result.stdout
    annotations = [c for c in commands_in(result.stdout) if "file" in c[1]]
    assert [(n, p["file"], p["line"], p.get("endLine")) for n, p, _ in annotations] == [
        ("error", "src/calc.py", "2", None),
        ("error", "src/calc.py", "1", "3"),
    ]
    assert [d for _n, _p, d in annotations] == ["the sign is flipped back", "no test covers add()"]
    assert "Findings on lines" in result.summary
    assert "src/calc.py:40" in result.summary
    assert "docs/other.md:1" in result.summary
    assert result.summary.count("unanchored: not on the right side of the reviewed diff") == 2
    assert fake.status_list(HEAD)[-1]["state"] == "failure"
    recorded = result.certificate["context"]["findings"]
    assert [f["anchor"] for f in recorded] == [
        "anchored",
        "anchored",
        "outside",
        "outside",
        "general",
    ]
    assert recorded[1] == {
        "anchor": "anchored",
        "text": "no test covers add()",
        "path": "src/calc.py",
        "start": 1,
        "end": 3,
    }


def test_a_pass_annotates_as_warnings(tmp_path, fake, sim_factory):
    setup_pull(fake)
    reasons = ["src/calc.py:2: checked the sign", "tests pass"]
    result = run_gate(tmp_path, fake, sim_factory(answer(reasons, "pass", 0.95)), pr_payload())
    assert result.code == 0, result.stdout
    annotations = [c for c in commands_in(result.stdout) if "file" in c[1]]
    assert [(n, p["file"], p["line"]) for n, p, _ in annotations] == [
        ("warning", "src/calc.py", "2")
    ]


# --- review-comments: one review per head, the gate's own only ----------------------------

OLD_HEAD = "4" * 40
BOT = "github-actions[bot]"


def reviews_posted(fake):
    return [r for r in fake.requests if r.operation == "pulls/create-review"]


def test_a_fail_posts_one_request_changes_review_with_line_comments(tmp_path, fake, sim_factory):
    setup_pull(fake, config="review_comments: true\n")
    result = run_gate(tmp_path, fake, sim_factory(answer(REASONS)), pr_payload())
    assert result.code == 1, result.stdout
    (posted,) = reviews_posted(fake)
    body = posted.json_body()
    assert body["event"] == "REQUEST_CHANGES"
    assert body["commit_id"] == HEAD
    assert [(c["path"], c.get("start_line"), c["line"], c["side"]) for c in body["comments"]] == [
        ("src/calc.py", None, 2, "RIGHT"),
        ("src/calc.py", 1, 3, "RIGHT"),
    ]
    assert "the sign is flipped back" in body["comments"][0]["body"]
    assert "3 more reasons are not on a changed line (2 name a line outside" in body["body"]
    assert body["body"].startswith("<!-- review-gate:review:review-gate -->")


def test_a_pass_with_findings_comments_and_never_approves(tmp_path, fake, sim_factory):
    setup_pull(fake, config="review_comments: true\n")
    reasons = ["src/calc.py:2: checked the sign"]
    result = run_gate(tmp_path, fake, sim_factory(answer(reasons, "pass", 0.95)), pr_payload())
    assert result.code == 0, result.stdout
    (posted,) = reviews_posted(fake)
    assert posted.json_body()["event"] == "COMMENT"


def test_review_comments_are_off_by_default(tmp_path, fake, sim_factory):
    setup_pull(fake)
    run_gate(tmp_path, fake, sim_factory(answer(REASONS)), pr_payload())
    assert not any("reviews" in r.path for r in fake.requests)


def test_on_a_new_head_the_gates_reviews_are_superseded_and_a_humans_is_left_alone(
    tmp_path, fake, sim_factory
):
    setup_pull(fake, config="review_comments: true\n")
    marker = "<!-- review-gate:review:review-gate -->"
    gate_blocking = fake.add_review(
        7, f"{marker}\nold fail", login=BOT, commit_id=OLD_HEAD, state="CHANGES_REQUESTED"
    )
    gate_comment = fake.add_review(7, f"{marker}\nold note", login=BOT, commit_id=OLD_HEAD)
    human = fake.add_review(
        7, f"{marker}\nI copied the marker", login="maintainer", commit_id=OLD_HEAD,
        state="CHANGES_REQUESTED",
    )  # fmt: skip
    result = run_gate(tmp_path, fake, sim_factory(answer(REASONS)), pr_payload())
    assert result.code == 1, result.stdout
    by_id = {r["id"]: r for r in fake.review_list(7)}
    assert by_id[gate_blocking]["state"] == "DISMISSED"
    assert by_id[gate_comment]["body"].startswith(f"{marker}\nSuperseded")
    assert by_id[human]["state"] == "CHANGES_REQUESTED"
    assert by_id[human]["body"] == f"{marker}\nI copied the marker"
    touched = {r.path for r in fake.requests if r.method == "PUT"}
    assert not any(path.endswith(f"/{human}") or f"/{human}/" in path for path in touched)
    assert len(reviews_posted(fake)) == 1

    # a re-run on the same head updates the gate's review instead of adding a second one
    again = run_gate(tmp_path, fake, sim_factory(answer(REASONS)), pr_payload())
    assert again.code == 1, again.stdout
    assert len(reviews_posted(fake)) == 1
    on_head = [r for r in fake.review_list(7) if r["commit_id"] == HEAD]
    assert len(on_head) == 1


def _by_chunk(reasons: dict[int, tuple[str, list[str]]]) -> Any:
    """Answer each chunk (numbered by its prompt) with its own verdict and reasons."""

    def respond(request: dict[str, Any]) -> str:
        _system, user = extract_prompt("openai", request)
        binding = binding_in(user)
        assert binding is not None
        found = re.search(r"This is chunk (\d+) of (\d+)", user)
        assert found is not None
        verdict, said = reasons.get(int(found.group(1)), ("pass", ["fine"]))
        body = {
            "verdict": verdict,
            "reasons": said,
            "confidence": 0.9,
            "diff_sha": binding.diff_sha,
            "policy_version": binding.policy_version,
            "read": read_words(binding),
        }
        return "```json\n" + json.dumps(body) + "\n```\n"

    return respond


def _large(fake) -> None:  # type: ignore[no-untyped-def]
    fake.add_pull(7, head_sha=HEAD, base_sha=base.BASE, diff=large_diff())
    fake.set_file(base.BASE, base.CONFIG_PATH, "max_chunk_bytes: 4096\nconcurrency: 2\n")


def _chunk_of() -> dict[str, int]:
    """Which chunk holds each file, as the gate plans this diff (the boundaries are
    content-defined, so the test asks the planner instead of assuming an order)."""
    from gate.config.model import Config
    from gate.review.budget import chunk_setup

    setup = chunk_setup(large_diff(), Config(max_chunk_bytes=4096))
    assert setup is not None
    return {p.path: c.number for c in setup.plan.chunks for p in c.pieces}


def test_a_fail_in_chunks_annotates_every_failing_chunks_lines(tmp_path, fake, sim_factory):
    """The findings of a review in chunks come from each chunk's own reasons: every
    failing chunk's (not only the first's, and not the passing chunks' remarks), each on
    its own chunk's files: a line of another chunk's file is not annotated."""
    _large(fake)
    where = _chunk_of()
    one, two = where["app/part05.py"], where["app/part33.py"]
    assert one != two
    elsewhere = next(p for p, n in sorted(where.items()) if n not in (one, two))
    passing = where[elsewhere]
    respond = _by_chunk({
        one: ("fail", ["app/part05.py:3: the limit is off by one"]),
        two: ("fail", ["app/part33.py:2-4: these settings overflow",
                       f"{elsewhere}:2: a file chunk {two} never saw"]),
        passing: ("pass", [f"{elsewhere}:2: fine here"]),
    })  # fmt: skip
    result = run_gate(tmp_path, fake, sim_factory(respond), pr_payload())
    assert result.code == 1, result.stdout
    annotations = [(n, p["file"], p["line"]) for n, p, _ in commands_in(result.stdout)
                   if "file" in p]  # fmt: skip
    assert sorted(annotations) == [("error", "app/part05.py", "3"), ("error", "app/part33.py", "2")]
    findings = json.dumps(result.certificate["context"].get("findings"))
    assert "fine here" not in findings
    assert "never saw" in findings  # kept, unanchored


def test_a_pass_in_chunks_annotates_every_chunks_findings_as_warnings(tmp_path, fake, sim_factory):
    _large(fake)
    where = _chunk_of()
    one, two = where["app/part00.py"], where["app/part29.py"]
    assert one != two
    other = next(p for p, n in sorted(where.items()) if n != two)
    respond = _by_chunk({
        one: ("pass", ["app/part00.py:2: consider a constant"]),
        two: ("pass", ["app/part29.py:5: a magic number", f"{other}:5: not this chunk's"]),
    })  # fmt: skip
    result = run_gate(tmp_path, fake, sim_factory(respond), pr_payload())
    assert result.code == 0, result.stdout
    annotations = [(n, p["file"], p["line"]) for n, p, _ in commands_in(result.stdout)
                   if "file" in p]  # fmt: skip
    assert sorted(annotations) == [
        ("warning", "app/part00.py", "2"), ("warning", "app/part29.py", "5")
    ]  # fmt: skip
