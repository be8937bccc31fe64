"""Path-filter matching on hostile paths, against plain fnmatch of the same paths.

Builds 3000 hostile paths (254-character file names made of many ``-``, ``.`` and
``_`` separated runs, a few directories deep, most of them not matching) and 20
patterns (star-heavy ones like ``**/*-*-*-*-*.lock`` and the usual ones), then in
the same process and in alternating rounds (so machine noise hits both alike):

  baseline  fnmatch.fnmatchcase(path, pattern) for every path and pattern
            (a compiled C regex per pattern; ``*`` also crosses ``/`` there, so
            the answers differ: it is a speed reference, not a semantic one);
  gate      gate.diff.compile_glob(pattern).match(path), the same pairs;
  filter    gate.diff.path_selected(path, include, exclude) with all 20 patterns
            as excludes (what the gate does per changed file).

Prints the time per path (all 20 patterns) of each, best of N rounds, the ratio
gate/baseline, and the most steps one match took against its linear bound
len(path) * (tokens + 1). Usage: python bench/glob_match.py [--paths 3000]
"""

from __future__ import annotations

import argparse
import fnmatch
import random
import time

from gate.diff import compile_glob, path_selected

PATTERNS = (
    "**/*-*-*-*-*.lock",
    "**/*-*-*-*-*-*-*-*.lock",
    "*-*-*-*-*-*-*-*-*-*",
    "**/*.*.*.*.*.*.min.js",
    "**/*_*_*_*_*_*_*.snap",
    "src/**/*-*-*-*-*-*.gen.py",
    "**/*a*a*a*a*a*a*b",
    "**/?*-?*-?*-?*-?*.lock",
    "**/**/**/*-*-*-*.tmp",
    "*.*.*.*.*.*.*.*.bak",
    "**/*.lock",
    "docs/**",
    "**/node_modules/**",
    "*.min.js",
    "vendor/**/*.go",
    "**/test_*.py",
    "**/*.pb.go",
    "build/**",
    "**/__snapshots__/*.snap",
    "**/*-*.json",
)


def hostile_paths(count: int, seed: int) -> list[str]:
    """``count`` paths whose last segment is 254 characters of short separated runs."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        sep = rng.choice("-._")
        run = rng.choice(["a", "ab", "a-", "x_a", "a.a"])
        name = (run + sep) * 254
        name = name[: 254 - 5] + rng.choice([".loc", ".lockx", "-----", ".json", ".snap"])
        depth = rng.randrange(0, 4)
        dirs = "/".join(rng.choice(["src", "a-b-c", "d.e.f", "g_h"]) for _ in range(depth))
        out.append(f"{dirs}/{name[:254]}" if dirs else name[:254])
    return out


def time_fnmatch(paths: list[str]) -> float:
    start = time.perf_counter()
    for path in paths:
        for pattern in PATTERNS:
            fnmatch.fnmatchcase(path, pattern)
    return time.perf_counter() - start


def time_gate(paths: list[str]) -> float:
    globs = [compile_glob(pattern) for pattern in PATTERNS]
    start = time.perf_counter()
    for path in paths:
        for glob in globs:
            glob.match(path)
    return time.perf_counter() - start


def time_filter(paths: list[str]) -> float:
    start = time.perf_counter()
    for path in paths:
        path_selected(path, ("**",), PATTERNS)
    return time.perf_counter() - start


def worst_steps(paths: list[str]) -> tuple[int, int]:
    """The most steps one match took, and its bound len(path) * (tokens + 1)."""
    worst = (0, 0)
    for pattern in PATTERNS:
        glob = compile_glob(pattern)
        for path in paths:
            before = glob.steps
            glob.match(path)
            steps = glob.steps - before
            if steps > worst[0]:
                worst = (steps, len(path) * (len(glob.tokens) + 1))
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--paths", type=int, default=3000, help="hostile paths")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (best is kept)")
    parser.add_argument("--seed", type=int, default=8, help="random seed of the paths")
    args = parser.parse_args()

    paths = hostile_paths(args.paths, args.seed)
    base: list[float] = []
    gate: list[float] = []
    filt: list[float] = []
    for _ in range(args.rounds):
        base.append(time_fnmatch(paths))
        gate.append(time_gate(paths))
        filt.append(time_filter(paths))
    b, g, f = min(base), min(gate), min(filt)
    per = 1e6 / len(paths)
    print(
        f"{len(paths)} hostile paths (mean {sum(map(len, paths)) / len(paths):.0f} characters) "
        f"x {len(PATTERNS)} patterns, best of {args.rounds}"
    )
    print(f"fnmatch.fnmatchcase (baseline)     {b * per:9.1f} us per path  ({b:.2f} s)")
    print(f"gate Glob.match                    {g * per:9.1f} us per path  ({g:.2f} s)")
    print(f"gate path_selected (20 excludes)   {f * per:9.1f} us per path  ({f:.2f} s)")
    print(f"ratio gate/fnmatch                 {g / b:9.2f}")
    steps, bound = worst_steps(paths)
    print(f"most steps in one match            {steps:9d} (linear bound {bound})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
