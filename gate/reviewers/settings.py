"""Reviewer settings: what to call, with which limits, and their validation.

:class:`ReviewerSettings` is the one typed input of every transport. It is
validated once, before any network call (:func:`validate`), so an invalid
setting is a :class:`~gate.errors.UsageError` naming the setting and the fix,
never an incomplete attempt. The API key is kept out of ``repr``.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, fields
from urllib.parse import urlsplit

from gate.config.model import ReviewerConfig
from gate.errors import ConfigError, UsageError
from gate.providers import (
    BASE_URL_FIX,
    DEFAULT_BASE_URLS,
    DEFAULT_KEY_ENV,
    NEEDS_MODEL,
    PROVIDERS,
    Provider,
    cloud_base_url,
)
from gate.reviewers.sigv4 import ACCESS_KEY_ENV
from gate.safe.redact import key_problem


@dataclass(frozen=True, kw_only=True)
class ReviewerSettings(ReviewerConfig):
    """Which reviewer to call and the limits of every call (seconds, bytes).

    The config's reviewer section (:class:`~gate.config.model.ReviewerConfig`, whose fields and
    defaults it inherits), resolved for one call: ``provider``, ``model`` and ``base_url``
    are required, and it holds the API key itself (never in ``repr``) and the retry pacing.
    """

    provider: str
    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    backoff_base: float = 1.0
    backoff_cap: float = 30.0
    retry_after_cap: float = 60.0

    @classmethod
    def from_config(cls, config: ReviewerConfig, api_key: str | None) -> ReviewerSettings:
        """Transport settings for :func:`gate.reviewers.transport.review` from the config's part.

        Raises ConfigError when the reviewer cannot be used as configured (no model,
        no endpoint for mc1).
        """
        if config.provider in NEEDS_MODEL and not config.model:
            raise ConfigError(
                f"reviewer.model is not set for provider {config.provider}",
                key="reviewer.model",
                fix="set reviewer.model in the config file or the action's model input",
                reason="config_model_missing",
            )
        base_url = config.base_url or cloud_base_url(
            config.provider, region=config.region, location=config.location, environ=os.environ
        )
        if not base_url:
            raise ConfigError(
                f"reviewer.base_url is not set and provider {config.provider} "
                "has no public endpoint",
                key="reviewer.base_url",
                fix=BASE_URL_FIX.get(config.provider)
                or "set reviewer.base_url in the config file or the action's base-url input",
                reason="config_base_url_missing",
            )
        values = {f.name: getattr(config, f.name) for f in fields(ReviewerConfig)}
        return cls(**{**values, "base_url": base_url, "api_key": api_key})


def _official_host(provider: str) -> str:
    return urlsplit(DEFAULT_BASE_URLS.get(provider, "")).hostname or ""


#: The clouds' own hosts end so; there a credential is always needed.
_CLOUD_HOSTS: dict[str, tuple[str, ...]] = {
    Provider.OPENAI: (),
    Provider.ANTHROPIC: (),
    Provider.GEMINI: (),
    Provider.MC1: (),
    Provider.OPENAI_RESPONSES: (),
    Provider.AZURE_OPENAI: (".openai.azure.com", ".cognitiveservices.azure.com"),
    Provider.BEDROCK: (".amazonaws.com",),
    Provider.VERTEX: ("aiplatform.googleapis.com",),
}
_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def needs_api_key(settings: ReviewerSettings) -> bool:
    """True when the endpoint is the provider's own API, which always needs a key.

    OpenAI-compatible local servers (Ollama, vLLM, llama.cpp) and a team's MC1
    service may run without one.
    """
    try:
        host = urlsplit(settings.base_url).hostname or ""
    except ValueError:  # not a URL at all: validate() names the problem
        return False
    official = _official_host(settings.provider)
    if any(host.endswith(tail) for tail in _CLOUD_HOSTS.get(settings.provider, ())):
        return True
    return bool(official) and host == official


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a reviewer base URL (one short phrase), or None when it can.

    Catches what urllib raises on (a port out of range or not a number, an
    unclosed IPv6 bracket) as well as a missing scheme or host. A message naming the
    URL shows it through :func:`shown_url` (credentials are refused in :func:`validate`,
    but a URL with another problem is reported first).
    """
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError as err:  # "Port out of range 0-65535", "Invalid IPv6 URL", ...
        return f"it is not a valid URL ({err})"
    if parts.scheme not in ("http", "https"):
        return "it is not an http(s) URL"
    if not host:
        return "it has no host"
    if port == 0:
        return "port 0 is not a port a server listens on"
    return None


def shown_url(url: str) -> str:
    """``url`` as messages show it: whatever stands before an ``@`` in the host part
    (credentials) replaced, so a refused URL never prints its password."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    host_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    netloc, tail = rest[:host_end], rest[host_end:]
    if "@" in netloc:
        netloc = "[credentials]@" + netloc.rsplit("@", 1)[1]
    return f"{scheme}{sep}{netloc}{tail}"


def _cloud_settings(settings: ReviewerSettings) -> None:
    """The clouds' own settings: names that go into a URL, and what each provider needs."""
    for name, pattern in (
        ("region", _NAME),
        ("location", _NAME),
        ("project", _NAME),
        ("deployment", _TOKEN),
        ("api_version", _TOKEN),
    ):
        value = getattr(settings, name)
        if value is not None and (not isinstance(value, str) or not pattern.fullmatch(value)):
            raise UsageError(
                f"reviewer setting {name} {value!r} is not a valid name; use letters, digits "
                "and hyphens as the cloud console shows it",
                reason="config_invalid",
            )
    if settings.auth not in (None, "api-key", "entra"):
        raise UsageError(
            f"reviewer setting auth {settings.auth!r}: use api-key or entra (azure-openai)",
            reason="config_invalid",
        )
    if settings.provider == Provider.VERTEX and not settings.project:
        raise UsageError(
            "reviewer.project is not set: vertex needs the Google Cloud project id "
            "(the project input, or reviewer.project)",
            reason="config_invalid",
        )
    if settings.provider == Provider.VERTEX and not settings.location:
        raise UsageError(
            "reviewer.location is not set: vertex needs a location, e.g. us-east5 or global",
            reason="config_invalid",
        )
    if (
        settings.provider == Provider.BEDROCK
        and settings.api_key
        and not os.environ.get(ACCESS_KEY_ENV, "").strip()
    ):
        raise UsageError(
            f"the bedrock provider signs with AWS credentials and {ACCESS_KEY_ENV} is not "
            "set: run aws-actions/configure-aws-credentials (OIDC) in an earlier step",
            reason="missing_api_key",
        )


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"reviewer setting {name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"reviewer setting {name} must be a positive number, got {value!r}")


#: ``output_grammar`` values, each with the request member it fills (openai provider only)
OUTPUT_GRAMMARS = ("none", "gbnf", "vllm")


def _grammar_setting(settings: ReviewerSettings) -> None:
    if settings.output_grammar not in OUTPUT_GRAMMARS:
        raise UsageError(
            f"reviewer output_grammar {settings.output_grammar!r} is not known; use one of "
            + ", ".join(OUTPUT_GRAMMARS),
            reason="config_output_grammar",
        )
    if settings.output_grammar != "none" and settings.provider != Provider.OPENAI:
        raise UsageError(
            f"reviewer output_grammar {settings.output_grammar!r} is for a self-hosted server "
            f"behind the openai provider (llama.cpp, vLLM), not {settings.provider}; "
            "remove output_grammar or set provider: openai with the server's base_url",
            reason="config_output_grammar",
        )


def _window_setting(settings: ReviewerSettings) -> None:
    """``context_window`` asks a self-hosted server (gate/reviewers/window.py): only the
    openai provider speaks to one."""
    if settings.context_window != "off" and settings.provider != Provider.OPENAI:
        raise UsageError(
            f"reviewer context_window {settings.context_window!r} is for a self-hosted "
            f"server behind the openai provider (llama.cpp, vLLM, Ollama), not "
            f"{settings.provider}; remove context_window or set provider: openai with the "
            "server's base_url",
            reason="config_context_window",
        )


def _public_key_setting(settings: ReviewerSettings) -> None:
    """``public_key`` only for mc1, and an Ed25519 public key in PEM (the config's reader
    said so already; settings built in code are held to the same)."""
    if settings.public_key is None:
        return
    if settings.provider != Provider.MC1:
        raise UsageError(
            f"reviewer public_key is set for provider {settings.provider}, which carries no "
            "signature; set provider: mc1 or remove public_key",
            reason="config_public_key",
        )
    from gate.decide.signature import public_key_from_pem

    try:
        public_key_from_pem(settings.public_key.encode("utf-8"), source="reviewer.public_key")
    except ConfigError as err:
        raise UsageError(err.message, reason="config_public_key") from err


def validate(settings: ReviewerSettings) -> None:
    """Raise :class:`UsageError` naming the first invalid setting and its fix."""
    if settings.provider not in PROVIDERS:
        raise UsageError(
            f"unknown reviewer provider {settings.provider!r}; use one of {', '.join(PROVIDERS)}",
            reason="unknown_provider",
        )
    if settings.provider in NEEDS_MODEL and (
        not isinstance(settings.model, str) or not settings.model.strip()
    ):
        raise UsageError(
            f"reviewer model is empty; set the model name for {settings.provider}",
            reason="missing_model",
        )
    problem = base_url_problem(settings.base_url or "")
    if problem is not None:
        hint = (
            "set base_url to your MC1 reviewer endpoint, e.g. https://reviewer.example/review"
            if settings.provider == Provider.MC1
            else BASE_URL_FIX.get(settings.provider)
            or f"use e.g. {DEFAULT_BASE_URLS[settings.provider]}"
        )
        raise UsageError(
            f"reviewer base_url {shown_url(settings.base_url or '')!r}: {problem}; {hint}",
            reason="bad_base_url",
        )
    parts = urlsplit(settings.base_url)
    if parts.username or parts.password:
        raise UsageError(
            "reviewer base_url must not carry credentials; put the key in "
            f"{DEFAULT_KEY_ENV[settings.provider]} instead",
            reason="bad_base_url",
        )
    if settings.api_key:
        problem = key_problem(settings.api_key)
        if problem is not None:  # the readers strip and check; a caller that did not is refused
            raise UsageError(
                f"the reviewer API key holds {problem}; pass the key alone (printable ASCII, "
                "no spaces or line breaks; the value is not shown)",
                reason="config_bad_secret",
            )
    _cloud_settings(settings)
    _grammar_setting(settings)
    _window_setting(settings)
    _public_key_setting(settings)
    if needs_api_key(settings) and not settings.api_key:
        host = parts.hostname
        raise UsageError(
            f"no API key for {settings.provider} at {host}; "
            f"set {DEFAULT_KEY_ENV[settings.provider]} (or the configured api key variable)",
            reason="missing_api_key",
        )
    if isinstance(settings.max_tokens, bool) or not isinstance(settings.max_tokens, int):
        raise UsageError("reviewer setting max_tokens must be an integer")
    _positive("max_tokens", settings.max_tokens)
    if isinstance(settings.attempts, bool) or not isinstance(settings.attempts, int):
        raise UsageError("reviewer setting attempts must be an integer")
    _positive("attempts", settings.attempts)
    if isinstance(settings.max_response_bytes, bool) or not isinstance(
        settings.max_response_bytes, int
    ):
        raise UsageError("reviewer setting max_response_bytes must be an integer")
    _positive("max_response_bytes", settings.max_response_bytes)
    for name in ("connect_timeout", "read_timeout", "deadline"):
        _positive(name, getattr(settings, name))
    temperature = settings.temperature
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0.0 <= temperature <= 2.0
    ):
        raise UsageError(
            f"reviewer setting temperature must be between 0 and 2, got {temperature!r}"
        )
    for name in ("backoff_base", "backoff_cap", "retry_after_cap"):
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise UsageError(f"reviewer setting {name} must be zero or more, got {value!r}")
