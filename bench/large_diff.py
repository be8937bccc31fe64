"""A large pull request reviewed in chunks: the gate's wall time and memory against a floor.

Workload: a generated diff of ``--files`` files (default 2,000) and ``--mib`` MiB (default
20), reviewed through :func:`gate.review.pipeline.review_diff` (selection, chunking, prompts, the
pool of ``--concurrency`` threads, streaming, sealing, deciding, the manifest) against the
reviewer simulator answering instantly (a bound pass), in its own process.

The floor makes the same chunk requests (the same request bodies, built beforehand and not
timed) with bare httpx at the same concurrency, reading each answer whole and nothing more.
Each side runs in a fresh process, so its peak RSS (``ru_maxrss``) is its own; the diff is
generated inside the measured process (it is the input, and counts).

Prints the wall times, their ratio gate/floor (goal: <= 1.3), the gate's peak RSS
(goal: <= 64 MiB + 2 x the diff size) and the request bound (the reviewer's requests, and
the GitHub requests and blob bytes a rebuild from blobs may spend: docs/action.md).
Usage: python bench/large_diff.py [--mib 20] [--files 2000] [--concurrency 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

MIB = 1 << 20


def make_diff(files: int, total: int) -> bytes:
    """``files`` modified files of about ``total / files`` bytes each, 60-byte lines."""
    per_file = max(200, total // files)
    lines = max(1, per_file // 50)  # the added lines below are about 50 bytes
    out = io.BytesIO()  # getvalue() hands over the buffer: the diff is not held twice
    for i in range(files):
        name = f"services/s{i // 100:02d}/module_{i:04d}.py"
        head = f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
        body = "".join(
            f"+value_{j:05d} = compute({i}, {j}) + offset  # line\n" for j in range(lines)
        )
        out.write(f"{head}@@ -1 +1,{lines} @@\n-pass\n{body}".encode())
    return out.getvalue()


def config_for(base_url: str, concurrency: int) -> Any:
    from gate.config.model import Config, ReviewerConfig

    reviewer = ReviewerConfig(
        provider="openai", model="sim-model", base_url=base_url, attempts=1, deadline=120.0
    )
    return Config(
        reviewer=reviewer,
        max_input_tokens=1_000_000,
        max_chunk_bytes=262_144,
        max_chunks=400,
        max_diff_bytes=100_000_000,
        concurrency=concurrency,
    )


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_gate(args: argparse.Namespace) -> dict[str, Any]:
    import gate.reviewers  # noqa: F401  (import order: the reviewers before the config)
    from gate.review.pipeline import review_diff
    from gate.review.scope import select_diff

    diff = make_diff(args.files, args.mib * MIB)
    config = config_for(args.url, args.concurrency)
    start = time.perf_counter()
    selected = select_diff(diff, config)
    result = review_diff(
        selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
    )
    wall = time.perf_counter() - start
    assert result.coverage is not None
    return {
        "wall": wall,
        "rss_mib": peak_rss_mib(),
        "diff_bytes": len(diff),
        "chunks": len(result.chunks),
        "state": str(result.decision.state),
        "reviewed": len(result.coverage.reviewed),
        "complete": result.coverage.complete,
    }


def run_floor(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    import gate.reviewers  # noqa: F401
    from gate.review.budget import chunk_budget, chunk_prompt
    from gate.review.chunks import file_list, plan
    from gate.review.scope import select_diff
    from gate.reviewers.openai import build_request
    from gate.reviewers.settings import ReviewerSettings

    diff = make_diff(args.files, args.mib * MIB)
    config = config_for(args.url, args.concurrency)
    selected = select_diff(diff, config)
    files = file_list(selected.data, selected.coverage)
    limit, _ = chunk_budget(config, files)
    chunks = plan(selected.data, selected.coverage, max_chunk_bytes=limit).chunks
    settings = ReviewerSettings.from_config(config.reviewer, "k")
    requests = []
    for chunk in chunks:
        prompt = chunk_prompt(chunk, len(chunks), files, config)
        requests.append(build_request(settings, system=prompt.system, user=prompt.user))
    del diff, selected

    def one(index: int) -> int:
        request = requests[index]
        timeout = httpx.Timeout(120.0, connect=10.0)
        with httpx.Client(timeout=timeout) as client:
            headers = {**request.headers, "accept-encoding": "identity"}
            with client.stream("POST", request.url, content=request.body, headers=headers) as r:
                return sum(len(part) for part in r.iter_raw())

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        received = sum(pool.map(one, range(len(requests))))
    wall = time.perf_counter() - start
    return {"wall": wall, "rss_mib": peak_rss_mib(), "chunks": len(requests), "bytes": received}


SIM = """
import sys
import gate.reviewers
from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator
with ReviewerSimulator("openai", ScriptedModel()) as sim:
    print(sim.base_url, flush=True)
    sys.stdin.read()
"""


def child(mode: str, args: argparse.Namespace, url: str) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", mode, "--url", url]
    argv += ["--mib", str(args.mib), "--files", str(args.files)]
    argv += ["--concurrency", str(args.concurrency)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=20)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=("gate", "floor"))
    parser.add_argument("--url", default="")
    args = parser.parse_args()
    if args.child:
        result = run_gate(args) if args.child == "gate" else run_floor(args)
        print(json.dumps(result))
        return 0
    sim = subprocess.Popen(
        [sys.executable, "-c", SIM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert sim.stdout is not None
        url = sim.stdout.readline().strip()
        gates, floors = [], []
        for _ in range(max(1, args.rounds)):  # alternate, so machine noise hits both alike
            floors.append(child("floor", args, url))
            gates.append(child("gate", args, url))
    finally:
        if sim.stdin is not None:
            sim.stdin.close()
        sim.wait(timeout=30)
    gate_best = min(gates, key=lambda r: r["wall"])
    floor_best = min(floors, key=lambda r: r["wall"])
    size_mib = gate_best["diff_bytes"] / MIB
    goal_rss = 64 + 2 * size_mib
    ratio = gate_best["wall"] / floor_best["wall"]
    print(
        f"diff: {size_mib:.1f} MiB, {args.files} files, {gate_best['chunks']} chunks, "
        f"concurrency {args.concurrency}; gate decision {gate_best['state']}, "
        f"{gate_best['reviewed']} files reviewed, coverage complete: {gate_best['complete']}"
    )
    print(
        f"wall (best of {len(gates)}): gate {gate_best['wall']:.2f} s, "
        f"floor {floor_best['wall']:.2f} s, ratio {ratio:.2f} (goal <= 1.3)"
    )
    print(
        f"peak RSS: gate {gate_best['rss_mib']:.1f} MiB (goal <= {goal_rss:.0f} MiB), "
        f"floor {floor_best['rss_mib']:.1f} MiB"
    )
    print(request_bounds(args, gate_best["chunks"]))
    return 0


def request_bounds(args: argparse.Namespace, chunks: int) -> str:
    """The request bound (issue 19): the reviewer's requests, and the most GitHub requests
    and blob bytes the action spends on this pull request should GitHub refuse its diff
    (HTTP 406) and send no patch for any file (docs/action.md)."""
    from gate.action.blobfetch import FetchBudget, byte_bound, request_bound

    config = config_for("http://127.0.0.1:9", args.concurrency)
    budget = FetchBudget.from_config(config)
    attempts = config.reviewer.attempts * config.agreement
    return (
        f"request bound: reviewer {chunks} requests ({chunks} chunks x {attempts} attempts); "
        f"GitHub rebuild at most {request_bound(args.files)} requests and "
        f"{byte_bound(budget) / MIB:.1f} MiB of blobs (all {args.files} files without a patch, "
        f"budget {budget.max_bytes / MIB:.1f} MiB)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
