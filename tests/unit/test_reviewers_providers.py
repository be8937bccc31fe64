"""The providers and their key variables are defined once (gate.providers), the user
agent once (gate/__init__.py, beside the version)."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import gate
from gate import USER_AGENT
from gate.providers import DEFAULT_BASE_URLS, DEFAULT_KEY_ENV, NEEDS_MODEL, PROVIDERS, Provider

GATE = Path(gate.__file__).parent
HOME = GATE / "providers.py"


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
        r"\(\s*\"openai\",\s*\"anthropic\"",
    ]
    pattern = re.compile("|".join(spelled))
    # the agent spelled again: "review-gate/" and the version (SARIF's rule ids such as
    # "review-gate/finding" are names, not the agent)
    agent = re.compile(r"\"review-gate/(\{|\d)")
    agent_home = GATE / "__init__.py"  # USER_AGENT sits beside __version__
    offenders = [
        str(path.relative_to(GATE))
        for path in sorted(GATE.rglob("*.py"))
        if (path != HOME and pattern.search(path.read_text(encoding="utf-8")))
        or (path != agent_home and agent.search(path.read_text(encoding="utf-8")))
    ]
    assert offenders == []
