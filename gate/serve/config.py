"""What ``review-gate serve`` runs with: :class:`ServeConfig`, its defaults and checks.

Every limit is defined here once (the command's defaults and help read them). The
bearer token comes from an environment variable or a file, never from the command
line (a process's arguments are visible to every user of the machine); it is checked
as the gate checks a key (:func:`gate.safe.redact.checked_key`) and must be long
enough not to be guessed.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from gate.errors import ConfigError, UsageError
from gate.providers import DEFAULT_KEY_ENV, Provider
from gate.reviewers.settings import (
    OUTPUT_GRAMMARS,
    ReviewerSettings,
    base_url_problem,
    shown_url,
)
from gate.reviewers.window import WORDS as WINDOW_WORDS
from gate.safe.redact import checked_key

#: the token's environment variable: the one the gate's mc1 provider sends its key from
TOKEN_ENV = DEFAULT_KEY_ENV[Provider.MC1]  # the variable the gate's mc1 provider reads
#: the fewest characters a token may have (``secrets.token_urlsafe(32)`` makes 43)
MIN_TOKEN = 24
PORT = 8430
#: the request body the gate sends is the prompt as JSON: a 4 MiB diff fits
MAX_BODY_BYTES = 8 * 1024 * 1024
#: what is read of the upstream's answer (its event stream, not only the text)
MAX_ANSWER_BYTES = 4 * 1024 * 1024
#: a request's line and headers together (the gate's are under 1 KiB): over it, 431
#: before the rest is read; without it the standard library holds up to 6.4 MB a connection
MAX_HEAD_BYTES = 64 * 1024
MAX_CONCURRENT = 8
#: connections open at once (answered, reading, waiting): past it, 503 from the acceptor
MAX_CONNECTIONS = 256
DEADLINE_S = 600.0
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 120.0
GRACE_S = 30.0
#: reading a request (its head and body) from a client, at most
CLIENT_READ_S = 30.0
#: what a 503 tells the gate to wait before it asks again
RETRY_AFTER_S = 2


@dataclass(frozen=True)
class ServeConfig:
    """One service: where it listens, whom it forwards to, and every limit."""

    upstream: str  # the OpenAI-compatible base URL, ending in /v1
    key_path: Path
    token: str = field(repr=False)
    host: str = "127.0.0.1"
    port: int = PORT
    allowed_hosts: tuple[str, ...] = ()  # Host names allowed besides the loopback ones
    model: str | None = None  # the upstream's model, whatever the gate names
    upstream_key: str | None = field(default=None, repr=False)
    output_grammar: str = "none"  # the verdict contract as a grammar: gbnf, vllm (reviewers.md)
    #: the upstream's context, as reviewer.context_window: asked before each call
    context_window: str | int = "off"
    max_body_bytes: int = MAX_BODY_BYTES
    max_answer_bytes: int = MAX_ANSWER_BYTES
    max_concurrent: int = MAX_CONCURRENT
    max_connections: int = MAX_CONNECTIONS
    deadline: float = DEADLINE_S
    connect_timeout: float = CONNECT_TIMEOUT_S
    read_timeout: float = READ_TIMEOUT_S
    grace: float = GRACE_S
    client_read: float = CLIENT_READ_S

    def __post_init__(self) -> None:
        problem = base_url_problem(self.upstream)
        if problem is not None:
            raise UsageError(
                f"--upstream {shown_url(self.upstream)!r}: {problem}; give the model server's "
                "OpenAI-compatible root, e.g. http://127.0.0.1:8080/v1"
            )
        parts = urlsplit(self.upstream)
        if parts.username or parts.password:  # the transport's messages name the URL
            raise UsageError(
                f"--upstream {shown_url(self.upstream)!r} carries credentials, which every "
                "message naming the upstream would show the gate; give the upstream's key in "
                "the variable --upstream-key-env names"
            )
        for name in ("max_body_bytes", "max_answer_bytes", "max_concurrent", "max_connections"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be a positive integer")
        for name in ("deadline", "connect_timeout", "read_timeout", "grace", "client_read"):
            value = getattr(self, name)
            if not 0 < value <= 86_400:
                raise UsageError(f"--{name.replace('_', '-')} must be within (0, 86400] seconds")
        if self.max_connections < self.max_concurrent:
            raise UsageError("--max-connections must be at least --max-concurrent")
        window = self.context_window
        if isinstance(window, bool) or not (
            window in WINDOW_WORDS or (isinstance(window, int) and window > 0)
        ):
            raise UsageError(
                f"--context-window must be a number of tokens or one of {', '.join(WINDOW_WORDS)}"
            )
        if self.output_grammar not in OUTPUT_GRAMMARS:
            raise UsageError(f"--output-grammar must be one of {', '.join(OUTPUT_GRAMMARS)}")
        if not 0 <= self.port <= 65535:
            raise UsageError(f"--port must be within 0-65535, got {self.port}")

    @property
    def loopback(self) -> bool:
        """Whether the service listens on this machine only."""
        return is_loopback(self.host)

    def upstream_settings(
        self, *, model: str, max_tokens: int, temperature: float
    ) -> ReviewerSettings:
        """The gate's reviewer settings for one upstream call: the openai dialect, one
        attempt (the gate retries; a retry here would multiply its own), every limit."""
        return ReviewerSettings(
            provider="openai",
            model=self.model or model,
            base_url=self.upstream,
            api_key=self.upstream_key,
            max_tokens=max_tokens,
            temperature=temperature,
            attempts=1,
            max_response_bytes=self.max_answer_bytes,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            deadline=self.deadline,
            output_grammar=self.output_grammar,
            context_window=self.context_window,
        )


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(
    *, env: str = TOKEN_ENV, file: str | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """The bearer token from ``file`` (when given) or the variable ``env``; UsageError
    naming the setting when it is missing, holds what a key may not, or is too short."""
    environ = os.environ if environ is None else environ
    if file is not None:
        source = f"--token-file {file}"
        try:
            raw: str | None = Path(file).read_text("utf-8")
        except (OSError, UnicodeError) as err:
            raise UsageError(f"cannot read {source}: {err}") from err
    else:
        source = f"the environment variable {env}"
        raw = environ.get(env)
    try:
        token = checked_key(raw, source=source)
    except ConfigError as err:  # the value is not shown
        raise UsageError(str(err)) from err
    if token is None:
        raise UsageError(
            f"no bearer token: {source} is empty; set it (the gate sends its mc1 key as the "
            f"token), e.g. {env}=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    if len(token) < MIN_TOKEN:
        raise UsageError(
            f"the bearer token from {source} has {len(token)} characters, fewer than "
            f"{MIN_TOKEN}; make one with python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'"
        )
    return token
