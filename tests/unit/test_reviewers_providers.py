"""The providers, their key variables and the user agent are defined once, in gate.reviewers."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import gate
from gate.reviewers import (
    DEFAULT_BASE_URLS,
    DEFAULT_KEY_ENV,
    NEEDS_MODEL,
    PROVIDERS,
    USER_AGENT,
    Provider,
)

GATE = Path(gate.__file__).parent
HOME = GATE / "reviewers" / "providers.py"


def test_every_map_covers_every_provider_and_nothing_else() -> None:
    assert tuple(Provider) == PROVIDERS
    assert set(DEFAULT_KEY_ENV) == set(DEFAULT_BASE_URLS) == set(Provider)
    assert set(Provider) - {Provider.MC1} == NEEDS_MODEL
    # a StrEnum member is its name: config files and inputs look it up as a plain string
    assert all(DEFAULT_KEY_ENV[str(p.value)] == DEFAULT_KEY_ENV[p] for p in Provider)
    assert f"review-gate/{gate.__version__}" == USER_AGENT


def test_the_config_schema_lists_the_same_providers() -> None:
    schema = json.loads(resources.files("gate").joinpath("schemas/config.schema.json").read_text())
    enum = schema["properties"]["reviewer"]["properties"]["provider"]["enum"]
    assert enum == list(PROVIDERS)


def test_no_other_module_spells_the_values_again() -> None:
    """A second definition is a literal of a key variable, the agent, or the provider tuple."""
    spelled = [
        *(re.escape(f'"{name}"') for name in DEFAULT_KEY_ENV.values()),
        # the agent is "review-gate/" and a version; SARIF's rule ids ("review-gate/finding")
        # are names of their own, not the agent spelled again
        r'"review-gate/(?:\{|\d)',
        r"\(\s*\"openai\",\s*\"anthropic\"",
    ]
    pattern = re.compile("|".join(spelled))
    offenders = [
        str(path.relative_to(GATE))
        for path in sorted(GATE.rglob("*.py"))
        if path != HOME and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
