"""``review-gate demo``: see the gate refuse every broken answer, on this machine, in seconds.

The scenarios live in :mod:`gate.lab.demo`; this command parses its options, runs
them and maps the result to an exit code.
"""

from __future__ import annotations

import argparse

NAME = "demo"
ORDER = 10
HELP = "watch the gate block cut, corrupted and malformed answers (local, no API key)"
DESCRIPTION = """\
Runs the whole review pipeline against a local reviewer on 127.0.0.1 that speaks the
OpenAI streaming dialect, with a bundled sample diff, and breaks the answer on purpose:

  healthy         the reviewer answers a bound pass verdict          -> pass
  cut             the connection is cut mid-answer (every attempt)    -> incomplete
  flip-sha        one byte of the verdict's diff_sha is flipped       -> needs_human
  flip-done       one byte of the data: [DONE] end marker is flipped  -> incomplete
  stall           the answer stops mid-stream (read timeout)          -> incomplete
  echoed-example  the model echoes an example verdict first           -> needs_human
  reject          the model answers a bound fail verdict              -> fail
  out-of-tokens   the model stops at its token limit                  -> incomplete

It prints one row per case (what was sent, what arrived, the decision and why; --json
for every detail in full) and writes each case's audit certificate, and the sample
diff as sample.diff, to --out (default ./review-gate-demo), so each certificate
re-verifies offline:
  review-gate verify --from-certificate review-gate-demo/healthy.json \\
      --diff review-gate-demo/sample.diff --policy-version 1
--provider runs the same cases in another dialect (e.g. --provider bedrock: AWS
event-stream frames, where a flipped byte anywhere is caught by a CRC, so flip-sha is
incomplete there; flip-end corrupts that dialect's own end marker).
Needs no API key and no network beyond 127.0.0.1; retry pauses are shortened.

--serve keeps the demo's local reviewer up instead, so `review` can be tried without
a key: it prints its base URL and the command to run, answers by the model each request
names (healthy, cut, fail, echo), and stays up until Ctrl-C (or --for SECONDS):
  review-gate demo --serve
  review-gate review --diff review-gate-demo/sample.diff \
      --base-url http://127.0.0.1:PORT/v1 --model healthy

exit codes: 0 every case got its expected decision (--serve: stopped by Ctrl-C or
--for), 3 otherwise, 2 usage error.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gate.providers import PROVIDERS, Provider

    default = Provider.OPENAI.value  # the demo's dialect unless --provider says otherwise
    parser.add_argument(
        "--out",
        metavar="DIR",
        default="review-gate-demo",
        help="folder for the certificates and sample.diff (default: ./review-gate-demo)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--provider",
        choices=PROVIDERS,
        default=default,
        help=f"the dialect the local reviewer speaks (default: {default})",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="keep the local reviewer up (OpenAI dialect) for review-gate review to try; "
        "Ctrl-C stops it",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        metavar="N",
        help="with --serve: the port on 127.0.0.1 (default: any free port)",
    )
    parser.add_argument(
        "--for",
        dest="seconds",
        type=float,
        metavar="SECONDS",
        help="with --serve: stop after this many seconds (default: until Ctrl-C)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gate.commands._io import say, say_json
    from gate.errors import ExitCode
    from gate.lab.demo import run_demo, summary_json, text_report

    if args.serve:
        return _serve(args)
    if args.seconds is not None or args.port:
        from gate.errors import UsageError

        raise UsageError("--port and --for go with --serve")
    # said first: the one folder it writes (the certificates and the sample diffs)
    say(
        f"review-gate demo: writing only to {Path(args.out).resolve()}/ (--out DIR to change)",
        err=True,
    )
    demo = run_demo(Path(args.out), args.provider)
    if args.json:
        say_json(summary_json(demo.outcomes, demo.out), indent=2)
    else:
        say("\n".join(text_report(demo)))
    return ExitCode.PASS if demo.ok else ExitCode.BLOCKED


def _serve(args: argparse.Namespace) -> int:
    import contextlib
    from pathlib import Path

    from gate.commands._io import say
    from gate.errors import ExitCode, UsageError
    from gate.lab.serve import serve

    if args.provider != "openai" or args.json:
        raise UsageError("--serve speaks the openai dialect, as text: drop --provider and --json")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be within 0-65535, got {args.port}")
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how --serve is meant to end
        serve(Path(args.out), port=args.port, seconds=args.seconds, report=say)
    say("review-gate demo: the local reviewer stopped", err=True)
    return ExitCode.PASS
