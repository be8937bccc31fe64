"""Verified atomic file writes.

:func:`atomic_write` writes to a temporary file in the target's folder,
fsyncs it, renames it over the target with :func:`os.replace`, fsyncs the
folder, then reads the target back and checks its SHA-256. The target path
changes only through the rename, so a crash at any point leaves either the
old file or the new one, never a prefix. On any failure the temporary file is
removed and :class:`~gate.errors.AtomicWriteError` is raised.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path

from gate.errors import AtomicWriteError

TEMP_SUFFIX = ".rg-tmp"
#: Bytes a temporary file's name adds to its target's: ``.NAME.`` + tempfile's 8 random
#: characters + :data:`TEMP_SUFFIX` (see :func:`temp_path_for`).
TEMP_NAME_EXTRA = len("..") + 8 + len(TEMP_SUFFIX)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fsync_dir(folder: Path) -> None:
    """fsync a directory so a rename inside it is durable (no-op where unsupported)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(folder, flags)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on dirs
        pass
    finally:
        os.close(fd)


def temp_path_for(target: Path) -> tuple[int, Path]:
    """Create and open a unique temporary file beside ``target``."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX)
    return fd, Path(name)


def atomic_write(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> str:
    """Write ``data`` to ``path`` atomically and verified; return its SHA-256.

    ``mode`` defaults to the existing file's permission bits, or 0o644.
    """
    target = Path(path)
    expected = sha256_hex(data)
    if mode is None:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = 0o644
        except OSError as err:
            raise AtomicWriteError(f"cannot stat {target}: {err.strerror}") from err
    try:
        fd, tmp = temp_path_for(target)
    except OSError as err:
        raise AtomicWriteError(
            f"cannot create a temporary file in {target.parent}: {err.strerror}; "
            "check that the folder exists and is writable"
        ) from err
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise AtomicWriteError(f"atomic write of {target} failed: {err.strerror or err}") from err
    fsync_dir(target.parent)
    try:
        actual = file_sha256(target)
    except OSError as err:
        raise AtomicWriteError(f"cannot read back {target}: {err.strerror}") from err
    if actual != expected:
        raise AtomicWriteError(
            f"read-back digest of {target} is {actual[:12]}..., expected {expected[:12]}...; "
            "the file system did not keep what was written"
        )
    return actual
