"""``review-gate review``: a full local review of a diff file, without GitHub."""

from __future__ import annotations

import argparse
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gate.config.model import Config
    from gate.decide.attempt import Attempt
    from gate.decide.decision import Decision
    from gate.diff import Coverage
    from gate.errors import ConfigError, UsageError
    from gate.review.carry import Book
    from gate.review.context import HeadFiles
    from gate.review.cost import CostReport
    from gate.review.result import ChunkReview, ReviewResult

NAME = "review"
ORDER = 30
HELP = "review a diff file with a reviewer model, locally (no GitHub)"
DESCRIPTION = """\
Send a diff to the configured reviewer and decide exactly as the action does.
The config's include/exclude and max_diff_bytes choose the files sent: with none
left, the model is not called, and the result is a pass when every file is a binary
asset or excluded by the config (no code changed, nothing in scope; nothing_in_scope:
block makes the latter block), else needs_human (nothing_reviewed);
with files left out for size or as binary, a pass becomes needs_human
(partial_coverage) unless allow_partial_coverage. A diff larger than one request
is reviewed in chunks (each bound to its own bytes; a pass needs every chunk to
pass), and max_cost (--max-cost) is checked before any request. The answer must arrive whole
(provider end marker, finish reason stop, sealed into an MC1 envelope), hold
exactly one ```json verdict, repeat the SHA-256 of the bytes sent and the policy
version, and be a confident pass. Settings come from
--config (else the built-in settings), then the options below. The API key is
read from the environment variable the provider uses (OPENAI_API_KEY,
ANTHROPIC_API_KEY, GEMINI_API_KEY, REVIEW_GATE_API_KEY) or --api-key-env.

Each attempt is reported on standard error as it ends; the decision, in full, on
standard output (and a last hint line on standard error when the reviewer could
not be reached at all).
exit codes: 0 pass, 1 fail, 2 usage error, 3 needs_human or incomplete.

examples:
  review-gate review --diff change.diff --model gpt-4o-mini
  review-gate review --diff change.diff --provider anthropic --model claude-sonnet-4-5 --json
  review-gate review --diff change.diff --base-url http://127.0.0.1:11434/v1 --model llama3.1 \\
      --certificate cert.json --save-response raw.bin
  review-gate review --diff change.diff --model gpt-4o-mini --commit $(git rev-parse HEAD) \\
      --certificate cert.json --statement cert.statement.json --sarif findings.sarif
"""

#: The largest diff file read; max_diff_bytes (the config) decides what is sent.
MAX_DIFF_FILE_BYTES = 256 * 1024 * 1024

# CLI option (dest) -> the kebab-case input name gate.config.inputs.apply_inputs knows.
_OVERRIDES = {
    "provider": "provider",
    "model": "model",
    "base_url": "base-url",
    "api_key_env": "api-key-env",
    "max_tokens": "max-tokens",
    "timeout": "timeout",
    "attempts": "attempts",
    "policy_version": "policy-version",
    "min_confidence": "min-confidence",
    "agreement": "agreement",
    "max_cost": "max-cost",
    "deployment": "deployment",
    "api_version": "api-version",
    "auth": "auth",
    "region": "region",
    "project": "project",
    "location": "location",
}
#: The clouds' settings (issue 13) and the MC1 service's key (issue 33): option, metavar, help.
_CLOUD_OPTIONS = (
    (
        "--public-key",
        "FILE",
        "mc1: the service's Ed25519 public key (PEM); every answer must carry its signature",
    ),
    ("--deployment", "NAME", "azure-openai: the deployment (default: the v1 path)"),
    ("--api-version", "VERSION", "azure-openai: the api-version query parameter"),
    ("--auth", "KIND", "azure-openai: api-key (default) or entra (a bearer token)"),
    ("--region", "REGION", "bedrock: the AWS region (default: AWS_REGION)"),
    ("--project", "ID", "vertex: the Google Cloud project id"),
    ("--location", "LOCATION", "vertex: e.g. us-east5 or global"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gate.config.model import Config
    from gate.providers import DEFAULT_BASE_URLS, PROVIDERS

    defaults = Config()
    rev = defaults.reviewer

    def fallback(value: object) -> str:
        return f"(default: from --config, else {value})"

    parser.add_argument("--diff", required=True, metavar="FILE", help="the diff ('-' for stdin)")
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="a review-gate YAML config file (default: none: the built-in settings)",
    )
    parser.add_argument(
        "--provider",
        help=f"{' | '.join(PROVIDERS)} {fallback(rev.provider)}",
    )
    parser.add_argument(
        "--model",
        help="model name, e.g. gpt-4o-mini (default: from --config; needed for openai, "
        "anthropic and gemini)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="API base URL, or the MC1 endpoint (default: from --config, else the "
        f"provider's public API, e.g. {DEFAULT_BASE_URLS[rev.provider]}; mc1 has none)",
    )
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable that holds the API key (default: from --config, else the "
        "provider's, e.g. OPENAI_API_KEY)",
    )
    for option, metavar, text in _CLOUD_OPTIONS:
        parser.add_argument(option, metavar=metavar, help=f"{text}; from --config when given")
    parser.add_argument(
        "--max-tokens",
        metavar="N",
        help=f"the reviewer's output token budget {fallback(rev.max_tokens)}",
    )
    parser.add_argument(
        "--timeout",
        metavar="S",
        help=f"total seconds allowed per attempt {fallback(f'{rev.deadline:g}')}",
    )
    parser.add_argument(
        "--attempts",
        metavar="N",
        help=f"attempts for bytes that did not arrive {fallback(rev.attempts)}",
    )
    parser.add_argument(
        "--policy-version",
        metavar="V",
        help=f"policy version the verdict binds to {fallback(defaults.policy_version)}",
    )
    parser.add_argument(
        "--min-confidence",
        metavar="F",
        help=f"lowest confidence a pass may have {fallback(f'{defaults.min_confidence:g}')}",
    )
    parser.add_argument(
        "--agreement",
        metavar="K",
        help="ask the reviewer K times (1 to 5) on fresh connections; a pass needs K passes, "
        f"a disagreement is needs_human (unstable) {fallback(defaults.agreement)}",
    )
    parser.add_argument(
        "--max-cost",
        metavar="AMOUNT",
        help="the most one review may cost, estimated before any request (every chunk x "
        "attempts x agreement at the full prompt and max_tokens, priced by the config's "
        "pricing for the model); above it, or with no price, needs_human (over_budget) and "
        "the model is not called (default: from --config, else no limit)",
    )
    _add_reads(parser)
    _add_outputs(parser)


def _add_reads(parser: argparse.ArgumentParser) -> None:
    """What the review reads besides the diff: earlier chunk answers, the head's files."""
    from gate.config.model import CONTEXTS

    parser.add_argument(
        "--carry",
        action="append",
        default=[],
        metavar="CERT",
        help="incremental review: the certificate of an earlier review in chunks of this "
        "change (repeatable); a chunk whose exact bytes and question (policy, config, model, "
        "prompt template) it answered with a bound pass is carried, not sent again, and a "
        "bound fail stands; every other chunk is sent. Without it every chunk is sent "
        "(default: none; ignored with incremental: off)",
    )
    parser.add_argument(
        "--context",
        choices=CONTEXTS,
        help="what the reviewer is shown besides the diff: diff, or files (also the new "
        "version of each changed file, read from git at --commit in --repo, within the "
        "config's context_bytes) (default: from --config, else diff)",
    )
    parser.add_argument(
        "--repo",
        default=".",
        metavar="PATH",
        help="the git repository --commit is in, read with context: files (default: the "
        "current folder)",
    )


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    """Where the decision, the certificate and its companions are written."""
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    parser.add_argument(
        "--certificate",
        metavar="PATH",
        help="write the audit certificate here (checked before the reviewer is called)",
    )
    parser.add_argument(
        "--statement",
        metavar="PATH",
        help="also write the in-toto statement of the decision here, built from the written "
        "certificate (needs --certificate; sign it with actions/attest, see docs/security.md)",
    )
    parser.add_argument(
        "--commit",
        metavar="SHA",
        help="the head commit the diff is of: recorded in the certificate and named as the "
        "statement's subject (default: none; the statement then names the diff only)",
    )
    parser.add_argument(
        "--sarif",
        metavar="FILE",
        help="also write the findings as SARIF 2.1.0 here (for code scanning); a file that "
        "cannot be written is reported and leaves the decision unchanged",
    )
    parser.add_argument(
        "--save-response",
        metavar="PATH",
        help="save the last attempt's response body exactly as received, after HTTP chunked "
        "decoding, complete or not, an echoed key redacted (checked before the reviewer is "
        "called)",
    )


def load(args: argparse.Namespace) -> Config:
    """The config file (or defaults) with the command-line overrides applied."""
    from dataclasses import replace

    from gate.config.inputs import apply_inputs
    from gate.config.load import load_config
    from gate.config.model import default_config
    from gate.errors import ConfigError

    try:
        config = load_config(args.config) if args.config else default_config()
        given = {
            name: str(getattr(args, dest))
            for dest, name in _OVERRIDES.items()
            if getattr(args, dest) is not None
        }
        if getattr(args, "public_key", None) is not None:
            from gate.commands._io import read_public_key

            given["public-key"] = read_public_key(args.public_key).decode("utf-8", "replace")
        config = apply_inputs(config, given)
    except ConfigError as err:
        raise usage_from(err) from err
    if getattr(args, "context", None):  # a config key, not an action input
        return replace(config, context=args.context)
    return config


def check_base_url(config: Config, args: argparse.Namespace) -> None:
    """A base URL that is no URL is a one-line usage error naming where it came from."""
    from gate.errors import UsageError
    from gate.reviewers.settings import base_url_problem, shown_url

    url = config.reviewer.base_url
    problem = None if url is None else base_url_problem(url)
    if url is None or problem is None:
        return
    where = "--base-url" if args.base_url is not None else f"reviewer.base_url in {args.config}"
    raise UsageError(
        f"{where} {shown_url(url)!r}: {problem}; pass e.g. --base-url http://127.0.0.1:11434/v1",
        reason="bad_base_url",
    )


def check_is_diff(name: str, data: bytes) -> None:
    """A ``--diff`` that is no git diff is a usage error saying what it looks like."""
    from gate.diff import not_a_diff
    from gate.errors import UsageError

    looks = not_a_diff(data)
    if looks is not None:
        shown = "standard input" if name == "-" else repr(name)
        raise UsageError(
            f"--diff {shown} is not a unified diff: it looks like {looks}; make one with "
            "git diff, e.g. git diff main...HEAD > change.diff",
            reason="not_a_diff",
        )


def api_key_for(config: Config, *, explicit_env: bool) -> str | None:
    """The API key from the environment; a missing key that is needed is a usage error."""
    from gate.errors import UsageError
    from gate.reviewers.settings import ReviewerSettings, needs_api_key
    from gate.safe import redact

    env_name = config.reviewer.key_env()
    value = os.environ.get(env_name)
    redact.remember(value)  # before the check: no message may show it
    key = redact.checked_key(value, source=f"the environment variable {env_name}")
    if key is None:
        probe = ReviewerSettings.from_config(config.reviewer, None)
        if explicit_env or needs_api_key(probe):
            raise UsageError(
                f"{env_name} is not set; export it or pass --api-key-env NAME",
                reason="missing_api_key",
            )
    return key


# Attempt reasons (gate.reviewers) that mean the endpoint never answered at all.
_NO_ANSWER = frozenset({"connect_error", "connect_timeout", "network_error"})


def unreachable_hint(result: ReviewResult, base_url: str) -> str | None:
    """One line naming the setting when no byte ever came back from the endpoint."""
    from gate.decide.decision import State

    last = result.outcome.last
    if result.decision.state is not State.INCOMPLETE or last is None:
        return None
    if last.http_status is not None or last.bytes_received or last.reason not in _NO_ANSWER:
        return None
    return (
        f"cannot reach the reviewer at {base_url} ({last.reason}); "
        "check --base-url (reviewer.base_url) and that the server is running"
    )


# The fix in this command's words where the config's names the action's inputs.
_CLI_FIXES = {
    "config_model_missing": "pass --model NAME (or set reviewer.model in --config)",
    "config_base_url_missing": "pass --base-url URL (or set reviewer.base_url in --config)",
    "config_missing": "fix: create it (see examples/review-gate.config.yml) or pass --config "
    "PATH with the right path",
}


def _pass_option(name: str, example: str) -> str:
    given = f"--{name} {example}" if example else f"a valid --{name}"
    return f"pass {given}, or omit it"


def usage_from(err: ConfigError) -> UsageError:
    """A config problem met on the command line, named and fixed the way the user gave it."""
    from gate.errors import UsageError

    message = err.render(setting="--{}".format, correct=_pass_option, fixes=_CLI_FIXES)
    return UsageError(message, reason=err.reason)


def summary_json(
    result: ReviewResult | None,
    cert_sha: str | None,
    *,
    decision: Decision | None = None,
    cert: dict[str, Any] | None = None,
    coverage: Coverage | None = None,
) -> dict[str, Any]:
    """The --json object; ``result`` is None when the run was blocked before any call."""
    from gate.decide.decision import exit_code

    final = decision or (result.decision if result is not None else None)
    record = cert if cert is not None else (result.certificate if result is not None else {})
    assert final is not None
    out = final.to_json()
    out["binding"] = dict(record.get("binding", {}))
    out["attempts"] = [a.to_json() for a in result.outcome.attempts] if result else []
    out["prompt_sha256"] = result.prompt_sha256 if result else None
    out["certificate_sha256"] = cert_sha
    cov = coverage or (result.coverage if result else None)
    out["coverage"] = cov.to_json() if cov is not None else None
    from gate.review.chunked import chunk_rows

    out["chunks"] = chunk_rows(result.chunks) if result else []
    out["exit_code"] = exit_code(final)
    return out


def run(args: argparse.Namespace) -> int:
    from gate.errors import ConfigError

    try:
        return _run(args)
    except ConfigError as err:
        raise usage_from(err) from err


def _check_before_reading(args: argparse.Namespace, config: Config) -> None:
    """What can be refused before the diff is read: the endpoint, the output paths."""
    from gate.commands._io import check_output_path
    from gate.commands._options import endpoint_problems
    from gate.errors import UsageError

    check_base_url(config, args)
    problems = endpoint_problems(config)
    if problems:
        raise UsageError("\n".join(problems), reason="config_base_url_missing")
    check_output_path("--certificate", args.certificate)
    check_output_path("--save-response", args.save_response)
    check_exports(args)
    if config.context == "files" and not args.commit:
        where = "--context files" if args.context else f"context: files in {args.config}"
        raise UsageError(
            f"{where} shows the reviewer the new version of each changed file, read from "
            "git: pass --commit SHA (the head the diff is of) and --repo PATH (the clone "
            "holding it; default: the current folder), or use --context diff",
            reason="context_without_commit",
        )


def head_of(args: argparse.Namespace, data: bytes, config: Config) -> HeadFiles | None:
    """The changed files' text at --commit in --repo with ``context: files`` (a
    :class:`gate.review.context.HeadFiles`), else None."""
    if config.context != "files":
        return None
    from gate.backtest.headfiles import head_files

    return head_files(Path(args.repo), args.commit, data, config)


def _run(args: argparse.Namespace) -> int:
    import os

    from gate.commands._io import read_input, say, say_json
    from gate.commands._options import with_hints
    from gate.config.model import fallback_keys, remember_fallback_keys
    from gate.decide.decision import exit_code
    from gate.errors import Interrupted
    from gate.review import cost
    from gate.review.pipeline import review_diff
    from gate.review.scope import before_any_request, select_diff
    from gate.reviewers.transport import attempt_line
    from gate.safe import untrusted

    config = with_hints(lambda: load(args), provider=args.provider, base_url=args.base_url)
    _check_before_reading(args, config)
    # the whole file: max_diff_bytes chooses files to send, as in the action
    diff = read_input(args.diff, what="diff", limit=MAX_DIFF_FILE_BYTES)
    check_is_diff(args.diff, diff)
    explicit_env = args.api_key_env is not None or config.reviewer.api_key_env is not None
    api_key = api_key_for(config, explicit_env=explicit_env)
    selected = select_diff(diff, config)
    remember_fallback_keys(config, os.environ)  # before any file text: context leaves it out
    head = head_of(args, selected.data, config)  # context: files, from git at --commit
    # nothing in scope (a pass), nothing to review, or files left out that block:
    # decided before any request
    empty = before_any_request(selected.coverage, config)
    if empty is not None:
        return _blocked_before_call(args, empty, selected.data, config, selected.coverage)
    # max_cost: decided before any request
    costly = cost.over_budget(selected.data, config, selected.coverage, head)
    if costly is not None:
        return _blocked_before_call(args, costly, selected.data, config, selected.coverage)
    estimate = cost.preflight(selected.data, config, selected.coverage, head)
    say(untrusted.line(estimate.line()), err=True)
    total = config.reviewer.attempts
    carry = carry_book(args.carry)
    from gate.memory.question import key_for  # the one question key (record, carry, replay)

    ended: list[Attempt] = []

    def report_attempt(attempt: Attempt) -> None:  # live, as each attempt ends
        ended.append(attempt)
        say(attempt_line(attempt, total), err=True)

    keys = fallback_keys(config, os.environ)  # a missing one is named before any call
    from gate.reviewers.heartbeat import Heartbeat  # httpx: only when a request is made

    try:
        # a line at least every 15 s while the reviewer is silent: slow is not hung
        with Heartbeat(lambda line: say(line, err=True)):
            result = review_diff(
                selected.data,
                config,
                api_key=api_key,
                fallback_keys=keys,
                extra_cert=cert_context(args),
                coverage=selected.coverage,
                on_attempt=report_attempt,
                carry=carry,
                question=key_for(selected.data, config, head=head),
                head=head,
            )
    except KeyboardInterrupt as err:  # Ctrl-C: keep what had arrived, then exit 130
        raw = err.raw if isinstance(err, Interrupted) else b""
        return _interrupted(args, selected.data, config, selected.coverage, ended, raw, api_key)
    cert_sha = write_files(args, result, api_key)
    decision = result.decision
    written = write_exports(args, decision, selected.data, config, result.chunks)
    hint = unreachable_hint(result, result.reviewer.base_url)
    spent = cost.cost_of(result.paid_attempts(), config, models=result.paid_models())
    if args.json:
        out = summary_json(result, cert_sha)
        out["cost"] = spent.to_json()
        out["cost_estimate"] = estimate.to_json()
        say_json(out)
    else:
        say("\n".join(decision_lines(decision)))
        if result.chunks:
            say("\n".join(chunk_lines(result)))
        say(cost_line(spent), err=True)
    for note in (*result.notes, *written):
        say(f"note: {untrusted.line(note)}", err=True)
    if hint:  # the last line, where the eye lands after the attempts
        say(f"review-gate review: hint: {hint}", err=True)
    return exit_code(decision)


def write_files(args: argparse.Namespace, result: ReviewResult, api_key: str | None) -> str | None:
    """``--save-response``, then ``--certificate``: the certificate's SHA-256, or None. The
    writer's modules are imported only when a file is asked for."""
    if not (args.save_response or args.certificate):
        return None
    from gate.review import certificate

    if args.save_response:
        certificate.write_response(args.save_response, result.outcome.raw)
    if not args.certificate:
        return None
    secrets = [api_key] if api_key else []
    return certificate.write(args.certificate, result.certificate, secrets=secrets)


def cost_line(spent: CostReport) -> str:
    """``cost: 1234 input + 210 output tokens over 1 paid request, 0.004200 USD``
    (``unknown`` where it is); requests no provider answered are named apart, unpaid."""
    from gate.review.cost import amount

    def known(value: object) -> str:
        return "unknown" if value is None else str(value)

    paid = len(spent.attempts)
    if not paid:
        asked = f"{spent.unbilled} request{'s' * (spent.unbilled != 1)}"
        return (
            f"cost: nothing to pay (none of the {asked} made could be billed: not sent, or "
            "refused with an error status)"
        )
    if spent.price is None:
        total = "unknown (no price for the model: add it under pricing)"
    elif spent.cost is None:
        total = "unknown (an attempt reported no token counts)"
    else:
        total = amount(spent.cost)
    unpaid = f" (and {spent.unbilled} not billed: not sent, or refused)" if spent.unbilled else ""
    return (
        f"cost: {known(spent.input_tokens)} input + {known(spent.output_tokens)} output "
        f"tokens over {paid} paid request{'s' * (paid != 1)}{unpaid}, {total}"
    )


def carry_book(paths: list[str]) -> Book | None:
    """The chunk answers of the certificates named by ``--carry`` (None when none is
    named); a file that is no certificate of a review in chunks is a usage error that
    says which and why."""
    if not paths:
        return None
    from gate.commands._io import read_input
    from gate.errors import UsageError
    from gate.review.carry import Book, CarryError, from_certificate

    items = []
    for path in paths:
        data = read_input(path, what="--carry certificate", limit=MAX_DIFF_FILE_BYTES)
        try:
            book = from_certificate(data, run=os.path.basename(path))
        except CarryError as err:
            raise UsageError(f"--carry {path}: {err.message}") from err
        if not bound_chunk_question(data):
            raise UsageError(
                f"--carry {path}: its chunks' question is not the one its own question key "
                "derives (a certificate written before the chunk question was derived from "
                "the question key, or an edited one): its answers cannot be bound to a "
                "question, so none is carried; review without it"
            )
        items += list(book.entries.values())
    return Book.of(items)


def bound_chunk_question(data: bytes) -> bool:
    """Whether a certificate's ``context.chunks.question`` is the one its own question key
    derives (:meth:`gate.memory.question.QuestionKey.chunk_question` from the recorded
    ``template_sha``): a row that cannot be bound to its question is never trusted."""
    from gate.memory.question import key_of_certificate
    from gate.review.carry import CarryError
    from gate.safe import strictjson

    try:
        cert = strictjson.loads(data, what="the carry certificate", error=CarryError)
    except CarryError:
        return False
    chunks = cert.get("context", {}).get("chunks") if isinstance(cert, dict) else None
    key = key_of_certificate(cert) if isinstance(cert, dict) else None
    if key is None or not isinstance(chunks, dict):
        return False
    template, named = chunks.get("template_sha"), chunks.get("question")
    if not (isinstance(template, str) and isinstance(named, str) and template and named):
        return False
    return key.chunk_question(template) == named


def chunk_lines(result: ReviewResult) -> list[str]:
    """One line per chunk when the diff was reviewed in chunks (none otherwise); a carried
    chunk names the run its answers came from (made inert: it is read from a record)."""
    from gate.review.chunked import chunk_rows
    from gate.safe import untrusted

    return [
        f"  chunk {row['chunk']}/{row['of']}: {row['files']} files, {row['bytes']} bytes, "
        f"{row['state']} ({row['reason']})"
        + (f", carried from {untrusted.line(str(row['carried']))}" if row["carried"] else "")
        for row in chunk_rows(result.chunks)
    ]


def decision_lines(decision: Decision) -> list[str]:
    """The decision for standard output, in full (the status text stops at 140 characters).

    Both texts may hold the reviewer's words: each is one safe line
    (:func:`gate.safe.untrusted.line`), so a reason cannot start a line of its own.
    """
    from gate.safe import untrusted

    description, detail = untrusted.line(decision.description), untrusted.line(decision.detail)
    if not detail or detail in description:
        return [description]
    if description.endswith("..."):  # the status text was cut: show the whole cause instead
        return [f"{decision.state} ({decision.reason}): {detail}"]
    return [description, f"  {detail}"]


def _interrupted(
    args: argparse.Namespace,
    data: bytes,
    config: Config,
    coverage: Coverage,
    ended: list[Attempt],
    raw: bytes,
    api_key: str | None,
) -> int:
    """Ctrl-C during the review: the certificate (marked ``interrupted``, with the attempts
    that had ended) and ``--save-response`` (the bytes of the attempt under way) are
    written, and the exit code is 130. Nothing was decided, so the state is incomplete."""
    import hashlib

    from gate.commands._io import say
    from gate.decide.decision import State, blocked
    from gate.errors import ExitCode
    from gate.review import certificate
    from gate.review.result import blocked_certificate

    decision = blocked(
        State.INCOMPLETE,
        "interrupted",
        f"interrupted (Ctrl-C) after {len(ended)} ended attempts and {len(raw)} bytes of the "
        "next; nothing was decided: run the review again",
    )
    context = {
        **cert_context(args),
        "interrupted": True,
        "attempts_ended": [a.to_json() for a in ended],
        "response_bytes": len(raw),
        "response_sha256": hashlib.sha256(raw).hexdigest(),
    }
    cert = blocked_certificate(decision, data, config, coverage=coverage, extra_cert=context)
    secrets = [api_key] if api_key else []
    if args.save_response:
        certificate.write_response(args.save_response, raw, secrets=secrets)
        say(f"saved the {len(raw)} bytes that had arrived to {args.save_response}", err=True)
    if args.certificate:
        certificate.write(args.certificate, cert, secrets=secrets)
        say(f"wrote the certificate (interrupted) to {args.certificate}", err=True)
    say(f"review-gate review: {decision.description}", err=True)
    return ExitCode.INTERRUPTED


def _blocked_before_call(
    args: argparse.Namespace, decision: Decision, data: bytes, config: Config, coverage: Coverage
) -> int:
    """Report a run the selection blocked: no reviewer call was made."""
    from gate.commands._io import say, say_json
    from gate.decide.decision import exit_code
    from gate.review import certificate
    from gate.review.result import blocked_certificate
    from gate.safe import untrusted

    cert = blocked_certificate(
        decision, data, config, coverage=coverage, extra_cert=cert_context(args)
    )
    cert_sha = certificate.write(args.certificate, cert) if args.certificate else None
    written = write_exports(args, decision, data, config, ())
    if args.json:
        say_json(summary_json(None, cert_sha, decision=decision, cert=cert, coverage=coverage))
    else:
        say("\n".join(decision_lines(decision)))
    for note in written:
        say(f"note: {untrusted.line(note)}", err=True)
    return exit_code(decision)


def check_exports(args: argparse.Namespace) -> None:
    """--statement, --sarif and --commit: refused before any token is spent."""
    from gate.commands._io import check_output_path
    from gate.diff import COMMIT_ID
    from gate.errors import UsageError

    if args.statement is not None and not args.certificate:
        raise UsageError(
            "--statement needs --certificate: the statement names the certificate's "
            "SHA-256; pass --certificate PATH too",
            reason="statement_without_certificate",
        )
    if args.commit is not None and not COMMIT_ID.fullmatch(args.commit):
        raise UsageError(
            f"--commit {args.commit[:80]!r} is not a full commit id (40 or 64 lowercase hex "
            "digits); pass e.g. --commit $(git rev-parse HEAD)",
            reason="bad_commit",
        )
    check_output_path("--statement", args.statement)
    check_output_path("--sarif", args.sarif)


def cert_context(args: argparse.Namespace) -> dict[str, Any]:
    """The command's part of the certificate's context (the commit, when given)."""
    context: dict[str, Any] = {"command": "review"}
    if args.commit is not None:
        context["commit"] = args.commit
    return context


def write_exports(
    args: argparse.Namespace,
    decision: Decision,
    data: bytes,
    config: Config,
    chunks: Sequence[ChunkReview],
) -> list[str]:
    """The statement (from the certificate as written) and the SARIF log, when asked.

    Neither can change the decision: a file that cannot be written is a note on
    standard error, and the exit code stays the decision's."""
    from gate.errors import GateError

    notes: list[str] = []
    if args.statement:
        from gate.export import statement  # each export's modules only when it is asked

        try:
            built = statement.build(Path(args.certificate).read_bytes())
            statement.write(args.statement, built)
        except (GateError, OSError) as err:
            notes.append(f"no statement written to {args.statement}: {_cause(err)}")
    if args.sarif:
        from gate.action.findings_report import findings_of
        from gate.export import sarif

        try:
            log = sarif.build(
                findings_of(decision, data, chunks),
                state=str(decision.state),
                reason=decision.reason,
                policy_version=config.policy_version,
                diff_sha=hashlib.sha256(data).hexdigest(),
                commit=args.commit,
            )
            sarif.write(args.sarif, log)
        except (GateError, OSError) as err:
            notes.append(f"no SARIF written to {args.sarif}: {_cause(err)}")
    return notes


def _cause(err: Exception) -> str:
    from gate.errors import GateError

    return err.message if isinstance(err, GateError) else f"{type(err).__name__}: {err}"
