"""The overrides: action inputs (kebab-case) over the config from the file.

An input name the action does not declare is a ConfigError naming it: a typo must never
leave the bar silently at the default. A value is read as the type the schema wants
(``"0.9"`` a number, ``"true"`` a boolean), then the whole config is validated again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gate.config.load import build_config, require_keys, require_price
from gate.config.model import Config
from gate.config.schema import schema_at, schema_errors
from gate.config.wording import all_problems, describe, did_you_mean
from gate.errors import ConfigError

# Action input (kebab-case) -> config key path it overrides.
INPUT_KEYS: dict[str, tuple[str, ...]] = {
    "provider": ("reviewer", "provider"),
    "model": ("reviewer", "model"),
    "base-url": ("reviewer", "base_url"),
    "public-key": ("reviewer", "public_key"),
    "api-key-env": ("reviewer", "api_key_env"),
    "deployment": ("reviewer", "deployment"),
    "api-version": ("reviewer", "api_version"),
    "auth": ("reviewer", "auth"),
    "region": ("reviewer", "region"),
    "project": ("reviewer", "project"),
    "location": ("reviewer", "location"),
    "max-tokens": ("reviewer", "max_tokens"),
    "temperature": ("reviewer", "temperature"),
    "attempts": ("reviewer", "attempts"),
    "timeout": ("reviewer", "deadline"),
    "policy-version": ("policy_version",),
    "min-confidence": ("min_confidence",),
    "status-context": ("status_context",),
    "max-diff-bytes": ("max_diff_bytes",),
    "allow-partial-coverage": ("allow_partial_coverage",),
    "override-label": ("override_label",),
    "skip-drafts": ("skip_drafts",),
    "comment": ("sticky_comment",),
    "max-cost": ("max_cost",),
    "review-comments": ("review_comments",),
    "sarif": ("sarif",),
    "report": ("report",),
    "agreement": ("agreement",),
}
# Action inputs that are not config (read by the action itself).
RUNTIME_INPUTS = frozenset(
    {"config", "token", "api-key", "fail-job", "certificate-dir", "pr-number", "fresh"}
    | {"mode", "since", "max-replays", "identity"}
)
ACTION_INPUTS = frozenset(INPUT_KEYS) | RUNTIME_INPUTS


def inputs_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The action's inputs from ``INPUT_*`` variables, by kebab-case name.

    Runners keep a hyphen in the variable name (``INPUT_BASE-URL``); some tools
    replace it with an underscore (``INPUT_BASE_URL``). Both are read; the hyphen form
    wins. Values are stripped; an absent input is absent, an empty one is ``""``.

    Every ``INPUT_*`` variable is returned, declared or not: GitHub sets them only for
    the ``with:`` keys of this step, so an undeclared one is a typo
    (``min-confidance: 0.99``) that :func:`apply_inputs` rejects by name instead of the
    bar silently staying at the default.
    """
    found: dict[str, str] = {}
    for name in sorted(ACTION_INPUTS):
        upper = name.upper()
        for var in (f"INPUT_{upper}", f"INPUT_{upper.replace('-', '_')}"):
            if var in environ:
                found[name] = environ[var].strip()
                break
    known = {f"INPUT_{name.upper()}" for name in ACTION_INPUTS}
    known |= {var.replace("-", "_") for var in known}
    for var in sorted(environ):
        if var.startswith("INPUT_") and var not in known:
            found[var[len("INPUT_") :].lower()] = environ[var].strip()
    return found


def apply_inputs(config: Config, inputs: Mapping[str, str]) -> Config:
    """Override ``config`` with action inputs; an empty string means "not given".

    Inputs that are not config (token, api-key, ...) are ignored here; an input name
    the action does not declare is a ConfigError (a typo must not be ignored).
    """
    data = config.to_json()
    lines: dict[tuple[str | int, ...], int] = {}
    given: dict[tuple[str, ...], str] = {}
    for name, raw in inputs.items():
        if name not in ACTION_INPUTS:
            raise ConfigError(
                f"unknown input{did_you_mean(name, ACTION_INPUTS)}",
                setting=name,
                fix="use one of the inputs action.yml declares: "
                + ", ".join(sorted(ACTION_INPUTS)),
                reason="config_unknown_input",
            )
        value = raw.strip()
        if name in RUNTIME_INPUTS or value == "":
            continue
        path = INPUT_KEYS[name]
        given[path] = name
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = _coerce_input(value, schema_at(path))
    if not given:
        return config
    errors = sorted(schema_errors(data), key=lambda e: [str(p) for p in e.path])
    if errors:
        problems = []
        for err in errors:
            culprit = given.get(tuple(str(p) for p in err.absolute_path))
            problems += describe(err, source="config", lines=lines, input_name=culprit)
        raise all_problems(problems, reason="config_invalid_input")
    merged = require_price(build_config(data), source="config and inputs")
    return require_keys(merged, source="config and inputs")


_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})


def _coerce_input(value: str, schema: Mapping[str, Any]) -> Any:
    """Read a string input as the type the schema wants; leave it a string if it is not one
    (so validation reports it with the expected type)."""
    types = schema.get("type")
    wanted = set(types) if isinstance(types, list) else {types}
    if "boolean" in wanted:
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
    if "integer" in wanted:
        try:
            return int(value, 10)
        except ValueError:
            pass
    if "number" in wanted:
        try:
            number = float(value)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return number
    return value
