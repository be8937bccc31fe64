"""Class: a reviewer's reason (or a file name in the diff) forging workflow commands
through a line annotation (issue 14).

Cause: a line-anchored finding becomes ``::error file=PATH,line=N,title=T::TEXT``. The
reason's text and the path are written by others (the reviewer, the pull request's
author). Unescaped, a ``,`` or ``:`` in the path adds a property or ends the command's
properties early (``file=a.py,line=1`` then ``,file=other.py``), a CR or LF (or any
character the runner's ``ReadLine`` breaks on) in the text starts a second line that
the runner reads as its own command (``::add-mask::``, ``::stop-commands::``), ``##[``
is a legacy command anywhere in a line, and a location like ``other.py:1:`` could put
an annotation on a file the review did not cover.

Fix: :mod:`gate.action.findings_report` escapes the text with
:func:`gate.safe.untrusted.lines` then GitHub's data escaping (``%``, CR, LF), and each
property (file, title) with GitHub's property escaping (``%``, CR, LF, ``:``, ``,``);
:func:`gate.action.report.emit` writes the line redacted and with no ``##[``. Only
a path that is a file of the reviewed diff, with the range on that file's right side,
is annotated (:mod:`gate.findings`); a path that does not print as itself is not.

Oracle: the runner's own parser, ported from ``ActionCommand.TryParseV2`` (a command is
a line that starts with ``::`` after ``TrimStart``; the command info runs to the next
``::``; properties split on ``,`` then on the first ``=``; values unescaped in the
runner's order) and ``TryParse`` (``##[`` anywhere), over lines split as .NET's
``ReadLine`` splits them (CR, LF, CRLF). Variants: Hypothesis generates reasons and
file names from an alphabet of every character that matters to that parser.
"""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.action import checks, findings_report, report, reviews
from gate.findings import Anchor, findings_for
from gate.safe import untrusted
from tests.fakes.runner import parse_command, runner_lines

EXAMPLES = settings(max_examples=400, deadline=None)

# every character or run that the runner's parser gives a meaning to
HOSTILE = st.sampled_from(
    [
        "::", ":", ",", "=", "%", "%0A", "%25", "%3A", "%2C", "\n", "\r", "\r\n", "##[",
        "error", "warning", "file=", "line=", "other.py", "add-mask", "stop-commands",
        " ", "\t", "\x85", "\u2028", "\x1b[31m", "\u202e", "a", "é", "1", "-",
    ]
)  # fmt: skip
TEXT = st.lists(HOSTILE, max_size=24).map("".join)
PATH_PART = st.sampled_from(["src", "a", ",", ":", "%", "=", "%2C", "line=9", " ", "é", "#", "["])
PATHS = st.lists(PATH_PART, min_size=1, max_size=6).map(lambda parts: "p/" + "".join(parts))


def diff_for(paths: list[str]) -> bytes:
    out = b""
    for path in paths:
        name = path.encode()
        out += (
            b"diff --git a/" + name + b" b/" + name + b"\nindex 1..2 100644\n"
            b"--- a/" + name + b"\n+++ b/" + name + b"\n@@ -1,2 +1,3 @@\n a\n-b\n+c\n+d\n"
        )
    return out


@EXAMPLES
@given(
    paths=st.lists(PATHS, min_size=1, max_size=3, unique=True),
    texts=st.lists(TEXT, min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 5), min_size=6, max_size=6),
    failed=st.booleans(),
    context=TEXT,
)
def test_a_reason_makes_at_most_its_own_annotation_on_its_own_file(
    paths, texts, picks, failed, context
):
    diff = diff_for(paths)
    reasons = []
    for i, text in enumerate(texts):
        path = paths[picks[i] % len(paths)]
        # anchored, out of range, on another file name, or with no location
        prefix = [f"{path}:2:", f"{path}:1-3:", f"{path}:40:", "other.py:2:", "", text[:3]]
        reasons.append(prefix[picks[(i + 1) % 6]] + text)
    findings = findings_for(reasons, diff)
    lines = findings_report.annotation_commands(findings, failed=failed, context=context or "c")
    log = io.StringIO()
    report.emit(lines, log)
    commands = []
    for line in runner_lines(log.getvalue()):
        assert "##[" not in line
        parsed = parse_command(line)
        if parsed is not None:
            commands.append(parsed)
    expected = [f for f in findings if findings_report.annotatable(f)]
    expected = expected[: findings_report.MAX_ANNOTATIONS]
    assert len(commands) == len(expected), (reasons, log.getvalue())
    for (name, props, data), finding in zip(commands, expected, strict=True):
        assert name == ("error" if failed else "warning")
        assert finding.anchor is Anchor.ANCHORED
        assert props["file"] == finding.path
        assert finding.path in paths
        assert props["line"] == str(finding.start)
        assert set(props) <= {"file", "line", "endLine", "title"}
        assert props.get("endLine", str(finding.start)) == str(finding.end)
        assert data == untrusted.lines(finding.text)


@EXAMPLES
@given(text=TEXT, path=PATHS)
def test_no_location_outside_the_diff_is_annotated(text, path):
    diff = diff_for([path])
    reasons = [f"{path}:99: {text}", f"{path},file=x.py:2: {text}", f"x/{path}:2: {text}"]
    findings = findings_for(reasons, diff)
    assert all(not f.anchored for f in findings)
    assert findings_report.annotation_commands(findings, failed=True, context="c") == []


@EXAMPLES
@given(
    paths=st.lists(PATHS, min_size=1, max_size=3, unique=True),
    texts=st.lists(TEXT, min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 5), min_size=6, max_size=6),
)
def test_review_comments_and_check_annotations_stay_on_reviewed_lines(paths, texts, picks):
    """The other two sinks of a location (a review comment, a check-run annotation) take
    the path and lines from the same classification: never another file or line."""
    diff = diff_for(paths)
    reasons = []
    for i, text in enumerate(texts):
        path = paths[picks[i] % len(paths)]
        prefix = [f"{path}:2:", f"{path}:1-3:", f"{path}:40:", "other.py:2:", "", text[:3]]
        reasons.append(prefix[picks[(i + 1) % 6]] + text)
    findings = findings_for(reasons, diff)
    # anchored, and the path prints as itself (the shared rule of every findings sink)
    anchored = [f for f in findings if findings_report.annotatable(f)]
    for item in checks.check_annotations(findings, failed=True):
        assert item["path"] in paths
        assert 1 <= item["start_line"] <= item["end_line"] <= 3
    assert len(checks.check_annotations(findings, failed=True)) == len(anchored)
    comments = reviews.review_comments(findings)
    for comment in comments:
        assert comment["path"] in paths
        assert comment["side"] == "RIGHT"
        assert 1 <= comment.get("start_line", comment["line"]) <= comment["line"] <= 3
        assert "\n" not in comment["body"]  # md() collapses whitespace: inert, one line
    assert len(comments) == len([f for f in anchored if findings_report.annotatable(f)])
