"""Unit tests for gate/apply/__init__.py: the apply decision table, the marker, paths, the CLI."""

from __future__ import annotations

import base64
import errno
import fcntl
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gate.apply as apply_mod
import gate.apply.marker
import gate.apply.write
import gate.decide.envelope
import gate.safe.atomic
from gate.apply import (
    MarkerEntry,
    Outcome,
    apply_tool_result,
    parse_tool_result,
    read_marker,
)
from gate.cli import main
from gate.errors import ApplyError, UsageError
from gate.safe.atomic import TEMP_SUFFIX

OLD = b"old = 1\n"
NEW = b"def f():\n    return 'new'\n"


def write_result(
    content: bytes,
    *,
    path: str = "pkg/mod.py",
    promised: bytes | None = None,
    encoding: str = "utf-8",
    **extra: Any,
) -> dict[str, Any]:
    whole = content if promised is None else promised
    text = content.decode("utf-8") if encoding == "utf-8" else base64.b64encode(content).decode()
    return {
        "tool": "write_file",
        "path": path,
        "content_length": len(whole),
        "sha256": hashlib.sha256(whole).hexdigest(),
        "encoding": encoding,
        "content": text,
        **extra,
    }


def run(doc: dict[str, Any] | bytes, root: Path, **kwargs: Any) -> apply_mod.ApplyResult:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return apply_tool_result(raw, root, **kwargs)


def temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(TEMP_SUFFIX)]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_bytes(OLD)
    return tmp_path


# --- the Prove section: every prefix of a real module -------------------------------


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs where there is one: the ~10k applies below each fsync the marker.

    The code path is the same; only the file system's fsync cost differs.
    """
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="rg-apply-") as name:
        yield Path(name)


def test_every_prefix_of_a_real_module_is_never_applied(fast_tmp: Path) -> None:
    tmp_path = fast_tmp
    source = Path(gate.decide.envelope.__file__).read_bytes()
    assert source.count(b"\n") > 100
    target = tmp_path / "envelope.py"
    target.write_bytes(OLD)
    for cut in range(len(source)):
        prefix = source[:cut]
        try:
            doc = write_result(prefix, path="envelope.py", promised=source)
        except UnicodeDecodeError:  # a cut inside a character: send it as base64 bytes
            doc = write_result(prefix, path="envelope.py", promised=source, encoding="base64")
        result = run(doc, tmp_path)
        assert result.outcome is Outcome.INCOMPLETE, cut
        assert result.reason == "length_short", cut
        assert result.bytes_written == 0
        assert target.read_bytes() == OLD, cut
        assert not temps(tmp_path), cut
        (entry,) = read_marker(tmp_path)
        assert entry.path == "envelope.py"
        assert entry.reason == "length_short"
    whole = run(write_result(source, path="envelope.py"), tmp_path)
    assert whole.outcome is Outcome.OK
    assert target.read_bytes() == source
    assert not (tmp_path / ".apply" / "incomplete").exists()


def test_every_prefix_of_the_tool_result_itself_is_never_applied(root: Path) -> None:
    raw = json.dumps(write_result(NEW, stream_end_reason="trailer")).encode()
    for cut in range(len(raw)):
        result = run(raw[:cut], root)
        assert result.outcome is not Outcome.OK, cut
        assert (root / "pkg" / "mod.py").read_bytes() == OLD, cut
    assert run(raw, root).outcome is Outcome.OK


def test_a_prefix_of_an_absent_file_leaves_it_absent(tmp_path: Path) -> None:
    result = run(write_result(NEW[:7], path="new/file.py", promised=NEW), tmp_path)
    assert result.outcome is Outcome.INCOMPLETE
    assert not (tmp_path / "new").exists()
    assert result.sha256_disk is None
    assert [e.path for e in read_marker(tmp_path)] == ["new/file.py"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(min_size=1, max_size=2000), cut=st.integers(min_value=0, max_value=4000))
def test_any_cut_of_the_base64_text_is_never_ok(tmp_path: Path, data: bytes, cut: int) -> None:
    text = base64.b64encode(data).decode()
    cut %= len(text)
    doc = write_result(data, path="blob.bin", encoding="base64")
    doc["content"] = text[:cut]
    result = run(doc, tmp_path)
    assert result.outcome in (Outcome.INCOMPLETE, Outcome.CORRUPT)
    assert not (tmp_path / "blob.bin").exists()
    assert not temps(tmp_path)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.binary(min_size=1, max_size=600), where=st.integers(min_value=0), bit=st.integers(0, 7)
)
def test_any_flipped_bit_is_corrupt_and_not_applied(
    root: Path, data: bytes, where: int, bit: int
) -> None:
    flipped = bytearray(data)
    flipped[where % len(data)] ^= 1 << bit
    doc = write_result(bytes(flipped), promised=data, encoding="base64")
    result = run(doc, root)
    assert result.outcome is Outcome.CORRUPT
    assert result.reason == "digest_mismatch"
    assert (root / "pkg" / "mod.py").read_bytes() == OLD
    assert read_marker(root)[0].reason == "digest_mismatch"


# --- the decision table --------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-8", "base64"])
def test_a_full_payload_applies_byte_exactly(root: Path, encoding: str) -> None:
    os.chmod(root / "pkg" / "mod.py", 0o600)
    result = run(write_result(NEW, encoding=encoding, stream_end_reason="trailer"), root)
    assert result.outcome is Outcome.OK
    assert result.reason == "applied"
    assert result.exit_code == 0
    assert (root / "pkg" / "mod.py").read_bytes() == NEW
    assert (root / "pkg" / "mod.py").stat().st_mode & 0o777 == 0o600
    assert result.bytes_written == len(NEW)
    assert result.sha256_disk == hashlib.sha256(NEW).hexdigest()
    assert result.hints() == ("apply.ok=true",)
    assert not temps(root)


def test_non_ascii_utf8_is_counted_in_decoded_bytes(tmp_path: Path) -> None:
    content = "caf\u00e9 \u2603\n".encode()
    result = run(write_result(content, path="u.txt"), tmp_path)
    assert result.outcome is Outcome.OK
    assert (tmp_path / "u.txt").read_bytes() == content
    doc = write_result(content, path="v.txt")
    doc["content_length"] = len(doc["content"])  # characters, not bytes: a lie
    assert run(doc, tmp_path).reason == "length_long"
    assert not (tmp_path / "v.txt").exists()


def test_an_empty_file_applies(tmp_path: Path) -> None:
    assert run(write_result(b"", path="empty"), tmp_path).outcome is Outcome.OK
    assert (tmp_path / "empty").read_bytes() == b""


def test_parents_are_created_only_for_a_whole_write(tmp_path: Path) -> None:
    assert run(write_result(NEW, path="a/b/c.py"), tmp_path).outcome is Outcome.OK
    assert (tmp_path / "a" / "b" / "c.py").read_bytes() == NEW


@pytest.mark.parametrize("end", ["socket_close", "timeout", "cancel", "size_limit"])
def test_a_stream_not_ended_by_its_trailer_is_never_ok(root: Path, end: str) -> None:
    result = run(write_result(NEW, stream_end_reason=end), root)  # length and digest match
    assert result.outcome is Outcome.INCOMPLETE
    assert result.reason == "stream_not_trailer"
    assert result.digest_ok
    assert (root / "pkg" / "mod.py").read_bytes() == OLD


def test_more_bytes_than_promised_is_corrupt(root: Path) -> None:
    doc = write_result(NEW + b"x", promised=NEW)
    result = run(doc, root)
    assert (result.outcome, result.reason) == (Outcome.CORRUPT, "length_long")
    assert result.exit_code == 1


def test_invalid_base64_is_corrupt(root: Path) -> None:
    doc = write_result(NEW, encoding="base64")
    doc["content"] = "!!!!" + doc["content"]
    assert run(doc, root).reason == "bad_base64"


def test_a_lone_surrogate_is_corrupt(root: Path) -> None:
    raw = json.dumps(write_result(NEW)).replace("new", "\\ud800ew").encode()
    assert run(raw, root).reason == "bad_utf8"


def test_incomplete_hints_and_log_line(root: Path) -> None:
    result = run(write_result(NEW[:4], promised=NEW, apply_id="run-7"), root)
    assert result.hints() == (
        "apply.incomplete=true",
        "forbidden_tools=delete_path,git_rm",
        "required_next=retry_apply_or_abort",
    )
    assert result.log_line() == (
        f"apply path=pkg/mod.py promised={len(NEW)} written=0 end=none incomplete=true "
        "digest_ok=false received=4 outcome=incomplete reason=length_short"
    )
    record = result.to_json()
    assert record["apply.incomplete"] is True
    assert record["apply.ok"] is False
    assert record["sha256_disk"] == hashlib.sha256(OLD).hexdigest()
    assert record["marker"] == str(root / ".apply" / "incomplete")
    assert read_marker(root)[0].apply_id == "run-7"


def test_the_log_line_stays_one_line_for_any_path(tmp_path: Path) -> None:
    result = run(write_result(NEW[:2], path="we ird\n\x1bname=x", promised=NEW), tmp_path)
    line = result.log_line()
    assert "\n" not in line
    assert "\x1b" not in line
    assert 'path="we ird\\n\\u001bname=x"' in line
    detail = run({"tool": "delete_path", "path": "gone\nx"}, tmp_path).detail_line()
    assert "\n" not in detail
    assert detail.startswith("apply.detail=")


def test_corrupt_hint_names_corrupt(root: Path) -> None:
    doc = write_result(NEW, promised=NEW.upper())
    assert run(doc, root).hints()[0] == "apply.corrupt=true"


# --- refusals: no defaults, strict shape ---------------------------------------------


@pytest.mark.parametrize("missing", ["content_length", "sha256", "encoding", "content", "path"])
def test_a_missing_field_is_refused(root: Path, missing: str) -> None:
    doc = write_result(NEW)
    del doc[missing]
    result = run(doc, root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "missing_field")
    assert result.exit_code == 3
    assert missing in result.detail
    assert (root / "pkg" / "mod.py").read_bytes() == OLD
    assert not (root / ".apply" / "incomplete").exists()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("content_length", "27"),
        ("content_length", 27.0),
        ("content_length", True),
        ("content_length", None),
        ("sha256", None),
        ("sha256", 12),
        ("content", ["x"]),
        ("path", 3),
        ("stream_end_reason", None),
        ("apply_id", 5),
    ],
)
def test_a_field_of_the_wrong_type_is_refused(root: Path, key: str, value: object) -> None:
    doc = write_result(NEW)
    doc[key] = value
    result = run(doc, root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "wrong_type")
    assert (root / "pkg" / "mod.py").read_bytes() == OLD


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("content_length", -1),
        ("sha256", "A" * 64),
        ("sha256", "0" * 63),
        ("encoding", "latin-1"),
        ("stream_end_reason", "done"),
        ("apply_id", ""),
    ],
)
def test_a_bad_value_is_refused(root: Path, key: str, value: object) -> None:
    doc = write_result(NEW)
    doc[key] = value
    assert run(doc, root).reason == "bad_value"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"tool": "write_file", "path": "a"', "not_json"),
        (b"[1, 2]", "not_object"),
        (b"\xff\xfe", "not_json"),
        (b'{"tool": "write_file", "tool": "delete_path", "path": "a"}', "duplicate_key"),
        (b'{"tool": "delete_path", "path": "a", "apply_id": NaN}', "not_json"),
        (b'{"tool": "rm_rf", "path": "a"}', "unknown_tool"),
        (b'{"tool": "delete_path", "path": "a", "force": true}', "unknown_field"),
    ],
)
def test_malformed_tool_results_are_refused(root: Path, raw: bytes, reason: str) -> None:
    result = run(raw, root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, reason)
    assert result.hints() == ("apply.refused=true", f"apply.reason={reason}")


def test_a_misspelt_end_reason_is_refused_not_ignored(root: Path) -> None:
    doc = write_result(NEW)
    doc["stream_end_reson"] = "socket_close"
    assert run(doc, root).reason == "unknown_field"


def test_parse_raises_apply_error_with_reason() -> None:
    with pytest.raises(ApplyError) as caught:
        parse_tool_result(b'{"tool": "write_file"}')
    assert caught.value.reason == "missing_field"


def test_apply_id_defaults_to_a_digest_of_the_result() -> None:
    raw = json.dumps({"tool": "delete_path", "path": "x"}).encode()
    parsed = parse_tool_result(raw)
    assert parsed.apply_id == "auto-" + hashlib.sha256(raw).hexdigest()[:12]


# --- paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/etc/passwd", "absolute_path"),
        ("../outside.py", "parent_traversal"),
        ("pkg/../../outside.py", "parent_traversal"),
        ("", "bad_path"),
        (".", "bad_path"),
        (".git/hooks/pre-commit", "reserved_path"),
        (".apply/incomplete", "reserved_path"),
        (".GIT/config", "reserved_path"),
    ],
)
@pytest.mark.parametrize("tool", ["write_file", "delete_path"])
def test_paths_outside_the_root_are_refused(root: Path, path: str, reason: str, tool: str) -> None:
    doc = write_result(NEW, path=path) if tool == "write_file" else {"tool": tool, "path": path}
    result = run(doc, root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, reason)


def test_symlinks_that_escape_the_root_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret").write_bytes(OLD)
    (root / "link_dir").symlink_to(outside)
    (root / "link_file").symlink_to(outside / "secret")
    (root / "to_git").symlink_to(root / ".git", target_is_directory=True)
    for path, reason in [
        ("link_dir/secret", "symlink_escape"),
        ("link_file", "symlink_escape"),
        ("to_git/config", "reserved_path"),
    ]:
        result = run(write_result(NEW, path=path), root)
        assert (result.outcome, result.reason) == (Outcome.REFUSED, reason), path
    delete = run({"tool": "delete_path", "path": "link_dir/secret"}, root)
    assert delete.reason == "symlink_escape"
    assert (outside / "secret").read_bytes() == OLD


def test_a_symlink_inside_the_root_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_bytes(OLD)
    (tmp_path / "alias.py").symlink_to("real.py")
    assert run(write_result(NEW, path="alias.py"), tmp_path).outcome is Outcome.OK
    assert (tmp_path / "alias.py").is_symlink()
    assert (tmp_path / "real.py").read_bytes() == NEW


def test_a_missing_root_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        run(write_result(NEW), tmp_path / "nope")


def test_writing_over_a_folder_is_refused(root: Path) -> None:
    assert run(write_result(NEW, path="pkg"), root).reason == "is_directory"


def test_writing_below_a_file_is_refused_without_a_marker(root: Path) -> None:
    result = run(write_result(NEW, path="pkg/mod.py/inner/x.py"), root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "not_a_directory")
    assert not (root / ".apply" / "incomplete").exists()


# --- reserved folders at any depth ---------------------------------------------------

RESERVED_SPELLINGS = [
    ("sub/.git/hooks/pre-commit", ".git"),
    ("sub/.GIT/hooks/pre-commit", ".GIT"),
    ("a/b/.Git/config", ".Git"),
    ("sub/.git./hooks/pre-commit", ".git."),
    ("sub/.git /hooks/pre-commit", ".git "),
    ("sub/.git. . /config", ".git. . "),
    ("sub/.git::$INDEX_ALLOCATION/config", ".git::$INDEX_ALLOCATION"),
    ("sub/.g\u200cit/config", ".g\u200cit"),
    ("sub/GIT~1/config", "GIT~1"),
    ("sub/.git", ".git"),
    ("sub/.apply/incomplete", ".apply"),
    ("sub/.APPLY/incomplete", ".APPLY"),
    ("sub/.apply./lock", ".apply."),
    ("sub/.Apply /incomplete", ".Apply "),
    ("sub/APPLY~1/incomplete", "APPLY~1"),
    ("sub/.apply", ".apply"),
    ("pkg/.git.", ".git."),
]


@pytest.mark.parametrize(("path", "component"), RESERVED_SPELLINGS)
def test_a_reserved_folder_at_any_depth_is_refused_for_writes(
    root: Path, path: str, component: str
) -> None:
    result = run(write_result(NEW, path=path), root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "reserved_path")
    assert repr(component) in result.detail
    assert not (root / "sub").exists()
    assert not (root / ".apply" / "incomplete").exists()


@pytest.mark.parametrize(("path", "component"), RESERVED_SPELLINGS)
def test_a_reserved_folder_at_any_depth_is_refused_for_deletes(
    root: Path, path: str, component: str
) -> None:
    target = root / path
    if "~" not in path and "\u200c" not in path and ":" not in path:
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_bytes(OLD)
    result = run({"tool": "delete_path", "path": path}, root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "reserved_path")
    assert repr(component) in result.detail
    if target.parent.exists():
        assert target.exists()


def test_a_symlink_into_a_nested_git_folder_is_refused(root: Path) -> None:
    (root / "sub" / ".git" / "hooks").mkdir(parents=True)
    (root / "sub" / ".apply").mkdir()
    (root / "sub" / ".apply" / "incomplete").write_bytes(OLD)
    (root / "x").symlink_to("sub/.git", target_is_directory=True)
    (root / "m").symlink_to("sub/.apply", target_is_directory=True)
    (root / "hook").symlink_to("sub/.git/hooks/pre-commit")
    for path in ["x/hooks/pre-commit", "hook", "m/incomplete"]:
        result = run(write_result(NEW, path=path), root)
        assert (result.outcome, result.reason) == (Outcome.REFUSED, "reserved_path"), path
        assert "symlink" in result.detail, path
    assert not (root / "sub" / ".git" / "hooks" / "pre-commit").exists()
    delete = run({"tool": "delete_path", "path": "m/incomplete"}, root)
    assert (delete.outcome, delete.reason) == (Outcome.REFUSED, "reserved_path")
    assert "'.apply'" in delete.detail
    assert (root / "sub" / ".apply" / "incomplete").read_bytes() == OLD


def test_names_that_only_look_reserved_are_allowed(root: Path) -> None:
    for path in ["sub/.github/workflows/ci.yml", "sub/.gitignore", "sub/x.git", "sub/.applyx"]:
        result = run(write_result(NEW, path=path), root)
        assert result.outcome is Outcome.OK, (path, result.detail)
        assert (root / path).read_bytes() == NEW


# --- faults during the write ---------------------------------------------------------


def test_an_error_mid_write_is_incomplete_and_leaves_no_temp(root: Path) -> None:
    calls: list[int] = []

    def failing(fd: int, chunk: memoryview) -> int:
        if calls:
            raise OSError(errno.ENOSPC, "No space left on device")
        calls.append(1)
        return os.write(fd, chunk[:10])

    result = run(write_result(NEW), root, writer=failing)
    assert (result.outcome, result.reason) == (Outcome.INCOMPLETE, "write_error")
    assert result.bytes_written == 10
    assert "No space left on device" in result.detail
    assert (root / "pkg" / "mod.py").read_bytes() == OLD
    assert not temps(root)
    assert read_marker(root)[0].reason == "write_error"


def test_a_writer_that_makes_no_progress_is_incomplete(root: Path) -> None:
    result = run(write_result(NEW), root, writer=lambda fd, chunk: 0)
    assert result.reason == "write_error"
    assert not temps(root)


def test_a_file_system_that_changes_bytes_is_caught_before_the_rename(root: Path) -> None:
    def flipping(fd: int, chunk: memoryview) -> int:
        data = bytearray(chunk)
        data[0] ^= 0xFF
        return os.write(fd, bytes(data))

    result = run(write_result(NEW), root, writer=flipping)
    assert (result.outcome, result.reason) == (Outcome.CORRUPT, "readback_mismatch")
    assert (root / "pkg" / "mod.py").read_bytes() == OLD
    assert not temps(root)


def test_a_bad_read_back_after_the_rename_is_corrupt(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = gate.safe.atomic.file_sha256
    seen: list[Path] = []

    def lying(path: Path) -> str:
        seen.append(path)
        return "0" * 64 if path.name == "mod.py" and len(seen) == 2 else real(path)

    monkeypatch.setattr(gate.apply.write, "file_sha256", lying)
    result = run(write_result(NEW), root)
    assert (result.outcome, result.reason) == (Outcome.CORRUPT, "readback_mismatch")
    assert read_marker(root)[0].path == "pkg/mod.py"


def test_a_held_lock_is_a_bounded_wait_then_busy(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate.apply.marker, "LOCK_WAIT_S", 0.2)
    (root / ".apply").mkdir()
    fd = os.open(root / ".apply" / "lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        result = run(write_result(NEW), root)
    finally:
        os.close(fd)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "busy")
    assert (root / "pkg" / "mod.py").read_bytes() == OLD
    assert run(write_result(NEW), root).outcome is Outcome.OK


def test_stale_temps_of_a_killed_apply_are_removed(root: Path) -> None:
    stale = root / "pkg" / f".mod.py.abc123{TEMP_SUFFIX}"
    stale.write_bytes(NEW[:3])
    other = root / "pkg" / f".other.py.abc123{TEMP_SUFFIX}"
    other.write_bytes(b"x")
    assert run(write_result(NEW), root).outcome is Outcome.OK
    assert not stale.exists()
    assert other.exists()  # another target's temp is not ours to judge


# --- the marker and delete refusal ----------------------------------------------------


def test_ok_clears_only_its_own_entry_and_the_file_goes_with_the_last(root: Path) -> None:
    run(write_result(NEW[:3], promised=NEW, apply_id="one"), root)
    run(write_result(NEW[:3], path="b.py", promised=NEW, apply_id="two"), root)
    run(write_result(NEW[:5], promised=NEW, apply_id="three"), root)  # replaces "one"
    assert [(e.apply_id, e.path) for e in read_marker(root)] == [
        ("two", "b.py"),
        ("three", "pkg/mod.py"),
    ]
    assert run(write_result(NEW), root).outcome is Outcome.OK
    assert [e.path for e in read_marker(root)] == ["b.py"]
    assert run(write_result(NEW, path="b.py"), root).outcome is Outcome.OK
    assert not (root / ".apply" / "incomplete").exists()


def test_the_marker_is_json_with_the_four_fields(root: Path) -> None:
    run(write_result(NEW[:3], promised=NEW, apply_id="x1"), root)
    doc = json.loads((root / ".apply" / "incomplete").read_text())
    assert doc["version"] == 1
    (entry,) = doc["entries"]
    assert set(entry) == {"apply_id", "path", "reason", "time"}
    assert MarkerEntry(**entry).path == "pkg/mod.py"


@pytest.mark.parametrize("before", [None, b"# written by review-gate apply\n*\n"])
def test_git_ignores_the_lock_but_never_the_marker(root: Path, before: bytes | None) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60, env=clean)
    if before is not None:  # what older versions wrote: it hid the marker from git
        (root / ".apply").mkdir()
        (root / ".apply" / ".gitignore").write_bytes(before)
    run(write_result(NEW[:3], promised=NEW), root)

    def ignored(path: str) -> bool:
        done = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-q", "--no-index", path],
            timeout=60,
            env=clean,
        )
        assert done.returncode in (0, 1)
        return done.returncode == 0

    assert not ignored(".apply/incomplete")
    assert ignored(".apply/lock")
    assert ignored(".apply/.gitignore")


def test_delete_of_a_listed_path_is_refused_then_allowed(root: Path) -> None:
    run(write_result(NEW[:3], promised=NEW, apply_id="cut-1"), root)
    for path in ("pkg/mod.py", "pkg", "./pkg/mod.py"):
        result = run({"tool": "delete_path", "path": path}, root)
        assert (result.outcome, result.reason) == (Outcome.REFUSED, "incomplete_pending")
        assert "cut-1" in result.detail
        assert "forbidden_tools=delete_path,git_rm" in result.hints()
    assert (root / "pkg" / "mod.py").read_bytes() == OLD
    run(write_result(NEW), root)
    result = run({"tool": "delete_path", "path": "pkg/mod.py"}, root)
    assert (result.outcome, result.reason) == (Outcome.OK, "deleted")
    assert not (root / "pkg" / "mod.py").exists()


@pytest.fixture
def aliased(tmp_path: Path) -> Path:
    """``real/x.py`` and ``real/sub/y.py`` with an incomplete apply each; ``link -> real``."""
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "x.py").write_bytes(OLD)
    (tmp_path / "real" / "sub" / "y.py").write_bytes(OLD)
    (tmp_path / "link").symlink_to("real", target_is_directory=True)
    for path in ("real/x.py", "link/sub/y.py"):  # one spelt directly, one through the alias
        assert run(write_result(NEW[:3], path=path, promised=NEW), tmp_path).reason == (
            "length_short"
        )
    return tmp_path


def test_the_marker_names_the_resolved_path_not_the_spelling(aliased: Path) -> None:
    assert sorted(e.path for e in read_marker(aliased)) == ["real/sub/y.py", "real/x.py"]


@pytest.mark.parametrize(
    "path", ["link/x.py", "real/x.py", "link/sub", "link/sub/y.py", "real/sub", "real"]
)
def test_a_delete_through_any_alias_of_a_listed_path_is_refused(aliased: Path, path: str) -> None:
    result = run({"tool": "delete_path", "path": path}, aliased)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "incomplete_pending")
    assert (aliased / "real" / "x.py").read_bytes() == OLD
    assert (aliased / "real" / "sub" / "y.py").read_bytes() == OLD


def test_deleting_the_alias_itself_keeps_what_it_names(aliased: Path) -> None:
    result = run({"tool": "delete_path", "path": "link"}, aliased)
    assert (result.outcome, result.reason) == (Outcome.OK, "deleted")
    assert not os.path.lexists(aliased / "link")
    assert (aliased / "real" / "x.py").read_bytes() == OLD


def test_an_ok_write_through_the_alias_clears_the_resolved_entry(aliased: Path) -> None:
    assert run(write_result(NEW, path="link/x.py"), aliased).outcome is Outcome.OK
    assert [e.path for e in read_marker(aliased)] == ["real/sub/y.py"]


def test_a_delete_of_another_name_of_the_same_file_is_refused(aliased: Path) -> None:
    os.link(aliased / "real" / "x.py", aliased / "hard.py")  # same inode, unrelated spelling
    result = run({"tool": "delete_path", "path": "hard.py"}, aliased)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "incomplete_pending")
    assert "real/x.py" in result.detail


def test_an_unusable_apply_folder_is_refused_not_a_traceback(root: Path) -> None:
    (root / ".apply").write_text("a file where the folder should be\n")
    result = run(write_result(NEW), root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "apply_dir_unwritable")
    assert (root / "pkg" / "mod.py").read_bytes() == OLD


def test_a_failing_delete_is_reported(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(self: Path, missing_ok: bool = False) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(Path, "unlink", denied)
    result = run({"tool": "delete_path", "path": "pkg/mod.py"}, root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "delete_error")


def test_delete_of_a_missing_path_is_refused(root: Path) -> None:
    assert run({"tool": "delete_path", "path": "nope"}, root).reason == "not_found"


def test_delete_of_a_folder_without_listed_paths(root: Path) -> None:
    assert run({"tool": "delete_path", "path": "pkg"}, root).outcome is Outcome.OK
    assert not (root / "pkg").exists()


def test_an_unreadable_marker_refuses_every_delete_and_stays(root: Path) -> None:
    (root / ".apply").mkdir()
    (root / ".apply" / "incomplete").write_text("{not json")
    result = run({"tool": "delete_path", "path": "pkg/mod.py"}, root)
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "marker_unreadable")
    ok = run(write_result(NEW), root)
    assert ok.outcome is Outcome.OK
    assert "marker could not be cleared" in ok.detail
    assert (root / ".apply" / "incomplete").read_text() == "{not json"
    with pytest.raises(ApplyError) as caught:
        read_marker(root)
    assert caught.value.reason == "marker_unreadable"


# --- the command ---------------------------------------------------------------------


def test_cli_exit_codes_and_output(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        "part": write_result(NEW[:4], promised=NEW),
        "flip": write_result(NEW, promised=NEW.upper()),
        "nolen": {k: v for k, v in write_result(NEW).items() if k != "content_length"},
        "full": write_result(NEW),
    }
    for name, doc in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    argv = ["apply", "--root", str(root)]
    assert main([*argv, str(tmp_path / "part.json")]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "apply.incomplete=true",
        "forbidden_tools=delete_path,git_rm",
        "required_next=retry_apply_or_abort",
        f"apply.detail=received 4 of {len(NEW)} promised bytes; nothing was written; "
        "the target keeps its old bytes",
    ]
    assert err == (  # exactly one log line, the fields first
        f"apply path=pkg/mod.py promised={len(NEW)} written=0 end=none incomplete=true "
        "digest_ok=false received=4 outcome=incomplete reason=length_short\n"
    )
    assert main([*argv, str(tmp_path / "flip.json")]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("apply.corrupt=true")
    assert len(err.splitlines()) == 1
    assert main([*argv, str(tmp_path / "nolen.json")]) == 3
    out, err = capsys.readouterr()
    assert out.splitlines()[:2] == ["apply.refused=true", "apply.reason=missing_field"]
    assert out.splitlines()[2].startswith("apply.detail=tool result has no 'content_length'")
    assert len(err.splitlines()) == 1
    assert main([*argv, str(tmp_path / "full.json")]) == 0
    out, err = capsys.readouterr()
    assert out == "apply.ok=true\n"
    assert err.startswith("apply path=pkg/mod.py ")
    assert len(err.splitlines()) == 1
    assert main([*argv, "--json", str(tmp_path / "full.json")]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["apply.ok"] is True
    assert record["promised_length"] == record["bytes_written"] == len(NEW)
    assert record["sha256_disk"] == record["sha256_promised"]
    assert main([*argv, str(tmp_path / "missing.json")]) == 2
    assert main(["apply", "--root", str(tmp_path / "nope"), str(tmp_path / "full.json")]) == 2


# --- where the marker lives: the work-tree top ----------------------------------------


@pytest.mark.parametrize("kind", ["folder", "gitfile"])
def test_the_marker_lives_at_the_work_tree_top_whatever_the_root(tmp_path: Path, kind: str) -> None:
    top = tmp_path / "repo"
    sub = top / "a" / "b"
    sub.mkdir(parents=True)
    if kind == "folder":
        (top / ".git").mkdir()
        (top / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    else:  # a linked work tree or a submodule
        (top / ".git").write_text("gitdir: /elsewhere/.git/worktrees/repo\n")
    (sub / "mod.py").write_bytes(OLD)
    result = run(write_result(NEW[:3], path="mod.py", promised=NEW, apply_id="deep"), sub)
    assert result.path == "mod.py"
    assert result.marker == str(top / ".apply" / "incomplete")
    assert not (sub / ".apply").exists()
    assert [(e.apply_id, e.path) for e in read_marker(top)] == [("deep", "a/b/mod.py")]
    refused = run({"tool": "delete_path", "path": "mod.py"}, sub)
    assert (refused.outcome, refused.reason) == (Outcome.REFUSED, "incomplete_pending")
    assert run({"tool": "delete_path", "path": "b"}, top / "a").reason == "incomplete_pending"
    assert run(write_result(NEW, path="a/b/mod.py"), top).outcome is Outcome.OK
    assert not (top / ".apply" / "incomplete").exists()


def test_a_git_folder_without_head_is_not_a_work_tree(tmp_path: Path) -> None:
    (tmp_path / "sub" / ".git").mkdir(parents=True)  # git would walk past it, and so do we
    run(write_result(NEW[:3], path="x.py", promised=NEW), tmp_path / "sub")
    assert [e.path for e in read_marker(tmp_path / "sub")] == ["x.py"]


def test_a_root_inside_the_git_folder_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / ".git" / "objects").mkdir(parents=True)
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    with pytest.raises(UsageError, match="agents may not touch"):
        run(write_result(NEW, path="x"), tmp_path / ".git" / "objects")


@pytest.mark.parametrize("folder", [".apply", ".APPLY.", ".git "])
def test_a_root_inside_a_nested_reserved_folder_is_a_usage_error(
    tmp_path: Path, folder: str
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "a" / folder).mkdir(parents=True)
    with pytest.raises(UsageError, match="agents may not touch"):
        run(write_result(NEW, path="incomplete"), tmp_path / "a" / folder)
    assert not (tmp_path / "a" / folder / "incomplete").exists()


def test_a_marker_an_older_version_left_at_the_root_moves_to_the_top(tmp_path: Path) -> None:
    top = tmp_path / "repo"
    sub = top / "sub"
    (sub / ".apply").mkdir(parents=True)
    (top / ".git").mkdir()
    (top / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (sub / "f.py").write_bytes(OLD)
    old_entry = {"apply_id": "old-1", "path": "f.py", "reason": "length_short", "time": "t"}
    legacy = sub / ".apply" / "incomplete"
    legacy.write_text(json.dumps({"version": 1, "entries": [old_entry]}))
    refused = run({"tool": "delete_path", "path": "f.py"}, sub)
    assert (refused.outcome, refused.reason) == (Outcome.REFUSED, "incomplete_pending")
    assert "old-1" in refused.detail
    assert not legacy.exists()
    assert [(e.apply_id, e.path) for e in read_marker(top)] == [("old-1", "sub/f.py")]
    assert run(write_result(NEW, path="f.py"), sub).outcome is Outcome.OK
    assert not (top / ".apply" / "incomplete").exists()


def test_an_unreadable_marker_at_the_root_refuses_the_apply(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "sub" / ".apply").mkdir(parents=True)
    (tmp_path / "sub" / ".apply" / "incomplete").write_text("{cut")
    result = run(write_result(NEW, path="x.py"), tmp_path / "sub")
    assert (result.outcome, result.reason) == (Outcome.REFUSED, "marker_unreadable")
    assert not (tmp_path / "sub" / "x.py").exists()
    assert (tmp_path / "sub" / ".apply" / "incomplete").read_text() == "{cut"
