"""Class: a path read from a diff that is not the path git wrote.

Cause: ``gate.diff._unquote`` (the reader of git's C-quoted names) had no ``\\v``,
although git (and the gate's own ``git_quote``) writes VT that way, so the name
``tests/<VT>endor/conftest.py`` was read as ``tests/vendor/conftest.py`` and filtered out
by ``exclude: ["**/vendor/**"]`` (coverage complete, pass) while pytest runs that conftest.
An unknown escape was read as the escaped letter, a name that was not UTF-8 was read with
replacement characters (so it too could match a filter), and a first quoted name on a
``diff --git`` line ended at an escaped quote.

Fix: one table of escapes for both directions (:data:`gate.diff._C_ESCAPES`),
:func:`gate.diff.unquote_bytes` the exact inverse of :func:`gate.diff.quote_bytes` and of
git's ``quote_c_style``; a quoted name git would not write is unparseable (never a guess),
a name that is not strict UTF-8 is ``undecodable`` before any filter is applied.

Variants: Hypothesis over all byte strings (``unquote(quote(b)) == b``); real ``git diff``
output for every byte 0x01-0x7f (but ``/``) and some non-ASCII ones, in a directory name
next to an excluded one, as added, renamed, copied, mode-changed, binary and deleted
files; the files-API fallback for every such name; malformed quoted names.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.diff import (
    BadName,
    SkipWhy,
    git_quote,
    name_of,
    quote_bytes,
    sections_from_files,
    select,
    split_diff,
    unquote_bytes,
)
from gate.review.chunks import plan
from tests.gitrepo import git, git_bytes

#: every byte a file name may hold that is not printable ASCII, plus the two git escapes
BYTES = [b for b in range(1, 0x80) if b != ord("/")] + [0x80, 0xC3, 0xFF]


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40))
def test_unquote_is_the_exact_inverse_of_quote(raw: bytes) -> None:
    quoted = quote_bytes(raw)
    assert unquote_bytes(quoted) == raw
    assert name_of(unquote_bytes(git_quote(name_of(raw)).encode("ascii"))) == name_of(raw)


@pytest.mark.parametrize(
    "quoted",
    [b'"a\\qb"', b'"a\\', b'"ab', b'"a"b"', b'"a\\4"', b'"a\\400"', b'"a\\08"', b'"\\', b'"'],
)
def test_a_name_git_never_writes_is_refused(quoted: bytes) -> None:
    with pytest.raises(BadName):
        unquote_bytes(quoted)
    section = b"diff --git " + quoted + b" " + quoted + b"\nindex 1..2 100644\n"
    sections = split_diff(section)
    assert [s.unparseable for s in sections] == [True]
    skipped = select(sections, exclude=["**"]).coverage.skipped
    assert [s.why for s in skipped] == [SkipWhy.UNPARSEABLE]


def _name(byte: int) -> bytes:
    return b"tests/" + bytes([byte]) + b"endor/c" + bytes([byte]) + b"nftest.py"


@pytest.fixture(scope="module")
def repo_diff(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, str]]:
    """A repository whose second commit adds, renames, copies, re-modes and deletes
    files named with every byte of :data:`BYTES`; ``git diff`` of it, and each name's
    kind of change by its real name."""
    root = tmp_path_factory.mktemp("quoted")
    repo = root / "r"
    git(root, "init", "-q", str(repo))
    base = os.fsencode(repo)
    kinds: dict[str, str] = {}
    body = b"".join(b"line %d of a file long enough for rename detection\n" % i for i in range(30))
    for byte in BYTES:
        name = _name(byte)
        kinds[name_of(name)] = "added"
        for stem in (b"old", b"mode", b"gone", b"src"):
            path = base + b"/" + stem + b"/" + bytes([byte]) + b".py"
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(body + stem + b"%d\n" % byte)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for byte in BYTES:
        name = _name(byte)
        os.makedirs(os.path.dirname(base + b"/" + name), exist_ok=True)
        with open(base + b"/" + name, "wb") as handle:
            handle.write(b"import os\n")
        with open(base + b"/bin" + bytes([byte]) + b".dat", "wb") as handle:
            handle.write(b"\x00\x01" + bytes([byte]))
        kinds[name_of(b"bin" + bytes([byte]) + b".dat")] = "binary"
        moved = b"vendor/m" + bytes([byte]) + b".py"
        os.makedirs(base + b"/vendor", exist_ok=True)
        os.rename(base + b"/old/" + bytes([byte]) + b".py", base + b"/" + moved)
        kinds[name_of(moved)] = "renamed"
        copy = b"cp/" + bytes([byte]) + b"c.py"
        os.makedirs(base + b"/cp", exist_ok=True)
        with open(base + b"/src/" + bytes([byte]) + b".py", "rb") as src:
            data = src.read()
        with open(base + b"/" + copy, "wb") as handle:
            handle.write(data)
        kinds[name_of(copy)] = "copied"
        os.chmod(base + b"/mode/" + bytes([byte]) + b".py", 0o755)
        kinds[name_of(b"mode/" + bytes([byte]) + b".py")] = "mode"
        os.remove(base + b"/gone/" + bytes([byte]) + b".py")
        kinds[name_of(b"gone/" + bytes([byte]) + b".py")] = "deleted"
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    out = git_bytes(repo, "diff", "-M", "-C", "--find-copies-harder", "HEAD~1", "HEAD")
    return out, kinds


def test_every_name_git_writes_is_read_exactly(repo_diff: tuple[bytes, dict[str, str]]) -> None:
    diff, kinds = repo_diff
    sections = split_diff(diff)
    paths = [s.path for s in sections]
    assert not [s.path for s in sections if s.unparseable]
    assert sorted(paths) == sorted(kinds), set(paths) ^ set(kinds)
    for section in sections:
        header = section.data.split(b"\n", 1)[0]
        if kinds[section.path] in ("added", "binary", "mode", "deleted"):
            quoted = git_quote("b/" + section.path).encode("ascii")
            assert header.endswith(b" " + quoted), (header, section.path)
    renamed = {s.path: s.old_path for s in sections if kinds[s.path] in ("renamed", "copied")}
    assert all(old.startswith(("old/", "src/")) for old in renamed.values()), renamed


def test_an_excluded_look_alike_is_never_filtered(repo_diff: tuple[bytes, dict[str, str]]) -> None:
    diff, kinds = repo_diff
    selected = select(split_diff(diff), exclude=["**/vendor/**", "vendor/**"], max_bytes=10**9)
    filtered = {s.path for s in selected.coverage.skipped if s.why is SkipWhy.FILTERED}
    # only the real tests/vendor/ folder is filtered (the byte "v"), and nothing moved
    # into vendor/ from old/ or src/
    assert filtered == {name_of(_name(ord("v")))}, filtered
    looks = [p for p, kind in kinds.items() if kind == "added"]
    listed = set(selected.coverage.reviewed) | {s.path for s in selected.coverage.skipped}
    quoted = [git_quote(p) for p in looks]
    assert all(p in listed or q in listed for p, q in zip(looks, quoted, strict=True))
    vt = name_of(_name(0x0B))
    assert vt in selected.coverage.reviewed
    cut = plan(selected.data, selected.coverage, max_chunk_bytes=60)
    assert {item.path for item in cut.too_large} <= set(selected.coverage.reviewed)


@pytest.mark.parametrize("byte", BYTES)
def test_the_files_api_fallback_round_trips_every_name(byte: int) -> None:
    name = name_of(_name(byte))
    old = name_of(b"src/" + bytes([byte]) + b".py")
    entries = [
        {"filename": name, "status": "added", "patch": "@@ -0,0 +1 @@\n+x"},
        {
            "filename": name,
            "previous_filename": old,
            "status": "renamed",
            "patch": "@@ -1 +1 @@\n-a\n+b",
        },
        {"filename": name, "status": "modified"},
    ]
    rebuilt = split_diff(b"".join(s.data for s in sections_from_files(entries[:2])))
    assert [(s.path, s.old_path, s.unparseable) for s in rebuilt] == [
        (name, "", False),
        (name, old, False),
    ]
    selected = select(sections_from_files(entries), exclude=["**/vendor/**"])
    assert byte == ord("v") or not [
        s for s in selected.coverage.skipped if s.why is SkipWhy.FILTERED
    ]
