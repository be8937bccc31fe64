"""The command-line interface: the one place that maps errors to exit codes.

Sub-commands live in :mod:`gate.commands`, one module each, discovered at
start-up. A command module defines ``NAME``, ``HELP``, ``DESCRIPTION``,
``ORDER`` (position in ``--help``), ``add_arguments(parser)`` and
``run(args) -> int``.

Start-up is lazy: every command module is imported (for its name and help line), so
each imports at module level only the standard library and light constants; what a
command uses (the pipeline, httpx, PyYAML, jsonschema, cmark-gfm, PyGithub) is
imported inside ``run`` (or ``add_arguments``), and :func:`main` calls
``add_arguments`` of the chosen command only. So ``--version`` and ``--help`` load
none of it (tests/unit/test_lazy_imports.py checks).

Exit codes (:class:`gate.errors.ExitCode`, shared by every command that decides):

====  ==========================================================
0     pass (or the command did what it was asked)
1     fail (the reviewer rejected; an apply was incomplete/corrupt)
2     usage error (bad arguments, unreadable input file)
3     needs_human / incomplete / refused / any other blocking error
130   interrupted (Ctrl-C); ``review`` first writes the certificate and
      ``--save-response`` of what had arrived, marked interrupted
====  ==========================================================
"""

from __future__ import annotations

import argparse
import gc
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Protocol, cast

from gate import __version__, commands
from gate.commands._io import say
from gate.errors import ExitCode, GateError, UsageError
from gate.safe import redact


class Command(Protocol):
    NAME: str
    HELP: str
    DESCRIPTION: str
    ORDER: int

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _module_names() -> list[str]:
    """The modules of :mod:`gate.commands` (not ``_private`` ones)."""
    found = pkgutil.iter_modules(commands.__path__)
    return sorted(module.name for module in found if not module.name.startswith("_"))


def _discover() -> list[Command]:
    found: list[Command] = []
    for name in _module_names():
        module: ModuleType = importlib.import_module(f"{commands.__name__}.{name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            found.append(cast(Command, module))
    return sorted(found, key=lambda cmd: (cmd.ORDER, cmd.NAME))


#: ``build_parser(only=ALL)`` adds every command's arguments
ALL = "*"


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command named on the command line: its first word that is not an option.

    The top-level parser has no option that takes a value (``-h``, ``--version``), so
    the first such word is the command (or a typo argparse reports as an invalid choice).
    """
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(only: str | None = ALL) -> argparse.ArgumentParser:
    """The parser; with ``only`` a command name (or None), only that command's arguments.

    Every command is listed (its name and help line); the arguments, which may need the
    command's imports (defaults shown in its help), are added for ``only`` (default
    :data:`ALL`: every command, as tests and documentation want it).
    """
    parser = argparse.ArgumentParser(
        prog="review-gate",
        description=(
            "A merge gate for language-model code review. It accepts a reviewer's answer only "
            "when it is complete (MC1 length, SHA-256, END sentinel, provider end marker), "
            "well-formed (exactly one fenced JSON verdict), bound (diff_sha, policy_version), "
            "read whole (the read words) and positive. Nothing else passes."
        ),
        epilog=(
            "exit codes: 0 pass, 1 fail, 2 usage error, 3 needs_human / incomplete / refused, "
            "130 interrupted (Ctrl-C). Run 'review-gate COMMAND --help' for each command."
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
        if only in (ALL, cmd.NAME):
            cmd.add_arguments(child)
        child.set_defaults(_run=cmd.run)
    return parser


def _child(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser | None:
    """The sub-command's own parser (for its usage line in an error), or None."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name or "")
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def unknown_option(child: argparse.ArgumentParser, words: Sequence[str]) -> str | None:
    """The first ``--option`` in ``words`` that ``child`` does not know (nor abbreviates),
    with the option it most likely meant; None when every one is known.

    Checked before parsing, so ``review --diff-file x`` names ``--diff-file`` instead of
    reporting the missing ``--diff`` it was meant to be.
    """
    options = child._option_string_actions
    known = [opt for opt in options if opt.startswith("--")]
    for word in words:
        if word == "--":
            return None
        name = word.partition("=")[0]
        if len(word) > 1 and word[0] == "-" and word[1] not in "-0123456789.":
            if word[:2] in options:  # a short option, its value attached or not
                continue
            return f"unrecognized argument: {word[:2]}"
        if not name.startswith("--") or any(opt.startswith(name) for opt in known):
            continue
        import difflib  # only an unknown option is told what it meant

        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        meant = f" (did you mean {close[0]}?)" if close else ""
        return f"unrecognized argument: {name}{meant}"
    return None


def parse(parser: argparse.ArgumentParser, words: Sequence[str]) -> argparse.Namespace:
    """Parse ``words``; an unknown option is reported with the sub-command's usage line
    (argparse would show the top-level one), naming the option. Exits 2 as argparse does."""
    command = chosen_command(words)
    child = _child(parser, command)
    if child is not None and command is not None:
        rest = list(words)[list(words).index(command) + 1 :]
        problem = unknown_option(child, rest)
        if problem is not None:
            child.error(problem)
    args, extra = parser.parse_known_args(words)
    if extra:
        (child or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=chosen_command(words))
    args = parse(parser, words)  # --version and --help end here

    with redact.scope():  # a command registers the secrets it reads (gate.safe.redact.remember)
        return _dispatch(parser, args)


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
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
        say(f"review-gate {args.command}: interrupted (Ctrl-C); nothing was decided", err=True)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.BLOCKED
    except Exception as err:  # noqa: BLE001 - a bug must block, never read as "fail" (exit 1)
        say(
            f"review-gate {args.command}: internal error {type(err).__name__}: {err}; "
            "this is a bug in review-gate, please report it (nothing was passed)",
            err=True,
        )
        return ExitCode.BLOCKED


def entry() -> int:
    """The ``review-gate`` program (and ``python -m gate``): :func:`main`, in a process that
    ends right after it.

    ``gc.freeze()`` once :func:`main` returns, which only a process about to exit may do
    (tests that call :func:`main` in-process keep the collector as it was): the
    interpreter's final collections would otherwise walk every object of the run only for
    the process to free them (about 3% of a ``review``'s instructions). Nothing is left
    unfinished by it: files are closed by ``with`` or on their last reference, and
    ``atexit`` handlers and the flush of standard output and error still run.

    Young collections keep Python's pace: a threshold of 10,000 for the whole run (not
    only while the modules load) let the cyclic garbage of a review's chunks pile up, and
    raised the peak RSS of a 20 MiB diff by ~25 MiB (164 to 189 MiB, bench/large_diff.py's
    workload), a cost that grows with the diff.
    """
    try:
        return main()
    finally:
        gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(entry())
