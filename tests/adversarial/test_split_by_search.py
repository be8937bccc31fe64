"""The diff split by search equals the per-line parser it replaced (issue 22).

``gate.diff._parse_sections`` used to walk every line of the diff, counting each hunk's
lines (old and new) to know where the hunk ended, and held every line as an object
until its section was joined. It now finds each ``diff --git`` line by C-level search
and slices: a hunk body's lines begin with a space, ``-``, ``+`` or ``\\`` (or are empty),
so counting them never moved a boundary. Class of hole this guards: *a faster split
that draws a file boundary (or an unparseable flag, a binary flag, a name) somewhere
the exact parser did not*, which would move lines to another file, past the filters.

The oracle is the previous implementation, kept here verbatim (with its hunk counting),
run on generated diffs built to break a boundary: header lines inside hunks and after
truncated ones, ``+diff --git`` and ``-@@`` content, hunk headers with too many digits,
CR line ends and other separators, binary markers, renames, copies, quoted names, a
preamble, no final newline.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.diff import (
    _HEADER,
    _HUNK,
    BadName,
    FileSection,
    _is_binary,
    _iter_lines,
    _section_paths,
    git_quote,
    hunk_content,
    name_of,
    split_diff,
)


def _reference(data: bytes) -> list[FileSection]:
    """The per-line parser ``split_diff`` used before it split by search (verbatim)."""
    sections: list[list[bytes]] = []
    unparseable: set[int] = set()
    preamble: list[bytes] = []
    old_left = new_left = 0
    for line in _iter_lines(data):
        if old_left > 0 or new_left > 0:
            owed = hunk_content(line, old_left, new_left)
            if owed is not None:
                old_left, new_left = owed
                sections[-1].append(line)
                continue
            old_left = new_left = 0
        if line.startswith(_HEADER):
            if sections:
                _compact(sections[-1])
            sections.append([line])
            continue
        if not sections:
            preamble.append(line)
            continue
        sections[-1].append(line)
        hunk = _HUNK.match(line)
        if hunk is not None:
            try:
                old_left = int(hunk.group(2)) if hunk.group(2) is not None else 1
                new_left = int(hunk.group(4)) if hunk.group(4) is not None else 1
            except ValueError:
                unparseable.add(len(sections) - 1)
                old_left = new_left = 0
    out: list[FileSection] = []
    if preamble:
        out.append(FileSection(path="", data=b"".join(preamble)))
    for index in range(len(sections)):
        sec, sections[index] = sections[index], []
        try:
            path, old_path = _section_paths(sec)
        except BadName:
            path, old_path = git_quote(name_of(sec[0][len(_HEADER) :].rstrip(b"\r\n"))), ""
            unparseable.add(index)
        out.append(
            FileSection(
                path=path,
                data=b"".join(sec),
                binary=_is_binary(sec),
                old_path=old_path,
                unparseable=index in unparseable,
            )
        )
    return out


def _compact(lines: list[bytes]) -> None:
    for index, line in enumerate(lines):
        if line.startswith(b"@@"):
            lines[index:] = [b"".join(lines[index:])]
            return


_LINES = st.sampled_from(
    [
        b"diff --git a/src/app.py b/src/app.py",
        b"diff --git a/docs/n.md b/docs/n.md",
        b'diff --git "a/q\\"x y" "b/q\\"x y"',
        b'diff --git "a/unterminated b/x',
        b"diff --git a/a b/c.txt b/a b/c.txt",
        b"+diff --git a/docs/n.md b/docs/n.md",
        b" diff --git a/docs/n.md b/docs/n.md",
        b"x\rdiff --git a/docs/n.md b/docs/n.md",
        b"\x0bdiff --git a/q b/q\x0c\x1c\x1d\x1e\xc2\x85",
        b"@@ -1,3 +1,3 @@",
        b"@@ -1 +1 @@ ctx",
        b"@@ -0,0 +1,2 @@",
        b"@@ -1," + b"9" * 4400 + b" +1 @@",
        b"@@ -1,2 +1," + b"7" * 4301 + b" @@",
        b"@@ not a hunk @@",
        b"@@x",
        b"@@ -1 +1",
        b"-@@ -9,9 +9,9 @@",
        b"--- a/docs/n.md",
        b"+++ b/docs/n.md",
        b"--- /dev/null",
        b"+++ /dev/null",
        b"new file mode 100644",
        b"deleted file mode 100644",
        b"rename from src/app.py",
        b"rename to docs/n.md",
        b"copy from lib/x.c",
        b"copy to docs/n.md",
        b"GIT binary patch",
        b"literal 4",
        b"Binary files a/x and b/x differ",
        b"\\ No newline at end of file",
        b"+x = 1",
        b"-x = 0",
        b" context",
        b"",
        b"index 1111111..2222222 100644",
        b"+x\r",
        b"garbage",
    ]
)


@st.composite
def _diffs(draw: st.DrawFn) -> bytes:
    """Lines drawn from the list above, mostly in sections that begin with a header."""
    lines = draw(st.lists(_LINES, max_size=40))
    if draw(st.booleans()):
        lines.insert(0, b"diff --git a/src/app.py b/src/app.py")
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    text = ending.join(lines)
    return text + ending if draw(st.booleans()) else text


@settings(max_examples=600, deadline=None)
@given(_diffs())
def test_split_equals_the_per_line_parser(data: bytes) -> None:
    assert split_diff(data) == _reference(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.lists(_LINES, max_size=12))
def test_split_equals_the_per_line_parser_on_any_bytes(
    noise: bytes, lines: Sequence[bytes]
) -> None:
    data = b"\n".join(lines) + b"\n" + noise
    assert split_diff(data) == _reference(data)
    assert split_diff(noise) == _reference(noise)
