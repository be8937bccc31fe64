"""Crash safety of the verified apply: real processes, SIGKILLed during the write.

Three harnesses, 48 kills in all:

* ``mid-write`` (20): the child runs :func:`gate.apply.apply_tool_result` with a
  writer that writes half of chunk ``k`` (``k`` random), says so on stdout and
  blocks; the parent SIGKILLs it. The kill provably lands mid-write (the
  temporary file holds exactly that prefix), and the target must hold its
  old bytes (or stay absent).
* ``timed`` (25): ``python -m gate apply`` on a whole 4 MiB payload, SIGKILLed
  at a random delay after its temporary file appears, spread over the
  measured span from that moment to the end of a run, so kills also land in
  the fsync, the rename, the folder fsync and the read back. The target must
  hold the old or the new bytes, never anything else.
* ``control`` (3): the same mid-write kill against a naive in-place writer
  must leave a prefix, which proves the harness can see the failure it
  guards against.

After every kill a fresh apply of the same payload must succeed (no stuck
lock) and leave no temporary file behind.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from gate.apply import WRITE_CHUNK, Outcome, apply_tool_result
from gate.safe.atomic import TEMP_SUFFIX

REPO_ROOT = Path(__file__).resolve().parents[3]
SIZE = 4 * WRITE_CHUNK + 12345
MID_WRITE_KILLS = 20
TIMED_KILLS = 25
CONTROL_KILLS = 3

CHILD = r"""
import os, sys
from pathlib import Path
from gate.apply import apply_tool_result

mode, result, root, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
calls = [0]

def stop_mid_chunk(fd, chunk):
    if calls[0] == k:
        os.write(fd, chunk[: len(chunk) // 2])
        print(calls[0], flush=True)
        sys.stdin.read()  # block until SIGKILL
    calls[0] += 1
    return os.write(fd, chunk)

if mode == "apply":
    apply_tool_result(Path(result).read_bytes(), root, writer=stop_mid_chunk)
else:  # control: a naive in-place writer
    import base64, json
    data = base64.b64decode(json.loads(Path(result).read_bytes())["content"])
    fd = os.open(os.path.join(root, "target.bin"), os.O_WRONLY | os.O_TRUNC)
    view = memoryview(data)
    for start in range(0, len(data), 1 << 20):
        stop_mid_chunk(fd, view[start : start + (1 << 20)])
print("finished", flush=True)
"""


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes, Path]:
    rng = random.Random(5)
    new = rng.randbytes(SIZE)
    old = rng.randbytes(SIZE // 3)
    doc = {
        "tool": "write_file",
        "path": "target.bin",
        "content_length": len(new),
        "sha256": hashlib.sha256(new).hexdigest(),
        "encoding": "base64",
        "content": base64.b64encode(new).decode("ascii"),
        "stream_end_reason": "trailer",
    }
    result = tmp_path_factory.mktemp("payload") / "result.json"
    result.write_text(json.dumps(doc))
    return old, new, result


def reset(root: Path, old: bytes | None) -> Path:
    target = root / "target.bin"
    for leftover in root.glob(f"*{TEMP_SUFFIX}"):
        leftover.unlink()
    if old is None:
        target.unlink(missing_ok=True)
    else:
        target.write_bytes(old)
    return target


def temps(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if p.name.endswith(TEMP_SUFFIX)]


def recover(root: Path, result: Path, new: bytes) -> None:
    """A retry after the crash applies whole and cleans the killed run's temporary file."""
    again = apply_tool_result(result.read_bytes(), root)
    assert again.outcome is Outcome.OK, again.detail
    assert (root / "target.bin").read_bytes() == new
    assert not temps(root)


def kill_mid_write(mode: str, result: Path, root: Path, k: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(result), str(root), str(k)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "the child never reached the write"
        said = proc.stdout.readline().strip()
        assert said == str(k).encode(), (said, proc.stderr.read() if proc.stderr else b"")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("target_exists", [True, False])
def test_a_kill_mid_write_leaves_the_old_bytes(
    tmp_path: Path, payload: tuple[bytes, bytes, Path], target_exists: bool
) -> None:
    old, new, result = payload
    rng = random.Random(1 if target_exists else 2)
    chunks = -(-len(new) // WRITE_CHUNK)
    for _ in range(MID_WRITE_KILLS // 2):
        k = rng.randrange(chunks)
        target = reset(tmp_path, old if target_exists else None)
        kill_mid_write("apply", result, tmp_path, k)
        if target_exists:
            assert target.read_bytes() == old, k
        else:
            assert not target.exists(), k
        (tmp,) = temps(tmp_path)  # the kill landed mid-write: the temp holds the prefix
        expected = k * WRITE_CHUNK + min(WRITE_CHUNK, len(new) - k * WRITE_CHUNK) // 2
        assert tmp.read_bytes() == new[:expected]
        recover(tmp_path, result, new)


def wait_for_temp(root: Path, proc: subprocess.Popen[bytes]) -> float | None:
    """Poll (bounded) until the child's temporary file appears; None if it finished first."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if temps(root):
            return time.monotonic()
        if proc.poll() is not None:
            return None
        time.sleep(0.001)  # yield the CPU to the child
    raise AssertionError("the child neither wrote nor finished within 120s")


def test_a_kill_at_a_random_time_leaves_old_or_new_never_a_prefix(
    tmp_path: Path, payload: tuple[bytes, bytes, Path]
) -> None:
    old, new, result = payload
    argv = [sys.executable, "-m", "gate", "apply", str(result), "--root", str(tmp_path)]
    # calibrate: how long from the temporary file's appearance to the end of a run
    window = 0.0
    for _ in range(2):
        reset(tmp_path, old)
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env()
        )
        seen_at = wait_for_temp(tmp_path, proc)
        assert proc.wait(timeout=120) == 0
        if seen_at is not None:
            window = max(window, time.monotonic() - seen_at)
        recover(tmp_path, result, new)
    rng = random.Random(3)
    seen: Counter[str] = Counter()
    for index in range(TIMED_KILLS):
        target = reset(tmp_path, old)
        # spread over the window, denser early (write, fsync, rename) than late (read back, exit)
        delay = window * ((index + rng.random()) / TIMED_KILLS) ** 2
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env()
        )
        try:
            seen_at = wait_for_temp(tmp_path, proc)
            if seen_at is not None:
                time.sleep(max(0.0, seen_at + delay - time.monotonic()))
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=60)
        data = target.read_bytes()
        assert data in (old, new), f"kill {delay:.4f}s into the write left {len(data)} other bytes"
        seen["new" if data == new else "old"] += 1
        seen["killed" if proc.returncode == -signal.SIGKILL else "finished"] += 1
        seen["temp_left"] += bool(temps(tmp_path))
        recover(tmp_path, result, new)
    print(f"timed kills over a {window:.4f}s write window: {dict(seen)}")


def test_the_harness_sees_a_prefix_left_by_a_naive_writer(
    tmp_path: Path, payload: tuple[bytes, bytes, Path]
) -> None:
    old, new, result = payload
    for k in range(CONTROL_KILLS):
        target = reset(tmp_path, old)
        kill_mid_write("control", result, tmp_path, k)
        data = target.read_bytes()
        assert data not in (old, new)
        assert new.startswith(data)
