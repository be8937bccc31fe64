"""``review-gate hooks``: install, check or remove the pre-commit guard for incomplete applies."""

from __future__ import annotations

import argparse
import sys

NAME = "hooks"
ORDER = 70
HELP = "install the git pre-commit guard that blocks commits after an incomplete apply"
DESCRIPTION = """\
install    put the guard in the repository's pre-commit hook (an existing hook is
           renamed to pre-commit.review-gate-chained and still runs after the guard)
check      run the guard's check now (what the hook and .pre-commit-hooks.yaml run)
uninstall  remove the guard and put a chained hook back

The guard refuses a commit while an .apply/incomplete exists anywhere in the
work tree (or the search for one fails), or one in a folder above the work
tree names a file in it, and names each apply id, path and staged deletion of
a listed path.

check prints "no incomplete apply; commits allowed" when nothing blocks.

exit codes: 0 done / nothing blocks, 2 usage (not a git work tree, hook conflict),
3 check: a commit would be refused"""

HOOKS_ACTIONS = ("install", "check", "uninstall")
NOTHING_BLOCKS = "no incomplete apply; commits allowed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "hooks_action",
        choices=HOOKS_ACTIONS,
        metavar="{" + ",".join(HOOKS_ACTIONS) + "}",
        help="what to do with the guard",
    )
    parser.add_argument(
        "--root", default=".", help="a folder inside the git work tree (default: current folder)"
    )


def run(args: argparse.Namespace) -> int:
    from gate.apply import precommit as hooks
    from gate.errors import ExitCode, UsageError

    if args.hooks_action == "check":
        report = hooks.check(args.root)
        for line in report.messages:
            print(line, file=sys.stderr)
        if report.blocked:
            return ExitCode.BLOCKED
        print(NOTHING_BLOCKS)
        return ExitCode.PASS
    if args.hooks_action == "install":
        done = hooks.install(args.root)
        print(f"{done.action} review-gate pre-commit guard: {done.hook}")
        if done.chained is not None:
            print(f"chained earlier hook (runs after the guard): {done.chained}")
        return ExitCode.PASS
    if args.hooks_action == "uninstall":
        done = hooks.uninstall(args.root)
        print(f"removed review-gate pre-commit guard: {done.hook}")
        if done.chained is not None:
            print(f"restored earlier hook: {done.chained}")
        return ExitCode.PASS
    raise UsageError(f"unknown hooks action {args.hooks_action!r}")  # pragma: no cover - argparse
