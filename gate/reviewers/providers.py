"""The providers the gate speaks to, defined once: names, key variables, base URLs, user agent.

:class:`Provider` is the one list of dialects (a :class:`~enum.StrEnum`, so a
member compares and hashes equal to its name and the maps below can be looked up
with a plain string from a config file). Every other module (config, action,
commands, simulator) imports from here instead of spelling the names again.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from gate import __version__


class Provider(StrEnum):
    """One wire dialect; its value is the name used in configs, inputs and module names."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"
    MC1 = "mc1"


#: Every provider, in the order they are listed to users.
PROVIDERS: tuple[Provider, ...] = tuple(Provider)

#: Providers that cannot be called without a model name (MC1 is a team's own service).
NEEDS_MODEL: frozenset[Provider] = frozenset({Provider.OPENAI, Provider.ANTHROPIC, Provider.GEMINI})

#: The environment variable each provider's API key is read from by default.
DEFAULT_KEY_ENV: Mapping[str, str] = {
    Provider.OPENAI: "OPENAI_API_KEY",
    Provider.ANTHROPIC: "ANTHROPIC_API_KEY",
    Provider.GEMINI: "GEMINI_API_KEY",
    Provider.MC1: "REVIEW_GATE_API_KEY",
}

#: Where each provider lives when ``base_url`` is not given. MC1 has no default:
#: it is a team's own service, so its URL must always be configured.
DEFAULT_BASE_URLS: Mapping[str, str] = {
    Provider.OPENAI: "https://api.openai.com/v1",
    Provider.ANTHROPIC: "https://api.anthropic.com",
    Provider.GEMINI: "https://generativelanguage.googleapis.com",
    Provider.MC1: "",
}

#: How the gate names itself to reviewers and to GitHub.
USER_AGENT = f"review-gate/{__version__}"
