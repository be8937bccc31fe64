"""The one exception tree of review-gate.

Every error the gate raises on purpose derives from :class:`GateError`. Each
class carries a stable, machine-readable ``reason`` code (used in the decision,
the certificate and the ``--json`` output) and a human message that names the
cause and, where there is one, the fix::

    GateError
    ├── UsageError                 bad command-line input (exit code 2)
    ├── ConfigError                invalid configuration (names key, line and fix)
    ├── EnvelopeError              an MC1 envelope is not whole and exact
    │   ├── MissingHeader          no ``MC1 <len> <sha256>\\n`` header
    │   ├── BadHeader              header present but malformed
    │   ├── LengthMismatch         body shorter/longer than declared
    │   ├── DigestMismatch         SHA-256 of body differs from header
    │   ├── MissingSentinel        body does not end with ``\\nEND\\n``
    │   ├── TrailingBytes          bytes after the declared body
    │   ├── SizeLimitExceeded      declared or received size over the limit
    │   └── BadEncoding            content is not strict UTF-8
    ├── VerdictError               complete content, but not a valid verdict
    │   ├── FenceError             not exactly one ```json fence
    │   │   └── FenceAmbiguous     the gate's and GitHub's renderer's fence counts differ
    │   ├── StrictJSONError        duplicate keys, NaN, depth, not an object...
    │   │   └── LoneSurrogate      a string that is not Unicode scalar values
    │   ├── ShapeError             keys, types, enum, range
    │   │   └── InvisibleReason    a reason with no visible character
    │   ├── BindingError           diff_sha / policy_version differ
    │   └── PromptUnread           the read words differ: a part of the prompt never arrived
    ├── TransportError             the reviewer's bytes did not all arrive
    │   ├── ReviewerUnreachable    could not connect / HTTP error after budget
    │   └── ContextUnknown         a self-hosted server's context size could not be read
    ├── GitHubError                a GitHub API call failed
    ├── LedgerError                the question ledger is not the gate's, or cannot be written
    ├── AtomicWriteError           a verified atomic write could not be proven
    ├── StatementError             an in-toto statement cannot be built, or is foreign
    │   └── StatementMismatch      a statement names another certificate, diff or decision
    └── ApplyError                 an agent write could not be applied

    KeyboardInterrupt
    └── Interrupted                Ctrl-C during a request: the bytes that had arrived

:class:`Interrupted` is no ``GateError``: it stays a :class:`KeyboardInterrupt`, so
nothing that catches ``Exception`` can swallow a Ctrl-C; it only carries what had
arrived to the front end, which records it and exits 130 (:attr:`ExitCode.INTERRUPTED`).

Verification functions raise; they never return booleans.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from enum import IntEnum


class ExitCode(IntEnum):
    """The process exit codes every command and the action share (the one definition)."""

    PASS = 0  # pass, or the command did what it was asked
    FAIL = 1  # the reviewer rejected; an apply was incomplete or corrupt
    USAGE = 2  # bad arguments, unreadable input, a misconfigured workflow
    BLOCKED = 3  # needs_human / incomplete / refused / any other blocking error
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it); nothing was decided


class Interrupted(KeyboardInterrupt):
    """Ctrl-C while a request was under way, carrying the body bytes that had arrived."""

    def __init__(self, raw: bytes = b"") -> None:
        super().__init__()
        self.raw = raw


class GateError(Exception):
    """Base of every error review-gate raises on purpose."""

    reason: str = "error"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.reason


class UsageError(GateError):
    """The command line or an input value is wrong; exit code 2."""

    reason = "usage"


class ConfigError(GateError):
    """The configuration file or an action input is invalid.

    The problem is carried as fields, so each front end words it its own way:
    ``source`` (the file, or ``"config"``), ``line`` (0 when unknown), ``key`` (dotted),
    ``cause``, ``fix`` and, when an override gave the value, ``setting`` (its name) with
    ``example`` (a valid value); an empty ``fix`` with a ``setting`` means "correct that
    setting". ``more`` holds the further problems found in the same pass (a file can have
    several). ``message`` names a setting as an input (the action's words); the command
    line renders its options with :meth:`render`.
    """

    reason = "config_invalid"

    def __init__(
        self,
        cause: str,
        *,
        source: str = "",
        line: int = 0,
        key: str = "",
        fix: str = "",
        setting: str = "",
        example: str = "",
        reason: str | None = None,
        more: Sequence[ConfigError] = (),
    ) -> None:
        self.cause, self.source, self.line, self.key = cause, source, line, key
        self.fix, self.setting, self.example = fix, setting, example
        self.more = tuple(more)
        super().__init__(self.render(), reason=reason)

    @property
    def problems(self) -> tuple[ConfigError, ...]:
        """This problem and the further ones, in the order found."""
        return (self, *self.more)

    def render(
        self,
        *,
        setting: Callable[[str], str] = "input {}".format,
        correct: Callable[[str, str], str] | None = None,
        fixes: Mapping[str, str] | None = None,
    ) -> str:
        """Every problem, one a line: ``where: cause; fix: fix``.

        ``setting`` names an override (``"input NAME"``); ``correct(name, example)`` words
        the fix of a wrong override; ``fixes`` replaces the fix's text by reason (the
        whole tail after ``cause; ``).
        """
        lines = []
        for problem in self.problems:
            where = setting(problem.setting) if problem.setting else problem.source
            if problem.line and not problem.setting:
                where = f"{where} line {problem.line}"
            text = f"{where}: {problem.cause}" if where else problem.cause
            fix = problem.fix
            if not fix and problem.setting:
                fix = (correct or _correct_input)(problem.setting, problem.example)
            tail = (fixes or {}).get(problem.reason, f"fix: {fix}" if fix else "")
            lines.append(f"{text}; {tail}" if tail else text)
        return "\n".join(lines)


def _correct_input(name: str, example: str) -> str:
    shown = f" (e.g. {json.dumps(example)})" if example else ""
    return f"correct the {name} input{shown}, or leave it empty to use the config file"


# --- MC1 envelope -----------------------------------------------------------


class EnvelopeError(GateError):
    """An MC1 envelope is not whole and exact."""

    reason = "envelope_invalid"


class MissingHeader(EnvelopeError):
    reason = "missing_header"


class BadHeader(EnvelopeError):
    reason = "bad_header"


class LengthMismatch(EnvelopeError):
    reason = "length_mismatch"

    def __init__(self, message: str, *, declared: int, received: int) -> None:
        super().__init__(message)
        self.declared = declared
        self.received = received


class DigestMismatch(EnvelopeError):
    reason = "digest_mismatch"


class MissingSentinel(EnvelopeError):
    reason = "missing_sentinel"


class TrailingBytes(EnvelopeError):
    reason = "trailing_bytes"


class SizeLimitExceeded(EnvelopeError):
    reason = "size_limit"


class BadEncoding(EnvelopeError):
    reason = "bad_encoding"


class SignatureError(EnvelopeError):
    """An envelope whose signature is missing, malformed, by another key, or wrong."""

    reason = "signature_invalid"


class SignatureMissing(SignatureError):
    reason = "signature_missing"


class SignatureMalformed(SignatureError):
    reason = "signature_malformed"


class SignatureKey(SignatureError):
    reason = "signature_key"


# --- verdict content ---------------------------------------------------------


class VerdictError(GateError):
    """The content is complete but is not exactly one valid verdict."""

    reason = "verdict_invalid"


class FenceError(VerdictError):
    reason = "fence_count"


class FenceAmbiguous(FenceError):
    """One fence by the gate's count, but not by GitHub's renderer or every line break."""

    reason = "fence_ambiguous"


class StrictJSONError(VerdictError):
    reason = "json_invalid"


class LoneSurrogate(StrictJSONError):
    """A ``\\uD800``-``\\uDFFF`` escape without its pair: not a Unicode scalar value."""

    reason = "lone_surrogate"


class ShapeError(VerdictError):
    reason = "shape_invalid"


class InvisibleReason(ShapeError):
    """A reason without one letter, digit, punctuation mark or symbol a reader can see."""

    reason = "invisible_reason"


class BindingError(VerdictError):
    reason = "unbound"


class PromptUnread(VerdictError):
    """The verdict's ``read`` words are not those of the prompt's parts: the model did not
    see the whole prompt (:mod:`gate.decide.readback`)."""

    reason = "prompt_unread"


# --- the rest ----------------------------------------------------------------


class TransportError(GateError):
    """The reviewer's bytes did not all arrive (retryable)."""

    reason = "transport"


class ReviewerUnreachable(TransportError):
    reason = "unreachable"


class ContextUnknown(TransportError):
    """The context size ``context_window`` asked a self-hosted server for could not be
    read (no answer, a refusal, a body that is not the server's shape): the review is not
    asked (gate/reviewers/window.py)."""

    reason = "context_window_unknown"


class GitHubError(GateError):
    """A GitHub API call failed."""

    reason = "github"


class LedgerError(GateError):
    """The question ledger (``refs/review-gate/ledger``) cannot be trusted or written:
    an entry that does not parse, a foreign object at the ref, a tree not of the gate's
    shape, a conflict that did not resolve, a token without ``contents: write``. The
    ``reason`` says which (``config_ledger_*``, ``ledger_conflict``)."""

    reason = "config_ledger_unreadable"


class AtomicWriteError(GateError):
    """A verified atomic write could not be proven complete."""

    reason = "atomic_write"


class ApplyError(GateError):
    """An agent write could not be applied."""

    reason = "apply"


class StatementError(GateError):
    """An in-toto statement of a decision cannot be built from a certificate, or a given
    statement is malformed or not review-gate's (``--statement``)."""

    reason = "statement_invalid"


class StatementMismatch(StatementError):
    """A statement that names another certificate, diff or decision than the one given;
    ``field`` is the first field that differs (``predicate.diff_sha``, ...)."""

    reason = "statement_mismatch"

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field
