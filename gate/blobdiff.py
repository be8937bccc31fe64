"""A file's diff section built locally from its two blobs, in git's unified format.

Above 300 files GitHub refuses the diff media type (406) and its file list omits the
``patch`` of large files. For such a file the action fetches the base and head blobs
(git blobs API, bounded by a size limit) and :func:`section_from_blobs` builds the
section the diff would have held: ``diff --git`` header, ``new file``/``deleted file``
lines, ``---``/``+++``, and hunks with three lines of context, each line ending as git
writes it (``\\ No newline at end of file`` after a last line without one). The section
then goes through the same selection as any other (strict UTF-8, filters, chunking).

A blob that looks binary (a NUL byte in its first 8,000 bytes, git's own test) gives a
``binary`` section, and a blob over the limit is not fetched (``no_patch``): both stay
unreviewed and are named in the coverage manifest. ``tests/unit/test_blobdiff.py`` checks
the sections against ``git apply`` (the result of applying one to the base blob is the
head blob, byte for byte).
"""

from __future__ import annotations

import difflib

from gate.diff import FileSection, git_label, git_quote

#: git's binary test reads this many bytes for a NUL
BINARY_PROBE = 8000
CONTEXT = 3
_NO_NEWLINE = b"\\ No newline at end of file\n"


def looks_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_PROBE]


def _hunk_lines(old: bytes, new: bytes) -> list[bytes]:
    # never bytes.splitlines (it also breaks on \r, \v, \f, ...): \n only, as git does
    a = _git_lines(old)
    b = _git_lines(new)
    out: list[bytes] = []
    for line in difflib.diff_bytes(difflib.unified_diff, a, b, n=CONTEXT, lineterm=b""):
        if line.startswith((b"--- ", b"+++ ")):
            continue
        if line.startswith(b"@@"):
            out.append(line.rstrip(b"\n") + b"\n")
            continue
        if line.endswith(b"\n"):
            out.append(line)
        else:
            out += [line + b"\n", _NO_NEWLINE]
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
