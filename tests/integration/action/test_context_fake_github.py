"""``context: files`` through the whole action, against the fake GitHub (every request
checked against GitHub's OpenAPI description) and the reviewer simulator: the changed
file's text is fetched at the head (its tree, then its blob by id), shown beside the diff,
counted by the estimate and named in the certificate; a file GitHub cannot give is left
out and named, and the review still runs on the diff (coverage is the diff)."""

from __future__ import annotations

import hashlib
from typing import Any

from gate.lab.sim import extract_prompt
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import HEAD, pr_payload, run_gate, setup_pull

fake = base.fake
sim_factory = base.sim_factory

NEW_CALC = "def add(a, b):\n    return a + b\n\n# CONTEXT-MARKER: callers pass strings too\n"
FILES = "context: files\n"


def prompts(sim: Any) -> list[str]:
    return [extract_prompt("openai", request)[1] for request in sim.requests]


def test_the_changed_file_is_fetched_at_the_head_shown_and_recorded(tmp_path, fake, sim_factory):
    setup_pull(fake, config=FILES)
    fake.set_file(HEAD, "src/calc.py", NEW_CALC)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout
    (user,) = prompts(sim)
    assert "CONTEXT-MARKER" in user
    assert user.index("CONTEXT-MARKER") > user.index("+    return a + b")  # after the diff
    ops = [r.operation for r in fake.requests]
    assert "git/get-tree" in ops
    assert "git/get-blob" in ops
    record = result.certificate["context"]["reviewer_context"]
    assert record["mode"] == "files"
    assert record["source"] == f"github {HEAD}"
    assert (record["partial"], record["partial_blocks"]) == (False, False)
    (shown,) = record["requests"][0]["shown"]
    raw = NEW_CALC.encode()
    assert shown["path"] == "src/calc.py"
    assert shown["bytes"] == [0, len(raw)]
    assert shown["sha256"] == hashlib.sha256(raw).hexdigest()
    # coverage stays the diff; the question's prompt digest holds the file's text
    assert result.certificate["context"]["coverage"]["reviewed"] == ["src/calc.py"]


def test_a_file_github_cannot_give_is_named_and_the_review_still_runs(tmp_path, fake, sim_factory):
    setup_pull(fake, config=FILES)  # no src/calc.py in the head's tree
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout  # partial context may pass: coverage is the diff
    assert len(sim.requests) == 1
    assert "For context only" not in prompts(sim)[0]
    record = result.certificate["context"]["reviewer_context"]
    assert record["partial"] is True
    (left,) = record["requests"][0]["left_out"]
    assert (left["path"], left["why"]) == ("src/calc.py", "unavailable")
    # said where people look: a warning annotation in the log, and the job summary
    assert 'left out 1: "src/calc.py" (unavailable)' in result.stdout
    assert "left out 1" in result.summary
    assert "git/get-blob" not in [r.operation for r in fake.requests]


def test_a_file_over_the_fetch_limit_is_never_fetched(tmp_path, fake, sim_factory):
    setup_pull(fake, config=FILES)
    fake.set_file(HEAD, "src/calc.py", "x = 1\n" * 200_000)  # 1.2 MB: over MAX_FILE_BYTES
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout
    (left,) = result.certificate["context"]["reviewer_context"]["requests"][0]["left_out"]
    assert left["why"] == "too_large"
    assert "git/get-blob" not in [r.operation for r in fake.requests]


def test_context_diff_fetches_nothing_more(tmp_path, fake, sim_factory):
    setup_pull(fake)
    fake.set_file(HEAD, "src/calc.py", NEW_CALC)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout
    assert "reviewer_context" not in result.certificate["context"]
    assert "CONTEXT-MARKER" not in prompts(sim)[0]
    assert "git/get-blob" not in [r.operation for r in fake.requests]


def test_a_review_that_blocks_on_coverage_fetches_no_context(tmp_path, fake, sim_factory):
    """The files are fetched only for a review that will ask (or a question a pass names):
    a block on coverage, decided before any request, spends no blob request on them."""
    setup_pull(fake, diff=base.DIFF + base.BINARY, config=FILES)
    fake.set_file(HEAD, "src/calc.py", NEW_CALC)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3, result.stdout
    assert result.outputs["reason"] == "partial_coverage"
    assert sim.requests == []
    assert "git/get-blob" not in [r.operation for r in fake.requests]


def test_a_changed_file_holding_a_fallbacks_key_is_never_shown(tmp_path, fake, sim_factory):
    """Attack (a secret into the prompt): the head's changed file holds the fallback
    reviewer's key (a committed .env, say). The fallbacks' keys were registered only once
    the review asked, after the files were read, so the file went whole to the first
    reviewer's provider; every key of the run is now known first and the file is left
    out as ``secret``."""
    backup_key = "bk-Zq8RwXv4Tn2Lp7HsYc5M"
    config = (
        FILES + "reviewer:\n  attempts: 1\nfallbacks:\n"
        "  - {provider: openai, model: backup-model, base_url: 'http://127.0.0.1:9/v1', "
        "api_key_env: BACKUP_KEY, attempts: 1}\n"
    )
    setup_pull(fake, config=config)
    fake.set_file(HEAD, "src/calc.py", NEW_CALC + f"BACKUP = '{backup_key}'\n")
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload(), env={"BACKUP_KEY": backup_key})
    assert result.code == 0, result.stdout  # partial context may pass: coverage is the diff
    (user,) = prompts(sim)
    assert backup_key not in user
    assert "CONTEXT-MARKER" not in user
    (left,) = result.certificate["context"]["reviewer_context"]["requests"][0]["left_out"]
    assert (left["path"], left["why"]) == ("src/calc.py", "secret")
