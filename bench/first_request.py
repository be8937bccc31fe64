"""Instructions to the action's first request, against two floors, counted by callgrind.

Wall time of a container start swings with Docker's own (``bench/container_bench.py``
prints it); instructions do not. Three programs run under ``valgrind --tool=callgrind``,
each stopped by an audit hook at its first ``socket.connect`` (the request is about to
leave: nothing after it, and nothing of an answer, is counted; no listener is needed):

* ``gate``: ``review-gate action`` (``gate.cli.entry``) on a minimal ``pull_request``
  event, the container's entry point;
* ``httpx``: one GET with ``httpx.Client``, the client the action's first calls go over
  (its context trusts no CA, as the gate's does for plain ``http://``);
* ``urllib``: one GET with ``urllib.request``, the floor ``container_bench.py`` leads with.

Prints each count (median of ``--runs``) and the ratios gate/urllib and gate/httpx. Each
program first runs once unmeasured, so all three read cached bytecode.

    python bench/first_request.py [--runs 3] [--gate-src DIR] [--python EXE] [--pythonpath DIRS]

The image's own figures: the image's Python version with the image's packages (copy them
out; ``-s`` keeps a user's site-packages out):

    cid=$(docker create review-gate:bench)
    docker cp "$cid":/opt/venv/lib/python3.11/site-packages /tmp/image-site; docker rm "$cid"
    python bench/first_request.py --python /usr/bin/python3 --pythonpath /tmp/image-site
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from container_bench import REPOSITORY, event_file

ROOT = Path(__file__).resolve().parents[1]
URL = "http://127.0.0.1:9"  # never reached: each program stops as it connects
RUN_TIMEOUT_S = 600.0

#: run first in every program: stop at the first connect, before any byte is sent
STOP = """\
import os, sys
def _stop(event, args):
    if event == "socket.connect":
        sys.stdout.flush()
        os._exit(0)
sys.addaudithook(_stop)
"""

PROGRAMS = {
    "gate": STOP + 'sys.argv = ["review-gate", "action"]\nfrom gate.cli import entry\nentry()\n',
    "httpx": STOP
    + "import ssl, httpx\n"
    + "context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)\n"
    + "with httpx.Client(verify=context, timeout=10) as client:\n"
    + f"    client.get('{URL}/repos/{REPOSITORY}/pulls/1')\n",
    "urllib": STOP
    + "import urllib.request\n"
    + f"urllib.request.urlopen('{URL}/repos/{REPOSITORY}/pulls/1', timeout=10)\n",
}


def instructions(argv: list[str], env: dict[str, str], cwd: str) -> int:
    """The instructions ``argv`` executes, from callgrind's ``summary:`` line."""
    out = Path(cwd) / "callgrind.out"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    found = re.search(r"^summary:\s*(\d+)", out.read_text() if out.exists() else "", re.M)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{argv[:2]} under callgrind failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gate-src", metavar="DIR", help="a folder holding gate/ (default: ROOT)")
    parser.add_argument("--python", metavar="EXE", default=sys.executable)
    parser.add_argument("--pythonpath", metavar="DIRS", default="", help="put before gate/")
    args = parser.parse_args(argv)
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="rg-first-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env |= {
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(Path(args.gate_src or ROOT).resolve()), args.pythonpath) if p
            ),
            "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pycache"),
            "GITHUB_API_URL": URL,
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event_file(Path(tmp))),
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_RUN_ID": "1",
            "INPUT_TOKEN": "bench-token",
            "INPUT_FAIL-JOB": "false",
        }
        counts: dict[str, list[int]] = {name: [] for name in PROGRAMS}
        commands = {name: [args.python, "-s", "-c", code] for name, code in PROGRAMS.items()}
        for command in commands.values():  # unmeasured: fills the bytecode cache
            subprocess.run(
                command, env=env, cwd=tmp, capture_output=True, timeout=RUN_TIMEOUT_S, check=False
            )
        for _ in range(args.runs):
            for name, command in commands.items():
                counts[name].append(instructions(command, env, tmp))
    median = {name: statistics.median(found) for name, found in counts.items()}
    for name, value in median.items():
        print(f"{name:6} {value / 1e6:8.1f}M instructions to the first request")
    gate, httpx, urllib = median["gate"], median["httpx"], median["urllib"]
    print(f"gate / urllib: {gate / urllib:.2f}   httpx / urllib: {httpx / urllib:.2f}")
    print(f"gate / httpx: {gate / httpx:.2f} (+{(gate - httpx) / 1e6:.1f}M: the gate's own share)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
