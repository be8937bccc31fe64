"""gate.action.report: summary, annotations, outputs with random delimiters, masks, comment body."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.action import report
from gate.decide.attempt import Attempt, EndReason, FinishReason
from gate.decide.decision import Decision, State, Status, blocked
from gate.decide.verdict import Verdict
from gate.diff import Coverage, SkippedFile, SkipWhy
from gate.safe import redact


def make_report(**kw):
    verdict = Verdict(
        verdict="fail",
        reasons=("<img src=x onerror=alert(1)> breaks | the table @admin",),
        confidence=0.9,
        diff_sha="d" * 64,
        policy_version="1",
    )
    decision = Decision(
        state=State.FAIL,
        status=Status.FAILURE,
        reason="verdict_fail",
        description="fail: the reviewer rejected the change",
        detail="the reviewer rejected the change",
        verdict=verdict,
        source="envelope",
        envelope_sha256="e" * 64,
    )
    coverage = Coverage(
        reviewed=("src/a.py",),
        skipped=(SkippedFile("img/x.png", SkipWhy.BINARY, 10),),
        diff_bytes=100,
        diff_sha="d" * 64,
    )
    attempt = Attempt(
        number=1,
        provider="openai",
        complete=False,
        reason="missing_done",
        detail="stream ended without [DONE]",
        end_reason=EndReason.SOCKET_CLOSE,
        finish_reason=FinishReason.NONE,
        http_status=200,
        bytes_received=321,
        raw_sha256="f" * 64,
    )
    values = {
        "decision": decision,
        "state": "fail",
        "status": "failure",
        "description": decision.description,
        "context": "review-gate",
        "subject": "pull request #7",
        "sha": "a" * 40,
        "coverage": coverage,
        "attempts": (attempt,),
        "digests": {"diff_sha": "d" * 64, "certificate": "c" * 64},
        "certificate_path": "/tmp/cert.json",
        "run_url": "https://github.com/o/r/actions/runs/1",
    }
    values.update(kw)
    return report.Report(**values)


def test_summary_names_decision_coverage_attempts_and_digests():
    md = report.summary_markdown(make_report())
    assert "review-gate: fail" in md
    assert "`failure` on `aaaaaaaaaaaa`" in md
    assert "`verdict_fail`" in md
    assert "`src/a.py`" in md
    assert "| `img/x.png` | `binary` | 10 |" in md
    assert "| 1 | no | `missing_done` | `none` | `socket_close` | 200 | 321 |" in md
    assert "stream ended without \\[DONE\\]" in md
    assert "c" * 64 in md
    assert "/tmp/cert.json" in md
    assert "https://github.com/o/r/actions/runs/1" in md


def test_reviewer_text_is_inert_markdown():
    md = report.summary_markdown(make_report())
    assert "<img" not in md
    assert "&lt;img" in md
    assert "@admin" not in md  # no mention
    assert "\\|" in md  # a pipe cannot break the table
    body = report.comment_body(make_report())
    assert "<img" not in body
    assert "@admin" not in body


def test_comment_starts_with_the_hidden_marker():
    body = report.comment_body(make_report())
    assert body.startswith(report.comment_marker("review-gate") + "\n")
    assert report.comment_marker("review-gate") == "<!-- review-gate:sticky:review-gate -->"
    assert report.comment_marker("a --> b") == "<!-- review-gate:sticky:a-b -->"


def test_comment_is_bounded():
    long = make_report(notes=("x" * 70_000,))
    assert len(report.comment_body(long)) <= report.MAX_COMMENT_CHARS + 100


def test_annotations_error_unless_pass_and_escape():
    lines = report.annotation_commands(make_report(description="bad: 100%\nnext"))
    assert lines[0].startswith("::error title=review-gate%3A fail::")
    assert "100%25%0Anext" in lines[0]
    assert "\n" not in lines[0]
    passed = make_report(state="pass", notes=("head moved",))
    assert report.annotation_commands(passed) == ["::warning title=review-gate::head moved"]


def test_heredoc_uses_random_delimiters_absent_from_value():
    one = report.heredoc("state", "pass")
    two = report.heredoc("state", "pass")
    delim = re.match(r"state<<(ghadelimiter_[0-9a-f]{32})\n", one)
    assert delim is not None
    assert one != two  # a fresh delimiter each time
    assert one == f"state<<{delim.group(1)}\npass\n{delim.group(1)}\n"
    # a value that contains the would-be delimiter gets another one
    value = "x\nghadelimiter_" + "0" * 32 + "\ny"
    text = report.heredoc("description", value, token="0" * 32)
    assert text.count("ghadelimiter_" + "0" * 32) == 1
    with pytest.raises(ValueError, match="invalid output name"):
        report.heredoc("a=b", "x")


def test_write_outputs_appends(tmp_path):
    path = tmp_path / "out"
    path.write_text("existing<<EOF\nx\nEOF\n")
    report.write_outputs(str(path), {"state": "fail", "description": "two\nlines"})
    text = path.read_text()
    assert text.startswith("existing<<EOF\nx\nEOF\n")
    assert re.search(r"description<<(ghadelimiter_\w+)\ntwo\nlines\n\1\n", text)
    report.write_outputs(None, {"state": "x"})  # no GITHUB_OUTPUT: nothing, no error


def test_outputs_for_report():
    out = report.outputs_for(make_report())
    assert out["state"] == "fail"
    assert out["verdict"] == "fail"
    assert out["certificate"] == "/tmp/cert.json"
    assert out["diff-sha"] == "d" * 64
    no_verdict = make_report(decision=blocked(State.NEEDS_HUMAN, "draft", "draft"))
    assert report.outputs_for(no_verdict)["verdict"] == ""


def test_masks_every_secret_and_every_line_of_multiline_ones():
    with redact.scope():  # mask_commands registers the values for redaction too
        lines = report.mask_commands(["sk-abc123", None, "", "line-one\nline-two", "sk-abc123"])
        assert redact.redact("key sk-abc123 line-two") == "key [redacted] [redacted]"
    assert lines == [
        "::add-mask::sk-abc123",
        "::add-mask::line-one%0Aline-two",
        "::add-mask::line-one",
        "::add-mask::line-two",
    ]
    stream = io.StringIO()
    report.emit(lines, stream)
    assert stream.getvalue().count("\n") == 4


def test_append_summary(tmp_path):
    path = tmp_path / "summary.md"
    report.append_summary(str(path), "# one")
    report.append_summary(str(path), "# two\n")
    assert path.read_text() == "# one\n# two\n"


def _parse_github_output(text: str) -> dict[str, str]:
    """GitHub's reading of GITHUB_OUTPUT: name<<DELIM, lines until a line equal to DELIM."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines) and lines[i]:
        name, delim = lines[i].split("<<", 1)
        end = lines.index(delim, i + 1)
        out[name] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return out


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r")))
def test_an_output_value_cannot_inject_another_output(value):
    hostile = f"{value}\nstate<<EOF\npass\nEOF"
    text = report.heredoc("description", hostile) + report.heredoc("state", "fail")
    assert _parse_github_output(text) == {"description": hostile, "state": "fail"}


@given(st.text(max_size=200))
def test_md_output_is_inert(text):
    out = report.md(text)
    assert "<" not in out
    assert "\n" not in out
    assert all(out[i + 1] == "\u200b" for i, ch in enumerate(out) if ch == "@")


def test_every_output_is_declared_in_action_yml_and_listed_by_action_help():
    from pathlib import Path

    import yaml

    from gate.commands import action

    root = Path(__file__).resolve().parents[3]
    declared = yaml.safe_load((root / "action.yml").read_text("utf-8"))["outputs"]
    written = report.outputs_for(make_report())
    assert set(declared) == set(written)
    assert len(written) == 17
    help_text = " ".join(action.DESCRIPTION.split())
    for name in written:
        assert re.search(rf"\b{re.escape(name)}\b", help_text), name
    assert "status (none when no status was posted)" in help_text
    assert "review-gate-certificate" in help_text
    assert "RUNNER_TEMP" in help_text
    assert "none when no status was posted" in declared["status"]["description"]


def test_a_blocking_chunk_is_never_behind_the_more_row() -> None:
    """Chunks that blocked come first, then split rows (evidence), then passes."""
    from gate.action.report import _chunks_md

    for blocking in (0, 7, 25, 39):
        rows = [
            {"chunk": str(i + 1), "of": 40, "files": 1, "bytes": 10,
             "state": "split" if i < 30 else "pass", "reason": "context_overflow"}
            for i in range(40)
        ]  # fmt: skip
        rows[blocking] = {**rows[blocking], "state": "incomplete", "reason": "connection_cut"}
        text = "\n".join(_chunks_md(rows, limit=20))
        assert f"| {blocking + 1}/40 |" in text
        assert "`incomplete`" in text
        assert "more (all `pass` or split)" in text
