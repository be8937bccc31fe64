"""The in-toto Statement v1 of one decision, and its offline check.

:func:`build` makes the statement from the certificate's bytes alone, as written: the
certificate is the record, the statement a small, signable digest of it. So a statement
can name nothing the certificate does not hold, and :func:`check` needs no other input
than the certificate and the diff to rebuild it and compare, field by field.

The statement (``<stem>.statement.json`` beside ``<stem>.certificate.json``)::

    _type          https://in-toto.io/Statement/v1
    subject        the head commit ({"gitCommit": sha}), when the certificate names one;
                   the reviewed diff ({"sha256": diff_sha}), when there was one
    predicateType  PREDICATE_TYPE (this module's, versioned)
    predicate      decision (state, status, reason, family), diff_sha, policy_version,
                   config_sha256, reviewer (provider, model), prompt_sha256, coverage
                   (counts), chunks (count, manifest digest, carried and the
                   certificates they came from), certificate (schema, sha256), commit,
                   gate_version; signed_by (the MC1 service's key ids), only when every
                   answer carries a signature the gate checked

The predicate holds digests, the gate's own codes and the config's names only: never a
secret, never the reviewer's words (the reasons are in the certificate, which the
predicate names by its SHA-256). Every value is checked on the way in (hex digests,
reason codes, printable bounded names, no registered secret); a certificate with any
other value yields no statement (:class:`~gate.errors.StatementError`), never a partial
one. Its shape is ``gate/schemas/decision-predicate.schema.json``.

Signatures are not checked here: ``actions/attest`` signs the predicate with the
workflow's identity and ``gh attestation verify`` checks it (docs/security.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gate.decide.decision import State, Status
from gate.decide.decision import family_of as decision_family
from gate.diff import COMMIT_ID, SHA256_HEX
from gate.errors import StatementError, StatementMismatch
from gate.review.certificate import SCHEMA as CERTIFICATE_SCHEMA
from gate.review.certificate import carried_chunks, sealed_answers
from gate.safe import redact, strictjson
from gate.safe.atomic import atomic_write

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
#: the predicate's type: this project's URL, versioned (a new shape is a new version)
PREDICATE_TYPE = "https://github.com/review-gate/review-gate/attestation/decision/v1"
#: the subjects' names: what each digest is a digest of
DIFF_SUBJECT = "review-gate.reviewed.diff"
COMMIT_SUBJECT = "review-gate.head-commit"
#: the file name's ending, beside the certificate's ``.certificate.json``
SUFFIX = ".statement.json"
PREDICATE_SUFFIX = ".predicate.json"
CERTIFICATE_SUFFIX = ".certificate.json"
#: the largest certificate read back (they hold base64 envelopes: a few MiB at most)
MAX_CERTIFICATE_BYTES = 64 * 1024 * 1024
MAX_STATEMENT_BYTES = 1024 * 1024

_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")
#: provider and model names, the policy version: the config's words, printable, bounded
_MAX_NAME = 200


def path_beside(certificate_path: str | os.PathLike[str]) -> Path:
    """``x.certificate.json`` -> ``x.statement.json`` (else ``<name>.statement.json``)."""
    path = Path(certificate_path)
    name = path.name
    stem = name[: -len(CERTIFICATE_SUFFIX)] if name.endswith(CERTIFICATE_SUFFIX) else name
    return path.with_name(stem + SUFFIX)


# --- reading the certificate, every value checked -----------------------------------


def _fail(field: str, why: str) -> StatementError:
    return StatementError(
        f"no statement: the certificate's {field} {why}", reason="statement_unbuildable"
    )


def _hex64(value: object, field: str) -> str:
    if not isinstance(value, str) or not SHA256_HEX.fullmatch(value):
        raise _fail(field, "is not a SHA-256 (64 lowercase hex digits)")
    return value


def _optional_hex64(value: object, field: str) -> str | None:
    return None if value in (None, "") else _hex64(value, field)


def _code(value: object, field: str) -> str:
    if not isinstance(value, str) or not _CODE.fullmatch(value):
        raise _fail(field, "is not a reason code (lowercase letters, digits, _)")
    return value


def _name(value: object, field: str) -> str:
    """A config-given name: printable, bounded, no registered secret in it."""
    if not isinstance(value, str) or not value or len(value) > _MAX_NAME:
        raise _fail(field, f"is not a name of 1 to {_MAX_NAME} characters")
    if not value.isprintable() or redact.active().found(value):
        raise _fail(field, "does not print as itself, or holds a secret")
    return value


def _object(value: object, field: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _fail(field, "is not an object")
    return value


def _count(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(field, "is not a count")
    return value


def read_certificate(data: bytes) -> Mapping[str, Any]:
    """The certificate's JSON (strict), refused unless it is a review-gate certificate."""
    cert = strictjson.loads(data, what="the certificate", error=StatementError)
    if not isinstance(cert, dict) or cert.get("schema") != CERTIFICATE_SCHEMA:
        raise StatementError(
            f"the certificate is not a {CERTIFICATE_SCHEMA} object", reason="certificate_invalid"
        )
    return cert


def family_of(decision: Mapping[str, Any], state: str, reason: str) -> str | None:
    """The decision's reason family (issue 21), as the certificate records it.

    The family is the decision's (:class:`gate.decide.decision.Family`, made by
    :func:`gate.decide.decision.family_of` from the state and reason); it is read here, never
    derived, and a recorded family that is not the one its state and reason make is
    refused. A certificate written before families existed records none: the predicate
    then says ``null``, it does not guess.
    """
    value = decision.get("family")
    if value is None:
        return None
    if value != decision_family(state, reason):
        raise _fail("decision.family", f"is not the family of {state} ({reason})")
    return str(value)


def _decision(cert: Mapping[str, Any]) -> dict[str, Any]:
    decision = _object(cert.get("decision"), "decision")
    state, status = decision.get("state"), decision.get("status")
    if state not in {str(s) for s in State} or status not in {str(s) for s in Status}:
        raise _fail("decision", "has no known state and status")
    if (state == State.PASS) != (status == Status.SUCCESS):
        raise _fail("decision", f"pairs state {state} with status {status}")
    reason = _code(decision.get("reason"), "decision.reason")
    return {
        "state": state,
        "status": status,
        "reason": reason,
        "family": family_of(decision, state, reason),
    }


def _coverage(context: Mapping[str, Any]) -> dict[str, Any] | None:
    coverage = context.get("coverage")
    if coverage is None:
        return None
    coverage = _object(coverage, "context.coverage")
    reviewed, skipped = coverage.get("reviewed"), coverage.get("skipped")
    complete = coverage.get("complete")
    if not isinstance(reviewed, list) or not isinstance(skipped, list):
        raise _fail("context.coverage", "has no reviewed and skipped lists")
    if not isinstance(complete, bool):
        raise _fail("context.coverage.complete", "is not true or false")
    return {
        "complete": complete,
        "files_reviewed": len(reviewed),
        "files_skipped": len(skipped),
        "diff_bytes": _count(coverage.get("diff_bytes"), "context.coverage.diff_bytes"),
    }


def _chunks(context: Mapping[str, Any]) -> dict[str, Any] | None:
    record = context.get("chunks")
    if record is None:
        return None
    manifest = _object(_object(record, "context.chunks").get("manifest"), "chunks.manifest")
    rows = manifest.get("chunks")
    if not isinstance(rows, list):
        raise _fail("context.chunks.manifest.chunks", "is not a list")
    reviews = record.get("reviews", [])
    if not isinstance(reviews, list):
        raise _fail("context.chunks.reviews", "is not a list")
    sources = set()
    for row in reviews:
        carried = row.get("carried") if isinstance(row, dict) else None
        if carried is not None:
            source = _object(carried, "context.chunks.reviews[].carried").get("certificate_sha")
            if source not in (None, ""):
                sources.add(_hex64(source, "context.chunks.reviews[].carried.certificate_sha"))
    return {
        "count": len(rows),
        "manifest_sha256": _hex64(manifest.get("sha256"), "context.chunks.manifest.sha256"),
        # issue 24: chunks whose earlier bound answers were carried, not sent again, and
        # the certificates that first recorded them (each checkable the same way)
        "carried": _count(record.get("carried", 0), "context.chunks.carried"),
        "carried_from": sorted(sources),
    }


def _reviewer(context: Mapping[str, Any]) -> dict[str, str] | None:
    reviewer = context.get("reviewer")
    if reviewer is None:
        return None
    reviewer = _object(reviewer, "context.reviewer")
    return {
        "provider": _code(reviewer.get("provider"), "context.reviewer.provider"),
        "model": _name(reviewer.get("model"), "context.reviewer.model"),
    }


#: a key id as gate.decide.signature names it
_KEY_ID = re.compile(r"ed25519:[0-9a-f]{16}\Z")


def signed_by(cert: Mapping[str, Any]) -> list[str] | None:
    """The key ids that signed the certificate's answers, when the gate checked a
    signature on every one of them (``reviewer.public_key``); else None: an unsigned
    answer, or one recorded unchecked, proves no origin, so the statement claims none;
    nor does a chunk carried from an earlier run (its envelope came from a carry block,
    which holds no signature, and decides here unchecked)."""
    answers = sealed_answers(cert)
    signatures = [a.signature for a in answers]
    if not signatures or any(s is None or not s.checked for s in signatures):
        return None
    if carried_chunks(cert):  # decided here from a carry block: no signature checked
        return None
    keys = sorted({s.key_id for s in signatures if s is not None})
    for key in keys:
        if not _KEY_ID.match(key):
            raise _fail("signature.key_id", "is not an ed25519 key id")
    return keys


def commit_of(cert: Mapping[str, Any]) -> str | None:
    """The head commit the certificate names: the action's ``context.github.head_sha``,
    or ``context.commit`` (``review-gate review --commit``); None when it names none."""
    context = _object(cert.get("context", {}), "context")
    github = context.get("github")
    head = _object(github, "context.github").get("head_sha") if github is not None else None
    commit = context.get("commit")
    if head not in (None, "") and commit not in (None, "") and head != commit:
        raise _fail("context", "names two head commits")
    value = head if head not in (None, "") else commit
    if value in (None, ""):
        return None
    if not isinstance(value, str) or not COMMIT_ID.fullmatch(value):
        raise _fail("head commit", "is not a git commit id (40 or 64 lowercase hex digits)")
    return value


def predicate_of(cert: Mapping[str, Any], certificate_sha256: str) -> dict[str, Any]:
    """The predicate for a certificate (parsed) whose bytes have ``certificate_sha256``."""
    binding = _object(cert.get("binding"), "binding")
    inputs = _object(cert.get("inputs", {}), "inputs")
    context = _object(cert.get("context", {}), "context")
    policy = binding.get("policy_version")
    return {
        "decision": _decision(cert),
        "diff_sha": _optional_hex64(binding.get("diff_sha"), "binding.diff_sha"),
        "policy_version": None if policy in (None, "") else _name(policy, "policy_version"),
        "config_sha256": _optional_hex64(inputs.get("config"), "inputs.config"),
        "reviewer": _reviewer(context),
        "prompt_sha256": _optional_hex64(inputs.get("prompt"), "inputs.prompt"),
        # issue 33: absent unless every answer was signed and checked, so the predicate of
        # every certificate without one is the same as before
        **({"signed_by": keys} if (keys := signed_by(cert)) else {}),
        "coverage": _coverage(context),
        "chunks": _chunks(context),
        "certificate": {"schema": CERTIFICATE_SCHEMA, "sha256": certificate_sha256},
        "commit": commit_of(cert),
        "gate_version": _name(cert.get("gate_version"), "gate_version"),
    }


def build(certificate: bytes) -> dict[str, Any]:
    """The statement of the decision the certificate (its exact bytes) records.

    Raises :class:`~gate.errors.StatementError` when the certificate is not one, a value
    in it is not what the predicate allows, or it names neither a commit nor a diff.
    """
    cert = read_certificate(certificate)
    predicate = predicate_of(cert, hashlib.sha256(certificate).hexdigest())
    subjects: list[dict[str, Any]] = []
    if predicate["commit"] is not None:
        subjects.append({"name": COMMIT_SUBJECT, "digest": {"gitCommit": predicate["commit"]}})
    if predicate["diff_sha"] is not None:
        subjects.append({"name": DIFF_SUBJECT, "digest": {"sha256": predicate["diff_sha"]}})
    if not subjects:
        raise _fail("context", "names neither a head commit nor a reviewed diff to attest")
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def dumps(value: Mapping[str, Any]) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")


def write(path: str | os.PathLike[str], statement: Mapping[str, Any]) -> str:
    """Write the statement atomically; return the SHA-256 of its bytes.

    A registered secret found in it refuses the write (it cannot be there: every value
    was checked; this is the last guard, as for the certificate)."""
    data = dumps(statement)
    if redact.active().found(data.decode("ascii")):
        raise StatementError(
            "refusing to write a statement that contains a secret; this is a bug in "
            "review-gate, please report it (the secret itself is not shown)",
            reason="statement_secret",
        )
    return atomic_write(path, data)


def write_beside(certificate_path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Read the certificate back as written, build its statement and write it beside it,
    and its predicate alone beside that (``actions/attest`` takes a ``predicate-path``
    and makes the statement itself); return both paths."""
    source = Path(certificate_path)
    with source.open("rb") as handle:
        data = handle.read(MAX_CERTIFICATE_BYTES + 1)
    if len(data) > MAX_CERTIFICATE_BYTES:
        raise _fail("file", f"is larger than {MAX_CERTIFICATE_BYTES} bytes")
    built = build(data)
    target = path_beside(source)
    write(target, built)
    predicate = target.with_name(target.name[: -len(SUFFIX)] + PREDICATE_SUFFIX)
    write(predicate, built["predicate"])
    return target, predicate


# --- the offline check: this statement, this certificate, this diff -----------------


def parse(data: bytes) -> Mapping[str, Any]:
    """A statement file as JSON, refused unless it is an in-toto Statement v1 whose
    predicate is review-gate's decision (any version of it is named in the error)."""
    if len(data) > MAX_STATEMENT_BYTES:
        raise StatementError(
            f"the statement is larger than {MAX_STATEMENT_BYTES} bytes; it is not one of "
            "review-gate's",
            reason="statement_foreign",
        )
    obj = strictjson.loads(data, what="the statement", error=StatementError)
    if not isinstance(obj, dict):
        raise StatementError("the statement is not a JSON object", reason="statement_invalid")
    kind = obj.get("_type")
    if kind != STATEMENT_TYPE:
        raise StatementError(
            f"the statement's _type is {_shown(kind)}, not {STATEMENT_TYPE}: it is not an "
            "in-toto Statement v1",
            reason="statement_foreign",
        )
    predicate_type = obj.get("predicateType")
    if predicate_type != PREDICATE_TYPE:
        raise StatementError(
            f"the statement's predicateType is {_shown(predicate_type)}, not "
            f"{PREDICATE_TYPE}: it is not a review-gate decision of this version",
            reason="statement_foreign",
        )
    return obj


def _shown(value: object) -> str:
    """A foreign value for a message: JSON, one line, at most 80 characters."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _first_difference(given: object, expected: object, path: str) -> str | None:
    """The path of the first field where ``given`` differs from ``expected``, or None."""
    if isinstance(given, dict) and isinstance(expected, dict):
        for key in sorted(set(given) | set(expected)):
            a, b = given.get(key, _MISSING), expected.get(key, _MISSING)
            found = _first_difference(a, b, f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(given, list) and isinstance(expected, list) and len(given) == len(expected):
        for index, (a, b) in enumerate(zip(given, expected, strict=True)):
            found = _first_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    same = type(given) is type(expected) and given == expected
    return None if same else path


_MISSING = object()


def check(statement: bytes, *, certificate: bytes, diff_sha: str) -> Mapping[str, Any]:
    """Raise unless ``statement`` names exactly this certificate, this diff and the
    certificate's decision; return the parsed statement.

    In order: the statement is review-gate's (:func:`parse`); it names this certificate
    (its SHA-256); it names this diff (``predicate.diff_sha``); every subject is the head
    commit, the diff or the certificate (:func:`_check_subjects`); and the predicate
    equals the one rebuilt from the certificate (decision, policy, digests, commit). The
    first field that differs is named (:class:`~gate.errors.StatementMismatch`). No
    signature is checked here.
    """
    given = parse(statement)
    predicate = given.get("predicate")
    if not isinstance(predicate, dict):
        raise StatementError("the statement has no predicate object", reason="statement_invalid")
    cert_sha = hashlib.sha256(certificate).hexdigest()
    named = predicate.get("certificate")
    named_sha = named.get("sha256") if isinstance(named, dict) else None
    if named_sha != cert_sha:
        raise StatementMismatch(
            f"the statement names the certificate {_shown(named_sha)}, but the given one's "
            f"SHA-256 is {cert_sha}",
            field="predicate.certificate.sha256",
        )
    if predicate.get("diff_sha") != diff_sha:
        raise StatementMismatch(
            f"the statement is of the diff {_shown(predicate.get('diff_sha'))}, but the given "
            f"diff's SHA-256 is {diff_sha}",
            field="predicate.diff_sha",
        )
    expected = build(certificate)
    _check_subjects(given.get("subject"), expected["predicate"], cert_sha)
    field = _first_difference(
        {k: v for k, v in given.items() if k != "subject"},
        {k: v for k, v in expected.items() if k != "subject"},
        "statement",
    )
    if field is not None:
        raise StatementMismatch(
            f"the statement's {field} differs from the certificate's "
            "(rebuilt from the certificate's bytes)",
            field=field.removeprefix("statement."),
        )
    return given


def _check_subjects(subjects: object, predicate: Mapping[str, Any], cert_sha: str) -> None:
    """Each subject's every digest must be the head commit, the diff or the certificate.

    The statement written beside the certificate names the commit and the diff;
    ``actions/attest`` makes its own statement around the same predicate, with the
    subject it is given (the certificate file: it takes no ``gitCommit`` digest). Both
    check; a digest of anything else does not. Names are labels, not checked."""
    allowed = {("sha256", cert_sha)}
    if predicate["commit"] is not None:
        allowed.add(("gitCommit", predicate["commit"]))
    if predicate["diff_sha"] is not None:
        allowed.add(("sha256", predicate["diff_sha"]))
    if not isinstance(subjects, list) or not subjects:
        raise StatementMismatch("the statement names no subject", field="subject")
    for index, subject in enumerate(subjects):
        digest = subject.get("digest") if isinstance(subject, dict) else None
        if not isinstance(digest, dict) or not digest:
            raise StatementMismatch(
                f"the statement's subject {index} has no digest", field=f"subject[{index}]"
            )
        for algorithm, value in digest.items():
            if (algorithm, value) not in allowed:
                raise StatementMismatch(
                    f"the statement's subject {index} names {algorithm} {_shown(value)}, "
                    "which is neither the head commit, the reviewed diff nor the certificate",
                    field=f"subject[{index}].digest.{algorithm}",
                )
