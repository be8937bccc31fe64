"""The command-line interface: the one place that maps errors to exit codes.

Sub-commands live in :mod:`gate.commands`, one module each, discovered at
start-up. A command module defines ``NAME``, ``HELP``, ``DESCRIPTION``,
``ORDER`` (position in ``--help``), ``add_arguments(parser)`` and
``run(args) -> int``.

Exit codes (:class:`gate.errors.ExitCode`, shared by every command that decides):

====  ==========================================================
0     pass (or the command did what it was asked)
1     fail (the reviewer rejected; an apply was incomplete/corrupt)
2     usage error (bad arguments, unreadable input file)
3     needs_human / incomplete / refused / any other blocking error
====  ==========================================================
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Protocol, cast

from gate import __version__, commands, redact
from gate.commands._io import say
from gate.errors import ExitCode, GateError, UsageError


class Command(Protocol):
    NAME: str
    HELP: str
    DESCRIPTION: str
    ORDER: int

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _discover() -> list[Command]:
    found: list[Command] = []
    for info in pkgutil.iter_modules(commands.__path__):
        if info.name.startswith("_"):
            continue
        module: ModuleType = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            found.append(cast(Command, module))
    return sorted(found, key=lambda cmd: (cmd.ORDER, cmd.NAME))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="review-gate",
        description=(
            "A merge gate for language-model code review. It accepts a reviewer's answer only "
            "when it is complete (MC1 length, SHA-256, END sentinel, provider end marker), "
            "well-formed (exactly one fenced JSON verdict), bound (diff_sha, policy_version) "
            "and positive. Nothing else passes."
        ),
        epilog=(
            "exit codes: 0 pass, 1 fail, 2 usage error, 3 needs_human / incomplete / refused. "
            "Run 'review-gate COMMAND --help' for each command."
        ),
    )
    parser.add_argument("--version", action="version", version=f"review-gate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in _discover():
        child = sub.add_parser(
            cmd.NAME,
            help=cmd.HELP,
            description=cmd.DESCRIPTION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        cmd.add_arguments(child)
        child.set_defaults(_run=cmd.run)
    return parser


@redact.scope()  # a command registers the secrets it reads (gate.redact.remember)
def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        return int(run(args))
    except UsageError as err:
        say(f"review-gate {args.command}: error: {err.message}", err=True)
        return ExitCode.USAGE
    except GateError as err:
        say(f"review-gate {args.command}: error: {err.message}", err=True)
        return ExitCode.BLOCKED
    except KeyboardInterrupt:
        say(f"review-gate {args.command}: interrupted", err=True)
        return ExitCode.BLOCKED
    except BrokenPipeError:
        return ExitCode.BLOCKED
    except Exception as err:  # noqa: BLE001 - a bug must block, never read as "fail" (exit 1)
        say(
            f"review-gate {args.command}: internal error {type(err).__name__}: {err}; "
            "this is a bug in review-gate, please report it (nothing was passed)",
            err=True,
        )
        return ExitCode.BLOCKED


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
