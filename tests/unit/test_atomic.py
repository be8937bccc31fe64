"""Verified atomic write: all or nothing, read back, no temp left behind."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from gate.errors import AtomicWriteError
from gate.safe import atomic


def test_writes_and_returns_the_digest(tmp_path: Path) -> None:
    target = tmp_path / "cert.json"
    digest = atomic.atomic_write(target, b"hello")
    assert target.read_bytes() == b"hello"
    assert digest == hashlib.sha256(b"hello").hexdigest()
    assert [p.name for p in tmp_path.iterdir()] == ["cert.json"]


def test_replaces_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    target.chmod(0o600)
    atomic.atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert (target.stat().st_mode & 0o777) == 0o600


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AtomicWriteError, match="cannot create a temporary file"):
        atomic.atomic_write(tmp_path / "no" / "such" / "f", b"x")


def test_failed_rename_removes_the_temp_and_keeps_the_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(AtomicWriteError, match="No space left"):
        atomic.atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_read_back_mismatch_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "file_sha256", lambda path: "0" * 64)
    with pytest.raises(AtomicWriteError, match="read-back digest"):
        atomic.atomic_write(tmp_path / "f", b"data")
