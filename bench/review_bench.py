"""``review-gate review`` of a 0.9 MB diff against its floor, bare httpx, as a ratio.

Starts the reviewer simulator (OpenAI dialect, a bound ``pass`` answered at once) on
127.0.0.1, writes a 0.9 MB diff of ordinary source files, and runs, alternating round
by round so machine noise hits both alike:

  gate   ``review-gate review --diff DIFF --provider openai --model M --base-url SIM``
         (whole process: start-up, select, prompt, request, stream, verify, decide);
  floor  ``python bench/review_floor.py SIM BODY``: the request body the gate sent
         (saved from the first run), posted with bare httpx, the stream read to its end.

Prints the median wall and CPU (user + system) time of each over ``--runs`` rounds
and the ratio gate/floor (goal: at most 1.5). ``--profile`` runs the gate once in this
process under cProfile first and prints the costliest functions of the main thread.

    python bench/review_bench.py [--runs 7] [--profile] [--gate-src DIR]

``--gate-src DIR`` measures another tree's ``gate`` (``git archive REV gate | tar -x -C
DIR``) through PYTHONPATH, started as ``python -c "import gate.reviewers; ...main()"``
(importing ``gate.reviewers`` first steps around the import cycle of trees before
the lazy start-up, where the console script itself died with ImportError).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds and standard output of one run that must exit 0."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return wall, _children_cpu() - cpu, done.stdout


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


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds (median is kept)")
    parser.add_argument("--profile", action="store_true", help="cProfile one in-process run")
    parser.add_argument("--top", type=int, default=25, help="functions shown by --profile")
    parser.add_argument("--gate-src", metavar="DIR", help="a folder holding another gate/")
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    if args.gate_src:
        env["PYTHONPATH"] = str(Path(args.gate_src).resolve())
    with (
        tempfile.TemporaryDirectory(prefix="rg-review-bench-") as tmp,
        ReviewerSimulator("openai", ScriptedModel("pass")) as sim,
    ):
        diff = Path(tmp) / "change.diff"
        diff.write_bytes(make_diff(DIFF_BYTES))
        argv = gate_argv(diff, sim.base_url, launcher=bool(args.gate_src))
        if args.profile and not args.gate_src:
            os.environ["OPENAI_API_KEY"] = KEY
            profile(argv, args.top)
        # the first runs are not measured (page cache, .pyc files); the gate's must pass
        _, _, out = timed(argv, env)
        if not out.startswith("pass"):
            raise SystemExit(f"the gate did not pass the bench diff: {out[:300]}")
        body = Path(tmp) / "body.json"
        body.write_bytes(json.dumps(sim.requests[-1], ensure_ascii=False).encode("utf-8"))
        floor_argv = [sys.executable, str(HERE / "review_floor.py"), sim.base_url, str(body)]
        timed(floor_argv, env)
        walls: dict[str, list[float]] = {"gate": [], "floor": []}
        cpus: dict[str, list[float]] = {"gate": [], "floor": []}
        for _ in range(args.runs):
            for name, command in (("gate", argv), ("floor", floor_argv)):
                wall, cpu, _ = timed(command, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
        print(
            f"diff {diff.stat().st_size} bytes, request body {body.stat().st_size} bytes, "
            f"medians of {args.runs} runs"
        )
    for name in ("gate", "floor"):
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(
            f"{name:5} wall {wall * 1000:7.1f} ms (min {min(walls[name]) * 1000:7.1f})  "
            f"cpu {cpu * 1000:7.1f} ms"
        )
    ratio = statistics.median(walls["gate"]) / statistics.median(walls["floor"])
    cpu_ratio = statistics.median(cpus["gate"]) / statistics.median(cpus["floor"])
    verdict = "met" if ratio <= 1.5 else "NOT met"
    print(f"review-gate review / floor: {ratio:.2f} wall, {cpu_ratio:.2f} cpu ", end="")
    print(f"(goal <= 1.50: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
