"""``review-gate review`` of a 0.9 MB diff against its floor, bare httpx, as a ratio.

Starts the reviewer simulator (OpenAI dialect, a bound ``pass`` answered at once) on
127.0.0.1, writes a 0.9 MB diff of ordinary source files, and runs, alternating round
by round so machine noise hits both alike:

  gate   ``review-gate review --diff DIFF --provider openai --model M --base-url SIM``
         (whole process: start-up, select, prompt, request, stream, verify, decide);
  floor  ``python bench/review_floor.py SIM WORKERS BODY...``: every request body the
         gate sent in one review (saved from the first run: the diff is reviewed in
         chunks, one request each), posted with bare httpx as many at a time as the
         gate's ``concurrency``, each stream read to its end.

Both run from cached bytecode, as an installed package does (pip compiles at install):
the children get ``PYTHONPYCACHEPREFIX`` (a folder of this run, filled by the unmeasured
first runs) and never ``PYTHONDONTWRITEBYTECODE``, which would make every gate run
compile its modules from source while httpx's come precompiled from site-packages.

Prints the median wall and CPU (user + system) time of each over ``--runs`` rounds
and the ratio gate/floor (goal: at most 1.5), and each one's peak RSS (the largest
``ru_maxrss`` of its process over the rounds, from ``wait4`` in a small spawner:
:data:`SPAWN`) against the budget of 64 MiB + 3x the diff. ``--profile`` runs the gate
once in this process under cProfile first and prints the costliest functions of the
main thread.

    python bench/review_bench.py [--runs 7] [--profile] [--gate-src DIR] [--before DIR]

``--before DIR`` adds a third row, another tree's ``gate`` started the same way, in the
same alternating rounds, so a before/after table comes from one run (machine load moves
ratios between runs). ``--gate-src DIR`` measures another tree's ``gate``
(``git archive REV gate | tar -x -C DIR``) through PYTHONPATH, started as
``python -c "import gate.reviewers; ...main()"`` (importing ``gate.reviewers`` first
steps around the import cycle of trees before the lazy start-up, where the console
script itself died with ImportError).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gate.config.model import Config
from gate.lab.demo import ScriptedModel
from gate.lab.sim import MODEL, ReviewerSimulator

HERE = Path(__file__).resolve().parent
DIFF_BYTES = 900_000
KEY = "bench-key-0123456789abcdef"


def make_diff(size: int, seed: int = 12) -> bytes:
    """A unified diff of ordinary Python files (new files), ``size`` bytes at most."""
    rng = random.Random(seed)
    words = ["value", "result", "count", "items", "config", "request", "answer", "index"]
    out: list[str] = []
    total, number = 0, 0
    while True:
        body = []
        for line in range(rng.randrange(60, 140)):
            a, b = rng.choice(words), rng.choice(words)
            body.append(f"+    {a}_{line} = compute({b}, {rng.randrange(1000)})  # step {line}\n")
        name = f"src/module_{number:04d}.py"
        head = (
            f"diff --git a/{name} b/{name}\nnew file mode 100644\nindex 0000000..1111111\n"
            f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{len(body)} @@\n"
        )
        section = head + "".join(body)
        if total + len(section) > size:
            break
        out.append(section)
        total += len(section)
        number += 1
    return "".join(out).encode("utf-8")


#: how long one run may take before it is killed (and the bench stops)
RUN_TIMEOUT_S = 120.0
#: the peak RSS goal: this much plus DIFF_FACTOR times the diff
RSS_BASE = 64 * 1024 * 1024
DIFF_FACTOR = 3


@dataclass
class Run:
    """One finished child: wall and CPU seconds, peak RSS in bytes, standard output."""

    wall: float
    cpu: float
    rss: int
    out: str


#: Starts one measured run: forks, execs the command, reaps it with ``wait4`` and writes
#: its exit code, wall seconds, CPU seconds and ``ru_maxrss`` (KiB) to ``argv[1]``.
#: Linux keeps, as a process's ``ru_maxrss``, the peak of the memory it had before
#: ``exec``: a child forked (or vforked) by this bench would report at least this
#: process's own RSS (the simulator holds every request it saw), so each run is forked
#: from this small interpreter instead (``-S``: no site, about 10 MiB).
SPAWN = """
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, use = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(sys.argv[1], "w", encoding="ascii") as out:
    code = os.waitstatus_to_exitcode(status)
    out.write(f"{code} {wall!r} {use.ru_utime + use.ru_stime!r} {use.ru_maxrss}")
"""


def timed(argv: list[str], env: dict[str, str]) -> Run:
    """Run ``argv`` (it must exit 0) through :data:`SPAWN`, for its own rusage."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryDirectory(prefix="rg-run-") as folder,
    ):
        stats = Path(folder) / "rusage"
        spawn = [sys.executable, "-S", "-c", SPAWN, str(stats), *argv]
        child = subprocess.Popen(spawn, env=env, stdout=out, stderr=err, start_new_session=True)
        try:
            child.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)  # the spawner and the run under it
            child.wait()
            raise SystemExit(f"{argv[:3]} ran over {RUN_TIMEOUT_S:.0f} s") from None
        out.seek(0)
        err.seek(0)
        code, wall, cpu, rss = stats.read_text("ascii").split() if stats.exists() else ["?"] * 4
        if child.returncode != 0 or code != "0":
            tail = err.read().decode("utf-8", "replace")[-3000:]
            raise SystemExit(f"{argv[:3]} exited {code}:\n{tail}")
        # Linux reports ru_maxrss in KiB
        return Run(float(wall), float(cpu), int(rss) * 1024, out.read().decode())


#: how ``--gate-src`` starts the gate (see the module docstring)
LAUNCHER = "import sys, gate.reviewers; from gate.cli import main; sys.exit(main())"


def gate_argv(diff: Path, base_url: str, *, launcher: bool = False) -> list[str]:
    script = Path(sys.executable).parent / "review-gate"
    start = [sys.executable, "-c", LAUNCHER] if launcher else [str(script)]
    return [
        *start,
        "review",
        "--diff",
        str(diff),
        "--provider",
        "openai",
        "--model",
        MODEL,
        "--base-url",
        base_url,
    ]


def profile(argv: list[str], top: int) -> None:
    """The gate's review in this process under cProfile: the costliest functions."""
    from gate.cli import main

    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    code = main(argv[1:])
    profiler.disable()
    elapsed = time.perf_counter() - start
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    print(f"in-process review: exit {code} in {elapsed * 1000:.0f} ms (main thread, cProfile)")
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-4000:])


def child_env(tmp: Path, gate_src: str | None) -> dict[str, str]:
    """The children's environment: the key, cached bytecode in a folder of this run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["OPENAI_API_KEY"] = KEY
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    if gate_src:
        env["PYTHONPATH"] = str(Path(gate_src).resolve())
    return env


def save_bodies(bodies: list[dict[str, object]], folder: Path) -> list[Path]:
    """Each request body of one review in its own file, for the floor."""
    paths = []
    for number, body in enumerate(bodies, 1):
        path = folder / f"body-{number}.json"
        path.write_bytes(json.dumps(body, ensure_ascii=False).encode("utf-8"))
        paths.append(path)
    return paths


def report(runs: dict[str, list[Run]], diff_bytes: int) -> None:
    """Medians, each gate's ratio against the goal, and peak RSS against its budget."""
    for name, done in runs.items():
        walls = [run.wall for run in done]
        print(
            f"{name:6} wall {statistics.median(walls) * 1000:7.1f} ms "
            f"(min {min(walls) * 1000:7.1f})  "
            f"cpu {statistics.median(run.cpu for run in done) * 1000:7.1f} ms  "
            f"peak rss {max(run.rss for run in done) / 2**20:6.1f} MiB"
        )
    floor_wall = statistics.median(r.wall for r in runs["floor"])
    floor_cpu = statistics.median(r.cpu for r in runs["floor"])
    budget = RSS_BASE + DIFF_FACTOR * diff_bytes
    for name in (name for name in runs if name != "floor"):
        ratio = statistics.median(r.wall for r in runs[name]) / floor_wall
        cpu_ratio = statistics.median(r.cpu for r in runs[name]) / floor_cpu
        verdict = "met" if ratio <= 1.5 else "NOT met"
        print(f"{name} review / floor: {ratio:.2f} wall, {cpu_ratio:.2f} cpu ", end="")
        print(f"(goal <= 1.50: {verdict})")
        peak = max(r.rss for r in runs[name])
        verdict = "met" if peak <= budget else "NOT met"
        print(
            f"{name} review peak rss: {peak / 2**20:.1f} MiB, budget 64 MiB + "
            f"{DIFF_FACTOR} x {diff_bytes / 2**20:.2f} MiB = {budget / 2**20:.1f} MiB ({verdict})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds (median is kept)")
    parser.add_argument("--profile", action="store_true", help="cProfile one in-process run")
    parser.add_argument("--top", type=int, default=25, help="functions shown by --profile")
    parser.add_argument("--gate-src", metavar="DIR", help="a folder holding another gate/")
    parser.add_argument(
        "--before", metavar="DIR", help="also measure the gate/ in DIR, in the same rounds"
    )
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    with (
        tempfile.TemporaryDirectory(prefix="rg-review-bench-") as tmp,
        ReviewerSimulator("openai", ScriptedModel("pass")) as sim,
    ):
        env = child_env(Path(tmp), args.gate_src)
        diff = Path(tmp) / "change.diff"
        diff.write_bytes(make_diff(DIFF_BYTES))
        argv = gate_argv(diff, sim.base_url, launcher=bool(args.gate_src))
        if args.profile and not args.gate_src:
            os.environ["OPENAI_API_KEY"] = KEY
            profile(argv, args.top)
        # the first runs are not measured (page cache, .pyc files); the gate's must pass
        before = sim.count
        out = timed(argv, env).out
        if not out.startswith("pass"):
            raise SystemExit(f"the gate did not pass the bench diff: {out[:300]}")
        bodies = save_bodies(sim.requests[before:], Path(tmp))
        workers = str(Config().concurrency)
        floor_argv = [sys.executable, str(HERE / "review_floor.py"), sim.base_url, workers]
        floor_argv += [str(body) for body in bodies]
        timed(floor_argv, env)
        rows = [("gate", argv, env), ("floor", floor_argv, env)]
        if args.before:
            before_env = {**env, "PYTHONPATH": str(Path(args.before).resolve())}
            before_argv = gate_argv(diff, sim.base_url, launcher=True)
            if not timed(before_argv, before_env).out.startswith("pass"):
                raise SystemExit("the --before gate did not pass the bench diff")
            rows.append(("before", before_argv, before_env))
        runs: dict[str, list[Run]] = {name: [] for name, _, _ in rows}
        for _ in range(args.runs):
            for name, command, environ in rows:
                runs[name].append(timed(command, environ))
        sent = sum(body.stat().st_size for body in bodies)
        print(
            f"diff {diff.stat().st_size} bytes; {len(bodies)} requests of {sent} bytes in all, "
            f"{workers} at a time; medians of {args.runs} runs"
        )
        report(runs, diff.stat().st_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
