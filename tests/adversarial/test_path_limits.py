"""Class: a path the file system cannot hold is misreported (issue 8, section 9, last bullet).

Cause: nothing checked a path's length before the disk was touched, so the
kernel's ``ENAMETOOLONG`` surfaced wherever it first hit: from a ``stat`` of
the target, caught by the catch-all for the lock folder and answered
``apply_dir_unwritable`` ("cannot prepare .apply ... it must be writable",
which sends the agent to the wrong fix); as ``not_found`` for a delete; and,
for a name that fits but whose temporary file (``.NAME.XXXXXXXX.rg-tmp``, 17
bytes longer) does not, as ``write_error``: an *incomplete* apply, recorded in
the marker, blocking commits, for a write that could never have succeeded.

Fix: :func:`gate.apply.paths.confine` checks every name against NAME_MAX and
the absolute path against PATH_MAX (the file system's own values, in bytes of
the file-system encoding, as the kernel counts), for the path as spelt and
again once symlinks are resolved, a write's temporary file included, before
anything is written: ``path_too_long``, with a message naming the limit and
the fix. An ``ENAMETOOLONG`` the checks did not foresee is ``path_too_long``
too, never ``apply_dir_unwritable``.

Variants: write and delete; the long name first, in the middle, last; made of
1-, 2-, 3- and 4-byte UTF-8 characters (a character count stays under 255
where the byte count does not); just over and far over; every name length from
NAME_MAX - 16 to NAME_MAX for a write (new file and existing file); whole
paths over PATH_MAX built of names of 50, 200 and 255 bytes; a short name
through a symlink to a long one (file and folder); the CLI's exit code and
lines. Every generated variant fails on the code before the fix; the boundary
cases at the end pass on both and guard against refusing what fits.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.apply import Outcome, apply_tool_result
from gate.cli import main
from gate.safe.atomic import TEMP_NAME_EXTRA

OLD = b"old = 1\n"
NEW = b"new = 2\n"
CHARS = ("a", "\u00e9", "\u6f22", "\U0001f600")  # 1, 2, 3 and 4 bytes in UTF-8


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A work tree on tmpfs where there is one (a short, fixed-length absolute path)."""
    shm = Path("/dev/shm")
    parent = shm if shm.is_dir() and os.access(shm, os.W_OK) else tmp_path
    with tempfile.TemporaryDirectory(dir=parent, prefix="rg-limits-") as name:
        folder = Path(name).resolve() / "w"
        (folder / ".git").mkdir(parents=True)
        (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        yield folder


def name_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


def path_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_PATH_MAX")


def sized_name(size: int, char: str) -> str:
    """A name of exactly ``size`` bytes, mostly ``char``, padded with ASCII."""
    width = len(char.encode())
    return char * (size // width) + "b" * (size % width)


def write_doc(path: str, content: bytes = NEW) -> bytes:
    return json.dumps(
        {
            "tool": "write_file",
            "path": path,
            "content_length": len(content),
            "sha256": hashlib.sha256(content).hexdigest(),
            "encoding": "utf-8",
            "content": content.decode(),
        }
    ).encode()


def delete_doc(path: str) -> bytes:
    return json.dumps({"tool": "delete_path", "path": path}).encode()


def doc_for(tool: str, path: str) -> bytes:
    return write_doc(path) if tool == "write" else delete_doc(path)


def assert_too_long(root: Path, raw: bytes, limit: str) -> None:
    before = sorted(str(p) for p in root.rglob("*") if ".git" not in p.parts)
    result = apply_tool_result(raw, root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "path_too_long"), result.detail
    assert limit in result.detail
    assert "use a shorter" in result.detail
    assert result.hints() == ("apply.refused=true", "apply.reason=path_too_long")
    assert not os.path.lexists(root / ".apply" / "incomplete")
    after = sorted(str(p) for p in root.rglob("*") if ".git" not in p.parts)
    assert [p for p in after if "/.apply" not in p] == [p for p in before if "/.apply" not in p]


def rel_of_length(root: Path, total: int, part: int, last: str) -> str:
    """A relative path whose absolute form under ``root`` is ``total`` bytes.

    Folders of at most ``part`` bytes, then the file name ``last``.
    """
    remaining = total - len(os.fsencode(str(root))) - 1 - len(last) - 1
    parts, letter = [], 0
    while remaining > 0:
        size = min(part, remaining)
        if remaining - size == 1:
            size -= 1  # leave room for a slash and one more byte, never an empty name
        parts.append(chr(ord("c") + letter % 20) * size)
        letter += 1
        remaining -= size + (1 if remaining - size > 0 else 0)
    rel = "/".join((*parts, last))
    assert len(os.fsencode(str(root / rel))) == total
    return rel


# --- a name over NAME_MAX ------------------------------------------------------------------


@pytest.mark.parametrize("over", [1, 50])
@pytest.mark.parametrize("char", CHARS, ids=["1B", "2B", "3B", "4B"])
@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("tool", ["write", "delete"])
def test_a_name_over_name_max_is_path_too_long(
    root: Path, tool: str, position: str, char: str, over: int
) -> None:
    long = sized_name(name_max(root) + over, char)
    assert len(long) <= name_max(root) or char == "a"  # a count of characters would pass
    path = {"first": f"{long}/f.py", "middle": f"d/{long}/f.py", "last": f"d/{long}"}[position]
    (root / "d").mkdir()
    assert_too_long(root, doc_for(tool, path), "NAME_MAX")


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
@pytest.mark.parametrize("char", CHARS[:2], ids=["1B", "2B"])
@pytest.mark.parametrize("short", range(1, TEMP_NAME_EXTRA + 1))
def test_a_name_whose_temporary_file_cannot_exist_is_path_too_long(
    root: Path, short: int, char: str, existing: bool
) -> None:
    """Fits NAME_MAX by up to 17 bytes, but the temporary file beside it does not."""
    name = sized_name(name_max(root) - TEMP_NAME_EXTRA + short, char)
    if existing:
        (root / name).write_bytes(OLD)
    assert_too_long(root, write_doc(name), "NAME_MAX")
    if existing:
        assert (root / name).read_bytes() == OLD


@pytest.mark.parametrize("short", [1, 9, TEMP_NAME_EXTRA])
def test_a_short_name_through_a_symlink_to_a_long_one_is_path_too_long(
    root: Path, short: int
) -> None:
    real = "r" * (name_max(root) - TEMP_NAME_EXTRA + short)
    (root / real).write_bytes(OLD)
    (root / "s.py").symlink_to(real)
    assert_too_long(root, write_doc("s.py"), "NAME_MAX")
    assert (root / real).read_bytes() == OLD


# --- a path over PATH_MAX ----------------------------------------------------------------


@pytest.mark.parametrize("over", [0, 1, 64])
@pytest.mark.parametrize("part", [50, 200, 255])
@pytest.mark.parametrize("tool", ["write", "delete"])
def test_a_path_over_path_max_is_path_too_long(root: Path, tool: str, part: int, over: int) -> None:
    limit = path_max(root)  # counts the final NUL: PATH_MAX - 1 bytes fit
    extra = TEMP_NAME_EXTRA if tool == "write" else 0
    rel = rel_of_length(root, limit - extra + over, min(part, name_max(root)), "f.py")
    assert_too_long(root, doc_for(tool, rel), "PATH_MAX")


@pytest.mark.parametrize("over", [0, 5, 21])  # the folder itself still fits
def test_a_short_path_through_a_symlink_to_a_long_folder_is_path_too_long(
    root: Path, over: int
) -> None:
    limit = path_max(root)
    deep = rel_of_length(root, limit - TEMP_NAME_EXTRA - 1 - len("x.py") + over, 200, "leaf")
    (root / deep).mkdir(parents=True)
    (root / "s").symlink_to(deep, target_is_directory=True)
    assert_too_long(root, write_doc("s/x.py"), "PATH_MAX")
    assert not os.path.lexists(root / deep / "x.py")


@pytest.mark.parametrize("limit", ["NAME_MAX", "PATH_MAX"])
def test_the_cli_refuses_with_exit_3_and_names_the_limit(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str
) -> None:
    if limit == "NAME_MAX":
        path = "n" * (name_max(root) + 1)
    else:
        path = rel_of_length(root, path_max(root) + 10, 200, "f.py")
    (tmp_path / "r.json").write_bytes(write_doc(path))
    assert main(["apply", "--root", str(root), str(tmp_path / "r.json")]) == 3
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[:2] == ["apply.refused=true", "apply.reason=path_too_long"]
    assert lines[2].startswith("apply.detail=")
    assert limit in lines[2]
    assert err.rstrip("\n").endswith("outcome=refused reason=path_too_long")


# --- boundaries (pass before the fix too: what fits is never refused) ----------------------


def test_what_just_fits_is_applied_and_deleted(root: Path) -> None:
    longest_write = "w" * (name_max(root) - TEMP_NAME_EXTRA)
    result = apply_tool_result(write_doc(longest_write), root)
    assert result.outcome is Outcome.OK, result.detail
    longest = "x" * name_max(root)
    (root / longest).write_bytes(OLD)
    assert apply_tool_result(delete_doc(longest), root).reason == "deleted"
    rel = rel_of_length(root, path_max(root) - 1 - TEMP_NAME_EXTRA, 200, "f.py")
    result = apply_tool_result(write_doc(rel), root)
    assert result.outcome is Outcome.OK, result.detail
    assert (root / rel).read_bytes() == NEW
    assert apply_tool_result(delete_doc(rel), root).reason == "deleted"
