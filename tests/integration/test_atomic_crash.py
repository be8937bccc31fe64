"""Crash safety of the verified atomic write: SIGKILL at random points.

A real child process rewrites one certificate-sized file in a loop with
``atomic_write``, alternating between versions; the parent kills it with
SIGKILL at random moments. After each kill the file must be exactly one of the
versions, never a prefix or a mix, and the next writer must still succeed.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WRITER = """
import sys
from gate.safe.atomic import atomic_write
target = sys.argv[1]
versions = [bytes([65 + i]) * (256 * 1024 + i) for i in range(4)]
print("ready", flush=True)
i = 0
while True:
    atomic_write(target, versions[i % 4])
    i += 1
"""
VERSIONS = {bytes([65 + i]) * (256 * 1024 + i) for i in range(4)}
KILLS = 25


def test_sigkill_mid_write_leaves_old_or_new_never_a_prefix(tmp_path: Path) -> None:
    target = tmp_path / "certificate.json"
    target.write_bytes(bytes([65]) * (256 * 1024))
    rng = random.Random(20261129)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)],
            stdout=subprocess.PIPE,
            env=env,
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == b"ready\n"
            time.sleep(rng.uniform(0.0, 0.05))
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
            if child.stdout is not None:
                child.stdout.close()
        data = target.read_bytes()
        assert data in VERSIONS, f"torn file: {len(data)} bytes"
    # Killed writers may leave their unique temp files behind, never the target torn;
    # they are hidden dot-files beside it, and never mistaken for the target.
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != target.name]
    assert all(name.startswith(".certificate.json.") for name in leftovers)
