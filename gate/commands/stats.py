"""``review-gate stats``: is the gate livable? Runs by family and reason over a window."""

from __future__ import annotations

import argparse

NAME = "stats"
ORDER = 37
HELP = "runs by family and reason over a window, and how long pull requests waited"
DESCRIPTION = """\
Read a folder of certificates (the action's certificate-dir artifacts) and
records (review-gate.record/1, or a history block saved as JSON) and report,
over the last DAYS days, the runs by family and reason, the blocks that were not
a rejection (the gate's false-block rate on your own traffic) and the median
time a pull request waited for a human. Example:

    review-gate stats certificates/ --days 7

    last 7 days: 120 runs; pass 82, rejected 20, needs_human 9 (multiple_fences 5,
    low_confidence 4), unavailable 9 (http_429 7)
    blocked without a rejection (needs_human, coverage, unavailable, config): 18 of
    120 runs (15%)
    median wait for a human: 5.5 h over 12 pull requests

Families: pass; rejected, needs_human, coverage (about the code); unavailable
and config (not about the code). Files that are neither a certificate nor a
record are counted, never guessed. A mode: shadow run's certificates are not
the gate's decisions and are left out; --shadow reports them instead, with the
rates review-gate backtest states (a case is a question, each certificate one
answer): would_block with its 95% interval, split about the code and not,
stable_rate over the questions answered more than once, and the cost.
exit codes: 0 report written, 2 usage error.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", metavar="FOLDER", help="folder of certificates and records")
    parser.add_argument(
        "--days", type=int, default=7, metavar="N", help="the window, in days (default: 7)"
    )
    parser.add_argument(
        "--family",
        action="append",
        default=[],
        metavar="NAME",
        help="count only these families (repeatable): pass, rejected, needs_human, "
        "coverage, unavailable, config",
    )
    parser.add_argument(
        "--shadow",
        action="store_true",
        help="report the mode: shadow certificates' rates, as backtest states them",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime, timedelta
    from pathlib import Path

    from gate.commands._io import say, say_json
    from gate.decide.decision import Family
    from gate.errors import ExitCode, UsageError
    from gate.memory.stats import health, load_folder, shadow_lines, shadow_rates

    known = [str(f) for f in Family]
    wrong = [name for name in args.family if name not in known]
    if wrong:
        raise UsageError(f"--family {wrong[0]!r} is not a family; use one of {', '.join(known)}")
    if not 1 <= args.days <= 3660:
        raise UsageError(f"--days {args.days} is out of range; use 1 to 3660")
    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{args.folder} is not a folder; give the folder of certificates")
    runs, unreadable = load_folder(folder)
    if args.family:
        runs = [r for r in runs if str(r.family) in args.family]
    until = datetime.now(UTC)
    since = until - timedelta(days=args.days)
    if args.shadow:
        rates = shadow_rates(runs, since=since, until=until)
        if args.json:
            say_json(rates)
        else:
            say("\n".join(shadow_lines(rates)))
        return ExitCode.PASS
    report = health(runs, since=since, until=until, unreadable=unreadable)
    if args.json:
        say_json(report.to_json())
    else:
        say("\n".join(report.lines()))
    return ExitCode.PASS
