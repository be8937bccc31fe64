"""Start-up bench: ``review-gate --version`` against ``python -c pass``, as a ratio.

Both run with the same interpreter (this one: same venv, same ``site``), alternating
round by round so machine noise hits both alike; the median of ``--runs`` rounds of
each is printed with the ratio (goal: at most 2x), in wall time and in CPU time (user +
system of the child: what the process itself costs, steadier on a busy machine).
``--help`` and ``python -m gate --version`` are printed beside it, and the third-party
modules the ``--version`` run imported (none is the goal: every command imports what
it uses when it runs).

    python bench/startup.py [--runs 30] [--gate-src DIR]

``--gate-src DIR`` measures another tree's ``gate`` package (e.g. one unpacked with
``git archive REV gate | tar -x -C DIR``) through PYTHONPATH; the runs start in a
scratch folder so the current one does not shadow it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: run inside the measured interpreter after --version: the modules it imported
_MODULES_PROBE = """
import atexit, runpy, sys
atexit.register(lambda: print(" ".join(sorted(sys.modules)), file=sys.stderr))
sys.argv = ["review-gate", "--version"]
runpy.run_module("gate", run_name="__main__", alter_sys=True)
"""
HEAVY = ("httpx", "github", "jsonschema", "yaml", "cmarkgfm", "requests", "urllib3")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``argv``."""
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=60, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}:\n{done.stderr.decode()[-2000:]}")
    return elapsed, _children_cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="rounds (median is kept)")
    parser.add_argument("--gate-src", metavar="DIR", help="a folder holding another gate/")
    args = parser.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")

    python = sys.executable
    script = Path(python).parent / "review-gate"
    if not script.exists():
        raise SystemExit(f"{script} not found: install the project into this interpreter's venv")
    env = dict(os.environ)
    if args.gate_src:
        env["PYTHONPATH"] = str(Path(args.gate_src).resolve())
    cases = {
        "python -c pass": [python, "-c", "pass"],
        "review-gate --version": [str(script), "--version"],
        "review-gate --help": [str(script), "--help"],
        "python -m gate --version": [python, "-m", "gate", "--version"],
    }
    with tempfile.TemporaryDirectory(prefix="rg-startup-") as cwd:
        for argv in cases.values():  # warm-up, not measured (page cache, .pyc files)
            timed(argv, env, cwd)
        times: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, argv in cases.items():
                wall, cpu = timed(argv, env, cwd)
                times[name].append(wall)
                cpus[name].append(cpu)
        probe = subprocess.run(
            [python, "-c", _MODULES_PROBE],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    modules = set(probe.stderr.split()) if probe.returncode == 0 else set()
    base = statistics.median(times["python -c pass"])
    base_cpu = statistics.median(cpus["python -c pass"])
    print(f"interpreter: {python}; medians of {args.runs} runs")
    for name, values in times.items():
        wall, cpu = statistics.median(values), statistics.median(cpus[name])
        print(
            f"{name:26} wall {wall * 1000:6.1f} ms (min {min(values) * 1000:6.1f}) "
            f"ratio {wall / base:.2f} | cpu {cpu * 1000:6.1f} ms ratio {cpu / base_cpu:.2f}"
        )
    ratio = statistics.median(times["review-gate --version"]) / base
    cpu_ratio = statistics.median(cpus["review-gate --version"]) / base_cpu
    verdict = "met" if ratio <= 2.0 else "NOT met"
    print(
        f"review-gate --version / python -c pass: {ratio:.2f} wall, {cpu_ratio:.2f} cpu "
        f"(goal <= 2.00: {verdict})"
    )
    if probe.returncode != 0:
        print(f"module probe failed: {probe.stderr.strip()[-500:]}")
    else:
        loaded = [name for name in HEAVY if name in modules]
        gate_modules = sorted(m for m in modules if m == "gate" or m.startswith("gate."))
        print(f"--version imported {len(modules)} modules; heavy ones: {loaded or 'none'}")
        print(f"gate modules: {' '.join(gate_modules)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
