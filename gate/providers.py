"""The providers the gate speaks to, defined once: names, key variables, base URLs, regions.

:class:`Provider` is the one list of dialects (a :class:`~enum.StrEnum`, so a
member compares and hashes equal to its name and the maps below can be looked up
with a plain string from a config file). Every other module (config, action,
commands, simulator) imports from here instead of spelling the names again.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class Provider(StrEnum):
    """One wire dialect; its value is the name used in configs, inputs and module names."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    MC1 = "mc1"
    OPENAI_RESPONSES = "openai-responses"
    AZURE_OPENAI = "azure-openai"
    BEDROCK = "bedrock"
    VERTEX = "vertex"

    @property
    def module(self) -> str:
        """The dialect module's name under :mod:`gate.reviewers` (``-`` is not allowed there)."""
        return self.value.replace("-", "_")


#: Every provider, in the order they are listed to users.
PROVIDERS: tuple[Provider, ...] = tuple(Provider)

#: Providers that cannot be called without a model name (MC1 is a team's own service).
NEEDS_MODEL: frozenset[Provider] = frozenset(set(Provider) - {Provider.MC1})

#: The environment variable each provider's API key is read from by default.
DEFAULT_KEY_ENV: Mapping[str, str] = {
    Provider.OPENAI: "OPENAI_API_KEY",
    Provider.ANTHROPIC: "ANTHROPIC_API_KEY",
    Provider.GEMINI: "GEMINI_API_KEY",
    Provider.MC1: "REVIEW_GATE_API_KEY",
    Provider.OPENAI_RESPONSES: "OPENAI_API_KEY",
    Provider.AZURE_OPENAI: "AZURE_OPENAI_API_KEY",
    # SigV4: the secret key signs; the key id and session token are read beside it
    Provider.BEDROCK: "AWS_SECRET_ACCESS_KEY",  # sigv4.SECRET_KEY_ENV reads it from here
    # an OAuth access token (google-github-actions/auth with token_format: access_token)
    Provider.VERTEX: "GOOGLE_OAUTH_ACCESS_TOKEN",
}

#: The variable an Azure OpenAI Microsoft Entra bearer token is read from (``reviewer.auth:
#: entra``), e.g. from ``az account get-access-token`` after ``azure/login`` with OIDC.
AZURE_TOKEN_ENV = "AZURE_OPENAI_AD_TOKEN"
#: The AWS session token, signed in beside the secret key (``gate.reviewers.sigv4``).
AWS_SESSION_TOKEN_ENV = "AWS_SESSION_TOKEN"
#: Every variable that may hold a reviewer secret: masked and redacted from the start of a run.
SECRET_ENVS: tuple[str, ...] = (
    *dict.fromkeys(DEFAULT_KEY_ENV.values()),
    AZURE_TOKEN_ENV,
    AWS_SESSION_TOKEN_ENV,
)

#: Where an AWS region is read from, in order, when ``reviewer.region`` is not given.
REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")


def region_from_env(environ: Mapping[str, str]) -> str | None:
    """The first non-empty AWS region variable (``AWS_REGION``, then ``AWS_DEFAULT_REGION``)."""
    for name in REGION_ENVS:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


#: Where each provider lives when ``base_url`` is not given. MC1 has no default:
#: it is a team's own service, so its URL must always be configured.
DEFAULT_BASE_URLS: Mapping[str, str] = {
    Provider.OPENAI: "https://api.openai.com/v1",
    Provider.ANTHROPIC: "https://api.anthropic.com",
    Provider.GEMINI: "https://generativelanguage.googleapis.com",
    Provider.MC1: "",
    Provider.OPENAI_RESPONSES: "https://api.openai.com/v1",
    # a resource's own endpoint, e.g. https://my-resource.openai.azure.com
    Provider.AZURE_OPENAI: "",
    # built from the region (reviewer.region, else AWS_REGION) when base_url is not given
    Provider.BEDROCK: "",
    # built from the location (reviewer.location) when base_url is not given
    Provider.VERTEX: "",
}

#: How to give a provider without a public default its endpoint (the ConfigError's fix);
#: None where the caller's own words say it (a public default, or MC1's own endpoint).
BASE_URL_FIX: Mapping[str, str | None] = {
    Provider.OPENAI: None,
    Provider.ANTHROPIC: None,
    Provider.GEMINI: None,
    Provider.MC1: None,
    Provider.OPENAI_RESPONSES: None,
    Provider.AZURE_OPENAI: (
        "set reviewer.base_url (the base-url input) to your resource's endpoint, "
        "e.g. https://my-resource.openai.azure.com"
    ),
    Provider.BEDROCK: (
        "set reviewer.region (the region input) or AWS_REGION, e.g. us-east-1 "
        "(aws-actions/configure-aws-credentials sets AWS_REGION)"
    ),
    Provider.VERTEX: "set reviewer.location (the location input), e.g. us-east5 or global",
}


def cloud_base_url(
    provider: str,
    *,
    region: str | None = None,
    location: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The endpoint when ``base_url`` is not given: a public default, or one built from the
    region (Bedrock: ``reviewer.region``, else ``AWS_REGION``/``AWS_DEFAULT_REGION``) or the
    location (Vertex; ``global`` has no region prefix). "" when it cannot be told."""
    if provider == Provider.BEDROCK:
        chosen = region or region_from_env(environ or {})
        return f"https://bedrock-runtime.{chosen}.amazonaws.com" if chosen else ""
    if provider == Provider.VERTEX:
        if not location:
            return ""
        if location == "global":
            return "https://aiplatform.googleapis.com"
        return f"https://{location}-aiplatform.googleapis.com"
    return DEFAULT_BASE_URLS.get(provider, "")


#: An OpenAI-compatible server's base URL, as hints give it (Ollama's default port).
LOCAL_OPENAI_URL = "http://127.0.0.1:11434/v1"

#: Names people give a provider (case-folded) -> the providers they most likely mean, and
#: whether a base URL must go with it (Ollama and every other OpenAI-compatible server
#: speak ``openai`` at their own URL).
PROVIDER_ALIASES: Mapping[str, tuple[tuple[Provider, ...], bool]] = {
    **dict.fromkeys(("claude", "anthropic-claude"), ((Provider.ANTHROPIC,), False)),
    **dict.fromkeys(("azure", "azure_openai", "azureopenai"), ((Provider.AZURE_OPENAI,), False)),
    "google": ((Provider.GEMINI, Provider.VERTEX), False),
    **dict.fromkeys(("google-ai", "googleai"), ((Provider.GEMINI,), False)),
    **dict.fromkeys(("vertexai", "vertex-ai", "vertex_ai"), ((Provider.VERTEX,), False)),
    **dict.fromkeys(("aws", "amazon", "aws-bedrock"), ((Provider.BEDROCK,), False)),
    **dict.fromkeys(("responses", "openai_responses"), ((Provider.OPENAI_RESPONSES,), False)),
    **dict.fromkeys(
        (
            "ollama",
            "openai-compatible",
            "openai_compatible",
            "vllm",
            "llamacpp",
            "llama.cpp",
            "llama-cpp",
            "lmstudio",
            "litellm",
            "local",
        ),
        ((Provider.OPENAI,), True),
    ),
}


def meant_provider(value: str) -> tuple[tuple[Provider, ...], bool] | None:
    """The providers a wrong ``provider`` value most likely means, and whether a base URL
    goes with it; None when nothing is close (or ``value`` is a provider)."""
    import difflib

    if value in PROVIDERS:
        return None
    folded = value.strip().casefold()
    if folded in PROVIDERS:
        return (Provider(folded),), False
    if folded in PROVIDER_ALIASES:
        return PROVIDER_ALIASES[folded]
    close = difflib.get_close_matches(folded, [*PROVIDERS, *PROVIDER_ALIASES], n=1, cutoff=0.6)
    if not close:
        return None
    return ((Provider(close[0]),), False) if close[0] in PROVIDERS else PROVIDER_ALIASES[close[0]]
