"""Class: a file name written raw into a section rebuilt from blobs.

Cause: above 300 files GitHub refuses the diff (406) and lists some files without a
``patch``; the action rebuilds those from their base and head blobs
(``gate.action.blobdiff.section_from_blobs``). ``sections_from_files`` had learnt to quote names
as git does (``tests/adversarial/test_file_names.py``), but the blob rebuild wrote
``diff --git a/{old} b/{path}``, ``rename from/to``, ``---``/``+++`` and ``Binary files``
with the raw name. A file named ``x.py\\ndiff --git a/docs/y.md b/docs/y.md`` wrote a
forged header into the bytes ``diff_sha`` names; the chunker (which splits the selected
bytes again) and the findings then read the file's content as ``docs/y.md``'s, and a
name with a lone surrogate crashed the run.

Fix: one way to write a name into a header, ``gate.diff.git_quote`` / ``git_label``,
used by both rebuilds (files API and blobs).

Variants: every name of ``FORGING`` and Hypothesis names from an alphabet of every
character git treats specially, for each kind of change (modified, added, removed,
renamed, binary); each section must read back as exactly one file of that name, and
every chunk of a plan cut small enough to split it must name that file only.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.action.blobdiff import section_from_blobs
from gate.diff import FileSection, SkipWhy, exact_name, name_bytes, name_of, select, split_diff
from gate.review.chunks import plan, section_header
from tests.adversarial.test_file_names import FORGING, names

KINDS = ("modified", "added", "removed", "renamed", "binary")
MORE_FORGING = [
    *FORGING,
    "x\nrename to docs/z",
    "x\nBinary files a/q and b/q differ",
    "x\tb/docs/y",
    "surrogate\ud800.py",
]
OLD = b"".join(b"line %d\n" % i for i in range(40))
NEW = OLD.replace(b"line 5\n", b"import os\n").replace(b"line 30\n", b"os.system('x')\n")


def _section(name: str, kind: str, old_name: str) -> tuple[FileSection, str]:
    if kind == "added":
        return section_from_blobs(name, None, NEW), ""
    if kind == "removed":
        return section_from_blobs(name, OLD, None), ""
    if kind == "renamed":
        other = old_name if old_name != name else old_name + "_old"
        return section_from_blobs(name, OLD, NEW, old_path=other), other
    if kind == "binary":
        return section_from_blobs(name, OLD, NEW + b"\0"), ""
    return section_from_blobs(name, OLD, NEW), ""


def _check(name: str, kind: str, old_name: str) -> None:
    section, other = _section(name, kind, old_name)
    data = section.data
    again = split_diff(data)
    # a lone surrogate (JSON "\\ud800") is written as its bytes and read back as exactly
    # those bytes (issue 19): a name that is not strict UTF-8, so never reviewed
    read = name_of(name_bytes(name))
    assert [s.path for s in again] == [read], (name, kind, data)
    assert again[0].data == data
    assert again[0].binary is (kind == "binary")
    if other:
        assert again[0].old_path == name_of(name_bytes(other))
    if kind == "binary":
        return
    selected = select(again)
    if not (exact_name(read) and exact_name(again[0].old_path)):
        assert [s.why for s in selected.coverage.skipped] == [SkipWhy.UNDECODABLE]
        return
    assert selected.coverage.reviewed == (read,)
    # cut small: several parts, each must be this one file and nothing else
    header, hunks = section_header(data)
    limit = len(header) + max(len(hunk) for hunk in hunks)
    cut = plan(selected.data, selected.coverage, max_chunk_bytes=limit)
    assert len(cut.chunks) == len(hunks)
    for chunk in cut.chunks:
        assert [split.path for split in split_diff(chunk.data)] == [read] * len(chunk.pieces)
    assert not cut.too_large


def test_forging_names_grid() -> None:
    for name in MORE_FORGING:
        for kind in KINDS:
            _check(name, kind, "docs/old\nname.py")


@settings(max_examples=250, deadline=None)
@given(
    st.sampled_from(MORE_FORGING) | names,
    st.sampled_from(KINDS),
    st.sampled_from(MORE_FORGING) | names,
)
def test_a_blob_section_reads_back_as_one_file(name: str, kind: str, old_name: str) -> None:
    _check(name, kind, old_name)
