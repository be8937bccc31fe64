"""One review, end to end: diff bytes + config -> decision + certificate.

:func:`review_diff` is the pipeline of DESIGN.md between the diff and the
status, shared by ``review-gate review`` and the GitHub action: it binds the
review to ``sha256(diff)`` and the policy version, builds the prompt, calls
the reviewer transport (which retries only bytes that did not arrive), applies
the decision table to the sealed envelope, and assembles the certificate.
It touches no environment variable, no file and no exit code; the callers do.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gate import certificate, reviewers
from gate.attempt import ReviewOutcome
from gate.config import Config
from gate.decision import Binding, Decision, decide
from gate.prompt import build_prompt


@dataclass(frozen=True)
class ReviewResult:
    """Everything one review produced."""

    decision: Decision
    outcome: ReviewOutcome
    binding: Binding
    prompt_sha256: str
    certificate: dict[str, Any]


def binding_for(diff: bytes, config: Config) -> Binding:
    """The binding the verdict must repeat: SHA-256 of the diff bytes and the policy."""
    return Binding(diff_sha=hashlib.sha256(diff).hexdigest(), policy_version=config.policy_version)


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment (safe for a certificate)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def config_sha256(config: Config) -> str:
    canonical = json.dumps(config.to_json(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def review_diff(
    diff: bytes,
    config: Config,
    *,
    api_key: str | None,
    extra_cert: Mapping[str, Any] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ReviewResult:
    """Review ``diff`` (the exact bytes sent) with the reviewer ``config`` names.

    Raises :class:`~gate.errors.UsageError` / :class:`~gate.errors.ConfigError`
    only for settings that cannot work (unknown provider, missing model or
    key); every transport problem becomes an ``incomplete`` decision.
    ``sleep`` is the pause between retries (tests and the demo shorten it).
    """
    binding = binding_for(diff, config)
    prompt = build_prompt(diff, binding=binding, instructions=config.instructions)
    settings = config.reviewer.to_settings(api_key)
    outcome = reviewers.review(settings, system=prompt.system, user=prompt.user, sleep=sleep)
    decision = decide(
        outcome.envelope,
        binding=binding,
        min_confidence=config.min_confidence,
        attempts=outcome.attempts,
    )
    context: dict[str, Any] = {
        "reviewer": {
            "provider": settings.provider,
            "model": settings.model,
            "base_url": public_url(settings.base_url),
            "max_tokens": settings.max_tokens,
            "temperature": settings.temperature,
        },
        "min_confidence": config.min_confidence,
    }
    context.update(extra_cert or {})
    cert = certificate.build(
        decision,
        binding=binding,
        attempts=outcome.attempts,
        inputs={
            "diff": binding.diff_sha,
            "prompt": prompt.sha256(),
            "config": config_sha256(config),
        },
        envelope=outcome.envelope,
        extra=context,
    )
    return ReviewResult(
        decision=decision,
        outcome=outcome,
        binding=binding,
        prompt_sha256=prompt.sha256(),
        certificate=cert,
    )
