"""``review-gate backtest`` against the scripted reviewer (gate.lab.scripted) on generated
git histories: every rate is the one the script implies, exactly; resume after a kill skips
what was done; --max-cost stops before the review that would cross it; Ctrl-C leaves a
valid partial report; bad input is a usage error naming the cause, with nothing written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gate import cli
from gate.backtest import cases as cases_module
from gate.backtest.rates import mcnemar, wilson
from gate.lab.scripted import Scripted, coin, verdict
from gate.lab.sim import MODEL, ReviewerSimulator
from gate.review import cost
from gate.review.scope import select_diff
from gate.safe.untrusted import md
from tests.githistory import History, new_history
from tests.gitrepo import git

KEY = "sk-backtest-test-key-not-real"
PRICED = (
    "reviewer:\n  provider: openai\n  model: sim-model\n"
    "pricing:\n  sim-model: {input: 1.0, output: 2.0}\n"
)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sim() -> Iterator[ReviewerSimulator]:
    with ReviewerSimulator("openai", chooser=Scripted()) as server:
        yield server


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def backtest(
    capsys: pytest.CaptureFixture[str], sim: ReviewerSimulator, out: Path, *args: str
) -> tuple[int, dict[str, Any]]:
    code, report, _ = backtest_err(capsys, sim, out, *args)
    return code, report


def backtest_err(
    capsys: pytest.CaptureFixture[str], sim: ReviewerSimulator, out: Path, *args: str
) -> tuple[int, dict[str, Any], str]:
    argv = [
        "backtest",
        *args,
        "--provider",
        "openai",
        "--base-url",
        sim.base_url,
        "--out",
        str(out),
        "--json",
        "--attempts",
        "2",
    ]
    if "--model" not in args:
        argv += ["--model", MODEL]
    capsys.readouterr()
    code = cli.main(argv)
    text, err = capsys.readouterr()
    return code, json.loads(text) if text.strip().startswith("{") else {}, err


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def standard(tmp_path: Path) -> tuple[History, dict[str, str]]:
    """Eight pull requests (merges and squash merges), a direct push and a revert."""
    h = new_history(tmp_path / "repo")
    shas = {
        "a": h.merge("a.py", "pass"),
        "b": h.squash("b.py", "fail", 2),
        "c": h.merge("c.py", "malformed"),
    }
    h.direct("d.py")
    shas["e"] = h.squash("e.py", "coin", 5)
    shas["f"] = h.merge("f.py", "ratelimit")
    shas["g"] = h.squash("g.py", "cut", 7)
    shas["h"] = h.merge("h.py", "lowconf")
    shas["i"] = h.squash("i.py", "pass", 9)
    h.revert(shas["b"])
    return h, shas


def test_every_rate_is_what_the_script_implies(tmp_path, sim, capsys) -> None:
    h, shas = standard(tmp_path)
    out = tmp_path / "out"
    code, report = backtest(
        capsys, sim, out, "--repo", str(h.repo), "--last", "20", "--repeat", "2", "--jobs", "4"
    )
    assert code == 0, report
    by_id = {c["id"]: c for c in report["cases"]}
    ids = {name: sha[:12] for name, sha in shas.items()}
    assert set(by_id) == set(ids.values())  # the direct push and the revert are no case
    assert by_id[ids["b"]]["label"] == "block"
    assert not by_id[ids["b"]]["presumed"]
    assert "reverted" in by_id[ids["b"]]["source"]
    # the coin: the two asks of e's diff, whatever their order
    cert = json.loads((out / by_id[ids["e"]]["decisions"]["default"][0]["certificate"]).read_text())
    sha_e = cert["binding"]["diff_sha"]
    tosses = sorted([coin(0, sha_e, 0), coin(0, sha_e, 1)])
    e_blocks = "fail" in tosses  # a tie blocks
    states = {
        name: [d["state"] for d in by_id[i]["decisions"]["default"]] for name, i in ids.items()
    }
    assert states["a"] == states["f"] == states["i"] == ["pass", "pass"]
    assert states["b"] == ["fail", "fail"]
    assert states["c"] == states["h"] == ["needs_human", "needs_human"]
    assert states["g"] == ["incomplete", "incomplete"]
    assert sorted("pass" if s == "pass" else "fail" for s in states["e"]) == tosses
    [config] = report["configs"]
    presumed = 7  # a c e f g h i
    blocked = 3 + e_blocks  # c (malformed), g (cut), h (low confidence), and e when it fails
    assert config["would_block"]["k"] == blocked
    assert config["would_block"]["n"] == presumed
    assert config["would_block"]["about_the_code"]["k"] == 1 + e_blocks  # h, e
    assert config["would_block"]["not_about_the_code"]["k"] == 2  # c, g
    low, high = wilson(blocked, presumed) or (0, 0)
    assert (config["would_block"]["low"], config["would_block"]["high"]) == (low, high)
    assert (config["catch_rate"]["k"], config["catch_rate"]["n"]) == (1, 1)
    assert config["false_block_rate"]["n"] == 0
    stable = 7 + (tosses[0] == tosses[1])
    assert (config["stable_rate"]["k"], config["stable_rate"]["n"]) == (stable, 8)
    assert config["answers"] == 16
    assert config["cases"] == 8
    assert config["cost"]["total"] is None  # the cut answers have no token counts
    # f's diff was answered 429 first, then retried: 16 answers, g's 2 retries, f's 429
    assert sim.count == 16 + 2 + 1
    assert config["cost"]["merges_per_30_days"] is not None


def test_resume_skips_the_answers_already_given(tmp_path, sim, capsys) -> None:
    h, _ = standard(tmp_path)
    out = tmp_path / "out"
    assert backtest(capsys, sim, out, "--repo", str(h.repo), "--last", "3")[0] == 0
    asked = sim.count
    code, report = backtest(capsys, sim, out, "--repo", str(h.repo), "--last", "5")
    assert code == 0
    assert report["status"]["skipped"] == 3
    assert report["status"]["asked"] == 2
    assert sim.count == asked + 3  # e (coin) once, f (rate limited) twice
    assert report["configs"][0]["cases"] == 5
    # another question (the policy changed): every case is asked again
    code, report = backtest(
        capsys, sim, out, "--repo", str(h.repo), "--last", "5", "--policy-version", "2"
    )
    assert report["status"]["skipped"] == 0
    assert report["status"]["asked"] == 5


def write_cases(folder: Path, modes: list[tuple[str, str]]) -> Path:
    """A cases file: one diff file per case (same length), labelled."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for number, (mode, label) in enumerate(modes):
        diff = (
            f"diff --git a/f{number:03}.py b/f{number:03}.py\n--- a/f{number:03}.py\n"
            f"+++ b/f{number:03}.py\n@@ -0,0 +1 @@\n+x = 1  # sim:{mode:<9}\n"
        )
        (folder / f"c{number:03}.diff").write_text(diff)
        lines.append(
            json.dumps(
                {
                    "id": f"case-{number:03}",
                    "label": label,
                    "diff": f"c{number:03}.diff",
                    "source": "generated",
                }
            )
        )
    path = folder / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_max_cost_stops_before_the_review_that_would_cross_it(tmp_path, sim, capsys) -> None:
    cases = write_cases(tmp_path / "cases", [("pass", "allow")] * 6)
    config = tmp_path / "priced.yml"
    config.write_text(PRICED)
    first = (tmp_path / "cases" / "c000.diff").read_bytes()
    from gate.config.inputs import apply_inputs
    from gate.config.load import load_config

    priced = apply_inputs(load_config(str(config)), {"attempts": "2"})  # as backtest() asks
    selected = select_diff(first, priced)
    bound = cost.preflight(selected.data, priced, selected.coverage).bound
    assert bound is not None
    out = tmp_path / "out"
    # what one answer costs: the simulator counts a prompt token per 4 bytes of the prompt
    # (at least 10) and a token per 4 characters of the answer (input 1.0, output 2.0 per
    # million)
    from gate.decide.decision import binding_for
    from gate.review.prompt import build_prompt

    prompt = build_prompt(
        selected.data,
        binding=binding_for(selected.data, priced),
        instructions=priced.instructions,
    )
    read = max(10, len((prompt.system + prompt.user).encode()) // 4)
    answer = (read * 1.0 + len(verdict("pass", "0" * 64, "1")) // 4 * 2.0) / 1e6
    limit = bound + 2.5 * answer  # room for three answers' cost plus one review's bound
    code, report = backtest(
        capsys,
        sim,
        out,
        "--cases",
        str(cases),
        "--config",
        str(config),
        "--max-cost",
        repr(limit),
        "--jobs",
        "1",
    )
    done = rows(out)
    assert code == 3
    assert not report["status"]["complete"]
    assert "--max-cost" in report["status"]["stopped"]
    spent = 0.0
    for row in done:  # each review was asked only with its bound under the limit
        assert spent + row["bound"] <= limit
        spent += row["cost"]
    assert spent + bound > limit  # and the next one would have crossed it
    assert len(done) == 3
    assert sim.count == 3


def test_two_configs_are_compared_on_the_same_cases(tmp_path, sim, capsys) -> None:
    modes = [("lowconf", "allow")] * 3 + [("pass", "allow")] * 2 + [("fail", "block")]
    cases = write_cases(tmp_path / "cases", modes)
    out = tmp_path / "out"
    code, report = backtest(
        capsys,
        sim,
        out,
        "--cases",
        str(cases),
        "--min-confidence",
        "0.4",
        "--min-confidence",
        "0.8",
    )
    assert code == 0
    names = [c["name"] for c in report["configs"]]
    assert names == ["min-confidence=0.4", "min-confidence=0.8"]
    lenient, strict = report["configs"]
    assert (lenient["false_block_rate"]["k"], strict["false_block_rate"]["k"]) == (0, 3)
    assert lenient["catch_rate"]["k"] == strict["catch_rate"]["k"] == 1
    [comparison] = report["comparisons"]
    fb = comparison["false_block_rate"]
    assert (fb["pairs"], fb["a_only"], fb["b_only"]) == (5, 0, 3)
    assert fb["difference"] == pytest.approx(3 / 5)
    assert fb["p_value"] == mcnemar(0, 3) == 0.25
    for name in ("report.json", "report.html"):
        assert "min-confidence=0.8" in (out / name).read_text()
    assert md("min-confidence=0.8") in (out / "report.md").read_text()  # inert Markdown


def test_ctrl_c_leaves_a_valid_partial_report(tmp_path, sim, capsys, monkeypatch) -> None:
    from gate.backtest import progress

    cases = write_cases(tmp_path / "cases", [("pass", "allow")] * 8)
    seen: list[int] = []
    real = progress.Progress.on_answer

    def interrupt(self: progress.Progress, row: dict[str, Any], budget: Any) -> None:
        real(self, row, budget)
        seen.append(1)
        if len(seen) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(progress.Progress, "on_answer", interrupt)
    out = tmp_path / "out"
    code, report = backtest(capsys, sim, out, "--cases", str(cases), "--jobs", "1")
    assert code == 130
    assert report["status"]["interrupted"]
    assert not report["status"]["complete"]
    saved = json.loads((out / "report.json").read_text())
    assert saved["status"]["complete"] is False
    assert 2 <= saved["configs"][0]["cases"] < 8
    monkeypatch.setattr(progress.Progress, "on_answer", real)
    code, report = backtest(capsys, sim, out, "--cases", str(cases), "--jobs", "1")
    assert code == 0
    assert report["status"]["complete"]
    assert report["status"]["skipped"] == len(rows(out)) - report["status"]["asked"]
    assert report["configs"][0]["cases"] == 8


def test_resume_after_a_kill(tmp_path, capsys) -> None:
    """A backtest killed (SIGKILL) mid-run is resumed: what was written is not asked again."""
    cases = write_cases(tmp_path / "cases", [("slow", "allow")] * 10)
    out = tmp_path / "out"
    with ReviewerSimulator("openai", chooser=Scripted(slow_s=0.3)) as server:
        argv = [
            sys.executable,
            "-m",
            "gate",
            "backtest",
            "--cases",
            str(cases),
            "--model",
            MODEL,
            "--provider",
            "openai",
            "--base-url",
            server.base_url,
            "--out",
            str(out),
            "--jobs",
            "2",
            "--attempts",
            "2",
        ]
        env = {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path
        )
        deadline = time.monotonic() + 60
        results = out / "results.jsonl"
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and results.read_text().count("\n") >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        before = len(rows(out))
        assert 3 <= before < 10
        asked_before = server.count
        code, report = backtest(capsys, server, out, "--cases", str(cases), "--jobs", "2")
        assert code == 0
        assert report["status"]["skipped"] == before
        assert server.count - asked_before == 10 - before
    keys = [(r["case"], r["repeat"]) for r in rows(out)]
    assert len(keys) == len(set(keys)) == 10


def test_binary_and_oversized_diffs_are_coverage_rows(tmp_path, sim, capsys, monkeypatch):
    h = new_history(tmp_path / "repo")
    h.git("checkout", "-q", "-b", "pr-img")
    (h.repo / "logo.bin").write_bytes(b"\x00\x01\x02PNG\x00" * 50)
    h.git("add", "logo.bin")
    h.git("commit", "-q", "-m", "binary")
    h.git("checkout", "-q", "main")
    h.git("merge", "-q", "--no-ff", "pr-img", "-m", "Merge binary")
    binary = h.head()
    (h.repo / "big.py").write_text("x = 1\n" * 200)
    h.git("add", "big.py")
    h.git("commit", "-q", "-m", "a large change (#3)")
    big = h.head()
    monkeypatch.setattr(cases_module, "MAX_CASE_DIFF_BYTES", 600)
    out = tmp_path / "out"
    code, report = backtest(capsys, sim, out, "--repo", str(h.repo), "--last", "5")
    assert code == 0
    by_id = {c["id"]: c["decisions"]["default"][0] for c in report["cases"]}
    assert by_id[binary[:12]]["family"] == "coverage"
    assert (by_id[big[:12]]["reason"], by_id[big[:12]]["family"]) == ("too_large", "coverage")
    assert sim.count == 0


def failing(
    capsys: pytest.CaptureFixture[str], sim: ReviewerSimulator, out: Path, *args: str
) -> str:
    code, _, err = backtest_err(capsys, sim, out, *args)
    assert code == 2
    assert not out.exists()  # nothing half-written
    return err


def test_bad_repositories_and_ranges(tmp_path, sim, capsys) -> None:
    out = tmp_path / "out"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "is not a git repository" in failing(capsys, sim, out, "--repo", str(plain))
    h, _ = standard(tmp_path)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{h.repo}", str(shallow))
    err = failing(capsys, sim, out, "--repo", str(shallow), "--last", "3")
    assert "shallow clone" in err
    assert "--unshallow" in err
    err = failing(capsys, sim, out, "--repo", str(h.repo), "--range", "HEAD~1..HEAD")
    assert "no merge" in err
    err = failing(capsys, sim, out, "--repo", str(h.repo), "--range", "nosuch..HEAD")
    assert "--range 'nosuch..HEAD' is not a range" in err


def test_a_malformed_cases_file_names_every_line(tmp_path, sim, capsys) -> None:
    good = write_cases(tmp_path / "cases", [("pass", "allow")])
    lines = good.read_text().splitlines()
    bad = [
        lines[0],
        "{not json",
        json.dumps({"id": "x", "label": "bloc", "diff": "c000.diff"}),
        json.dumps({"id": "y", "label": "block"}),
        json.dumps({"id": "z", "label": "allow", "diff": "missing.diff"}),
        json.dumps({"id": "case-000", "label": "allow", "diff": "c000.diff"}),
        json.dumps({"id": "w", "label": "allow", "diff": "c000.diff", "extra": 1}),
    ]
    good.write_text("\n".join(bad) + "\n")
    err = failing(capsys, sim, tmp_path / "out", "--cases", str(good))
    for number, words in [
        (2, "not JSON"),
        (3, "label 'bloc' is not block or allow"),
        (4, "diff is missing"),
        (5, "diff file 'missing.diff' does not exist"),
        (6, "id 'case-000' is used twice"),
        (7, "unknown key 'extra'"),
    ]:
        assert f"cases.jsonl:{number}: {words}" in err, err
    assert "cases.jsonl:1:" not in err


def test_a_config_that_does_not_load_is_named(tmp_path, sim, capsys) -> None:
    cases = write_cases(tmp_path / "cases", [("pass", "allow")])
    wrong = tmp_path / "wrong.yml"
    wrong.write_text("reviewer:\n  modle: x\n")
    err = failing(capsys, sim, tmp_path / "out", "--cases", str(cases), "--config", str(wrong))
    assert f"--config {wrong}" in err
    assert "modle" in err


def test_max_cost_without_a_price_is_refused_before_anything(tmp_path, sim, capsys) -> None:
    cases = write_cases(tmp_path / "cases", [("pass", "allow")])
    err = failing(capsys, sim, tmp_path / "out", "--cases", str(cases), "--max-cost", "1")
    assert "needs a price for the model 'sim-model'" in err
    assert sim.count == 0


def test_plan_labels_reverts_of_merges_and_of_commits_inside_a_pull_request(tmp_path) -> None:
    h = new_history(tmp_path / "repo")
    merged = h.merge("a.py", "pass")
    kept = h.merge("b.py", "pass")
    second = h.merge("c.py", "pass")
    h.revert(h.git("rev-parse", "pr-c.py"))  # a commit inside the pull request
    h.revert(merged, merge=True)  # the merge itself
    plan = cases_module.from_history(h.repo, last=10)
    labels = {c.id: c.label for c in plan.cases}
    assert labels == {merged[:12]: "block", kept[:12]: "allow", second[:12]: "block"}
    assert [c.id for c in plan.cases] == [second[:12], kept[:12], merged[:12]]  # newest first
    assert [c.id for c in cases_module.from_history(h.repo, last=1).cases] == [second[:12]]
    span = cases_module.from_history(h.repo, revs=f"{merged}..{second}")
    assert [c.id for c in span.cases] == [second[:12], kept[:12]]
    # the merge's diff is its pull request's: the second parent against the merge base
    diff = next(c for c in plan.cases if c.id == kept[:12]).load()
    assert b"b/b.py" in diff
    assert b"a.py" not in diff
    # merges an hour apart: 3 merges over 3 + 2 hours... the rate is per 30 days
    assert plan.merges_per_30_days is not None
    assert plan.merges_per_30_days > 0


def test_an_error_mid_run_leaves_a_partial_report(tmp_path, sim, capsys, monkeypatch) -> None:
    h, _ = standard(tmp_path)
    real = cases_module.Case.load
    calls: list[str] = []

    def load(self: cases_module.Case) -> bytes:
        calls.append(self.id)
        if len(calls) == 3:
            raise cases_module.UsageError(f"git diff failed for {self.id}")
        return real(self)

    monkeypatch.setattr(cases_module.Case, "load", load)
    out = tmp_path / "out"
    code, _, err = backtest_err(capsys, sim, out, "--repo", str(h.repo), "--jobs", "1")
    assert code == 2
    assert "git diff failed" in err
    saved = json.loads((out / "report.json").read_text())
    assert saved["status"]["complete"] is False
    assert "stopped by an error" in saved["status"]["stopped"]
    assert saved["configs"][0]["cases"] == 2


def test_a_large_change_is_reviewed_in_chunks_with_agreement(tmp_path, sim, capsys) -> None:
    """The backtest's review is the action's: a diff over max_chunk_bytes is cut into
    chunks, each asked up to `agreement` times (a chunk's asking stops at its first fail);
    one failing file fails the whole case."""
    h = new_history(tmp_path / "repo")
    h.git("checkout", "-q", "-b", "pr-big")
    for n in range(6):
        mode = "fail" if n == 4 else "pass"
        (h.repo / f"m{n}.py").write_text(f"# sim:{mode}\n" + f"x{n} = 1\n" * 120)
    h.git("add", ".")
    h.git("commit", "-q", "-m", "six files")
    h.git("checkout", "-q", "main")
    h.git("merge", "-q", "--no-ff", "pr-big", "-m", "Merge big")
    big = h.head()
    small = h.squash("s.py", "pass", 2)
    config = tmp_path / "chunked.yml"
    config.write_text("max_chunk_bytes: 2048\nagreement: 2\n")
    out = tmp_path / "out"
    code, report = backtest(capsys, sim, out, "--repo", str(h.repo), "--config", str(config))
    assert code == 0
    by_id = {c["id"]: c["decisions"]["chunked"][0] for c in report["cases"]}
    assert by_id[small[:12]]["state"] == "pass"
    assert by_id[big[:12]]["state"] == "fail"
    cert = json.loads((out / by_id[big[:12]]["certificate"]).read_text())
    chunks = len(cert["context"]["chunks"]["reviews"])
    assert chunks >= 3
    # every passing chunk and the small change twice; the failing chunk once (no set of
    # its answers could still pass)
    assert sim.count == 2 * chunks - 1 + 2


def test_a_case_whose_diff_carries_its_own_read_word_is_a_blocked_row(
    tmp_path: Path, sim: ReviewerSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    """A diff the prompt refuses to carry (its own read word beside the part's name,
    ``read_word_forged``) is one blocked row, as the action blocks on it: the backtest goes
    on to the other cases, nothing is asked for that one, and a second run skips it."""
    from tests.adversarial.test_forged_read_words import POLICY, SHAPES, _forging_diff

    forged, _ = _forging_diff("tail", SHAPES[0])
    lines = [
        {"id": "forged", "label": "block", "diff": forged.decode()},
        {"id": "honest", "label": "allow", "diff": (ROOT / "gate/data/sample.diff").read_text()},
    ]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    args = ("--cases", str(cases), "--jobs", "1", "--policy-version", POLICY)
    code, report = backtest(capsys, sim, out, *args)
    assert code == 0
    assert report["status"]["complete"]
    by_id = {c["id"]: c["decisions"] for c in report["cases"]}
    [forged_row] = next(iter(by_id["forged"].values()))
    assert (forged_row["state"], forged_row["reason"]) == ("incomplete", "read_word_forged")
    assert sim.count == 1  # the honest case alone was asked
    code, report = backtest(capsys, sim, out, *args)
    assert code == 0
    assert report["status"]["skipped"] == 2
    assert sim.count == 1
