"""Reviewer transports: ask a reviewer once per attempt, retry only what did not arrive.

:func:`review` validates the settings, then makes at most
``settings.attempts`` attempts through the provider's dialect module
(:mod:`~gate.reviewers.openai`, :mod:`~gate.reviewers.anthropic`,
:mod:`~gate.reviewers.gemini`, :mod:`~gate.reviewers.mc1`). Every attempt is
recorded. An attempt is retried only when its bytes did not all arrive (a
cut, a timeout, a connection error, HTTP 408/429/5xx, a transient error frame,
a missing end marker); a complete answer is final, whatever it says, and so
are token exhaustion, refusals, malformed streams and other 4xx answers. The
wait between attempts is jittered exponential backoff, or the server's
``Retry-After`` capped at ``retry_after_cap``. Transport problems never raise:
they become incomplete attempts; only invalid settings raise
:class:`~gate.errors.UsageError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The provider table is light and imported eagerly (gate.config needs it); the
# transport, which pulls in httpx and gate.config itself, loads on first use.
from gate.reviewers.providers import (
    DEFAULT_BASE_URLS,
    DEFAULT_KEY_ENV,
    NEEDS_MODEL,
    PROVIDERS,
    USER_AGENT,
    Provider,
)

if TYPE_CHECKING:
    from gate.reviewers.settings import ReviewerSettings, needs_api_key, validate
    from gate.reviewers.transport import (
        Dialect,
        attempt_line,
        backoff_delay,
        call_once,
        dialect,
        review,
    )

_LAZY = {
    "ReviewerSettings": "gate.reviewers.settings",
    "needs_api_key": "gate.reviewers.settings",
    "validate": "gate.reviewers.settings",
    "Dialect": "gate.reviewers.transport",
    "attempt_line": "gate.reviewers.transport",
    "backoff_delay": "gate.reviewers.transport",
    "call_once": "gate.reviewers.transport",
    "dialect": "gate.reviewers.transport",
    "review": "gate.reviewers.transport",
}

__all__ = [
    "DEFAULT_BASE_URLS",
    "DEFAULT_KEY_ENV",
    "NEEDS_MODEL",
    "PROVIDERS",
    "USER_AGENT",
    "Dialect",
    "Provider",
    "ReviewerSettings",
    "attempt_line",
    "backoff_delay",
    "call_once",
    "dialect",
    "needs_api_key",
    "review",
    "validate",
]


def __getattr__(name: str) -> Any:
    """Load the transport names on first use (PEP 562), keeping this import light."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gate.reviewers' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
