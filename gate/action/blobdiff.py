"""A file's diff section built locally from its two blobs, in git's unified format.

Above 300 files GitHub refuses the diff media type (406) and its file list omits the
``patch`` of large files. For such a file the action fetches the base and head blobs
(git blobs API, bounded by a size limit) and :func:`section_from_blobs` builds the
section the diff would have held: ``diff --git`` header, ``new file``/``deleted file``
lines, ``---``/``+++``, and hunks with three lines of context, each line ending as git
writes it (``\\ No newline at end of file`` after a last line without one). The section
then goes through the same selection as any other (strict UTF-8, filters, chunking).

The work is bounded: the lines both blobs share at the start and at the end are set
aside first, and :mod:`difflib` (quadratic, worse on adversarial input: a file whose
every other line changes took seconds at 8,000 lines) runs only on what is left, and only
when the two sides' line counts multiply to at most :data:`MAX_DIFF_WORK`. Beyond that
the changed middle is written as one hunk that removes every old line of it and adds
every new one: larger than git's, still exact (applying it gives the head blob), so
nothing is lost to the reviewer, and a section too large for the budget is left out
by the selection like any other.

A blob that looks binary (a NUL byte in its first 8,000 bytes, git's own test) gives a
``binary`` section, and a blob over the limit is not fetched (``no_patch``): both stay
unreviewed and are named in the coverage manifest. ``tests/unit/action/test_blobdiff.py`` checks
the sections against ``git apply`` (the result of applying one to the base blob is the
head blob, byte for byte).
"""

from __future__ import annotations

import difflib
import re

from gate.diff import FileSection, git_label, git_quote

#: git's binary test reads this many bytes for a NUL
BINARY_PROBE = 8000
CONTEXT = 3
#: the most line pairs (old lines x new lines of the changed middle) difflib is given;
#: beyond it the middle is one hunk (module docstring)
MAX_DIFF_WORK = 1_000_000
_NO_NEWLINE = b"\\ No newline at end of file\n"


def looks_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_PROBE]


def _hunk_lines(old: bytes, new: bytes) -> list[bytes]:
    # never bytes.splitlines (it also breaks on \r, \v, \f, ...): \n only, as git does
    a = _git_lines(old)
    b = _git_lines(new)
    prefix = _common_prefix(a, b)
    suffix = _common_prefix(a[prefix:][::-1], b[prefix:][::-1])
    middle_a, middle_b = len(a) - prefix - suffix, len(b) - prefix - suffix
    if middle_a * middle_b > MAX_DIFF_WORK:
        return _one_hunk(a, b, prefix, suffix)
    # difflib sees the middle and CONTEXT shared lines on each side of it, no more
    lo = max(0, prefix - CONTEXT)
    cut = max(0, suffix - CONTEXT)
    out: list[bytes] = []
    window = difflib.diff_bytes(
        difflib.unified_diff, a[lo : len(a) - cut], b[lo : len(b) - cut], n=CONTEXT, lineterm=b""
    )
    for index, line in enumerate(window):
        if index < 2:
            # difflib's own ``---``/``+++`` file header: by position, never by its text (a
            # removed line ``-- x`` or an added ``++ x`` reads the same, and was dropped)
            continue
        if line.startswith(b"@@"):
            out.append(_shifted(line.rstrip(b"\n"), lo) + b"\n")
            continue
        out += _body(line)
    return out


def _common_prefix(a: list[bytes], b: list[bytes]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _body(line: bytes) -> list[bytes]:
    """A hunk line as git writes it: a last line without its newline gets the marker."""
    return [line] if line.endswith(b"\n") else [line + b"\n", _NO_NEWLINE]


_HEADER = re.compile(rb"@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def _shifted(header: bytes, by: int) -> bytes:
    """A hunk header of the window, in the whole file's line numbers."""
    found = _HEADER.fullmatch(header)
    if found is None or by == 0:
        return header
    old, old_len, new, new_len = found.groups()
    return b"@@ -%d%s +%d%s @@" % (int(old) + by, old_len, int(new) + by, new_len)


def _range(start: int, length: int) -> str:
    """git's ``start,length`` (the line before, for an empty range; no ``,1``)."""
    if length == 0:
        return f"{start - 1},0"
    return str(start) if length == 1 else f"{start},{length}"


def _one_hunk(a: list[bytes], b: list[bytes], prefix: int, suffix: int) -> list[bytes]:
    """The changed middle as one hunk: every old line of it removed, every new one added,
    with up to CONTEXT shared lines on each side."""
    lo = max(0, prefix - CONTEXT)
    before = a[lo:prefix]
    after = a[len(a) - suffix : len(a) - suffix + CONTEXT]
    removed = a[prefix : len(a) - suffix]
    added = b[prefix : len(b) - suffix]
    old_len = len(before) + len(removed) + len(after)
    new_len = len(before) + len(added) + len(after)
    header = f"@@ -{_range(lo + 1, old_len)} +{_range(lo + 1, new_len)} @@\n".encode()
    out = [header]
    for mark, lines in ((b" ", before), (b"-", removed), (b"+", added), (b" ", after)):
        for line in lines:
            out += _body(mark + line)
    return out


def _git_lines(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def section_from_blobs(
    path: str, old: bytes | None, new: bytes | None, *, old_path: str = ""
) -> FileSection:
    """The diff section of ``path`` from its base blob ``old`` and head blob ``new``
    (None: the file does not exist on that side). ``old_path``: its base name if renamed.

    Every name is written as git writes it (:func:`gate.diff.git_quote`,
    :func:`gate.diff.git_label`), as :func:`gate.diff.sections_from_files` does: the files
    API gives names raw, and a name holding a line break (git allows any byte but NUL)
    would otherwise write header or hunk lines of its own into what the reviewer reads,
    and the section, split again by the chunker, would be other files than it is.
    """
    before = old_path or path
    src = "/dev/null" if old is None else git_label("a/", before)
    dst = "/dev/null" if new is None else git_label("b/", path)
    head = f"diff --git {git_quote('a/' + before)} {git_quote('b/' + path)}\n"
    if old is None:
        head += "new file mode 100644\n"
    elif new is None:
        head += "deleted file mode 100644\n"
    elif before != path:
        head += f"rename from {git_quote(before)}\nrename to {git_quote(path)}\n"
    other = before if before != path else ""
    if (old is not None and looks_binary(old)) or (new is not None and looks_binary(new)):
        names = f"{src.rstrip(chr(9))} and {dst.rstrip(chr(9))}"
        data = (head + f"Binary files {names} differ\n").encode()
        return FileSection(path=path, data=data, binary=True, old_path=other)
    if old == new:
        return FileSection(path=path, data=head.encode(), old_path=other)
    text = (head + f"--- {src}\n+++ {dst}\n").encode()
    body = b"".join(_hunk_lines(old or b"", new or b""))
    return FileSection(path=path, data=text + body, old_path=other)
