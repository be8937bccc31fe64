"""``review-gate backtest`` against the local reviewer simulator with a fixed latency.

Prints, for each size, the backtest's wall time over its floor (cases x latency / jobs: a
backtest can be no faster than its reviewer answers), and the peak resident memory of the
process that ran it, which must stay flat in the number of cases (results are streamed to
``results.jsonl``, diffs are read when each case is asked, nothing is held per case but
its question id). Goal: ratio <= 1.15 at ``--jobs 8``.

    python bench/backtest.py [--cases 100,500] [--latency 0.2] [--jobs 8]

Each size runs in a fresh process (``--child``) so its peak memory is its own. Also:

    python bench/backtest.py --plan REPO [--last 300]

times planning the last merges of a local repository from git alone (no model): listing
them, finding reverts, and making every diff.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KEY = "sk-bench-key-not-real-0000"


def cases_file(folder: Path, count: int) -> Path:
    """``count`` small labelled cases, inline, each its own file and diff digest."""
    path = folder / "cases.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            diff = (
                f"diff --git a/m{n}.py b/m{n}.py\n--- a/m{n}.py\n+++ b/m{n}.py\n"
                f"@@ -0,0 +1,2 @@\n+def f{n}():\n+    return {n}\n"
            )
            label = "block" if n % 10 == 0 else "allow"
            handle.write(json.dumps({"id": f"c{n}", "label": label, "diff": diff}) + "\n")
    return path


def serve(latency: float) -> None:
    """The scripted reviewer in a process of its own (it keeps every request it was sent, so
    in the backtest's process it would be counted in the backtest's memory); prints its
    base URL, serves until standard input closes."""
    from gate.lab.scripted import Scripted
    from gate.lab.sim import ReviewerSimulator

    with ReviewerSimulator("openai", chooser=Scripted(latency=latency)) as sim:
        print(sim.base_url, flush=True)
        sys.stdin.read()


@contextlib.contextmanager
def reviewer(latency: float) -> Iterator[str]:
    with subprocess.Popen(
        [sys.executable, __file__, "--serve", "--latency", str(latency)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None
        assert proc.stdin is not None
        try:
            yield proc.stdout.readline().strip()
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)


def child(count: int, latency: float, jobs: int, memory: bool) -> None:
    """One backtest of ``count`` cases in this process: the wall time of the whole command,
    or (``memory``) the peak of Python's allocations while the cases are asked (tracemalloc,
    which slows the run, so it is measured apart) and after the report is built."""
    import tracemalloc

    from gate import cli
    from gate.backtest.runner import Runner
    from gate.commands import backtest
    from gate.lab.sim import MODEL

    os.environ["OPENAI_API_KEY"] = KEY
    with tempfile.TemporaryDirectory() as tmp, reviewer(latency) as url:
        cases = cases_file(Path(tmp), count)
        argv = [
            "backtest",
            "--cases",
            str(cases),
            "--provider",
            "openai",
            "--model",
            MODEL,
            "--base-url",
            url,
            "--out",
            f"{tmp}/out",
            "--jobs",
            str(jobs),
            "--json",
        ]
        if memory:
            args = cli.build_parser(only="backtest").parse_args(argv)
            found, plan_ = backtest.variants(args), backtest.plan_of(args)
            Path(args.out).mkdir()
            runner = Runner(plan_, found, out=Path(args.out), jobs=jobs)
            tracemalloc.start()
            outcome = runner.run()
            asking = tracemalloc.get_traced_memory()[1]
            backtest.write_reports(Path(args.out), plan_, found, runner, outcome, 1)
            reporting = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(json.dumps({"cases": count, "asking_peak": asking, "report_peak": reporting}))
            return
        sink = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(argv)
        wall = time.perf_counter() - started
        report = json.loads(sink.getvalue())
        assert code == 0, code
        assert report["configs"][0]["answers"] == count
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"cases": count, "wall_s": wall, "peak_rss_kib": peak_kib}))


def plan(repo: Path, last: int) -> None:
    """Plan the last ``last`` merges of ``repo`` and make every diff: the seconds each took."""
    from gate.backtest.cases import from_history

    started = time.perf_counter()
    found = from_history(repo, last=last)
    planned = time.perf_counter() - started
    sizes = [len(case.load()) for case in found.cases]
    total = time.perf_counter() - started
    print(
        f"{len(found.cases)} merges of {repo} planned from git in {planned:.2f}s "
        f"({sum(c.label == 'block' for c in found.cases)} labelled block by a revert); "
        f"with every diff made ({sum(sizes) / 1e6:.1f} MB): {total:.2f}s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="100,500")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--child", type=int)
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--plan", type=Path)
    parser.add_argument("--last", type=int, default=300)
    args = parser.parse_args()
    if args.plan is not None:
        plan(args.plan, args.last)
        return
    if args.serve:
        serve(args.latency)
        return
    if args.child is not None:
        child(args.child, args.latency, args.jobs, args.memory)
        return
    print(f"latency {args.latency:g}s per answer, --jobs {args.jobs}")
    for count in (int(n) for n in args.cases.split(",")):
        timed = run_child(count, args.latency, args.jobs)
        floor = count * args.latency / args.jobs
        print(
            f"{count} cases: wall {timed['wall_s']:.2f}s, floor {floor:.2f}s, "
            f"ratio {timed['wall_s'] / floor:.3f}, peak RSS {timed['peak_rss_kib'] / 1024:.1f} MiB"
        )
    for count in (int(n) for n in args.cases.split(",")):
        traced = run_child(count, 0.0, args.jobs, "--memory")
        print(
            f"{count} cases: peak Python allocations while asking "
            f"{traced['asking_peak'] / 2**20:.2f} MiB, with the report built "
            f"{traced['report_peak'] / 2**20:.2f} MiB (the report has a row per case)"
        )


def run_child(count: int, latency: float, jobs: int, *more: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(count), "--latency", str(latency),
         "--jobs", str(jobs), *more],
        capture_output=True, text=True, check=True, timeout=3600,
    )  # fmt: skip
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    main()
