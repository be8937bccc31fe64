"""Class: a config value that YAML reads as something other than it looks, through a tag.

Cause: ``gate.config`` refused tags only on mappings and sequences (``!!set``,
``!!python/object``); a tag on a scalar was honoured: ``min_confidence: !!float
"0.5"`` and ``allow_partial_coverage: !!bool "yes"`` loaded silently, although the
README says tags are refused (a quoted ``"yes"`` reads as text, and the schema then
refuses it; the tag turned it into ``true``).

Fix: :func:`gate.config.load.compose_yaml` reads the YAML event stream before composing and
refuses the first node that carries any tag (``!!type``, ``!local``, ``!`` the
non-specific tag, ``!<verbatim>``, ``%TAG`` handles), naming the line
(``config_yaml``).

Variants: every tag form x every key of the schema (top level and under
``reviewer:``, as the value and as a list item, at a drawn line), with values that
would be valid without the tag; and the plain file without tags still loads.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.config.load import parse_config
from gate.config.model import Config
from gate.config.schema import schema
from gate.errors import ConfigError

# a value each key accepts, written as YAML (quoted where the schema wants a string)
VALUES: dict[str, str] = {
    "provider": '"openai"',
    "model": '"gpt-x"',
    "base_url": '"https://example.invalid/v1"',
    "api_key_env": '"OPENAI_API_KEY"',
    "max_tokens": "4096",
    "temperature": "0.5",
    "connect_timeout": "10",
    "read_timeout": "60",
    "deadline": "120",
    "max_response_bytes": "65536",
    "attempts": "2",
    "deployment": '"gpt-4o-review"',
    "api_version": '"2024-10-21"',
    "auth": '"entra"',
    "region": '"us-east-1"',
    "project": '"proj-123"',
    "location": '"us-east5"',
    "output_grammar": '"gbnf"',
    "context_window": '"auto"',
    # a provider: mc1 reviewer's service key (write() names the provider)
    "public_key": '"-----BEGIN PUBLIC KEY-----\\n'
    'MCowBQYDK2VwAyEAO2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=\\n-----END PUBLIC KEY-----\\n"',
    "policy_version": '"7"',
    "min_confidence": "0.9",
    "include": '["src/**"]',
    "exclude": '["docs/**"]',
    "max_diff_bytes": "1000",
    "allow_partial_coverage": "false",
    "binary_assets": "block",
    "nothing_in_scope": "block",
    "inputs_may_lower": "[min-confidence]",
    "fallbacks": "[]",
    "needs_human_label": '"waiting"',
    "escalation": "{after_hours: 12}",
    "sarif": "true",
    "incremental": '"off"',
    "status_context": '"gate"',
    "instructions": '"be strict"',
    "override_label": '"ok"',
    "skip_drafts": "true",
    "sticky_comment": "false",
    "agreement": "3",
    "concurrency": "2",
    "max_chunk_bytes": "65536",
    "max_chunks": "10",
    "max_input_tokens": "50000",
    "run_deadline": "600",
    "max_cost": "0.5",
    "pricing": "{gpt-x: {input: 1, output: 2}}",
    "report": '"both"',
    "review_comments": "true",
    "context": '"files"',
    "context_bytes": "4096",
}
REVIEWER_KEYS = sorted(schema()["properties"]["reviewer"]["properties"])
TOP_KEYS = sorted(k for k in schema()["properties"] if k != "reviewer")
TAGS = [
    "!!float",
    "!!bool",
    "!!int",
    "!!str",
    "!!null",
    "!!binary",
    "!!timestamp",
    "!",
    "!local",
    "!<tag:yaml.org,2002:str>",
    "!<tag:yaml.org,2002:float>",
    "!e!x",  # a handle declared with %TAG
]


def test_every_schema_key_has_a_value_here() -> None:
    assert set(VALUES) == set(REVIEWER_KEYS) | set(TOP_KEYS)


def write(key: str, value: str, filler: int) -> tuple[str, int]:
    """A config with ``key: value`` (under reviewer: when it is a reviewer key) after
    ``filler`` comment lines; returns the text and the line of the value."""
    head = "%TAG !e! tag:example.com,2000:\n---\n"
    lines = [f"# filler {i}" for i in range(filler)]
    if key == "public_key":  # only an mc1 reviewer takes one
        lines += ["reviewer:", "  provider: mc1", "  base_url: https://review.example/v1"]
        lines.append(f"  {key}: {value}")
    elif key in REVIEWER_KEYS:
        lines += ["reviewer:", f"  {key}: {value}"]
    else:
        lines.append(f"{key}: {value}")
    return head + "\n".join(lines) + "\n", 2 + len(lines)


def tagged(value: str, tag: str, *, in_list: bool) -> str:
    if in_list and value.startswith("["):
        return f"[{tag} {value[1:-1]}]"  # the tag on the item
    return f"{tag} {value}"


@settings(max_examples=400, deadline=None)
@given(
    key=st.sampled_from(sorted(VALUES)),
    tag=st.sampled_from(TAGS),
    in_list=st.booleans(),
    filler=st.integers(min_value=0, max_value=5),
)
def test_a_tag_on_any_value_is_refused_naming_its_line(
    key: str, tag: str, in_list: bool, filler: int
) -> None:
    plain, line = write(key, VALUES[key], filler)
    assert isinstance(parse_config(plain, source="c.yml"), Config)  # fine untagged
    text, line = write(key, tagged(VALUES[key], tag, in_list=in_list), filler)
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="c.yml")
    assert err.value.reason == "config_yaml"
    assert f"c.yml line {line}: " in err.value.message
    assert "YAML tag" in err.value.message


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('min_confidence: !!float "0.5"\n', 0.5),
        ('allow_partial_coverage: !!bool "yes"\n', True),
        ("policy_version: !!str 1\n", "1"),
        ("reviewer:\n  max_tokens: !!int '12'\n", 12),
    ],
)
def test_the_issue_cases_once_loaded_silently(text: str, value: Any) -> None:
    # what the tag would have produced: a value that looks like something else in the file
    assert next(iter(_plain_values(text))) == value
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="c.yml")
    assert err.value.reason == "config_yaml"


def _plain_values(text: str) -> list[Any]:
    loaded = yaml.safe_load(text)
    return [v for v in loaded.values() if not isinstance(v, dict)] or list(
        loaded["reviewer"].values()
    )
