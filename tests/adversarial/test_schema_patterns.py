"""Class: a pattern anchored with ``$`` that also accepts a final newline.

Cause: JSON Schema patterns are ECMA-262 regular expressions, in which ``$`` (without
the multiline flag) matches only at the very end. jsonschema checks them with Python's
``re.search``, where ``$`` also matches before a final ``\\n``: ``policy_version:
"1\\n"`` passed ``^[A-Za-z0-9][A-Za-z0-9._:+/-]{0,63}$`` (and so did a base URL or a key
variable name ending in a newline). Any Python regex anchored with ``$`` has the same
gap.

Fix: :func:`gate.config.schema.schema_regex` translates each schema pattern into a Python
regex with ECMA-262's meaning (``$`` -> ``\\Z``, ``.`` and ``\\s`` as ECMA defines
them, ``\\d``/``\\w`` ASCII), and the config validator checks ``pattern`` with it, so the
schemas stay standard for editors. In code, anchors are ``\\Z`` or ``fullmatch``.

Variants: for every pattern of every shipped schema, Hypothesis strings that match it
and the same strings with a final ``\\n``, ``\\r\\n``, ``\\n\\n``, U+2028 or a leading
newline, and arbitrary text; the verdict of ECMA-262 itself (node's RegExp with the
``u`` flag, the reference implementation) is the oracle. The config keys with a
pattern are also loaded end to end. And every regex literal in ``gate/`` is read
from the source: none may end in a bare ``$`` unless it is a multiline pattern.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gate
from gate.config.inputs import apply_inputs
from gate.config.load import parse_config
from gate.config.model import Config, default_config
from gate.config.schema import patterns, schema_regex
from gate.errors import ConfigError

GATE = Path(gate.__file__).resolve().parent
NODE = shutil.which("node")
ECMA_TEST = (
    "const pairs = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
    "process.stdout.write(JSON.stringify(pairs.map(([p, s]) => new RegExp(p, 'u').test(s))));"
)


def schema_patterns() -> list[tuple[str, str]]:
    """(schema file, pattern) for every ``pattern`` in the shipped schemas."""
    out = []
    for entry in sorted((resources.files("gate") / "schemas").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            out += [(entry.name, p) for p in patterns(json.loads(entry.read_text("utf-8")))]
    return out


PATTERNS = schema_patterns()


def ecma(pairs: list[tuple[str, str]]) -> list[bool]:
    """ECMA-262's answer (node's RegExp, ``u`` flag) for each (pattern, string)."""
    if NODE is None:
        pytest.skip("node is not installed (the ECMA-262 oracle)")
    done = subprocess.run(
        [NODE, "-e", ECMA_TEST],
        input=json.dumps(pairs).encode(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    answer: list[bool] = json.loads(done.stdout)
    return answer


def test_the_schemas_have_patterns_and_all_translate() -> None:
    assert len(PATTERNS) >= 4
    for _, pattern in PATTERNS:
        schema_regex(pattern)


def matching(pattern: str) -> st.SearchStrategy[str]:
    return st.from_regex(schema_regex(pattern), fullmatch=True)


#: what ECMA-262 counts as a line terminator (U+0085 is not one: the oracle test draws it)
LINE_ENDS = ["\n", "\r\n", "\n\n", "\r", "\u2028", "\u2029"]
TAILS = ["", *LINE_ENDS, "\u0085", " ", "\t"]
HEADS = ["", "\n", " "]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.large_base_example])
@given(data=st.data())
def test_schema_patterns_match_as_ecma_262_does(data: st.DataObject) -> None:
    pairs: list[tuple[str, str]] = []
    for _, pattern in PATTERNS:
        for _ in range(4):
            base = data.draw(matching(pattern) | st.text(max_size=12), label=pattern)
            head = data.draw(st.sampled_from(HEADS))
            tail = data.draw(st.sampled_from(TAILS))
            pairs.append((pattern, head + base + tail))
    ours = [bool(schema_regex(p).search(s)) for p, s in pairs]
    theirs = ecma(pairs)
    differ = [pair for pair, a, b in zip(pairs, ours, theirs, strict=True) if a != b]
    assert differ == []


ANCHORED = [(schema, p) for schema, p in PATTERNS if p.startswith("^") and p.endswith("$")]


@pytest.mark.parametrize(("schema", "pattern"), ANCHORED)
def test_no_anchored_pattern_accepts_a_final_newline(schema: str, pattern: str) -> None:
    @settings(max_examples=50, deadline=None)
    @given(value=matching(pattern), tail=st.sampled_from(LINE_ENDS))
    def check(value: str, tail: str) -> None:
        regex = schema_regex(pattern)
        assert regex.search(value)
        assert not regex.search(value + tail), (schema, pattern, value + tail)

    check()


PATTERN_KEYS = [
    ("policy_version", "policy_version: {}\n", '"7"'),
    ("reviewer.base_url", "reviewer:\n  base_url: {}\n", '"https://example.invalid/v1"'),
    ("reviewer.api_key_env", "reviewer:\n  api_key_env: {}\n", '"OPENAI_API_KEY"'),
]


@pytest.mark.parametrize(("key", "template", "good"), PATTERN_KEYS)
@pytest.mark.parametrize("tail", ["\\n", "\\r\\n", "\\n\\n", "\\u2028", "\\r"])
def test_config_values_with_a_line_end_are_refused(
    key: str, template: str, good: str, tail: str
) -> None:
    assert isinstance(parse_config(template.format(good), source="c.yml"), Config)
    with pytest.raises(ConfigError) as err:
        parse_config(template.format(good[:-1] + tail + '"'), source="c.yml")
    assert err.value.reason == "config_invalid"
    assert key in err.value.message


def test_the_issue_case_policy_version_with_a_newline() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config('policy_version: "1\\n"\n', source="c.yml")
    assert "line 1: policy_version must be" in err.value.message
    inputs = apply_inputs(default_config(), {"policy-version": "1"})
    assert inputs.policy_version == "1"


# --- in code: no regex literal ends in a bare $ -------------------------------------------------

RE_CALLS = {"compile", "match", "search", "fullmatch", "findall", "finditer", "sub", "split"}


def regex_literals() -> Iterator[tuple[str, int, str, bool]]:
    """(file, line, pattern, multiline) for every literal pattern passed to ``re``."""
    for path in sorted(GATE.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in RE_CALLS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str | bytes)
            ):
                continue
            pattern = node.args[0].value
            text = pattern if isinstance(pattern, str) else pattern.decode("latin-1")
            flags = ast.unparse(node)
            yield path.name, node.lineno, text, "MULTILINE" in flags or "re.M" in flags


def test_code_regexes_are_anchored_with_backslash_z_not_dollar() -> None:
    found = list(regex_literals())
    assert len(found) >= 8  # the scan sees the gate's patterns
    bare = [
        (name, line, text)
        for name, line, text, multiline in found
        if re.search(r"(?:^|[^\\])(?:\\\\)*\$(?:\)|\Z)", text) and not multiline
    ]
    assert bare == [], "use \\Z or fullmatch: $ also matches before a final newline"
