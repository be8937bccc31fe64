"""``review-gate seal``: wrap a file's bytes in an MC1 envelope."""

from __future__ import annotations

import argparse

NAME = "seal"
ORDER = 22
HELP = "wrap a file's bytes in an MC1 envelope"
DESCRIPTION = """\
Write the MC1 envelope of FILE's exact bytes:

    MC1 <len> <sha256>\\n<content>\\nEND\\n

A reviewer service can seal its answer this way so the gate can prove it
arrived whole. Example:

    review-gate seal answer.md -o answer.mc1
    review-gate verify answer.mc1 --diff change.diff --policy-version 1
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="content to seal ('-' for standard input)")
    parser.add_argument(
        "-o", "--output", metavar="PATH", help="write here (atomically) instead of stdout"
    )


def run(args: argparse.Namespace) -> int:
    from gate.commands._io import check_output_path, read_input, write_output
    from gate.decide.envelope import seal
    from gate.errors import ExitCode

    check_output_path("--output", args.output)
    content = read_input(args.file, what="content")
    write_output(args.output, seal(content))
    return ExitCode.PASS
