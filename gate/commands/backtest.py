"""``review-gate backtest``: the review the action runs, over a repository's history or a
labelled set of cases, with the rates a team needs before it makes the gate required."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gate.backtest.cases import Plan
    from gate.backtest.runner import Outcome, Runner, Variant
    from gate.config.model import Config

NAME = "backtest"
ORDER = 32
HELP = "the review the action runs, over past merges or labelled cases: rates, cost, stability"
DESCRIPTION = """\
Run the review the action runs (selection, prompt, chunks, agreement, binding,
decision, cost guard; memory off) over the history of a local git repository,
or over a file of labelled cases, with any reviewer the gate speaks, and report
per config: how often it would block presumed-good merges (split into blocks
about the code and not), how often it catches a change labelled block (a later
commit reverted it, or the cases file says so), how often it blocks a change
labelled allow, how stable its answer is (--repeat), what it cost, and latency.
Two or more configs (--config A.yml --config B.yml, or several --model,
--min-confidence or --context values) are compared on the same cases: the paired
difference of each rate and the exact McNemar p-value of the discordant cases.
With context: files (--context files) each case's changed files are read from
git at its head (a merge's second parent, a squash commit); a case from a
--cases file has no head, so its files are left out, named in its certificate.

Cases: --repo PATH --last N (the newest N first-parent merges and squash merges
of HEAD, each as its pull request's diff) or --repo PATH --range A..B, or
--cases FILE.jsonl (one object a line: id, label block|allow, diff as a path
relative to the file or inline text, optional source).

Writes to --out (default ./review-gate-backtest): results.jsonl (one line per
answer; a second run with the same --out skips what was already answered under
the same question), certificates/CONFIG/CASE-N.json, report.json, report.md
(for a job summary; appended to $GITHUB_STEP_SUMMARY when set) and report.html
(self-contained, with a chart). --max-cost bounds the whole backtest: each
review's bound (every attempt at its full prompt and max_tokens) is checked
before it is asked.
exit codes: 0 report complete, 2 usage error, 3 stopped by --max-cost (the
report is partial), 130 interrupted (the report is partial).

examples:
  review-gate backtest --repo . --last 50 --model gpt-4o-mini --max-cost 2
  review-gate backtest --cases bugs.jsonl --config a.yml --config b.yml --repeat 3 --jobs 8
  review-gate backtest --repo . --last 30 --model gpt-4o-mini --context diff --context files
"""

#: reviewer options: dest -> the action input name apply_inputs knows (as review has them)
_OVERRIDES = {
    "provider": "provider",
    "base_url": "base-url",
    "api_key_env": "api-key-env",
    "max_tokens": "max-tokens",
    "timeout": "timeout",
    "attempts": "attempts",
    "policy_version": "policy-version",
    "agreement": "agreement",
}
MAX_REPEAT, MAX_JOBS, MAX_LAST, DEFAULT_LAST = 10, 64, 10_000, 50

DEFAULT_OUT = "review-gate-backtest"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gate.config.model import CONTEXTS

    cases = parser.add_argument_group("cases (one of --repo or --cases)")
    cases.add_argument("--repo", metavar="PATH", help="a local git repository (a clone)")
    cases.add_argument("--last", type=int, metavar="N", help="the newest N merges (default 50)")
    cases.add_argument("--range", metavar="A..B", help="the merges of a revision range")
    cases.add_argument("--cases", metavar="FILE", help="labelled cases, JSON Lines")
    asked = parser.add_argument_group("configs (repeat an option to compare)")
    asked.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="PATH",
        help="a review-gate YAML config (repeatable; default: built-in)",
    )
    asked.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="the model (repeatable: one variant per model)",
    )
    asked.add_argument(
        "--min-confidence",
        action="append",
        default=[],
        metavar="F",
        help="the lowest confidence a pass may have (repeatable)",
    )
    asked.add_argument(
        "--context",
        action="append",
        default=[],
        choices=CONTEXTS,
        help="what the reviewer is shown besides the diff: diff, or files (also the changed "
        "files' new text, read from git at each case's head); repeatable: one variant each",
    )
    for option, dest in _OVERRIDES.items():
        asked.add_argument(
            "--" + dest, dest=option, metavar="VALUE", help=f"as review --{dest}; for every config"
        )
    run = parser.add_argument_group("the run")
    run.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help=f"ask each case K times, for stable_rate (1 to {MAX_REPEAT})",
    )
    run.add_argument(
        "--jobs",
        type=int,
        default=4,
        metavar="J",
        help=f"reviews under way at once (1 to {MAX_JOBS}; default 4)",
    )
    run.add_argument(
        "--max-cost",
        type=float,
        metavar="AMOUNT",
        help="the most the whole backtest may cost (bounds checked before each "
        "review; needs a price for every model)",
    )
    run.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"results, certificates and reports (default ./{DEFAULT_OUT})",
    )
    run.add_argument("--json", action="store_true", help="print the report as JSON")


def _check_args(args: argparse.Namespace) -> None:
    from gate.errors import UsageError

    if (args.repo is None) == (args.cases is None):
        raise UsageError("pass either --repo PATH (with --last N or --range A..B) or --cases FILE")
    if args.cases is not None and (args.last is not None or args.range is not None):
        raise UsageError("--last and --range choose merges of --repo; a --cases file has none")
    if args.last is not None and args.range is not None:
        raise UsageError("pass --last N or --range A..B, not both")
    if args.last is not None and not 1 <= args.last <= MAX_LAST:
        raise UsageError(f"--last {args.last} is out of range; use 1 to {MAX_LAST}")
    if not 1 <= args.repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat {args.repeat} is out of range; use 1 to {MAX_REPEAT}")
    if not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs {args.jobs} is out of range; use 1 to {MAX_JOBS}")
    if args.max_cost is not None and not args.max_cost > 0:
        raise UsageError(f"--max-cost {args.max_cost:g} is not a positive amount")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out!r} is a file; name a folder")


def _load(path: str | None, given: dict[str, str]) -> Config:
    """One config file (or the built-in one) with the options over it; a problem is a
    usage error that names the file."""
    from gate.commands.review import usage_from
    from gate.config.inputs import apply_inputs
    from gate.config.load import load_config
    from gate.config.model import default_config
    from gate.errors import ConfigError, UsageError

    try:
        return apply_inputs(load_config(path) if path else default_config(), given)
    except ConfigError as err:
        message = usage_from(err).message
        where = f"--config {path}" if path else "the options"
        raise UsageError(f"{where}: {message}", reason=err.reason) from err


def variants(args: argparse.Namespace) -> list[Variant]:
    """Every config to compare: each --config, then each --model, --min-confidence and
    --context value over it (a product when several are repeated), each with its keys."""
    import itertools
    import os
    from dataclasses import replace

    from gate.backtest.runner import Variant
    from gate.commands.review import api_key_for
    from gate.config.model import fallback_keys
    from gate.errors import ConfigError, UsageError
    from gate.review.pipeline import settings_chain

    common = {
        name: str(getattr(args, dest))
        for dest, name in _OVERRIDES.items()
        if getattr(args, dest) is not None
    }
    files: list[str | None] = list(args.config) or [None]
    stems = [Path(f).stem if f else "default" for f in files]
    axes = [
        ("model", args.model or [None]),
        ("min-confidence", args.min_confidence or [None]),
        ("context", args.context or [None]),
    ]
    found: list[Variant] = []
    for (path, stem), *values in itertools.product(
        zip(files, stems, strict=True), *(values for _, values in axes)
    ):
        given = dict(common)
        parts = [stem] if len(files) > 1 or not any(len(v) > 1 for _, v in axes) else []
        for (axis, options), value in zip(axes, values, strict=True):
            if value is not None:
                given[axis] = value
                if len(options) > 1:
                    parts.append(f"{axis}={value}")
        context = given.pop("context", None)  # a config key, not an action input
        config = _load(path, given)
        if context is not None:
            config = replace(config, context=context)
        explicit = config.reviewer.api_key_env is not None or args.api_key_env is not None
        key = api_key_for(config, explicit_env=explicit)
        try:
            keys = fallback_keys(config, os.environ)
        except ConfigError as err:
            raise UsageError(f"{path or 'the built-in config'}: {err.message}") from err
        settings_chain(config, key, keys)  # every reviewer's settings, before any request
        found.append(Variant(" ".join(parts), config, key, keys))
    names = [v.name for v in found]
    if len(set(names)) != len(names):
        raise UsageError(f"two configs have the same name ({', '.join(names)}); rename a file")
    return found


def _check_prices(found: list[Variant], limit: float | None) -> None:
    from gate.errors import UsageError
    from gate.review.cost import price_for

    if limit is None:
        return
    for variant in found:
        for each in variant.config.chain():
            if price_for(each) is None:
                raise UsageError(
                    f"--max-cost needs a price for the model {each.reviewer.model!r} "
                    f"({variant.name}); add it under pricing in the config, or drop --max-cost"
                )


def plan_of(args: argparse.Namespace) -> Plan:
    from gate.backtest.cases import from_file, from_history

    if args.cases is not None:
        return from_file(Path(args.cases))
    if args.range is not None:
        return from_history(Path(args.repo), revs=args.range)
    return from_history(Path(args.repo), last=args.last or DEFAULT_LAST)


def run(args: argparse.Namespace) -> int:
    from gate.backtest.progress import Progress
    from gate.backtest.runner import Runner
    from gate.commands._io import say
    from gate.errors import ExitCode, GateError

    _check_args(args)
    found = variants(args)
    _check_prices(found, args.max_cost)
    plan = plan_of(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    progress = Progress(len(plan.cases) * len(found) * args.repeat)
    runner = Runner(
        plan,
        found,
        out=out,
        repeat=args.repeat,
        jobs=args.jobs,
        max_cost=args.max_cost,
        on_answer=progress.on_answer,
    )
    say(
        f"backtest: {len(plan.cases)} cases x {len(found)} configs x {args.repeat} "
        f"= {runner.total} answers; writing to {out}",
        err=True,
    )
    try:
        outcome = runner.run()
    except GateError as err:  # a case git cannot diff, a certificate not written: stop
        progress.close()
        runner.outcome.stopped = f"stopped by an error: {err.message}"
        write_reports(out, plan, found, runner, runner.outcome, args.repeat)
        raise
    except KeyboardInterrupt:
        progress.close()
        report = write_reports(out, plan, found, runner, runner.outcome, args.repeat)
        say(f"interrupted (Ctrl-C): a partial report is in {out}", err=True)
        _show(args, report)
        return ExitCode.INTERRUPTED
    progress.close()
    report = write_reports(out, plan, found, runner, outcome, args.repeat)
    _show(args, report)
    if outcome.stopped:
        say(f"review-gate backtest: {outcome.stopped}", err=True)
        return ExitCode.BLOCKED
    return ExitCode.PASS


def _show(args: argparse.Namespace, report: dict[str, Any]) -> None:
    from gate.backtest.report import terminal
    from gate.commands._io import say, say_json

    if args.json:
        say_json(report)
    else:
        say(terminal(report))


def write_reports(
    out: Path, plan: Plan, found: list[Variant], runner: Runner, outcome: Outcome, repeat: int
) -> dict[str, Any]:
    """report.json, report.md and report.html, each written atomically (a partial run's
    report says it is partial); the Markdown appended to $GITHUB_STEP_SUMMARY when set."""
    import json
    import os

    from gate.backtest import html
    from gate.backtest.report import markdown, summarise
    from gate.safe.atomic import atomic_write

    complete = not outcome.stopped and not outcome.interrupted
    status = {
        "complete": complete,
        "stopped": outcome.stopped,
        "interrupted": outcome.interrupted,
        "asked": outcome.asked,
        "skipped": outcome.skipped,
        "total": runner.total,
        "repeat": repeat,
    }
    report = summarise(
        plan, [v.name for v in found], runner.results.rows(), dict(outcome.questions), status
    )
    atomic_write(out / "report.json", (json.dumps(report, indent=1) + "\n").encode())
    text = markdown(report)
    atomic_write(out / "report.md", text.encode())
    atomic_write(out / "report.html", html.page(report).encode())
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(text)
    return report
