"""Config: YAML with line tracking, schema validation, action inputs, reviewer settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from gate.config.inputs import ACTION_INPUTS, INPUT_KEYS, apply_inputs, inputs_from_env
from gate.config.load import MAX_CONFIG_BYTES, load_config, parse_config
from gate.config.model import (
    ABSENT_AT_DEFAULT,
    REVIEWER_ABSENT_AT_DEFAULT,
    REVIEWER_LEARNT,
    Config,
    ReviewerConfig,
    default_config,
)
from gate.config.schema import schema
from gate.errors import ConfigError
from gate.providers import PROVIDERS
from gate.reviewers.settings import ReviewerSettings

ROOT = Path(__file__).resolve().parents[2]


def _error(text: str, source: str = "review-gate.yml") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source=source)
    return info.value


# --- valid files -----------------------------------------------------------------


def test_empty_file_and_comments_only_give_defaults() -> None:
    assert parse_config("", source="x") == default_config()
    assert parse_config("# nothing here\n", source="x") == default_config()
    assert parse_config("---\n", source="x") == Config()


def test_full_file_is_read_into_frozen_typed_config() -> None:
    text = """
reviewer:
  provider: anthropic
  model: claude-x
  base_url: http://127.0.0.1:9/v1
  api_key_env: MY_KEY
  max_tokens: 2000
  temperature: 0
  connect_timeout: 5
  read_timeout: 60
  deadline: 90
  max_response_bytes: 65536
  attempts: 2
policy_version: "2024-06"
min_confidence: 1
include: ["src/**", "*.py"]
exclude: ["**/*.lock"]
max_diff_bytes: 5000
allow_partial_coverage: true
status_context: ci/review
instructions: |
  Block anything that disables TLS verification.
override_label: ship-it
skip_drafts: false
sticky_comment: false
"""
    got = parse_config(text, source="x")
    assert got.reviewer == ReviewerConfig(
        provider="anthropic",
        model="claude-x",
        base_url="http://127.0.0.1:9/v1",
        api_key_env="MY_KEY",
        max_tokens=2000,
        temperature=0.0,
        connect_timeout=5.0,
        read_timeout=60.0,
        deadline=90.0,
        max_response_bytes=65536,
        attempts=2,
    )
    assert got.policy_version == "2024-06"
    assert got.min_confidence == 1.0
    assert isinstance(got.min_confidence, float)
    assert isinstance(got.reviewer.deadline, float)
    assert got.include == ("src/**", "*.py")
    assert got.exclude == ("**/*.lock",)
    assert got.max_diff_bytes == 5000
    assert got.allow_partial_coverage is True
    assert got.status_context == "ci/review"
    assert got.instructions == "Block anything that disables TLS verification.\n"
    assert got.override_label == "ship-it"
    assert got.skip_drafts is False
    assert got.sticky_comment is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.policy_version = "2"  # type: ignore[misc]


def test_example_config_is_valid_and_documents_every_key() -> None:
    path = ROOT / "examples" / "review-gate.config.yml"
    got = load_config(path)
    assert got.reviewer.provider in PROVIDERS
    text = path.read_text("utf-8")
    for key in schema()["properties"]:
        assert f"{key}:" in text, key
    for key in schema()["properties"]["reviewer"]["properties"]:
        assert f"{key}:" in text, key


# --- errors name the key, the line and the fix -------------------------------------


def test_bad_integer_names_key_line_and_fix() -> None:
    err = _error("reviewer:\n  model: m\n  max_tokens: lots\n")
    assert err.reason == "config_invalid"
    assert err.message.startswith(
        "review-gate.yml line 3: reviewer.max_tokens must be an integer >= 1"
    )
    assert "got 'lots'" in err.message
    assert "fix: write it as e.g. `max_tokens: 4096` under reviewer:" in err.message


def test_unknown_key_is_rejected_with_suggestion_and_line() -> None:
    err = _error("policy_version: '1'\n\nmin_confidense: 0.1\n")
    assert err.reason == "config_invalid"
    assert "line 3: unknown key min_confidense (did you mean min_confidence?)" in err.message
    assert "fix: rename or remove it" in err.message


def test_unknown_nested_key_points_at_its_own_line() -> None:
    err = _error("reviewer:\n  model: m\n  atempts: 1\n")
    assert "line 3: unknown key reviewer.atempts (did you mean attempts?)" in err.message


def test_every_error_is_reported_in_line_order() -> None:
    err = _error("status_context: ''\nreviewer:\n  provider: openia\nmin_confidence: 2\n")
    lines = err.message.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("review-gate.yml line 1: status_context must be a string")
    assert lines[1].startswith("review-gate.yml line 3: reviewer.provider must be one of openai,")
    assert lines[2].startswith("review-gate.yml line 4: min_confidence must be a number >= 0")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("policy_version: 1\n", "got 1 (a number; quote it to make it text)"),
        ("policy_version: 1.10\n", "got 1.1 (a number; quote it to make it text)"),
        ("skip_drafts: maybe\n", "skip_drafts must be true or false, got 'maybe'"),
        ("reviewer:\n  temperature: yes\n", "got true (YAML reads yes/no/on/off"),
        ("status_context: no\n", "status_context must be a string"),
        ("reviewer:\n  attempts: 0\n", "reviewer.attempts must be an integer >= 1 and <= 10"),
        ("reviewer:\n  attempts: 2.5\n", "reviewer.attempts must be an integer"),
        ("reviewer:\n  deadline: 0\n", "reviewer.deadline must be a number > 0"),
        ("reviewer:\n  base_url: ftp://x\n", "starting with http:// or https://"),
        ("reviewer:\n  api_key_env: sk-123\n", "environment variable name"),
        ("include: []\n", "include must be a list of 1 to 200 non-empty strings, got an empty"),
        ("exclude: ['']\n", "exclude[0] must be a string (not empty)"),
        ("exclude: docs/**\n", "exclude must be a list"),
        ("reviewer: openai\n", "reviewer must be a mapping of keys to values, got 'openai'"),
        ("min_confidence:\n", "got null (an empty value)"),
        ("max_diff_bytes: .inf\n", "max_diff_bytes is .inf, which is not a finite number"),
        ("min_confidence: .nan\n", "min_confidence is .nan, which is not a finite number"),
    ],
)
def test_type_and_range_errors(text: str, needle: str) -> None:
    err = _error(text)
    assert err.reason == "config_invalid"
    assert needle in err.message
    assert "line 1" in err.message or "line 2" in err.message
    assert "fix: " in err.message


def test_top_level_must_be_a_mapping() -> None:
    err = _error("- reviewer\n")
    assert err.message.startswith("review-gate.yml line 1: the file must be a mapping")


def test_yaml_syntax_error_names_the_line() -> None:
    err = _error("reviewer:\n  model: a\n b: c\n")
    assert err.reason == "config_yaml"
    assert err.message.startswith("review-gate.yml line 3: not valid YAML")
    assert "fix: check the indentation" in err.message


def test_duplicate_keys_are_rejected_not_last_wins() -> None:
    err = _error("min_confidence: 0.9\nmin_confidence: 0.1\n")
    assert err.reason == "config_duplicate_key"
    assert "line 2: duplicate key min_confidence (first at line 1)" in err.message
    nested = _error("reviewer:\n  model: a\n  model: b\n")
    assert "line 3: duplicate key reviewer.model (first at line 2)" in nested.message


def test_aliases_are_rejected_so_no_expansion_bomb() -> None:
    bomb = "a: &a ['x','x']\nb: &b [*a,*a]\nc: &c [*b,*b]\n"
    err = _error(bomb)
    assert err.reason == "config_yaml"
    assert "line 2: YAML alias *a is not supported" in err.message
    merge = _error("base: &r {model: m}\nreviewer:\n  <<: *r\n")
    assert "alias" in merge.message


def test_non_string_keys_are_rejected() -> None:
    err = _error("reviewer:\n  on: true\n")
    assert "line 2: key 'on' under reviewer is not read as a string" in err.message
    assert _error("1: x\n").reason == "config_invalid"


def test_anything_invalid_never_yields_a_config() -> None:
    # python objects and timestamps are not accepted silently
    assert "(date)" in _error("policy_version: 2024-06-01\n").message
    assert _error("!!python/object:os.system {}\n").reason == "config_yaml"
    assert _error("reviewer: !!python/name:os.system\n").reason == "config_yaml"
    assert "has the YAML tag" in _error("exclude: !!set {a}\n").message


def test_load_config_missing_unreadable_and_oversized(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as missing:
        load_config(tmp_path / "nope.yml")
    assert missing.value.reason == "config_missing"
    assert "fix: create it" in missing.value.message
    with pytest.raises(ConfigError) as directory:
        load_config(tmp_path)
    assert directory.value.reason == "config_unreadable"
    big = tmp_path / "big.yml"
    big.write_text("instructions: '" + "x" * MAX_CONFIG_BYTES + "'\n")
    with pytest.raises(ConfigError) as large:
        load_config(big)
    assert large.value.reason == "config_too_large"
    latin = tmp_path / "latin.yml"
    latin.write_bytes(b"instructions: caf\xe9\n")
    with pytest.raises(ConfigError) as encoding:
        load_config(latin)
    assert encoding.value.reason == "config_encoding"


def test_load_config_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "review-gate.yml"
    path.write_text("reviewer:\n  max_tokens: -1\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.message.startswith(f"{path} line 2: reviewer.max_tokens")


# --- schema and dataclasses agree ---------------------------------------------------


def test_schema_is_valid_draft_2020_12_and_ships_as_package_data() -> None:
    shipped = schema()
    assert shipped["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(shipped)
    assert shipped["additionalProperties"] is False
    assert shipped["properties"]["reviewer"]["additionalProperties"] is False


def test_schema_defaults_equal_dataclass_defaults() -> None:
    props = schema()["properties"]
    top = {f.name for f in dataclasses.fields(Config)}
    assert set(props) == top
    defaults = default_config().to_json()
    for name, rule in props.items():
        if name == "reviewer":
            continue
        if name in ABSENT_AT_DEFAULT:  # absent at the default
            assert name not in defaults
            continue
        if name == "fallbacks":  # absent from to_json when empty: old digests stay
            assert rule["default"] == []
            assert name not in defaults
            assert rule["items"] == props["reviewer"] | {
                "description": rule["items"]["description"]
            }
            continue
        assert rule["default"] == defaults[name], name
    reviewer_props = props["reviewer"]["properties"]
    learnt = REVIEWER_LEARNT  # what a run learnt (served_window): no setting
    assert set(reviewer_props) == {f.name for f in dataclasses.fields(ReviewerConfig)} - learnt
    for name, rule in reviewer_props.items():
        if name in REVIEWER_ABSENT_AT_DEFAULT:  # absent at the default: old digests stay
            assert name not in defaults["reviewer"]
            assert rule["default"] == getattr(ReviewerConfig(), name)
            continue
        assert rule["default"] == defaults["reviewer"][name], name


def test_to_json_round_trips_through_the_parser() -> None:
    original = parse_config(
        "reviewer: {provider: gemini, model: g, attempts: 5}\nexclude: ['*.md']\n", source="x"
    )
    again = parse_config(yaml.safe_dump(original.to_json()), source="x")
    assert again == original


# --- action inputs ------------------------------------------------------------------


def test_inputs_override_config_and_empty_means_not_given() -> None:
    base = parse_config("reviewer: {model: file-model, max_tokens: 100}\n", source="x")
    got = apply_inputs(
        base,
        {
            "model": "",
            "provider": "gemini",
            "base-url": "http://127.0.0.1:8080",
            "max-tokens": " 2048 ",
            "timeout": "30",
            "attempts": "1",
            "min-confidence": "0.95",
            "policy-version": "7",
            "status-context": "gate",
            "allow-partial-coverage": "true",
            "skip-drafts": "False",
            "comment": "false",
            "api-key-env": "K",
            "max-diff-bytes": "10",
            "override-label": "lgtm",
            "temperature": "0.5",
            # not config: ignored here
            "token": "ghs_secret",
            "api-key": "sk-secret",
            "fail-job": "true",
            "config": ".github/x.yml",
            "certificate-dir": "/tmp",
            "pr-number": "3",
        },
    )
    assert got.reviewer.model == "file-model"
    assert got.reviewer.provider == "gemini"
    assert got.reviewer.base_url == "http://127.0.0.1:8080"
    assert got.reviewer.max_tokens == 2048
    assert got.reviewer.deadline == 30.0
    assert got.reviewer.attempts == 1
    assert got.reviewer.api_key_env == "K"
    assert got.reviewer.temperature == 0.5
    assert got.min_confidence == 0.95
    assert got.policy_version == "7"
    assert got.status_context == "gate"
    assert got.allow_partial_coverage is True
    assert got.skip_drafts is False
    assert got.sticky_comment is False
    assert got.max_diff_bytes == 10
    assert got.override_label == "lgtm"
    assert "secret" not in repr(got.to_json())


def test_no_inputs_returns_the_same_config() -> None:
    base = default_config()
    assert apply_inputs(base, {}) is base
    assert apply_inputs(base, {"model": "", "token": "t"}) is base


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("max-tokens", "lots", "input max-tokens: reviewer.max_tokens must be an integer >= 1"),
        ("min-confidence", "2", "input min-confidence: min_confidence must be a number"),
        ("min-confidence", "nan", "got 'nan'"),
        ("provider", "openia", "input provider: reviewer.provider must be one of openai"),
        ("allow-partial-coverage", "yes", "must be true or false, got 'yes'"),
        ("attempts", "1.5", "reviewer.attempts must be an integer"),
        ("base-url", "localhost:80", "starting with http:// or https://"),
    ],
)
def test_invalid_inputs_name_the_input_and_fix(name: str, value: str, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        apply_inputs(default_config(), {name: value})
    assert info.value.reason == "config_invalid_input"
    assert needle in info.value.message
    assert f"fix: correct the {name} input" in info.value.message


def test_unknown_input_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        apply_inputs(default_config(), {"min-confidense": "0.1"})
    assert info.value.reason == "config_unknown_input"
    assert "(did you mean min-confidence?)" in info.value.message


def test_inputs_from_env_reads_hyphen_and_underscore_forms() -> None:
    env = {
        "INPUT_BASE-URL": " http://a ",
        "INPUT_BASE_URL": "http://ignored",
        "INPUT_MAX_TOKENS": "9",
        "INPUT_MODEL": "",
        "HOME": "/root",
    }
    assert inputs_from_env(env) == {"base-url": "http://a", "max-tokens": "9", "model": ""}


def test_an_undeclared_input_in_the_environment_is_an_error_naming_it() -> None:
    # GitHub sets INPUT_* only for this step's with: keys, so an unknown one is a typo;
    # it once vanished silently and the bar stayed at the default 0.8
    env = {"INPUT_MIN-CONFIDANCE": "0.99", "INPUT_MODEL": "m"}
    inputs = inputs_from_env(env)
    assert inputs == {"min-confidance": "0.99", "model": "m"}
    with pytest.raises(ConfigError) as info:
        apply_inputs(default_config(), inputs)
    assert info.value.reason == "config_unknown_input"
    assert info.value.message.startswith("input min-confidance: unknown input")
    assert "(did you mean min-confidence?)" in info.value.message


def test_an_undeclared_underscore_input_is_an_error_too() -> None:
    inputs = inputs_from_env({"INPUT_ALLOW_PARTIAL_COVERAGES": "true"})
    with pytest.raises(ConfigError) as info:
        apply_inputs(default_config(), inputs)
    assert info.value.reason == "config_unknown_input"
    assert "allow_partial_coverages" in info.value.message


def test_a_boolean_input_fix_example_is_written_as_yaml_writes_it() -> None:
    with pytest.raises(ConfigError) as info:
        apply_inputs(default_config(), {"skip-drafts": "maybe"})
    assert info.value.reason == "config_invalid_input"
    assert '(e.g. "true")' in info.value.message
    assert "True" not in info.value.message


def test_action_yml_declares_exactly_the_known_inputs() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    declared = set(action["inputs"])
    assert declared == set(ACTION_INPUTS)
    for name, spec in action["inputs"].items():
        assert spec.get("description"), name
        assert isinstance(spec.get("default"), str), name
        if name in INPUT_KEYS:
            # a non-empty default would always override the config file
            assert spec["default"] == "" or name == "status-context", name


# --- reviewer settings --------------------------------------------------------------


def test_key_env_defaults_per_provider() -> None:
    assert ReviewerConfig(provider="openai").key_env() == "OPENAI_API_KEY"
    assert ReviewerConfig(provider="anthropic").key_env() == "ANTHROPIC_API_KEY"
    assert ReviewerConfig(provider="gemini").key_env() == "GEMINI_API_KEY"
    assert ReviewerConfig(provider="mc1").key_env() == "REVIEW_GATE_API_KEY"
    assert ReviewerConfig(provider="gemini", api_key_env="X").key_env() == "X"
    switched = apply_inputs(default_config(), {"provider": "anthropic"})
    assert switched.reviewer.key_env() == "ANTHROPIC_API_KEY"


def test_from_config_carries_every_field() -> None:
    from gate.providers import DEFAULT_BASE_URLS

    rc = ReviewerConfig(
        provider="anthropic",
        model="m",
        max_tokens=10,
        temperature=0.3,
        connect_timeout=1.0,
        read_timeout=2.0,
        deadline=3.0,
        max_response_bytes=4096,
        attempts=4,
    )
    got = ReviewerSettings.from_config(rc, "sk-x")
    assert isinstance(got, ReviewerSettings)
    assert got.provider == "anthropic"
    assert got.model == "m"
    assert got.base_url == DEFAULT_BASE_URLS["anthropic"]
    assert got.api_key == "sk-x"
    assert "sk-x" not in repr(got)
    assert (got.max_tokens, got.temperature, got.attempts) == (10, 0.3, 4)
    assert (got.connect_timeout, got.read_timeout, got.deadline) == (1.0, 2.0, 3.0)
    assert got.max_response_bytes == 4096
    own = ReviewerSettings.from_config(
        ReviewerConfig(provider="mc1", base_url="http://127.0.0.1:1/review"), None
    )
    assert own.base_url == "http://127.0.0.1:1/review"
    assert own.api_key is None


def test_from_config_refuses_missing_model_or_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError) as model:
        ReviewerSettings.from_config(ReviewerConfig(provider="openai"), "k")
    assert model.value.reason == "config_model_missing"
    assert "fix: set reviewer.model" in model.value.message
    import gate.providers

    monkeypatch.delitem(gate.providers.DEFAULT_BASE_URLS, "mc1", raising=False)
    with pytest.raises(ConfigError) as endpoint:
        ReviewerSettings.from_config(ReviewerConfig(provider="mc1"), None)
    assert endpoint.value.reason == "config_base_url_missing"
    assert "fix: set reviewer.base_url" in endpoint.value.message


def test_config_errors_carry_where_and_fix_as_fields() -> None:
    """Each front end words a problem from these fields (the CLI: options, not inputs)."""
    err = _error("policy_version: '1'\nreviewer:\n  max_tokens: lots\n  atempts: 2\n")
    first, second = err.problems
    assert (first.source, first.line, first.key) == ("review-gate.yml", 3, "reviewer.max_tokens")
    assert first.cause.startswith("reviewer.max_tokens must be an integer")
    assert first.fix.startswith("write it as e.g. `max_tokens: 4096`")
    assert (second.line, second.key) == (4, "reviewer.atempts")
    assert err.message.splitlines()[1] == second.message
    with pytest.raises(ConfigError) as info:
        apply_inputs(default_config(), {"max-tokens": "0"})
    wrong = info.value
    assert (wrong.setting, wrong.example, wrong.fix) == ("max-tokens", "4096", "")
    cli = wrong.render(setting="--{}".format, correct=lambda n, e: f"pass --{n} {e}")
    assert cli.startswith("--max-tokens: reviewer.max_tokens must be")
    assert cli.endswith("; fix: pass --max-tokens 4096")
