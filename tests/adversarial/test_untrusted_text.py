"""Class: untrusted text printed as if the gate had written it (issue 8, section 5).

Cause: ``review`` printed the reviewer's reasons raw, so a reason holding
``\\n::error::...`` became a workflow command when the CLI ran in a GitHub
Actions step (and ``##[...]``, which the runner reads anywhere in a line), ANSI
escapes and ``\\r`` drove the terminal, bidi overrides reordered what was shown,
and a lone surrogate crashed the print. In the Markdown of the job summary and
the sticky comment, control and bidi characters went through, ``#123`` became a
cross-reference and ``=``, ``$``, ``:`` and ``/`` were left unescaped.

Fix: one renderer, :mod:`gate.safe.untrusted` (``line``/``lines``/``own_line``):
secrets redacted, every control (C0, DEL, C1), format (bidi, zero-width, BOM),
separator and surrogate character shown as its Python escape, a leading ``::``
(after blanks) written ``\\x3a:`` and ``##[`` written ``#\\x23[`` everywhere.
Every command prints through ``gate.commands._io.say``/``say_json``; the
action's ``report.emit`` and annotations use it. ``report.md`` escapes every
ASCII punctuation character, ``<``/``&`` as entities, and puts a zero-width
space after ``@`` and ``#``. Wave 2 (sibling): ``GH-123`` is GitHub's other spelling of
``#123`` (an autolinked reference that cross-links the issue); it went through, so ``md``
puts the zero-width space after the ``-`` of ``GH-`` too (any letter case).

Oracles: the runner's own parsing rules (``ActionCommand.TryParseV2``: ``::``
after ``TrimStart``; ``TryParse``: ``##[`` anywhere; lines end at ``\\r`` and
``\\n``), and GitHub's Markdown renderer (``cmarkgfm``, bindings to GitHub's
cmark fork): the rendered HTML must be exactly the wrapper plus the text,
character for character. Variants: Hypothesis generates hostile text from an
alphabet of every character class that matters, through the renderer, the CLI
(``review`` against the simulator) and the action (against the fake GitHub).
"""

from __future__ import annotations

import html
import io
import json
import re
import string
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate import REPOSITORY_URL
from gate.action import report
from gate.action.run import run_action
from gate.cli import main
from gate.decide.attempt import Attempt, EndReason
from gate.decide.decision import Decision, State, Status, describe
from gate.decide.verdict import Verdict
from gate.lab.sim import MODEL, ReviewerSimulator, extract_prompt
from gate.review.prompt import binding_in
from gate.safe import untrusted
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub
from tests.verdicts import read_words

EXAMPLES = settings(max_examples=500, deadline=None)
SLOW = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
ACTION = settings(SLOW, max_examples=8)  # a whole action run per example

# --- hostile text ------------------------------------------------------------------

HOSTILE_PIECES = [
    "::error::pwned",
    "::add-mask::x",
    "::stop-commands::tok",
    "  ::warning::indented",
    "\u3000::notice::wide",
    "##[error]legacy",
    "##[set-output name=state;]pass",
    "\x1b[31mred\x1b[0m",
    "\x9b31m",
    "\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
    "\r\x1b[2Kpass",
    "\u202eevil\u202c",
    "\u2066iso\u2069",
    "\u200b\u200d\ufeff",
    "\u2028\u2029\x85",
    "\ud800",
    "<!-- review-gate:sticky:review-gate -->",
    "<img src=x onerror=alert(1)>",
    "[link](https://evil.example) ![i](https://evil.example/i.png)",
    "https://evil.example www.evil.example a@evil.example",
    "@admin @org/team #123 owner/repo#4 GH-5",
    "| a | b |",
    "# heading",
    "===",
    "```",
    "~~~",
    "    code",
    "1. item",
    "> quote",
    "$x^2$",
    "&#x202e; &amp; &lt;",
    "*a* _b_ ~~c~~ `d`",
    "\\",
]
ALPHABET = st.characters(blacklist_categories=()) | st.sampled_from(
    [*string.punctuation, "\n", "\r", "\t", " ", "\x00", "\x1b", "\x7f", "\x9b", "\u202e"]
)
hostile = st.lists(
    st.sampled_from(HOSTILE_PIECES) | st.text(ALPHABET, max_size=12), max_size=8
).map("".join)

_ESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1)[1:], 16)), text)


def unsafe_characters(text: str, *, newlines: bool = False) -> list[str]:
    bad = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    return [
        f"U+{ord(ch):04X}"
        for ch in text
        if unicodedata.category(ch) in bad and not (newlines and ch == "\n")
    ]


def runner_lines(text: str) -> list[str]:
    """Lines as the runner reads a step's output (.NET ReadLine: \\r, \\n or \\r\\n)."""
    return re.split(r"\r\n|\r|\n", text)


def commands_in(text: str) -> list[str]:
    """The lines the runner would take as a workflow command (V2 ``::``, legacy ``##[``)."""
    found = []
    for line in runner_lines(text):
        if line.lstrip().startswith("::") or "##[" in line:
            found.append(line)
    return found


# --- 1. the renderer ----------------------------------------------------------------


@EXAMPLES
@given(hostile)
def test_a_line_is_one_safe_line_that_keeps_every_character(text: str) -> None:
    shown = untrusted.line(text)
    assert unsafe_characters(shown) == []
    assert commands_in(shown) == []
    if "\\" not in text:  # escapes are unambiguous unless the text has backslashes of its own
        assert unescape(shown) == text
    assert untrusted.line(shown) == shown  # idempotent


@EXAMPLES
@given(hostile)
def test_lines_keep_line_breaks_and_no_line_is_a_command(text: str) -> None:
    shown = untrusted.lines(text)
    assert unsafe_characters(shown, newlines=True) == []
    assert commands_in(shown) == []
    assert shown.count("\n") == text.count("\n")


@EXAMPLES
@given(hostile, hostile, st.lists(hostile, max_size=3))
def test_the_action_log_holds_only_the_gates_own_commands(
    description: str, detail: str, notes: list[str]
) -> None:
    rep = _report(description, detail, tuple(notes))
    stream = io.StringIO()
    report.emit(
        [*report.annotation_commands(rep), f"review-gate: failure on abc: {description}"], stream
    )
    log = stream.getvalue()
    assert unsafe_characters(log, newlines=True) == []
    found = commands_in(log)
    assert [c.split("::")[1].split(" ")[0] for c in found] == ["error"] + ["warning"] * len(notes)
    assert all(c.startswith(("::error title=", "::warning title=")) for c in found)


# --- 2. the CLI, against the simulator --------------------------------------------------


def _fail_verdict(reasons: list[str]) -> Any:
    def respond(request: dict[str, Any]) -> str:
        binding = binding_in(extract_prompt("openai", request)[1])
        assert binding is not None
        body = {
            "verdict": "fail",
            "reasons": reasons,
            "confidence": 0.9,
            "diff_sha": binding.diff_sha,
            "policy_version": binding.policy_version,
            "read": read_words(binding),
        }
        return "```json\n" + json.dumps(body) + "\n```\n"

    return respond


DIFF = b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-a = 0\n+a = 3\n"


def test_review_prints_reasons_as_safe_lines(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    diff = tmp_path / "change.diff"
    diff.write_bytes(DIFF)
    current: list[list[str]] = [["x"]]
    with ReviewerSimulator("openai", lambda r: _fail_verdict(current[0])(r)) as sim:

        @SLOW
        @given(st.lists(hostile.map(lambda t: "r " + t), min_size=1, max_size=3))
        def check(reasons: list[str]) -> None:
            current[0] = reasons
            argv = ["review", "--diff", str(diff), "--model", MODEL, "--base-url", sim.base_url]
            code = main([*argv, "--attempts", "1"])
            out, err = capfd.readouterr()
            assert code in (1, 3), err  # fail, or needs_human for a string that is no text
            assert "internal error" not in err
            for text in (out, err):
                assert unsafe_characters(text, newlines=True) == []
                assert commands_in(text) == []

        check()


# --- 3. the action, against the fake GitHub ----------------------------------------------


def test_the_action_prints_and_posts_reasons_safely(tmp_path: Path) -> None:
    head, base = "1" * 40, "2" * 40
    current: list[list[str]] = [["x"]]
    with (
        FakeGitHub("octo-org/hello-world") as fake,
        ReviewerSimulator("openai", lambda r: _fail_verdict(current[0])(r)) as sim,
    ):

        @ACTION
        @given(st.lists(hostile.map(lambda t: "r " + t), min_size=1, max_size=3))
        def check(reasons: list[str]) -> None:
            current[0] = reasons
            fake.add_pull(7, head_sha=head, base_sha=base, diff=DIFF)
            run = Path(tempfile.mkdtemp(dir=tmp_path))
            event = run / "event.json"
            payload = pull_request_event(
                "opened", repository=fake.repository, number=7, head_sha=head, base_sha=base
            )
            event.write_text(json.dumps(payload))
            summary = run / "summary.md"
            env = {
                "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_EVENT_PATH": str(event),
                "GITHUB_REPOSITORY": fake.repository,
                "GITHUB_API_URL": fake.api_url,
                "GITHUB_RUN_ID": "1",
                "RUNNER_TEMP": str(run),
                "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_OUTPUT": str(run / "out"),
                "INPUT_TOKEN": fake.token,
                "INPUT_MODEL": MODEL,
                "INPUT_BASE-URL": sim.base_url,
                "INPUT_ATTEMPTS": "1",
            }
            stream = io.StringIO()
            assert run_action(env, out=stream, sleep=lambda _s: None, throttle=False) in (1, 3)
            log = stream.getvalue()
            assert unsafe_characters(log, newlines=True) == []
            names = [c.split("::")[1].split(" ")[0] for c in commands_in(log)]
            assert set(names) <= {"add-mask", "error", "warning"}
            assert names.count("error") == 1
            assert_inert_markdown(summary.read_text())
            body = fake.comments[7][-1]["body"]
            assert_inert_markdown(body)
            assert body.startswith(report.comment_marker("review-gate"))
            # the gate's own blocks: the sticky marker first, the history index last
            own = [line for line in body.splitlines() if line.startswith("<!-- review-gate:")]
            assert own[0] == report.comment_marker("review-gate").strip()
            assert own[-1].startswith("<!-- review-gate:history ")
            assert body.count("<!--") == len(own) == 2, "a reason cannot forge a gate block"

        check()
        assert fake.violations == []


# --- 4. Markdown, against GitHub's renderer ------------------------------------------------

ZWSP = "\u200b"


def expected_text(text: str) -> str:
    """What md(text) must render as: whitespace collapsed, unsafe characters escaped,
    a zero-width space after @ and #."""
    shown = untrusted.visible(" ".join(text.split()))
    shown = shown.replace("@", "@" + ZWSP).replace("#", "#" + ZWSP)
    return re.sub("(?i)(?<=gh)-", "-" + ZWSP, shown)


def render(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def assert_inert_markdown(markdown: str) -> None:
    """Rendered, the text holds no unsafe character, no live @mention or #reference."""
    page = render(markdown)
    text = html.unescape(re.sub(r"<[^>]*>", "", page))
    ours = text.replace("@" + ZWSP, "@").replace("#" + ZWSP, "#")  # the gate's own ZWSP
    ours = ours.replace("-" + ZWSP, "-")
    assert unsafe_characters(ours.replace("\n", " ")) == []
    assert not re.search(r"(?<![\w`])@[A-Za-z0-9]", text), "a live @mention"
    assert not re.search(r"(?<![\w&])#\d", text), "a live #reference"
    assert not re.search(r"(?i)gh-\d", text), "a live GH-123 reference"
    for href in re.findall(r"<a [^>]*href=\"([^\"]*)\"", page):
        # the run's own page, or the project's own docs and examples (the next step's link)
        run_page = r"https://github\.com/[\w.-]+/[\w.-]+/actions/runs/\d+"
        own_doc = (
            re.escape(REPOSITORY_URL) + r"/blob/main/(?:docs|examples)/[\w.-]+(?:#[a-z0-9-]+)?"
        )
        assert re.fullmatch(f"{run_page}|{own_doc}", href), href
    for tag in ("<img", "<script", "<iframe"):
        assert tag not in page


CONTEXTS = {
    "paragraph": ("{}", r"<p>(.*)</p>"),
    "list item": ("- {}", r"<ul>\n<li>(.*)</li>\n</ul>"),
    "table cell": (
        "| h |\n|---|\n| {} |",
        r"<table>\n<thead>\n<tr>\n<th>h</th>\n</tr>\n</thead>\n"
        r"<tbody>\n<tr>\n<td>(.*)</td>\n</tr>\n</tbody>\n</table>",
    ),
    "quote": ("> {}", r"<blockquote>\n<p>(.*)</p>\n</blockquote>"),
    "after a line": ("intro\n{}", r"<p>intro\n(.*)</p>"),
}


@EXAMPLES
@given(hostile, st.sampled_from(sorted(CONTEXTS)))
def test_md_renders_exactly_the_text_in_every_context(text: str, context: str) -> None:
    expected = expected_text(text)
    if not expected:
        return
    template, shape = CONTEXTS[context]
    page = render(template.format(report.md(text))).strip()
    match = re.fullmatch(shape, page, re.S)
    assert match is not None, page
    inner = match.group(1)
    assert "<" not in inner, f"markup was produced: {inner!r}"
    assert html.unescape(inner) == expected


gh_reference = st.tuples(
    hostile,
    st.sampled_from(["GH", "gh", "Gh", "gH"]),
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(["", " ", ".", ",", ")", "x"]),
).map(lambda t: f"{t[0]} {t[1]}-{t[2]}{t[3]}")


@EXAMPLES
@given(gh_reference, st.sampled_from(sorted(CONTEXTS)))
def test_gh_references_are_not_live(text: str, context: str) -> None:
    """GH-123 (any case) is a reference like #123: rendered, it must not read as one."""
    template, _ = CONTEXTS[context]
    assert_inert_markdown(template.format(report.md(text)))


@EXAMPLES
@given(hostile)
def test_code_stays_one_code_span(text: str) -> None:
    shown = report.code(text)
    page = render(f"| h |\n|---|\n| {shown} |")
    cells = re.findall(r"<td>(.*?)</td>", page, re.S)
    assert len(cells) == 1
    assert re.fullmatch(r"<code>[^<]*</code>|—", cells[0]), cells[0]
    assert unsafe_characters(html.unescape(cells[0])) == []


@EXAMPLES
@given(hostile, hostile, st.lists(hostile, max_size=3))
def test_summary_and_comment_are_inert(description: str, detail: str, notes: list[str]) -> None:
    rep = _report(description, detail, tuple(notes))
    assert_inert_markdown(report.summary_markdown(rep))
    body = report.comment_body(rep)
    assert_inert_markdown(body)
    assert body.count("<!--") == 1
    assert render(body).count("<!--") == 1


def _report(description: str, detail: str, notes: tuple[str, ...]) -> report.Report:
    verdict = Verdict(
        verdict="fail",
        reasons=(detail or "r", description or "r"),
        confidence=0.9,
        diff_sha="d" * 64,
        policy_version="1",
    )
    decision = Decision(
        state=State.FAIL,
        status=Status.FAILURE,
        reason="reviewer_fail",
        description=describe("fail", description),
        detail=detail,
        verdict=verdict,
        source="envelope",
    )
    attempt = Attempt(1, "openai", False, "http_400", detail, EndReason.HTTP_ERROR)
    return report.Report(
        decision=decision,
        state="fail",
        status="failure",
        description=description,
        context="review-gate",
        subject="pull request #7",
        sha="a" * 40,
        attempts=(attempt,),
        notes=notes,
    )
