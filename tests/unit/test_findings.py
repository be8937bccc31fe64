"""gate.findings: the right side of a diff, and reasons placed on it.

Oracle for the hunk parser: :mod:`difflib` writes the diff (``unified_diff``) and says,
independently, which new-file lines each hunk shows (``get_grouped_opcodes``: a group
runs from its first opcode's ``j1`` to its last one's ``j2``).
"""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.findings import Anchor, classify, findings_for, parse_reason, right_side

EXAMPLES = settings(max_examples=300, deadline=None)

LINES = st.lists(st.sampled_from(["a", "b", "c", "d", "", "x y", "-", "+", " ", "@@"]), max_size=40)


def git_diff(path: str, old: list[str], new: list[str], context: int = 3) -> bytes:
    body = difflib.unified_diff(
        [line + "\n" for line in old],
        [line + "\n" for line in new],
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=context,
    )
    text = "".join(body)
    return (f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n" + text).encode()


def expected_hunks(old: list[str], new: list[str], context: int = 3) -> list[tuple[int, ...]]:
    matcher = difflib.SequenceMatcher(None, old, new)
    out = []
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        out.append(tuple(range(first[3] + 1, last[4] + 1)))
    return out


@EXAMPLES
@given(old=LINES, new=LINES, context=st.integers(0, 4))
def test_right_side_is_what_difflib_says_each_hunk_shows(old, new, context):
    diff = git_diff("src/m.py", old, new, context)
    sides = right_side(diff)
    want = [h for h in expected_hunks(old, new, context)]
    if old == new:
        assert sides == {}
        return
    got = [h.lines for h in sides["src/m.py"]]
    assert got == want


@EXAMPLES
@given(old=LINES, new=LINES, line=st.integers(1, 60), span=st.integers(0, 5))
def test_a_reason_is_anchored_exactly_when_its_range_lies_in_one_hunk(old, new, line, span):
    diff = git_diff("src/m.py", old, new)
    end = line + span
    finding = classify(
        f"src/m.py:{line}-{end}: off by one" if span else f"src/m.py:{line}: x", right_side(diff)
    )
    inside = any(h[0] <= line and end <= h[-1] for h in expected_hunks(old, new) if h)
    assert finding.anchor is (Anchor.ANCHORED if inside else Anchor.OUTSIDE)
    assert (finding.path, finding.start, finding.end) == ("src/m.py", line, end)


def test_paths_with_colons_and_the_longest_known_prefix():
    assert parse_reason("a:1:b.py:3: text", ["a:1:b.py"]) == ("a:1:b.py", 3, 3, "text")
    assert parse_reason("a:1:b.py:3: text", []) == ("a", 1, 1, "b.py:3: text")
    assert parse_reason("src/x.py:10-12: range", ["src/x.py"]) == ("src/x.py", 10, 12, "range")
    assert parse_reason("no location here", ["src/x.py"]) is None
    assert parse_reason("see line 3: of it", []) is None  # whitespace: no path
    assert parse_reason("src/x.py:0: zero is no line", ["src/x.py"]) is None
    assert parse_reason(":3: empty path", []) is None
    assert parse_reason("b/src/x.py:4: diff name", ["src/x.py"]) == ("src/x.py", 4, 4, "diff name")
    assert parse_reason("./src/x.py:4: dot", ["src/x.py"]) == ("src/x.py", 4, 4, "dot")
    assert parse_reason("b/y.py:4: not reviewed", ["src/x.py"]) == ("b/y.py", 4, 4, "not reviewed")


def test_removed_lines_and_deleted_files_have_no_right_side():
    diff = (
        b"diff --git a/gone.py b/gone.py\ndeleted file mode 100644\nindex 1..0\n"
        b"--- a/gone.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
        b"diff --git a/k.py b/k.py\nindex 1..2 100644\n--- a/k.py\n+++ b/k.py\n"
        b"@@ -5,3 +5,2 @@\n keep\n-drop\n keep2\n\\ No newline at end of file\n"
    )
    found = findings_for(["gone.py:1: was deleted", "k.py:6: kept", "k.py:7: past", "plain"], diff)
    assert [f.anchor for f in found] == [
        Anchor.OUTSIDE,
        Anchor.ANCHORED,
        Anchor.OUTSIDE,
        Anchor.GENERAL,
    ]
    assert found[1].text == "kept"
    assert found[3].to_json() == {"anchor": "general", "text": "plain"}


def test_a_range_across_two_hunks_is_not_anchored():
    old = [f"l{i}" for i in range(30)]
    new = list(old)
    new[2], new[25] = "changed2", "changed25"
    diff = git_diff("f.py", old, new)
    hunks = expected_hunks(old, new)
    assert len(hunks) == 2
    sides = right_side(diff)
    assert classify(f"f.py:{hunks[0][0]}-{hunks[1][-1]}: both", sides).anchor is Anchor.OUTSIDE
    assert classify(f"f.py:{hunks[1][0]}-{hunks[1][-1]}: one", sides).anchor is Anchor.ANCHORED
