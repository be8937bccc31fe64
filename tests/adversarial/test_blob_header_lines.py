"""Class: a body line read as a header. A file rebuilt from its blobs
(gate/action/blobdiff.py) went through difflib, whose output starts with its own
``---``/``+++`` file header; those were skipped by their text, so any hunk line reading
the same was dropped too: a removed line ``-- x`` (an SQL or Lua comment) is written
``--- x``, an added line ``++ x`` is written ``+++ x``. An added line such as
``++ __import__("os").system(...)`` (valid Python) never reached the reviewer, and the
section no longer applied.

Now the header is skipped by position. Every variant (the line's text, where it sits,
which side, with or without a final newline, with difflib or the one-hunk path) must
give a section that ``git apply`` turns into the head blob byte for byte, and every
added line of the head must be in the section.
"""

from __future__ import annotations

import itertools
from unittest import mock

import pytest

from gate.action import blobdiff
from gate.action.blobdiff import section_from_blobs
from tests.unit.action.test_blobdiff import _apply

#: file lines whose hunk line starts like difflib's header (after the one-byte mark)
LINES = [b"-- x", b"++ x", b"-- a/f.txt", b"++ b/f.txt", b"--", b"++", b"-- ", b"++ "]
BODY = [b"line %d\n" % i for i in range(8)]


def _variants() -> list[tuple[bytes, bytes]]:
    out = []
    for text, at, final in itertools.product(LINES, (0, 4, 8), (True, False)):
        line = text + b"\n" if final or at < 8 else text
        added = [*BODY[:at], line, *BODY[at:]]
        base = b"".join(BODY)
        head = b"".join(added)
        if not final and at == 8:
            base = base.rstrip(b"\n")
        out += [(base, head), (head, base)]  # added, and removed
        replaced = [*BODY[:at], line, *BODY[at + 1 :]]
        out.append((b"".join(BODY), b"".join(replaced)))  # changed in place
    return out


@pytest.mark.parametrize("budget", [blobdiff.MAX_DIFF_WORK, 0])
@pytest.mark.parametrize(("old", "new"), _variants())
def test_a_line_like_a_file_header_is_in_the_section(old: bytes, new: bytes, budget: int) -> None:
    with mock.patch.object(blobdiff, "MAX_DIFF_WORK", budget):
        section = section_from_blobs("f.txt", old, new).data
    body = section.split(b"\n@@", 1)[1].splitlines()
    for line in set(new.splitlines()) - set(old.splitlines()):
        assert b"+" + line in body, (line, section)
    for line in set(old.splitlines()) - set(new.splitlines()):
        assert b"-" + line in body, (line, section)
    assert _apply(old, section, "f.txt") == new


@pytest.mark.parametrize("kind", ["added", "removed"])
@pytest.mark.parametrize("text", LINES)
def test_a_new_or_deleted_file_of_such_lines_is_whole(kind: str, text: bytes) -> None:
    data = b"".join(BODY[:2]) + text + b"\n" + BODY[2]
    old, new = (None, data) if kind == "added" else (data, None)
    section = section_from_blobs("f.txt", old, new).data
    mark = b"+" if kind == "added" else b"-"
    assert mark + text + b"\n" in section
    assert _apply(old, section, "f.txt") == new
