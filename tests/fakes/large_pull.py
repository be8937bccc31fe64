"""A real-sized pull request for the fake GitHub: thousands of files, tens of MiB.

What GitHub does with such a pull request, the fake does too: the diff media type answers
406 (too large), the compare API lists only its first 300 files, and the pull request's
file list (up to 3000 files, 100 a page) carries each file's ``patch`` and its blob id at
the head, except for the files whose patch GitHub leaves out (``without_patch`` of them
here), which the gate rebuilds from their base and head blobs. Every file exists in the
base and head trees with exactly those contents, so the blob ids bind.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from tests.fakes.github import FakeGitHub

MIB = 1 << 20
OLD = b"pass\n"


def blob_id(data: bytes) -> str:
    """Git's object id of a blob holding ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class LargePull:
    files: int
    #: the bytes of the unified diff the gate rebuilds (what is reviewed)
    diff_bytes: int
    #: the files listed without a patch (rebuilt from blobs)
    without_patch: tuple[str, ...]


def _file(index: int, lines: int, edited: bool = False) -> tuple[str, bytes, str]:
    """A module's path, its head contents and the patch from :data:`OLD` to them
    (``edited``: as a later push changed it, one line different)."""
    path = f"services/s{index // 100:02d}/module_{index:04d}.py"
    added = [f"value_{j:05d} = compute({index}, {j}) + offset  # line\n" for j in range(lines)]
    if edited:
        added[0] = f"value_00000 = compute({index}, 0) + offset + 1  # edited\n"
    new = "".join(added).encode()
    patch = f"@@ -1 +1,{lines} @@\n-pass\n" + "".join("+" + line for line in added)
    return path, new, patch


def add_large_pull(
    fake: FakeGitHub,
    number: int,
    *,
    head_sha: str,
    base_sha: str,
    files: int = 2000,
    total: int = 20 * MIB,
    without_patch: int = 5,
    edited: int | None = None,
) -> LargePull:
    """Add a pull request of ``files`` modified files, about ``total`` bytes of diff
    (``edited``: the index of the one file a later push changed)."""
    lines = max(1, max(200, total // files) // 50)  # each added line is about 50 bytes
    entries: list[dict[str, Any]] = []
    size = 0
    skipped: list[str] = []
    for index in range(files):
        path, new, patch = _file(index, lines, edited=index == edited)
        fake.set_file(base_sha, path, OLD)
        fake.set_file(head_sha, path, new)
        entry: dict[str, Any] = {
            "sha": blob_id(new), "filename": path, "status": "modified",
            "additions": lines, "deletions": 1, "changes": lines + 1,
            "blob_url": "", "raw_url": "", "contents_url": "",
        }  # fmt: skip
        # spread the patchless files over the list (GitHub leaves out the large ones)
        if without_patch and index % (files // without_patch) == files // without_patch // 2:
            skipped.append(path)
        else:
            entry["patch"] = patch
        header = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        size += len(header) + len(patch.encode())
        entries.append(entry)
    fake.add_pull(number, head_sha=head_sha, base_sha=base_sha, files=entries, refuse_diff=True)
    return LargePull(files=files, diff_bytes=size, without_patch=tuple(skipped))


#: a base config that lets a 20 MiB pull request be reviewed (the defaults stop at 40
#: chunks of 256 KiB: a 10 MiB pull request)
LARGE_CONFIG = "max_chunks: 200\nmax_diff_bytes: 25000000\nconcurrency: 4\n"
