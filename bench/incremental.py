"""Incremental review on real push histories: what carrying saves, and that it decides alike.

Input: the path of a git repository (a clone, or a bare mirror) whose pull requests were
merged with merge commits. For each of the newest ``--prs`` merge commits, the second
parent is the pull request's head and the merge base of the two parents its base; the
pull request's commits (first parents from the head back to the base, oldest first) are
its successive pushes. Every push ``i`` is reviewed as the action reviews it, the diff
``git diff -M base push_i`` selected and cut by the gate, twice:

- **from scratch**: every chunk sent;
- **with carrying**: the chunks of push ``i - 1``'s certificate carried
  (:func:`gate.review.carry.from_certificate`), the rest sent.

The reviewer is the gate's simulator on 127.0.0.1 answering deterministically from the
chunk's own digest (a bound ``fail`` for 1 digest in 16, else a bound ``pass``), so both
reviews of a push must reach the same decision. Only pull requests whose diff is
reviewed in chunks (over ``--max-chunk-bytes``) at some push count.

Prints, over follow-up pushes (i >= 2) of pull requests that chunk: the chunks and
request bytes sent with and without carrying (median and p90 per push), the ratio of
bytes per pull request (median; goal <= 0.35; and for pull requests of
:data:`LARGE_PR_CHUNKS` or more chunks), the same over all follow-up pushes, the share of
identical decisions (must be 100%), and the end-to-end time ratio (carrying / scratch).

Usage: python bench/incremental.py REPO [--prs 60] [--max-pushes 12] [--max-chunk-bytes 16384]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: a chunk fails when the first byte of its digest is below this (1 in 16)
FAIL_BELOW = 16
#: a pull request counts as large when a push of it took at least this many chunks
LARGE_PR_CHUNKS = 6


def git(repo: str, *args: str) -> str:
    proc = subprocess.run(
        ["git", "--git-dir", repo, *args], capture_output=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode("utf-8", "replace")


def git_dir(path: str) -> str:
    out = subprocess.run(
        ["git", "-C", path, "rev-parse", "--absolute-git-dir"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{path}: not a git repository ({out.stderr.strip()})")
    return out.stdout.strip()


def pull_requests(repo: str, count: int, max_pushes: int) -> list[tuple[str, str, list[str]]]:
    """(merge, base, pushes oldest first) for the newest ``count`` merges with 2+ pushes."""
    out = []
    merges = git(repo, "rev-list", "--merges", "--first-parent", "HEAD").split()
    for merge in merges:
        parents = git(repo, "rev-list", "--parents", "-n", "1", merge).split()[1:]
        if len(parents) != 2:
            continue
        base = git(repo, "merge-base", parents[0], parents[1]).strip()
        pushes = git(
            repo, "rev-list", "--reverse", "--first-parent", parents[1], f"^{base}"
        ).split()
        if len(pushes) >= 2:
            out.append((merge, base, pushes[-max_pushes:]))
        if len(out) == count:
            break
    return out


def deterministic(request: dict[str, Any]) -> str:
    """The local reviewer: a bound verdict decided by the chunk's own digest."""
    from gate.decide.readback import words_in
    from gate.lab.demo import answer, request_text
    from gate.review.prompt import binding_in

    text = request_text(request)
    binding = binding_in(text)
    if binding is None:
        return "no binding"
    mode = "fail" if int(binding.diff_sha[:2], 16) < FAIL_BELOW else "pass"
    return answer(mode, binding, words_in(text))


@dataclass
class Side:
    chunks: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)
    #: diff bytes of the chunks sent (the request bytes less the prompt around them)
    diff: list[int] = field(default_factory=list)
    seconds: float = 0.0


def review(config: Any, diff: bytes, carry: Any) -> tuple[Any, float]:
    from gate.review.pipeline import review_diff
    from gate.review.scope import select_diff

    start = time.perf_counter()
    selected = select_diff(diff, config)
    if not selected.coverage.reviewed:
        return None, time.perf_counter() - start
    result = review_diff(
        selected.data,
        config,
        api_key="k",
        coverage=selected.coverage,
        sleep=lambda _s: None,
        carry=carry,
    )
    return result, time.perf_counter() - start


def sent_since(sim: Any, mark: int) -> tuple[int, int]:
    bodies = sim.requests[mark:]
    return len(bodies), sum(len(json.dumps(body).encode()) for body in bodies)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    import gate.reviewers  # noqa: F401  (import order: the reviewers before the config)
    from gate.config.model import Config, ReviewerConfig
    from gate.lab.sim import ReviewerSimulator
    from gate.review.carry import from_certificate

    repo = git_dir(args.repo)
    prs = pull_requests(repo, args.prs, args.max_pushes)
    scratch, carried = Side(), Side()
    ratios: list[float] = []
    large: list[float] = []
    same = total = chunked_prs = 0
    with ReviewerSimulator("openai", deterministic) as sim:
        reviewer = ReviewerConfig(
            provider="openai", model="sim-model", base_url=sim.base_url, attempts=1
        )
        config = Config(
            reviewer=reviewer,
            max_chunk_bytes=args.max_chunk_bytes,
            max_chunks=1000,
            max_diff_bytes=100_000_000,
            concurrency=args.concurrency,
        )
        for _merge, base, pushes in prs:
            book = None
            pr_scratch = pr_carried = 0
            chunked = False
            most = 0
            for index, push in enumerate(pushes):
                diff = git(repo, "diff", "-M", "--no-color", "--no-ext-diff", base, push).encode()
                mark = sim.count
                fresh, fresh_s = review(config, diff, None)
                n_fresh, b_fresh = sent_since(sim, mark)
                mark = sim.count
                inc, inc_s = review(config, diff, book)
                n_inc, b_inc = sent_since(sim, mark)
                if fresh is None or inc is None:
                    book = None
                    continue
                total += 1
                same += fresh.decision.state == inc.decision.state
                if inc.chunks:
                    chunked = True
                    most = max(most, len(inc.chunks))
                    data = json.dumps(inc.certificate).encode()
                    book = from_certificate(data, run=f"push {index + 1}")
                else:
                    book = None
                if index == 0 or not inc.chunks:
                    continue
                scratch.chunks.append(n_fresh)
                scratch.bytes.append(b_fresh)
                scratch.diff.append(sum(r.chunk.size for r in fresh.chunks if not r.split))
                scratch.seconds += fresh_s
                carried.chunks.append(n_inc)
                carried.bytes.append(b_inc)
                carried.diff.append(
                    sum(r.chunk.size for r in inc.chunks if r.carried is None and not r.split)
                )
                carried.seconds += inc_s
                pr_scratch += b_fresh
                pr_carried += b_inc
            if chunked and pr_scratch:
                chunked_prs += 1
                ratios.append(pr_carried / pr_scratch)
                if most >= LARGE_PR_CHUNKS:
                    large.append(pr_carried / pr_scratch)
    return {
        "repo": args.repo,
        "prs": len(prs),
        "chunked_prs": chunked_prs,
        "followups": len(scratch.chunks),
        "reviews": total,
        "same": same,
        "scratch": scratch,
        "carried": carried,
        "ratios": ratios,
        "large": large,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", help="path of a git repository with merged pull requests")
    parser.add_argument("--prs", type=int, default=60, help="newest merges to take (60)")
    parser.add_argument("--max-pushes", type=int, default=12, help="last pushes per PR (12)")
    parser.add_argument("--max-chunk-bytes", type=int, default=16_384, help="(16384)")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    if not Path(args.repo).exists():
        parser.error(f"{args.repo}: no such path")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    out = run(args)
    scratch, carried = out["scratch"], out["carried"]
    print(
        f"{out['repo']}: {out['prs']} pull requests, {out['chunked_prs']} reviewed in chunks, "
        f"{out['followups']} follow-up pushes in chunks (max_chunk_bytes {args.max_chunk_bytes})"
    )
    if not scratch.chunks:
        print("no follow-up push was reviewed in chunks: nothing to compare")
        return 1
    for name, values in (
        ("chunks sent per follow-up push", (scratch.chunks, carried.chunks)),
        ("request bytes per follow-up push", (scratch.bytes, carried.bytes)),
        ("diff bytes per follow-up push", (scratch.diff, carried.diff)),
    ):
        full, inc = values
        print(
            f"  {name}: scratch median {statistics.median(full):.0f} p90 "
            f"{percentile(full, 0.9):.0f}; carrying median {statistics.median(inc):.0f} p90 "
            f"{percentile(inc, 0.9):.0f}"
        )
    ratio = statistics.median(out["ratios"])
    verdict = "met" if ratio <= 0.35 else "NOT met"
    print(
        f"  bytes sent with carrying / from scratch, per PR: median {ratio:.2f} "
        f"p90 {percentile(out['ratios'], 0.9):.2f} (goal <= 0.35: {verdict})"
    )
    if out["large"]:
        print(
            f"  the same for the {len(out['large'])} PRs of {LARGE_PR_CHUNKS}+ chunks: median "
            f"{statistics.median(out['large']):.2f}"
        )
    print(
        f"  over all follow-up pushes: request bytes {sum(carried.bytes) / sum(scratch.bytes):.2f}"
        f", diff bytes {sum(carried.diff) / max(1, sum(scratch.diff)):.2f}, chunks "
        f"{sum(carried.chunks) / sum(scratch.chunks):.2f} of scratch's"
    )
    share = out["same"] / out["reviews"] if out["reviews"] else 0.0
    print(f"  identical decisions: {out['same']}/{out['reviews']} ({share:.0%}; must be 100%)")
    if scratch.seconds:
        print(
            f"  end-to-end time of follow-ups: carrying {carried.seconds:.2f} s / scratch "
            f"{scratch.seconds:.2f} s = {carried.seconds / scratch.seconds:.2f}"
        )
    digest = hashlib.sha256(json.dumps(out["ratios"]).encode()).hexdigest()[:12]
    print(f"  (ratios digest {digest}, for comparing runs)")
    return 0 if out["same"] == out["reviews"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
