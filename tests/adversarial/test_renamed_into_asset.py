"""Class: a code file renamed (or copied) into a binary asset.

git's rename detection pairs a deleted file with an added one when their bytes are at
least half alike; a PNG can carry a script's bytes in a ``tEXt`` chunk and still be a
valid PNG. The diff then holds ONE binary section, ``rename from auth_check.py`` /
``rename to logo.png``, and the old read path (:mod:`gate.action.assets`) judged only the
head's bytes: a PNG, so the section was an asset, not blocking, and the removal of
``auth_check.py`` was never reviewed. The fix lives in the read path: a section with
another old name is an asset only when the old side is one too (its name listed and the
bytes of the old id its signature); otherwise it blocks as any binary.

Variants: the old side's name (code, config, a script; an asset) crossed with its bytes
(the script, a real PNG), for renames and copies made by real ``git`` (the oracle for the
diff's shape), with every listed asset extension as the new name.
"""

from __future__ import annotations

import struct
import subprocess
import zlib
from dataclasses import dataclass, field

import pytest

from gate.action.assets import mark_assets
from gate.action.github.records import TreeListing
from gate.diff import split_diff
from tests.adversarial.test_binary_assets import blob_id

SCRIPT = b"".join(
    b"def check_%d(user):\n    if not user.is_admin:\n        raise PermissionError()\n" % i
    for i in range(40)
)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_holding(text: bytes) -> bytes:
    """A valid 1x1 PNG whose tEXt chunk holds ``text`` (so git pairs it with the script)."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"tEXt", b"c\x00" + text)
        + _chunk(b"IDAT", zlib.compress(b"\x00\x00"))
        + _chunk(b"IEND", b"")
    )


@dataclass
class Trees:
    """The base and head trees :func:`mark_assets` reads (path -> bytes)."""

    base: dict[str, bytes]
    head: dict[str, bytes]
    reads: list[str] = field(default_factory=list)

    def tree_paths(self, ref: str) -> TreeListing:
        files = self.base if ref == "base" else self.head
        ids = {path: blob_id(data) for path, data in files.items()}
        return TreeListing(tuple(files), False, ids, dict.fromkeys(files, "100644"))

    def blob(self, sha: str, *, limit: int) -> bytes:
        self.reads.append(sha)
        for data in (*self.base.values(), *self.head.values()):
            if blob_id(data) == sha:
                return data
        raise AssertionError(f"no blob {sha}")


def git_diff(tmp_path, old: str, old_bytes: bytes, new: str, new_bytes: bytes, copy: bool) -> bytes:
    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, check=True, timeout=30
        ).stdout

    git("init", "-q")
    git("config", "user.email", "a@b.c")
    git("config", "user.name", "a")
    (tmp_path / old).write_bytes(old_bytes)
    git("add", "-A")
    git("commit", "-qm", "base")
    if not copy:
        (tmp_path / old).unlink()
    (tmp_path / new).write_bytes(new_bytes)
    git("add", "-A")
    git("commit", "-qm", "head")
    flags = ["-C", "--find-copies-harder"] if copy else ["-M"]
    return git("diff", *flags, "--full-index", "HEAD~1", "HEAD")


OLD_NAMES = ["auth_check.py", "deploy.sh", "settings.yml", "old-logo.png"]
NEW_EXTS = [".png", ".gif", ".jpg", ".woff2", ".mp3"]


@pytest.mark.parametrize("copy", [False, True])
@pytest.mark.parametrize("old_is_png", [False, True])
@pytest.mark.parametrize("old", OLD_NAMES)
@pytest.mark.parametrize("ext", NEW_EXTS)
def test_a_file_renamed_into_an_asset_is_an_asset_only_when_it_was_one(
    tmp_path, ext: str, old: str, old_is_png: bool, copy: bool
) -> None:
    new = "logo" + ext
    old_bytes = png_holding(SCRIPT) if old_is_png else SCRIPT
    new_bytes = png_holding(SCRIPT + b"# more\n")
    if ext != ".png":  # the new file is that type's: its signature, then the same bytes
        from tests.adversarial.test_binary_assets import SIGNATURES

        new_bytes = SIGNATURES[ext] + new_bytes
    diff = git_diff(tmp_path, old, old_bytes, new, new_bytes, copy)
    sections = split_diff(diff)
    paired = [s for s in sections if s.path == new and s.old_path == old]
    if not paired:
        pytest.skip("git did not pair the two files (not alike enough)")
    trees = Trees(
        base={old: old_bytes}, head={new: new_bytes, **({old: old_bytes} if copy else {})}
    )
    (section,) = mark_assets(trees, paired, base="base", head="head")  # type: ignore[arg-type]
    was_asset = old.endswith(".png") and old_is_png
    assert (section.asset != "") is was_asset, (old, old_is_png, new, copy)
