"""``review-gate serve``: a reviewer service that seals and signs its answers (gate/serve/)."""

from __future__ import annotations

import argparse

NAME = "serve"
ORDER = 75
HELP = "a reviewer service for the mc1 provider: forwards to a model server, signs MC1"
DESCRIPTION = """\
Serves POST /review for the gate's mc1 provider: forwards the prompt to an
OpenAI-compatible model server (--upstream, e.g. llama.cpp or vLLM at
http://127.0.0.1:8080/v1, Ollama at http://127.0.0.1:11434/v1), reads its answer with the
gate's own completeness checks, and answers with an MC1 envelope signed with Ed25519.
An answer that is not whole (cut, out of tokens, filtered, a prompt the server cut, empty)
is never sealed: it is an HTTP error the gate reads as that end.

  review-gate serve --new-key reviewer.key        # once: the key pair, prints its key id
  export REVIEW_GATE_API_KEY=...                   # the bearer token the gate sends
  review-gate serve --key reviewer.key --upstream http://127.0.0.1:8080/v1

The token comes from the environment (--token-env, default REVIEW_GATE_API_KEY) or a
file (--token-file), never from the command line. The service listens on 127.0.0.1
unless --host says otherwise; GET /healthz reports it. SIGTERM stops it gracefully:
requests in flight get --grace seconds, then are cut (never sealed).

exit codes: 0 stopped by SIGTERM or Ctrl-C (or --new-key done), 2 usage or start-up
error (the message names the setting).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gate.reviewers.settings import OUTPUT_GRAMMARS
    from gate.serve import config as c

    add = parser.add_argument
    add("--new-key", metavar="PATH", help="make a key pair at PATH and PATH.pub, then exit")
    add("--key", metavar="PATH", help="the private key made by --new-key")
    add("--upstream", metavar="URL", help="the model server's OpenAI-compatible root (…/v1)")
    add("--model", help="the upstream model to use (default: the model the gate names)")
    add("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    add("--port", type=int, default=c.PORT, help=f"the port (default: {c.PORT}; 0: any free)")
    add(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name clients may use besides the loopback ones (repeatable)",
    )
    add("--token-env", default=c.TOKEN_ENV, metavar="VAR", help="the token's variable")
    add("--token-file", metavar="PATH", help="read the token from this file instead")
    add("--upstream-key-env", metavar="VAR", help="the variable holding the upstream's API key")
    limits = (
        ("--max-body-bytes", int, c.MAX_BODY_BYTES, "largest request body"),
        ("--max-answer-bytes", int, c.MAX_ANSWER_BYTES, "most of an upstream answer read"),
        ("--max-concurrent", int, c.MAX_CONCURRENT, "requests forwarded at once (then 503)"),
        ("--max-connections", int, c.MAX_CONNECTIONS, "connections open at once (then 503)"),
        ("--deadline", float, c.DEADLINE_S, "seconds for one upstream answer in all"),
        ("--connect-timeout", float, c.CONNECT_TIMEOUT_S, "seconds to connect upstream"),
        ("--read-timeout", float, c.READ_TIMEOUT_S, "seconds without a byte from upstream"),
        ("--grace", float, c.GRACE_S, "seconds in-flight requests get at SIGTERM"),
    )
    for flag, kind, default, what in limits:
        metavar = "N" if kind is int else "SECONDS"
        add(flag, type=kind, default=default, metavar=metavar, help=f"{what} (default: {default})")
    add(
        "--output-grammar",
        choices=OUTPUT_GRAMMARS,
        default="none",
        help="ask the upstream for the verdict's shape: gbnf (llama.cpp), vllm (default: none)",
    )
    add(
        "--context-window",
        type=_window,
        default="off",
        metavar="KIND|TOKENS",
        help="the upstream's context, asked before each call (llama.cpp, vllm, ollama, auto) "
        "or given in tokens: a prompt that cannot fit is refused, not sent (default: off)",
    )
    add("--no-upstream-check", action="store_true", help="skip GET /models at start-up")


def _window(value: str) -> str | int:
    return int(value) if value.strip().isdigit() and value.isascii() else value.strip()


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gate.commands._io import say
    from gate.errors import ExitCode, UsageError

    if args.new_key:
        from gate.serve.keys import new_key, public_path

        path = Path(args.new_key)
        ident = new_key(path)
        say(f"wrote {path} (private, mode 0600) and {public_path(path)} (public)", err=True)
        say(ident)
        return ExitCode.PASS
    if not args.key or not args.upstream:
        raise UsageError("serve needs --key PATH and --upstream URL (or --new-key PATH)")
    return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    import os
    import signal
    import threading
    from datetime import UTC, datetime
    from pathlib import Path

    from gate.commands._io import say
    from gate.errors import ExitCode
    from gate.safe import redact
    from gate.serve.config import ServeConfig, read_token
    from gate.serve.life import run, start

    token = read_token(env=args.token_env, file=args.token_file)
    upstream_key = None
    if args.upstream_key_env:
        upstream_key = redact.checked_key(
            os.environ.get(args.upstream_key_env), source=args.upstream_key_env
        )
    redact.remember(token, upstream_key)
    config = ServeConfig(
        upstream=args.upstream,
        key_path=Path(args.key),
        token=token,
        host=args.host,
        port=args.port,
        allowed_hosts=tuple(args.allow_host),
        model=args.model,
        upstream_key=upstream_key,
        max_body_bytes=args.max_body_bytes,
        max_answer_bytes=args.max_answer_bytes,
        max_concurrent=args.max_concurrent,
        max_connections=args.max_connections,
        deadline=args.deadline,
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
        grace=args.grace,
        output_grammar=args.output_grammar,
        context_window=args.context_window,
    )

    def log(line: str) -> None:
        say(f"{datetime.now(UTC).isoformat(timespec='milliseconds')} serve: {line}", err=True)

    service, server = start(config, log, check_upstream=not args.no_upstream_check)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    host, port = str(server.server_address[0]), int(server.server_address[1])
    shown = f"[{host}]" if ":" in host else host
    log(f"listening on http://{shown}:{port}/review, key {service.key_id}")
    run(service, server, stop)
    return ExitCode.PASS
