"""``review-gate verify``: decide on a saved reviewer response, offline."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from gate.decide.attempt import Attempt
    from gate.decide.decision import Binding, Decision

NAME = "verify"
ORDER = 20
HELP = "decide on a saved MC1 response (pass/fail/needs_human/incomplete)"
DESCRIPTION = """\
Verify a reviewer response sealed as an MC1 envelope and apply the decision
table, exactly as the action does, with no network. A run's certificate holds
its envelope: --from-certificate CERT re-decides from it (the raw stream that
review --save-response writes is the provider's own bytes, not an envelope).

  1. completeness: header, declared length, SHA-256, END sentinel, UTF-8;
  2. form: exactly one ```json fence holding one strict JSON object with the
     keys verdict, reasons, confidence, diff_sha, policy_version, read;
  3. binding: diff_sha and policy_version equal the ones given here, and read
     repeats the read words of their prompt (a certificate made before the read
     words is decided by the contract it was made by: without read);
  4. outcome: pass only with confidence >= --min-confidence and reasons;
  5. origin (--public-key FILE, with --from-certificate): every answer the
     certificate holds carries the MC1 service's signature by that key, over its
     envelope, the request the gate sent (its recorded digest; no two answers for one
     request) and the prompt the certificate records; else incomplete (signature_*).

exit codes: 0 pass, 1 fail, 2 usage error, 3 needs_human or incomplete.

examples:
  review-gate verify response.mc1 --diff change.diff --policy-version 1
  curl -s $URL | review-gate verify - --diff-sha $SHA --policy-version 1 --json
  review-gate verify --from-certificate cert.json --diff change.diff
  review-gate verify --from-certificate cert.json --diff change.diff --public-key serve.pub
  review-gate verify --statement review-gate.statement.json --from-certificate cert.json \\
      --diff change.diff
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "response",
        metavar="RESPONSE",
        nargs="?",
        help="the MC1 envelope: a file, or '-' for standard input",
    )
    parser.add_argument(
        "--from-certificate",
        metavar="CERT",
        help="re-decide from a certificate instead of RESPONSE: its stored envelope, or, "
        "for a run that never completed, its recorded attempts",
    )
    binding = parser.add_mutually_exclusive_group(required=True)
    binding.add_argument(
        "--diff", metavar="DIFF_FILE", help="the diff that was reviewed (its SHA-256 is expected)"
    )
    binding.add_argument("--diff-sha", metavar="HEX", help="expected diff_sha (64 lowercase hex)")
    parser.add_argument(
        "--policy-version",
        metavar="V",
        help="expected policy_version (required with RESPONSE; with --from-certificate, "
        "the certificate's own unless given)",
    )
    parser.add_argument(
        "--statement",
        metavar="FILE",
        help="with --from-certificate and --diff: first check that this in-toto statement "
        "(review-gate.statement.json) names this certificate, this diff and the same "
        "decision; a mismatch is needs_human (statement_mismatch) naming the field. The "
        "signature is not checked here: use gh attestation verify (docs/security.md)",
    )
    parser.add_argument(
        "--public-key",
        metavar="FILE",
        help="with --from-certificate: the MC1 reviewer service's Ed25519 public key (PEM, "
        "as review-gate serve --new-key writes it); every answer in the certificate must "
        "carry its signature, else the result is incomplete; says which key signed",
    )
    parser.add_argument(
        "--min-confidence",
        type=float,
        default=0.8,
        metavar="F",
        help="lowest confidence a pass may have, in [0, 1] (default: 0.8)",
    )
    parser.add_argument(
        "--max-size",
        type=int,
        default=16 * 1024 * 1024,
        metavar="BYTES",
        help="largest envelope body accepted; a larger one is incomplete (size_limit) "
        "(default: 16 MiB)",
    )
    parser.add_argument("--json", action="store_true", help="print the decision as one JSON object")
    parser.add_argument(
        "--certificate", metavar="PATH", help="also write an audit certificate here (atomically)"
    )


def binding_from(args: argparse.Namespace) -> tuple[Binding, dict[str, str]]:
    import hashlib

    from gate.commands._io import read_input
    from gate.decide.decision import Binding
    from gate.diff import SHA256_HEX
    from gate.errors import UsageError

    inputs: dict[str, str] = {}
    if args.diff is not None:
        diff = read_input(args.diff, what="diff")
        diff_sha = hashlib.sha256(diff).hexdigest()
        inputs["diff"] = diff_sha
    else:
        diff_sha = args.diff_sha
        if not SHA256_HEX.fullmatch(diff_sha or ""):
            raise UsageError("--diff-sha must be 64 lowercase hex digits (a SHA-256)")
    if not args.policy_version:
        raise UsageError("--policy-version must not be empty")
    if not 0.0 <= args.min_confidence <= 1.0:
        raise UsageError(f"--min-confidence must be within [0, 1], got {args.min_confidence}")
    return Binding(diff_sha=diff_sha, policy_version=args.policy_version), inputs


def no_higher_than_recorded(decision: Decision, cert: dict[str, Any]) -> Decision:
    """A re-decision never rises above what the run itself decided.

    The run may have lowered the reviewer's pass (partial coverage, a guard);
    the envelope alone cannot know that, so a recorded block stays a block, and
    a certificate without a recorded decision does not pass. (A certificate is
    not signed: this checks consistency, it is no proof of origin.)
    """
    from gate.decide.decision import State, Status, blocked

    recorded = cert.get("decision")
    if decision.state is not State.PASS:
        return decision
    if not isinstance(recorded, dict):
        return blocked(
            State.NEEDS_HUMAN,
            "certificate_invalid",
            "the certificate records no decision; a re-verification cannot rise above what "
            "the run decided, so it does not pass",
        )
    if recorded.get("state") == "pass" and recorded.get("status") == "success":
        return decision
    try:
        state = State(str(recorded.get("state")))
        status = Status(str(recorded.get("status")))
    except ValueError:
        state, status = State.NEEDS_HUMAN, Status.ERROR
    if state is State.PASS or status is Status.SUCCESS:
        state, status = State.NEEDS_HUMAN, Status.ERROR
    reason = str(recorded.get("reason") or "recorded_block")
    return blocked(
        state,
        reason,
        f"the envelope alone passes, but the run recorded {recorded.get('state')} "
        f"({reason}); a re-verification never rises above the recorded decision",
        status=status,
    )


def without_answer(cert: dict[str, Any]) -> Decision | None:
    """A certificate of a pass made with no reviewer call (an override, or a change with
    nothing in scope) holds no answer: re-verifying it cannot pass, and says why."""
    from gate.decide.decision import State, blocked

    recorded = cert.get("decision")
    if not recorded_pass(cert) or not isinstance(recorded, dict):
        return None
    reason = str(recorded.get("reason"))[:80]
    return blocked(
        State.NEEDS_HUMAN,
        "nothing_to_verify",
        f"the run passed with no reviewer call ({reason}), so the certificate holds no answer "
        "to re-decide; its coverage (context.coverage) names every file and why it was not "
        "sent",
    )


def recorded_coverage(cert: dict[str, Any]) -> dict[str, Any] | None:
    """The certificate's coverage manifest (``context.coverage``), if any."""
    context = cert.get("context")
    coverage = context.get("coverage") if isinstance(context, dict) else None
    return coverage if isinstance(coverage, dict) else None


def recorded_pass(cert: dict[str, Any]) -> bool:
    """Whether the run recorded a pass (so it allowed the gaps its coverage names)."""
    recorded = cert.get("decision")
    return (
        isinstance(recorded, dict)
        and recorded.get("state") == "pass"
        and recorded.get("status") == "success"
    )


def names_these_bytes(cert: dict[str, Any], binding: Binding, *, chunked: bool) -> Decision | None:
    """``incomplete`` (``certificate_mismatch``) unless the certificate names the bytes given.

    An offline re-decision accepts only the bytes the certificate names: the diff given
    (``--diff``, or ``--diff-sha``) must be the one its ``binding.diff_sha`` records, and,
    for a review in one request, the one its coverage says was sent. (A review in chunks
    checks its coverage against the re-plan: :func:`gate.review.chunked.redecide`.)
    """
    from gate.decide.decision import State, blocked

    recorded = cert.get("binding")
    sha = recorded.get("diff_sha") if isinstance(recorded, dict) else None
    coverage = recorded_coverage(cert)
    sent = coverage.get("diff_sha") if coverage is not None else None
    if sha != binding.diff_sha:
        cause = f"its binding records diff_sha {str(sha)[:64]!r}"
    elif not chunked and coverage is not None and sent != binding.diff_sha:
        cause = f"its coverage records the bytes sent as {str(sent)[:64]!r}"
    else:
        return None
    return blocked(
        State.INCOMPLETE,
        "certificate_mismatch",
        f"the diff given (sha256 {binding.diff_sha}) is not the one the certificate names: "
        f"{cause}; give the diff the run reviewed, or re-run the review",
    )


def context_note(cert: dict[str, Any]) -> str | None:
    """What the reviewer was shown besides the diff (``context.reviewer_context``,
    ``context: files``), named: the check needs none of it (the verdict binds the diff
    alone), and each part's blob id and SHA-256 let a person fetch the very bytes again."""
    from gate.safe import untrusted

    context = cert.get("context")
    record = context.get("reviewer_context") if isinstance(context, dict) else None
    if not isinstance(record, dict) or not isinstance(record.get("requests"), list):
        return None
    rows = [r for r in record["requests"] if isinstance(r, dict)]

    def listed(row: dict[str, Any], name: str) -> list[dict[str, Any]]:
        # read strictly: a certificate is anyone's file (a number there crashed verify)
        value = row.get(name)
        return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []

    shown = [p for r in rows for p in listed(r, "shown")]
    left = [x for r in rows for x in listed(r, "left_out")]
    files = len({str(p.get("path")) for p in shown})
    return untrusted.line(
        f"note: the reviewer was also shown {len(shown)} parts of {files} changed files "
        f"(context: files, read from {record.get('source')}); {len(left)} left out "
        "(context.reviewer_context names each, with its blob id and SHA-256); the verdict "
        "binds the diff alone, so this check needs none of them"
    )


def chunk_record(cert: dict[str, Any]) -> dict[str, Any] | None:
    """The certificate's record of a review in chunks (``context.chunks``), if any."""
    context = cert.get("context")
    record = context.get("chunks") if isinstance(context, dict) else None
    reviews = record.get("reviews") if isinstance(record, dict) else None
    return record if isinstance(record, dict) and reviews else None


def refuse_certificate_as_response(name: str, raw: bytes) -> None:
    """A review-gate certificate given as RESPONSE is a usage error, not an incomplete
    answer: it is no MC1 envelope, and --from-certificate is what reads it."""
    import json

    from gate.errors import UsageError

    if raw.lstrip()[:1] != b"{":
        return
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return
    schema = value.get("schema") if isinstance(value, dict) else None
    if isinstance(schema, str) and schema.startswith("review-gate.certificate/"):
        shown = "standard input" if name == "-" else repr(name)
        again = "-" if name == "-" else name
        raise UsageError(
            f"RESPONSE {shown} is a review-gate certificate ({schema}), not an MC1 "
            f"response; did you mean --from-certificate {again}?",
            reason="certificate_as_response",
        )


def refuse_raw_stream(name: str, raw: bytes) -> None:
    """A provider's raw stream given as RESPONSE (what ``review --save-response`` writes:
    Server-Sent Events, or an AWS event stream) is a usage error naming the command that
    verifies the run, not an ``incomplete`` "missing MC1 header": the envelope the gate
    sealed from that stream is in the run's certificate."""
    import zlib

    from gate.errors import UsageError

    first = raw.lstrip(b"\r\n").split(b"\n", 1)[0]
    if raw.startswith(b"MC1 "):
        return
    if first.startswith((b"data:", b"event:", b"id:", b"retry:", b":")):
        what = "Server-Sent Events"
    elif len(raw) >= 12 and zlib.crc32(raw[:8]) == int.from_bytes(raw[8:12], "big"):
        what = "an AWS event stream"
    else:
        return
    shown = "standard input" if name == "-" else repr(name)
    raise UsageError(
        f"RESPONSE {shown} is a reviewer's raw stream ({what}), as review --save-response "
        "saves it, not an MC1 envelope; verify the run from its certificate, which holds the "
        "envelope the gate sealed from that stream: review-gate verify --from-certificate "
        "CERT --diff DIFF",
        reason="raw_stream_as_response",
    )


def policy_from_certificate(cert: dict[str, Any]) -> str:
    """The policy version the certificate's binding records (``--from-certificate``
    without ``--policy-version``); a certificate that records none is a usage error."""
    from gate.errors import UsageError

    binding = cert.get("binding")
    recorded = binding.get("policy_version") if isinstance(binding, dict) else None
    if not isinstance(recorded, str) or not recorded:
        raise UsageError(
            "the certificate records no binding.policy_version; pass --policy-version",
            reason="certificate_invalid",
        )
    return recorded


def run(args: argparse.Namespace) -> int:
    import hashlib

    from gate.commands._io import read_input
    from gate.decide.decision import decide
    from gate.errors import UsageError
    from gate.review.certificate import build, write
    from gate.safe import strictjson

    _check_arguments(args)
    key = public_key_from(args.public_key) if args.public_key is not None else None
    cert_bytes = b""
    if args.from_certificate is not None:
        cert_bytes = read_input(args.from_certificate, what="certificate")
        cert = strictjson.loads(
            cert_bytes, what=f"the certificate {args.from_certificate!r}", error=UsageError
        )
        if not isinstance(cert, dict):
            raise UsageError(f"{args.from_certificate} is not a certificate object")
        if args.statement is None and args.policy_version is None:
            args.policy_version = policy_from_certificate(cert)
    if args.statement is not None:
        mismatch = statement_check(args, cert_bytes, cert)
        if mismatch is not None:
            return _report(args, mismatch, None)
    binding, inputs = binding_from(args)
    attempts, raw, chunked, read = to_decide(args, cert if args.from_certificate else None)
    if raw is not None:
        inputs["response"] = hashlib.sha256(raw).hexdigest()
    decision = decide(
        raw,
        binding=binding,
        min_confidence=args.min_confidence,
        max_size=args.max_size,
        attempts=attempts,
        read=read,
    )
    if chunked is not None and args.diff is None:
        raise UsageError(
            "this certificate is of a review in chunks: give --diff (the reviewed diff), "
            "so each chunk's digest is recomputed from its bytes"
        )
    if chunked is not None:
        # a review in chunks: each chunk's envelope against its chunk of --diff
        from gate.review.chunked import redecide

        decision = redecide(
            chunked,
            read_input(args.diff, what="diff"),
            policy_version=binding.policy_version,
            min_confidence=args.min_confidence,
            coverage=recorded_coverage(cert),
            allow_gaps=recorded_pass(cert),
            read=read,
        )
    if args.from_certificate is not None and raw is None and chunked is None:
        decision = without_answer(cert) or decision
    if args.from_certificate is not None:
        decision = names_these_bytes(cert, binding, chunked=chunked is not None) or decision
        decision = no_higher_than_recorded(decision, cert)
        if key is not None:
            decision = origin_check(cert, key, args.public_key) or decision
        if (seen := context_note(cert)) is not None:
            from gate.commands._io import say

            say(seen, err=True)
    if args.certificate:
        cert_out = build(
            decision,
            binding=binding,
            attempts=attempts,
            inputs=inputs,
            envelope=raw,
            extra={"command": "verify", "min_confidence": args.min_confidence},
        )
        write(args.certificate, cert_out)
    return _report(args, decision, binding)


def to_decide(
    args: argparse.Namespace, cert: dict[str, Any] | None
) -> tuple[tuple[Attempt, ...], bytes | None, dict[str, Any] | None, bool]:
    """What is decided: the certificate's attempts, envelope and chunk record, and whether
    by the contract with the read words (a certificate made before them: by its own), or
    the RESPONSE, read under the size limit, by today's contract."""
    from gate.commands._io import read_input
    from gate.decide.envelope import MAX_HEADER_BYTES
    from gate.review.certificate import attempts_from, envelope_from, read_recorded

    if cert is not None:
        raw = envelope_from(cert) if cert.get("envelope") is not None else None
        return attempts_from(cert), raw, chunk_record(cert), read_recorded(cert)
    # Never hold more than the limit allows: an oversize response is judged
    # (incomplete, size_limit or trailing_bytes), not read whole.
    raw = read_input(
        args.response, what="response", limit=args.max_size + MAX_HEADER_BYTES, truncate=True
    )
    refuse_certificate_as_response(args.response, raw)
    refuse_raw_stream(args.response, raw)
    return (), raw, None, True


def _check_arguments(args: argparse.Namespace) -> None:
    """The arguments that cannot work together, refused before anything is read."""
    from gate.commands._io import check_output_path
    from gate.errors import UsageError

    if (args.response is None) == (args.from_certificate is None):
        raise UsageError("give exactly one of RESPONSE or --from-certificate")
    if args.max_size < 1:
        raise UsageError("--max-size must be at least 1")
    check_output_path("--certificate", args.certificate)
    if args.public_key is not None and args.from_certificate is None:
        raise UsageError(
            "--public-key needs --from-certificate CERT: the prompt each answer was signed "
            "for is recorded in the certificate, not in a response file"
        )
    if args.statement is not None and args.from_certificate is None:
        raise UsageError(
            "--statement needs --from-certificate CERT: the statement is checked against "
            "the certificate it names"
        )
    if args.statement is not None and args.diff == "-":
        raise UsageError(
            "--statement reads --diff twice (for the statement, then the re-decision): "
            "give the diff as a file, not standard input"
        )
    if args.from_certificate is None and args.policy_version is None:
        raise UsageError("--policy-version is required (e.g. --policy-version 1)")


def _report(args: argparse.Namespace, decision: Decision, binding: Binding | None) -> int:
    from gate.commands._io import say, say_json
    from gate.decide.decision import exit_code
    from gate.safe import untrusted

    if args.json:
        out = decision.to_json()
        if binding is not None:
            out["binding"] = {
                "diff_sha": binding.diff_sha,
                "policy_version": binding.policy_version,
            }
        if args.statement is not None:
            out["statement"] = "matches" if decision.reason != "statement_mismatch" else "differs"
        out["exit_code"] = exit_code(decision)
        say_json(out)
    else:
        say(untrusted.line(decision.description))
        if decision.detail and decision.detail not in decision.description:
            say(f"  {untrusted.line(decision.detail)}", err=True)
    return exit_code(decision)


def statement_check(
    args: argparse.Namespace, cert_bytes: bytes, cert: dict[str, Any]
) -> Decision | None:
    """``--statement``: None when it names this certificate, this diff and the same
    decision (then the certificate is re-decided as usual, under its own policy unless
    --policy-version is given); a mismatch is ``needs_human`` naming the field. A
    statement that is malformed or not review-gate's is refused (a usage error)."""
    import hashlib

    from gate.commands._io import read_input, say
    from gate.decide.decision import State, blocked
    from gate.errors import StatementError, StatementMismatch, UsageError
    from gate.export import statement

    if args.diff is not None:
        diff_sha = hashlib.sha256(read_input(args.diff, what="diff")).hexdigest()
    else:
        diff_sha = args.diff_sha or ""
    data = read_input(args.statement, what="statement", limit=statement.MAX_STATEMENT_BYTES)
    try:
        statement.check(data, certificate=cert_bytes, diff_sha=diff_sha)
    except StatementMismatch as err:
        return blocked(
            State.NEEDS_HUMAN,
            err.reason,
            f"the statement does not match: {err.field}: {err.message}; it was made for "
            "another certificate, diff or decision",
        )
    except StatementError as err:
        raise UsageError(f"--statement {args.statement}: {err.message}", reason=err.reason) from err
    binding = cert.get("binding")
    recorded = binding.get("policy_version") if isinstance(binding, dict) else None
    if args.policy_version is None:
        args.policy_version = recorded if isinstance(recorded, str) else ""
    say(
        f"statement: {args.statement} names this certificate, this diff and its decision",
        err=True,
    )
    return None


def public_key_from(path: str) -> Ed25519PublicKey:
    """The key of ``--public-key FILE``; a missing or unreadable file, or one that is not
    an Ed25519 public key in PEM, is a usage error naming the option
    (``config_public_key``)."""
    from gate.commands._io import read_public_key
    from gate.decide.signature import public_key_from_pem
    from gate.errors import ConfigError, UsageError

    data = read_public_key(path)
    try:
        return public_key_from_pem(data, source=f"--public-key {path}")
    except ConfigError as err:
        raise UsageError(err.message, reason=err.reason) from err


def origin_check(cert: dict[str, Any], key: Ed25519PublicKey, path: str) -> Decision | None:
    """``--public-key``: None when the key signed every answer the certificate holds
    (said on standard error, naming the key); else ``incomplete`` with the signature's
    reason, naming the answer and the cause. A certificate with no answer has nothing to
    check (its decision is no pass already)."""
    from gate.commands._io import say
    from gate.decide.decision import State, blocked
    from gate.decide.signature import key_id
    from gate.errors import SignatureError
    from gate.review.certificate import carried_chunks, check_origin

    try:
        answers = check_origin(cert, key)
    except SignatureError as err:
        return blocked(
            State.INCOMPLETE,
            err.reason,
            f"the certificate's signature does not check against {key_id(key)} ({path}): "
            f"{err.message}",
        )
    if not answers:
        say(f"signature: the certificate holds no answer to check against {path}", err=True)
        return None
    say(
        f"signature: {len(answers)} answer(s) signed by {key_id(key)} (the key in {path}), "
        "each over its envelope, the request sent and the prompt the certificate records",
        err=True,
    )
    if carried := carried_chunks(cert):
        say(
            f"signature: {len(carried)} chunk(s) carried from an earlier run are not "
            "checked here: this certificate holds no signature of theirs; check the "
            "certificate each names (context.chunks.reviews[].carried)",
            err=True,
        )
    return None
