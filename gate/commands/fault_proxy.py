"""``review-gate fault-proxy``: run the fault-injecting TCP proxy in the foreground."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.lab.faults import ConnectionRecord, Fault

NAME = "fault-proxy"
HELP = "forward a server's response with a cut, a flipped byte, a stall or a reseal"
ORDER = 40
DESCRIPTION = """\
A TCP proxy for trying the gate against broken responses. It accepts connections on
--listen, connects each one to --upstream, forwards the request unchanged, and forwards
the upstream's response with one fault:

  --cut-after N    forward N response bytes, then close the connection
  --flip-at N      forward everything, with response byte N flipped (xor 0x01)
  --stall-after N  forward N response bytes, then send nothing and hold the connection
  --reseal         rewrite an MC1 answer ("verdict": "fail" becomes "pass") and seal it
                   again with a correct length and SHA-256, keeping every other header:
                   what a rewriting intermediary without the service's key can do (only
                   reviewer.public_key catches it)

Response bytes count from the first byte the upstream sends (HTTP headers included).
Point a reviewer's base URL at the proxy, e.g.
  review-gate fault-proxy --listen 127.0.0.1:9000 --upstream api.example:80 --cut-after 300
  review-gate review --diff change.diff --base-url http://127.0.0.1:9000/v1 ...
The proxy speaks plain TCP: use it with http:// upstreams (a local server, or an
OpenAI-compatible server such as Ollama). Stop it with Ctrl-C, or pass --once.
"""


def _offset(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a byte offset (0 or more), not {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 3600], not {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen", required=True, metavar="HOST:PORT", help="address to accept on (port 0: any)"
    )
    parser.add_argument(
        "--upstream", required=True, metavar="HOST:PORT", help="server to forward to"
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--cut-after", type=_offset, metavar="N", help="close after N bytes")
    group.add_argument("--flip-at", type=_offset, metavar="N", help="flip response byte N")
    group.add_argument("--stall-after", type=_offset, metavar="N", help="stall after N bytes")
    group.add_argument(
        "--reseal", action="store_true", help="rewrite an MC1 answer and seal it again, no key"
    )
    parser.add_argument("--once", action="store_true", help="serve one connection, then exit")
    parser.add_argument(
        "--stall-seconds",
        type=_seconds,
        default=300.0,
        metavar="S",
        help="how long a stall holds the connection (default 300)",
    )


def fault_from_args(args: argparse.Namespace) -> Fault:
    from gate.errors import UsageError
    from gate.lab.faults import Fault, FaultKind

    if args.cut_after is not None:
        return Fault(FaultKind.CUT, args.cut_after)
    if args.flip_at is not None:
        return Fault(FaultKind.FLIP, args.flip_at)
    if args.stall_after is not None:
        return Fault(FaultKind.STALL, args.stall_after)
    if args.reseal:
        return Fault(FaultKind.RESEAL)
    raise UsageError("choose one fault: --cut-after N, --flip-at N, --stall-after N or --reseal")


def report(record: ConnectionRecord) -> None:
    print(
        f"fault-proxy: connection {record.number}: request {record.request_bytes} bytes, "
        f"response {record.upstream_bytes} bytes in, {record.client_bytes} bytes out, "
        f"{record.outcome}",
        file=sys.stderr,
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    from gate.errors import ExitCode
    from gate.lab.faults import FaultProxy, parse_hostport

    listen = parse_hostport(args.listen, what="--listen")
    upstream = parse_hostport(args.upstream, what="--upstream")
    fault = fault_from_args(args)
    proxy = FaultProxy(
        upstream,
        fault,
        listen=listen,
        once=args.once,
        stall_seconds=args.stall_seconds,
        capture_limit=0,
        max_records=1,
        on_close=report,
    )
    host, port = proxy.address
    print(
        f"fault-proxy: listening on {host}:{port}, forwarding to {upstream[0]}:{upstream[1]}, "
        f"{fault.describe()}{' (one connection)' if args.once else ''}",
        file=sys.stderr,
        flush=True,
    )
    try:
        proxy.serve()
    except KeyboardInterrupt:  # Ctrl-C is how a long-running proxy is meant to end
        print("fault-proxy: stopped", file=sys.stderr)
    return ExitCode.PASS
