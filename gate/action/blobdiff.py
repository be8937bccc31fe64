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
every other line changes took seconds at 8,000 lines) runs only on spans whose two
sides' line counts multiply to at most :data:`MAX_DIFF_WORK`, and on at most
:data:`MAX_TOTAL_WORK` line pairs over the file. A larger span is anchored on the lines
unique on both sides (patience diff, :func:`_align`), so a change to the first and last
lines of a large file is two small hunks, as git shows it, never one hunk of the whole
file. Only a span with no anchor left is one hunk that removes every old line of it and
adds every new one: larger than git's, still exact (applying it gives the head blob).

A blob that looks binary (a NUL byte in its first 8,000 bytes, git's own test) gives a
``binary`` section (an asset when its name and first bytes say so: :mod:`gate.assets`),
and a blob over the limit is not fetched (``no_patch``): both stay
unreviewed and are named in the coverage manifest. ``tests/unit/action/test_blobdiff.py`` checks
the sections against ``git apply`` (the result of applying one to the base blob is the
head blob, byte for byte).
"""

from __future__ import annotations

import bisect

from gate.assets import Side, change_kind
from gate.diff import FileSection, git_label, git_quote

#: git's binary test reads this many bytes for a NUL
BINARY_PROBE = 8000
CONTEXT = 3
#: the most line pairs (old lines x new lines of a span) difflib is given at once;
#: beyond it the span is anchored on unique lines (module docstring)
MAX_DIFF_WORK = 1_000_000
#: the most line pairs difflib is given over one file, in all
MAX_TOTAL_WORK = 4 * MAX_DIFF_WORK
#: how many levels of gaps between anchors are anchored again
MAX_ANCHOR_DEPTH = 4
_NO_NEWLINE = b"\\ No newline at end of file\n"


def looks_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_PROBE]


Opcode = tuple[str, int, int, int, int]


def _hunk_lines(old: bytes, new: bytes) -> list[bytes]:
    # never bytes.splitlines (it also breaks on \r, \v, \f, ...): \n only, as git does
    a = _git_lines(old)
    b = _git_lines(new)
    prefix = _common_prefix(a, b)
    suffix = _common_prefix(a[prefix:][::-1], b[prefix:][::-1])
    end_a, end_b = len(a) - suffix, len(b) - suffix
    # the middle is aligned alone; the hunks are cut from the whole file's opcodes, so
    # each has CONTEXT real lines around it (git apply reads a hunk without trailing
    # context as one that ends the file)
    middle = _align(a, b, (prefix, end_a, prefix, end_b), [MAX_TOTAL_WORK], 0)
    codes = [("equal", 0, prefix, 0, prefix), *middle, ("equal", end_a, len(a), end_b, len(b))]
    out: list[bytes] = []
    heading = _Heading(a)
    for group in _groups(_merged(codes), CONTEXT):
        out += _hunk(a, b, group, heading(group[0][1]))
    return out


def _align(
    a: list[bytes], b: list[bytes], span: tuple[int, int, int, int], budget: list[int], depth: int
) -> list[Opcode]:
    """Opcodes aligning ``a[lo_a:hi_a]`` with ``b[lo_b:hi_b]``, with bounded work.

    A span whose line pairs fit :data:`MAX_DIFF_WORK` (and what is left of ``budget``,
    :data:`MAX_TOTAL_WORK` over the file) goes to difflib. A larger one is anchored on
    the lines that occur exactly once on each side, in the longest order both sides
    share (patience diff), and each gap between anchors is aligned the same way, at most
    :data:`MAX_ANCHOR_DEPTH` levels deep; so a few small changes in a large file stay
    small hunks, as git shows them. Only a span with no such anchor left (or past the
    depth or the budget) is one replacement.
    """
    lo_a, hi_a, lo_b, hi_b = span
    if lo_a == hi_a and lo_b == hi_b:
        return []
    if lo_a == hi_a or lo_b == hi_b:
        return [("insert" if lo_a == hi_a else "delete", lo_a, hi_a, lo_b, hi_b)]
    work = (hi_a - lo_a) * (hi_b - lo_b)
    if work <= MAX_DIFF_WORK and work <= budget[0]:
        budget[0] -= work
        import difflib  # only a rebuild from blobs diffs: not on every run's start (issue 22)

        matcher = difflib.SequenceMatcher(None, a[lo_a:hi_a], b[lo_b:hi_b])
        return [
            (tag, i1 + lo_a, i2 + lo_a, j1 + lo_b, j2 + lo_b)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    anchors = _anchors(a, b, span) if depth < MAX_ANCHOR_DEPTH else []
    if not anchors:
        return [("replace", lo_a, hi_a, lo_b, hi_b)]
    out: list[Opcode] = []
    at_a, at_b = lo_a, lo_b
    for i, j in anchors:
        out += _align(a, b, (at_a, i, at_b, j), budget, depth + 1)
        out.append(("equal", i, i + 1, j, j + 1))
        at_a, at_b = i + 1, j + 1
    out += _align(a, b, (at_a, hi_a, at_b, hi_b), budget, depth + 1)
    return out


def _anchors(
    a: list[bytes], b: list[bytes], span: tuple[int, int, int, int]
) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` of lines unique on both sides of the span, equal, in the longest
    run increasing on both sides (patience sorting: O(k log k) for k unique lines)."""
    lo_a, hi_a, lo_b, hi_b = span
    seen_a: dict[bytes, int] = {}
    for i in range(lo_a, hi_a):
        seen_a[a[i]] = -1 if a[i] in seen_a else i
    seen_b: dict[bytes, int] = {}
    for j in range(lo_b, hi_b):
        line = b[j]
        if seen_a.get(line, -1) >= 0:
            seen_b[line] = -1 if line in seen_b else j
    pairs = sorted((seen_a[line], j) for line, j in seen_b.items() if j >= 0)
    # longest increasing subsequence of j (pairs are in i order)
    tails: list[int] = []  # tails[k]: index in pairs of the last pair of a run of k + 1
    ends: list[int] = []  # ends[k]: that pair's j (sorted, for bisect)
    back: list[int] = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(ends, j)
        if k > 0:
            back[index] = tails[k - 1]
        if k == len(tails):
            tails.append(index)
            ends.append(j)
        else:
            tails[k], ends[k] = index, j
    run: list[tuple[int, int]] = []
    at = tails[-1] if tails else -1
    while at >= 0:
        run.append(pairs[at])
        at = back[at]
    return run[::-1]


#: bytes C's ``isspace`` counts (git trims them from the end of a hunk heading)
_SPACE = b" \t\n\v\f\r"
#: git's longest hunk heading (``xdl_emit_diff``'s buffer)
HEADING_BYTES = 80


class _Heading:
    """git's default hunk heading (``def_ff``): the nearest line before the hunk in the
    old file that starts with an ASCII letter, ``_`` or ``$``, cut to 80 bytes and
    trimmed; searched back only to the previous hunk's start (whose answer is kept), so
    the work over a file is linear."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self.searched = 0  # lines below this index were searched already
        self.found = b""

    def __call__(self, start: int) -> bytes:
        for index in range(start - 1, self.searched - 1, -1):
            line = self.lines[index]
            first = line[:1]
            if first.isalpha() or first in (b"_", b"$"):
                self.found = line[:HEADING_BYTES].rstrip(_SPACE)
                break
        self.searched = max(self.searched, start)
        return self.found


def _common_prefix(a: list[bytes], b: list[bytes]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _merged(codes: list[Opcode]) -> list[Opcode]:
    """Empty opcodes dropped, neighbouring ``equal`` runs joined."""
    out: list[Opcode] = []
    for code in codes:
        tag, i1, i2, j1, j2 = code
        if i1 == i2 and j1 == j2:
            continue
        if out and tag == "equal" and out[-1][0] == "equal":
            out[-1] = ("equal", out[-1][1], i2, out[-1][3], j2)
        else:
            out.append(code)
    return out


def _groups(codes: list[Opcode], n: int) -> list[list[Opcode]]:
    """The opcodes in hunks: at most ``n`` equal lines before, between (a longer run
    splits the hunk) and after the changes, as ``diff -U n`` cuts them."""
    if not any(tag != "equal" for tag, *_ in codes):
        return []
    codes = list(codes)
    if codes[0][0] == "equal":
        _, i1, i2, j1, j2 = codes[0]
        codes[0] = ("equal", max(i1, i2 - n), i2, max(j1, j2 - n), j2)
    if codes[-1][0] == "equal":
        _, i1, i2, j1, j2 = codes[-1]
        codes[-1] = ("equal", i1, min(i2, i1 + n), j1, min(j2, j1 + n))
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, i1 + n, j1, j1 + n))
            groups.append(group)
            group = []
            i1, j1 = i2 - n, j2 - n
        group.append((tag, i1, i2, j1, j2))
    if any(tag != "equal" for tag, *_ in group):
        groups.append(group)
    return groups


def _hunk(a: list[bytes], b: list[bytes], group: list[Opcode], heading: bytes) -> list[bytes]:
    old_start, old_end = group[0][1], group[-1][2]
    new_start, new_end = group[0][3], group[-1][4]
    old_range = _range(old_start + 1, old_end - old_start)
    new_range = _range(new_start + 1, new_end - new_start)
    line = f"@@ -{old_range} +{new_range} @@".encode()
    out = [line + (b" " + heading if heading else b"") + b"\n"]
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            for line in a[i1:i2]:
                out += _body(b" " + line)
            continue
        for line in a[i1:i2]:
            out += _body(b"-" + line)
        for line in b[j1:j2]:
            out += _body(b"+" + line)
    return out


def _body(line: bytes) -> list[bytes]:
    """A hunk line as git writes it: a last line without its newline gets the marker."""
    return [line] if line.endswith(b"\n") else [line + b"\n", _NO_NEWLINE]


def _range(start: int, length: int) -> str:
    """git's ``start,length`` (the line before, for an empty range; no ``,1``)."""
    if length == 0:
        return f"{start - 1},0"
    return str(start) if length == 1 else f"{start},{length}"


def _git_lines(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


#: git's modes for a file: regular, executable, symbolic link, submodule (a commit)
REGULAR, EXECUTABLE, SYMLINK, SUBMODULE = "100644", "100755", "120000", "160000"
FILE_MODES = frozenset({REGULAR, EXECUTABLE, SYMLINK, SUBMODULE})


def file_type(mode: str) -> str:
    """``file`` (regular or executable), ``symlink`` or ``submodule``: what git compares
    for a type change (shown as a deletion and an addition, never as one change)."""
    return {SYMLINK: "symlink", SUBMODULE: "submodule"}.get(mode, "file")


def submodule_text(commit: str) -> bytes:
    """What git diffs for a submodule: the line ``Subproject commit <id>``."""
    return b"Subproject commit %s\n" % commit.encode("ascii")


def section_from_blobs(
    path: str,
    old: bytes | None,
    new: bytes | None,
    *,
    old_path: str = "",
    old_mode: str = REGULAR,
    new_mode: str = REGULAR,
    copied: bool = False,
) -> FileSection:
    """The diff section of ``path`` from its base blob ``old`` and head blob ``new``
    (None: the file does not exist on that side), as ``git diff`` writes it (its
    ``index`` and ``similarity index`` lines aside). ``old_path``: its base name if
    renamed, or the source of a copy (``copied``); ``old_mode``/``new_mode``: the
    files' git modes (a symlink's blob is its target, a submodule's text is
    :func:`submodule_text`).

    The header is git's: ``new file mode``/``deleted file mode`` with the real mode,
    ``old mode``/``new mode`` when it changed, ``copy from/to`` or ``rename from/to``.
    A mode-only change is its two mode lines (shown, never an empty section); a file
    with no change at all is ``no_patch`` (nothing to show, never "reviewed" empty).

    Every name is written as git writes it (:func:`gate.diff.git_quote`,
    :func:`gate.diff.git_label`), as :func:`gate.diff.sections_from_files` does: the files
    API gives names raw, and a name holding a line break (git allows any byte but NUL)
    would otherwise write header or hunk lines of its own into what the reviewer reads,
    and the section, split again by the chunker, would be other files than it is.
    """
    for mode in (old_mode, new_mode):
        if mode not in FILE_MODES:
            raise ValueError(f"not a file mode: {mode!r}")
    before = old_path or path
    src = "/dev/null" if old is None else git_label("a/", before)
    dst = "/dev/null" if new is None else git_label("b/", path)
    head = f"diff --git {git_quote('a/' + before)} {git_quote('b/' + path)}\n"
    if old is None:
        head += f"new file mode {new_mode}\n"
    elif new is None:
        head += f"deleted file mode {old_mode}\n"
    else:
        if old_mode != new_mode:
            head += f"old mode {old_mode}\nnew mode {new_mode}\n"
        if before != path:
            verb = "copy" if copied else "rename"
            head += f"{verb} from {git_quote(before)}\n{verb} to {git_quote(path)}\n"
    other = before if before != path else ""
    if old == new and (old_mode == new_mode or old is None) and before == path:
        return FileSection(path=path, data=b"", no_patch=True, old_path=other)
    if old == new:  # a mode change, or a rename or copy as it was: the header says all
        return FileSection(path=path, data=head.encode(), old_path=other)
    if (old is not None and looks_binary(old)) or (new is not None and looks_binary(new)):
        names = f"{src.rstrip(chr(9))} and {dst.rstrip(chr(9))}"
        data = (head + f"Binary files {names} differ\n").encode()
        # an image, font, audio or video file by its name, mode and bytes (the head's, the
        # base's for a deletion, both for a rename or copy): gate.assets' one rule; the
        # bytes are the blobs' own, verified
        asset = change_kind(
            None if new is None else Side(path, new_mode, new),
            None if old is None else Side(before, old_mode, old),
        )
        return FileSection(path=path, data=data, binary=True, old_path=other, asset=asset)
    body = b"".join(_hunk_lines(old or b"", new or b""))
    if not body:  # an empty file added or deleted: git writes no ---/+++ lines
        return FileSection(path=path, data=head.encode(), old_path=other)
    text = (head + f"--- {src}\n+++ {dst}\n").encode()
    return FileSection(path=path, data=text + body, old_path=other)
