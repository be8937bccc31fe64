"""The verified write: decode, temporary file, fsync, read back, rename, read back.

This module owns turning a parsed ``write_file`` into bytes (:func:`decode`)
and putting bytes in place only through :func:`os.replace` of a temporary
file that read back with the promised SHA-256 (:func:`write_verified`).
"""

from __future__ import annotations

import binascii
import contextlib
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gate.apply.parse import WriteFile
from gate.safe.atomic import TEMP_SUFFIX, file_sha256, fsync_dir, temp_path_for

WRITE_CHUNK = 1 << 20

#: ``writer(fd, chunk) -> bytes written``; :func:`os.write` unless a test injects a fault.
Writer = Callable[[int, memoryview], int]


@dataclass(frozen=True)
class WriteReport:
    bytes_written: int
    reason: str  # "" when the new bytes are in place and read back
    detail: str


def decode(req: WriteFile) -> tuple[bytes, str]:
    """Decoded bytes and a problem code ("" | bad_utf8 | bad_base64 | cut_base64)."""
    if req.encoding == "utf-8":
        try:
            return req.content.encode("utf-8"), ""
        except UnicodeEncodeError:
            return b"", "bad_utf8"
    text = req.content.encode("ascii", errors="replace")
    try:
        return binascii.a2b_base64(text, strict_mode=True), ""
    except binascii.Error:
        pass
    cut = len(text) - len(text) % 4
    try:
        return binascii.a2b_base64(text[:cut], strict_mode=True), "cut_base64"
    except binascii.Error:
        return b"", "bad_base64"


def _remove_stale_temps(target: Path) -> None:
    """Remove temporaries of earlier applies of ``target`` killed mid-write (lock held)."""
    for stale in target.parent.glob(f".{target.name}.*{TEMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            stale.unlink()


def _make_parents(folder: Path) -> None:
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        created.mkdir()
        fsync_dir(created.parent)


def write_verified(target: Path, data: bytes, expected: str, writer: Writer) -> WriteReport:
    written = 0
    tmp: Path | None = None
    try:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = 0o644
        _make_parents(target.parent)
        _remove_stale_temps(target)
        fd, tmp = temp_path_for(target)
        try:
            view = memoryview(data)
            while written < len(data):
                count = writer(fd, view[written : written + WRITE_CHUNK])
                if count <= 0:
                    raise OSError(errno.EIO, "write() made no progress")
                written += count
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if file_sha256(tmp) != expected:
            tmp.unlink()
            return WriteReport(
                written,
                "readback_mismatch",
                "the temporary file read back with a different SHA-256; the file system did not "
                "keep what was written, so the target was not touched",
            )
        os.replace(tmp, target)
        tmp = None
    except OSError as err:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return WriteReport(
            written,
            "write_error",
            f"writing failed after {written} of {len(data)} bytes: {err.strerror or err}; "
            "the target was not touched",
        )
    fsync_dir(target.parent)
    try:
        actual = file_sha256(target)
    except OSError as err:
        return WriteReport(written, "readback_mismatch", f"cannot read back: {err.strerror}")
    if actual != expected:
        return WriteReport(
            written,
            "readback_mismatch",
            f"{target.name} read back as {actual[:12]}... after the rename, expected "
            f"{expected[:12]}...; restore it from version control",
        )
    return WriteReport(written, "", "")


def disk_sha(path: Path) -> str | None:
    try:
        return file_sha256(path) if path.is_file() else None
    except OSError:
        return None
