"""Configuration: the repository's YAML file and the action's inputs, as one frozen Config.

Owns three things:

* parsing ``.github/review-gate.yml`` with line tracking and validating it against
  the JSON Schema shipped in ``gate/schemas/config.schema.json`` (draft 2020-12), so
  every :class:`~gate.errors.ConfigError` names the key, the line and the fix;
* :func:`apply_inputs`: action inputs (kebab-case) override the file;
* :class:`ReviewerConfig`: the reviewer part (``ReviewerSettings.from_config`` in
  :mod:`gate.reviewers.settings` makes it transport settings; the dependency points one way).

Unknown keys, duplicate keys, YAML aliases and non-string keys are rejected: a typo
must never silently weaken the gate. YAML 1.1 surprises (``1`` is not the string
``"1"``, ``yes`` is a boolean) are type errors with a fix, not silent coercions.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import field, fields, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.errors import ConfigError
from gate.frozen import dataclass
from gate.prices import listed_price
from gate.providers import (
    AZURE_TOKEN_ENV,
    DEFAULT_KEY_ENV,
    LOCAL_OPENAI_URL,
    Provider,
    meant_provider,
)
from gate.safe.redact import redact
from gate.schema_check import conforms

if TYPE_CHECKING:
    import yaml
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator


DEFAULT_CONFIG_PATH = ".github/review-gate.yml"
MAX_CONFIG_BYTES = 256 * 1024
#: deepest YAML nesting read (a config needs two levels)
MAX_YAML_DEPTH = 8


@dataclass(frozen=True)
class ReviewerConfig:
    """The reviewer section of the config."""

    provider: str = "openai"
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    max_tokens: int = 4096
    temperature: float = 0.0
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    deadline: float = 300.0
    max_response_bytes: int = 4 * 1024 * 1024
    attempts: int = 3
    # the clouds (issue 13): where the model lives and how the gate proves who it is
    deployment: str | None = None  # azure-openai: the deployment path (else the v1 path)
    api_version: str | None = None  # azure-openai: api-version with a deployment
    auth: str | None = None  # azure-openai: "api-key" (default) or "entra" (bearer token)
    region: str | None = None  # bedrock: AWS region (else AWS_REGION / AWS_DEFAULT_REGION)
    project: str | None = None  # vertex: Google Cloud project id
    location: str | None = None  # vertex: region, e.g. us-east5, or "global"

    def key_env(self) -> str:
        """The environment variable that holds the API key (explicit, or the provider's)."""
        if self.api_key_env:
            return self.api_key_env
        if self.provider == Provider.AZURE_OPENAI and self.auth == "entra":
            return AZURE_TOKEN_ENV
        return DEFAULT_KEY_ENV[self.provider]


@dataclass(frozen=True)
class ModelPrice:
    """A model's price in the config's currency per million input and output tokens."""

    model: str
    input: float
    output: float


@dataclass(frozen=True)
class Escalation:
    """Triage (``mode: triage``): after ``after_hours`` a waiting pull request's line
    mentions ``mention`` (``@user`` or ``@org/team``) in the tracking issue."""

    after_hours: float = 24.0
    mention: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """The whole configuration, after the file and the inputs are merged."""

    reviewer: ReviewerConfig = field(default_factory=ReviewerConfig)
    policy_version: str = "1"
    min_confidence: float = 0.8
    include: tuple[str, ...] = ("**",)
    exclude: tuple[str, ...] = ()
    #: what max_chunks chunks of max_chunk_bytes hold (issue 10: raised from 1,000,000)
    max_diff_bytes: int = 40 * 262_144
    allow_partial_coverage: bool = False
    #: images, fonts, audio, video known by name and first bytes (gate/assets.py): "allow"
    #: records them as not reviewable without blocking; "block" makes them partial coverage
    binary_assets: str = "allow"
    #: action inputs a pull request's own workflow may use to lower the bar below this
    #: config (gate/action/bar.py); none by default
    inputs_may_lower: tuple[str, ...] = ()
    status_context: str = "review-gate"
    instructions: str = ""
    override_label: str = "review-gate:override"
    skip_drafts: bool = True
    sticky_comment: bool = True
    review_comments: bool = False
    #: the findings also as SARIF 2.1.0 beside the certificate (gate.export.sarif)
    sarif: bool = False
    report: str = "status"  # status | check-run | both (gate.action.checks)
    #: price per million tokens by model name (gate.review.cost)
    pricing: tuple[ModelPrice, ...] = ()
    max_cost: float | None = None
    #: large pull requests are reviewed in chunks (gate/review/chunks.py, gate/review/chunked.py);
    #: None: the model's window from gate.review.chunks.CONTEXT_WINDOWS, else 100k tokens
    max_input_tokens: int | None = None
    max_chunk_bytes: int = 262_144
    #: 64, not 40: content-defined chunks are about 70% full (gate/review/chunks.py),
    #: so 64 of them hold max_diff_bytes
    max_chunks: int = 64
    concurrency: int = 4
    run_deadline: float = 3600.0
    agreement: int = 1
    #: incremental review (docs/design.md, "Incremental review"): ``auto`` carries bound
    #: chunk passes for a diff reviewed in chunks and reviews a diff that fits one request
    #: whole; ``always`` reviews in chunks of ``max_chunk_bytes`` even then; ``off`` never
    #: carries (every chunk is sent)
    incremental: str = "auto"
    #: reviewers asked, in order, only when the one before could not answer for an
    #: ``unavailable`` reason (quota, rate limit, outage, timeout, cut) after its retries
    fallbacks: tuple[ReviewerConfig, ...] = ()
    #: triage: when a waiting pull request is escalated, and to whom
    escalation: Escalation = field(default_factory=Escalation)
    #: triage: a label the gate keeps on each pull request waiting for a human (None: none)
    needs_human_label: str | None = None

    def chain(self) -> tuple[Config, ...]:
        """This config, then one per fallback (its reviewer in place, no fallbacks of its
        own): every reviewer the review may ask, in order."""
        return (self, *(replace(self, reviewer=fb, fallbacks=()) for fb in self.fallbacks))

    def to_json(self) -> dict[str, Any]:
        """The config as the file would spell it (no secrets: keys are named, never held)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "pricing":
                out[f.name] = {p.model: {"input": p.input, "output": p.output} for p in value}
            elif f.name in ("escalation", "needs_human_label"):
                if value != f.default and value != Escalation():  # absent at the default
                    out[f.name] = (
                        {"after_hours": value.after_hours, "mention": list(value.mention)}
                        if isinstance(value, Escalation)
                        else value
                    )
            elif f.name == "fallbacks":
                if value:  # absent when empty: a config without fallbacks keeps its digest
                    out[f.name] = [
                        {rf.name: getattr(fb, rf.name) for rf in fields(fb)} for fb in value
                    ]
            elif isinstance(value, ReviewerConfig):
                out[f.name] = {rf.name: getattr(value, rf.name) for rf in fields(value)}
            elif isinstance(value, tuple):
                out[f.name] = list(value)
            else:
                out[f.name] = value
        return out


def fallback_keys(config: Config, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Each fallback's key, from its own variable (``api_key_env``, else the provider's),
    checked (:func:`gate.safe.redact.first_key`); a fallback without one is a ConfigError
    naming the setting and the fix, before any reviewer is asked."""
    from gate.safe.redact import first_key

    keys = []
    for index, fallback in enumerate(config.fallbacks):
        env = fallback.key_env()
        key = first_key((environ.get(env), f"the environment variable {env}"))
        if not key:
            who = f"{fallback.provider} {fallback.model}".strip()
            raise ConfigError(
                f"fallbacks[{index}] ({who}) has no API key: the environment variable {env} "
                "is empty",
                key=f"fallbacks.{index}.api_key_env",
                fix=f"pass the secret to the step (env: {env}: ${{{{ secrets.{env} }}}}), "
                f"or name the variable that holds it in fallbacks[{index}].api_key_env",
                reason="config_fallback_key",
            )
        keys.append(key)
    return tuple(keys)


def default_config() -> Config:
    """The configuration used when the repository has no config file."""
    return Config()


# --- action inputs -----------------------------------------------------------

# Action input (kebab-case) -> config key path it overrides.
INPUT_KEYS: dict[str, tuple[str, ...]] = {
    "provider": ("reviewer", "provider"),
    "model": ("reviewer", "model"),
    "base-url": ("reviewer", "base_url"),
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
                f"unknown input{_did_you_mean(name, ACTION_INPUTS)}",
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
        target[path[-1]] = _coerce_input(value, _schema_at(path))
    if not given:
        return config
    errors = sorted(_schema_errors(data), key=lambda e: [str(p) for p in e.path])
    if errors:
        problems = []
        for err in errors:
            culprit = given.get(tuple(str(p) for p in err.absolute_path))
            problems += _describe(err, source="config", lines=lines, input_name=culprit)
        raise _all(problems, reason="config_invalid_input")
    return require_price(_build(data), source="config and inputs")


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


# --- the file ----------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a config file; a missing or unreadable file is a ConfigError."""
    source = os.fspath(path)
    try:
        with Path(path).open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError as err:
        raise ConfigError(
            "config file does not exist",
            source=source,
            fix="create it (see examples/review-gate.config.yml) or point the config input "
            "at the right path",
            reason="config_missing",
        ) from err
    except OSError as err:
        raise ConfigError(
            f"cannot read config file: {err.strerror}",
            source=source,
            fix="make it a readable file",
            reason="config_unreadable",
        ) from err
    return parse_config(_decode(raw, source=source), source=source)


def _decode(raw: bytes, *, source: str) -> str:
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config file is larger than {MAX_CONFIG_BYTES} bytes",
            source=source,
            fix="keep long review instructions short or move them out of the config",
            reason="config_too_large",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"config file is not UTF-8 (byte {err.start})",
            source=source,
            fix="save it as UTF-8",
            reason="config_encoding",
        ) from err


def parse_config(text: str, *, source: str) -> Config:
    """Parse and validate config YAML; every error names the source, key, line and fix."""
    if len(text.encode("utf-8")) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"config is larger than {MAX_CONFIG_BYTES} bytes",
            source=source,
            fix="shorten it",
            reason="config_too_large",
        )
    import yaml  # imported when a config is read: a command without one never loads it

    node = compose_yaml(text, source=source)
    if node is None:
        return default_config()
    lines: dict[tuple[str | int, ...], int] = {}
    try:
        data = _construct(node, (), lines, source=source)
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from err
    if data is None:
        return default_config()
    errors = _schema_errors(data)
    if errors:
        problems = [p for e in errors for p in _describe(e, source=source, lines=lines)]
        raise _all(in_line_order(problems), reason="config_invalid")
    return require_price(_build(data), source=source, lines=lines)


def require_price(
    config: Config, *, source: str, lines: Mapping[tuple[str | int, ...], int] | None = None
) -> Config:
    """``config``, unless it sets ``max_cost`` for a model nothing prices (neither its
    ``pricing`` nor the dated table in :mod:`gate.prices`): a limit no estimate can be
    held to is a mistake in the config, said when it is read, never a blocked pull
    request. A config without a model yet (the model comes from an input) is checked
    again once the inputs are applied."""
    unpriced = [
        c.reviewer.model
        for c in config.chain()
        if c.reviewer.model
        and not any(p.model == c.reviewer.model for p in config.pricing)
        and listed_price(c.reviewer.model) is None
    ]
    if config.max_cost is None or not unpriced:
        return config
    model = unpriced[0]
    raise ConfigError(
        f"max_cost is {config.max_cost:g} but nothing gives a price for the model {model} "
        "(neither pricing in the config nor review-gate's price table), so no review's "
        "cost could be held to it",
        source=source,
        line=(lines or {}).get(("max_cost",), 0),
        key="max_cost",
        fix=f"add the model's prices per million tokens under pricing, for example "
        f"pricing: {{{model}: {{input: 1.0, output: 4.0}}}}, or remove max_cost",
        reason="config_unpriced_max_cost",
    )


def in_line_order(problems: list[ConfigError]) -> list[ConfigError]:
    """Every problem in the order of the file's lines (one without a line last), so the
    list reads top to bottom; ties in a stable order of their words."""
    return sorted(problems, key=lambda p: (p.line == 0, p.line, p.message))


def _all(problems: list[ConfigError], *, reason: str) -> ConfigError:
    """One error carrying every problem found, the first one's fields on top."""
    first, *more = problems
    return ConfigError(
        first.cause,
        source=first.source,
        line=first.line,
        key=first.key,
        fix=first.fix,
        setting=first.setting,
        example=first.example,
        reason=reason,
        more=more,
    )


def _yaml_error(err: yaml.YAMLError, source: str) -> ConfigError:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    return ConfigError(
        f"not valid YAML: {problem}",
        source=source,
        line=mark.line + 1 if mark is not None else 0,
        fix="check the indentation there, and quote values that contain ': ' or start with "
        "a special character",
        reason="config_yaml",
    )


def compose_yaml(text: str, *, source: str) -> yaml.Node | None:
    """The one YAML loader of the gate: the composed node tree, or a ConfigError naming the line.

    Before composing, the event stream is read once (PyYAML's parser does not recurse) and
    refused at the first alias, explicit tag or nesting deeper than :data:`MAX_YAML_DEPTH`:
    aliases (``*name``, ``<<: *name``) can expand exponentially, a tag (``!!float "0.5"``,
    ``!!bool "yes"``, ``!``) changes what a value is read as behind the reader's back, and
    the composer recurses once per level (a deep file would raise ``RecursionError``). A
    config needs none of them. Every YAML error (and, should one occur anyway, a
    ``RecursionError``) is a ConfigError.
    """
    import yaml

    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            line = event.start_mark.line + 1 if event.start_mark is not None else 0
            if isinstance(event, yaml.AliasEvent):
                raise ConfigError(
                    f"YAML alias *{event.anchor} is not supported",
                    source=source,
                    line=line,
                    fix="write the value out instead of referring to an anchor",
                    reason="config_yaml",
                )
            if (
                isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent)
                and event.tag is not None
            ):
                shown = event.tag.replace("tag:yaml.org,2002:", "!!", 1)
                raise ConfigError(
                    f"the value has the YAML tag {shown} (tags are refused)",
                    source=source,
                    line=line,
                    fix="remove the tag and write the value plainly (quote text, leave "
                    "numbers and true/false unquoted)",
                    reason="config_yaml",
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise ConfigError(
                        f"nesting deeper than {MAX_YAML_DEPTH} levels",
                        source=source,
                        line=line,
                        fix="a config has at most two levels (reviewer: and its keys)",
                        reason="config_yaml",
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        raise _yaml_error(err, source) from err
    except RecursionError as err:  # not expected after the depth check; never a crash
        raise ConfigError(
            "nesting too deep to read",
            source=source,
            fix="a config has at most two levels",
            reason="config_yaml",
        ) from err


_YAML_KINDS = {"int": "an integer", "float": "a number", "timestamp": "a date"}


@cache
def _plain_tags() -> dict[type[yaml.Node], str]:
    import yaml

    return {
        yaml.MappingNode: "tag:yaml.org,2002:map",
        yaml.SequenceNode: "tag:yaml.org,2002:seq",
    }


def _construct(
    node: yaml.Node,
    path: tuple[str | int, ...],
    lines: dict[tuple[str | int, ...], int],
    *,
    source: str,
) -> Any:
    """Turn a composed node into plain data, recording the line of every key and item."""
    import yaml

    lines.setdefault(path, node.start_mark.line + 1)
    expected_tag = _plain_tags().get(type(node))
    if expected_tag is not None and node.tag != expected_tag:
        raise _at(
            node,
            path,
            source,
            f"{_dotted(path) or 'the file'} has the YAML tag {node.tag}",
            fix="remove the tag (plain mappings and lists only)",
            reason="config_yaml",
        )
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not (
                isinstance(key_node, yaml.ScalarNode) and key_node.tag == "tag:yaml.org,2002:str"
            ):
                shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                raise ConfigError(
                    f"key {shown!r} under {_dotted(path) or 'the top level'} "
                    "is not read as a string by YAML",
                    source=source,
                    line=line,
                    key=_dotted(path),
                    fix="use one of the documented key names (quote it if it really is meant "
                    "literally)",
                    reason="config_invalid",
                )
            key = str(key_node.value)
            if key in first:
                raise ConfigError(
                    f"duplicate key {_dotted((*path, key))} (first at line {first[key]})",
                    source=source,
                    line=line,
                    key=_dotted((*path, key)),
                    fix="keep only one of them",
                    reason="config_duplicate_key",
                )
            first[key] = line
            child = (*path, key)
            lines[child] = value_node.start_mark.line + 1
            lines[(*child, "<key>")] = line
            out[key] = _construct(value_node, child, lines, source=source)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _construct(item, (*path, index), lines, source=source)
            for index, item in enumerate(node.value)
        ]
    assert isinstance(node, yaml.ScalarNode)
    try:
        value = yaml.SafeLoader("").construct_object(node)
    except (ValueError, OverflowError) as err:
        # a plain scalar YAML reads as a number or date it cannot build: an int of more
        # than 4300 digits, a date like 2001-13-45
        kind = node.tag.rsplit(":", 1)[-1]
        raise ConfigError(
            f"{source} line {node.start_mark.line + 1}: {_dotted(path) or 'the file'} is "
            f"{node.value[:40]!r}, which YAML reads as {_YAML_KINDS.get(kind, kind)} but "
            f"cannot build ({str(err).split(';')[0]}); fix: quote it if it is text, or "
            "correct the value",
            reason="config_invalid",
        ) from err
    if isinstance(value, float) and not math.isfinite(value):
        raise _at(
            node,
            path,
            source,
            f"{_dotted(path)} is {node.value}, which is not a finite number",
            fix="write a finite number",
            reason="config_invalid",
        )
    return value


def _at(
    node: yaml.Node, path: tuple[str | int, ...], source: str, cause: str, *, fix: str, reason: str
) -> ConfigError:
    """A problem with the value at ``node`` (key ``path``) of the file ``source``."""
    return ConfigError(
        cause,
        source=source,
        line=node.start_mark.line + 1,
        key=_dotted(path),
        fix=fix,
        reason=reason,
    )


# --- schema and messages -------------------------------------------------------


@cache
def schema() -> dict[str, Any]:
    """The config JSON Schema shipped with the package."""
    from importlib import resources  # first use: the action's first request does not wait

    text = resources.files("gate").joinpath("schemas/config.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


#: ECMA-262 WhiteSpace and LineTerminator, what ``\s`` means in a JSON Schema pattern
_ECMA_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_ECMA_OUTSIDE = {
    "$": r"\Z",
    ".": "[^\n\r\u2028\u2029]",
    "\\s": f"[{_ECMA_SPACE}]",
    "\\S": f"[^{_ECMA_SPACE}]",
}


@cache
def schema_regex(pattern: str) -> re.Pattern[str]:
    """A JSON Schema ``pattern`` (an ECMA-262 regular expression) as a Python regex.

    JSON Schema patterns are ECMA-262, where ``$`` matches only at the very end; in
    Python ``$`` also matches before a final newline, so ``^[a-z]+$`` would accept
    ``"abc\\n"``. Every pattern of the shipped schemas is checked through this
    translation (the schemas stay standard for editors): ``$`` becomes ``\\Z``, ``.``
    excludes every ECMA line terminator, ``\\s``/``\\S`` are ECMA's white space, and
    ``\\d``, ``\\w``, ``\\b`` are ASCII (``re.ASCII``), as in ECMA-262. A construct
    this does not translate (``\\S`` inside a class) raises ValueError.
    """
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        pair = pattern[i : i + 2]
        if char == "\\":
            if in_class and pair == "\\s":
                out.append(_ECMA_SPACE)
            elif in_class and pair in ("\\S", "\\D", "\\W"):
                raise ValueError(f"pattern {pattern!r}: {pair} inside a class is not supported")
            else:
                out.append(_ECMA_OUTSIDE.get(pair, pair) if not in_class else pair)
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("[^]", i) or pattern.startswith("[]", i):
                raise ValueError(f"pattern {pattern!r}: an empty class is not supported")
        else:
            char = _ECMA_OUTSIDE.get(char, char)
        out.append(char)
        i += 1
    return re.compile("".join(out), re.ASCII)


def _schema_errors(data: Any) -> list[ValidationError]:
    """jsonschema's errors for ``data``, or none when it conforms: a conforming config
    (:func:`gate.schema_check.conforms`, proved equal to jsonschema on generated configs)
    is read without importing jsonschema; only a wrong one is handed over for words."""
    if conforms(data, schema(), schema_regex):
        return []
    return list(_validator().iter_errors(data))


@cache
def _validator() -> Validator:
    # imported here: jsonschema costs ~0.2 s to import, paid only when validating
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import ValidationError

    def pattern(
        validator: Validator, pattern: str, instance: Any, _schema: Any
    ) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not schema_regex(pattern).search(instance):
            yield ValidationError(f"{instance!r} does not match {pattern!r}")

    Draft202012Validator.check_schema(schema())
    for found in _patterns(schema()):
        schema_regex(found)  # a pattern the translation cannot read fails here, at once
    # jsonschema's extend() carries no annotations
    strict: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator, {"pattern": pattern}
    )
    return strict(schema())


def _patterns(node: Any) -> Iterator[str]:
    """Every ``pattern`` in a schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


def _schema_at(path: tuple[str | int, ...]) -> dict[str, Any]:
    node: dict[str, Any] = schema()
    for key in path:
        if isinstance(key, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(key, {})
    return node


def _line_of(
    path: tuple[str | int, ...], lines: Mapping[tuple[str | int, ...], int], err: ValidationError
) -> int:
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        extra = _extra_keys(err)
        if extra:
            return lines.get((*path, extra[0], "<key>"), lines.get(path, 0))
    while path and path not in lines:
        path = path[:-1]
    # the key's own line: a block mapping's value starts on the line below its key
    return lines.get((*path, "<key>"), lines.get(path, 0)) if path else lines.get(path, 0)


def _allowed_keys(err: ValidationError) -> list[str]:
    rule = err.schema
    return sorted(rule.get("properties", {})) if isinstance(rule, Mapping) else []


def _extra_keys(err: ValidationError) -> list[str]:
    allowed = set(_allowed_keys(err))
    instance = err.instance
    return sorted(k for k in instance if k not in allowed) if isinstance(instance, dict) else []


def _describe(
    err: ValidationError,
    *,
    source: str,
    lines: Mapping[tuple[str | int, ...], int],
    input_name: str | None = None,
) -> list[ConfigError]:
    """The problems one schema error stands for (one per unknown key), with the fix."""
    path = tuple(err.absolute_path)
    line = _line_of(path, lines, err)
    setting = input_name or ""
    if err.validator == "additionalProperties" and _extra_keys(err):
        allowed = _allowed_keys(err)
        under = f" under {_dotted(path)}" if path else ""
        return [
            ConfigError(
                f"unknown key {_dotted((*path, key))}{_did_you_mean(key, allowed)}",
                source=source,
                line=lines.get((*path, key, "<key>"), line),
                key=_dotted((*path, key)),
                fix=f"rename or remove it (known keys{under}: {', '.join(allowed)}); unknown "
                "keys are rejected so a typo cannot weaken the gate",
                setting=setting,
            )
            for key in _extra_keys(err)
        ]
    key = _dotted(path) or "the file"
    leaf = _schema_at(path)
    expect = _expect(leaf, key)
    default = leaf.get("default")
    got = _show(err.instance, leaf)
    if key == "reviewer.api_key_env" and isinstance(err.instance, str):
        got = "a value that is not shown (it may be the key itself: name its variable here)"
    example = _input_text(default) if input_name and default not in ("", None) else ""
    fix = "" if input_name else _fix(path, leaf)
    meant = _meant_provider(path, err.instance)
    if meant is not None:  # e.g. claude: anthropic, not the default
        got += f" (did you mean {meant[0]}?)"
        example = meant[1].split()[0] if input_name else ""
        written = " or ".join(f"`{path[-1]}: {name}`" for name in meant[1].split())
        fix = "" if input_name else f"write {written}{meant[2]}"
    return [
        ConfigError(
            f"{key} must be {expect}, got {got}",
            source=source,
            line=line,
            key=_dotted(path),
            fix=fix,
            setting=setting,
            example=example,
        )
    ]


def _meant_provider(path: tuple[str | int, ...], value: object) -> tuple[str, str, str] | None:
    """For a wrong ``provider``: the providers it most likely means (as words), the ones
    to write (space-separated, the first one as an input's example), and what must go
    with them (a base URL for an OpenAI-compatible server)."""
    if not path or path[-1] != "provider" or not isinstance(value, str):
        return None
    meant = meant_provider(value)
    if meant is None:
        return None
    names, with_url = meant
    words = " or ".join(names)
    if with_url:
        return (
            f"openai with base_url {LOCAL_OPENAI_URL} (any OpenAI-compatible server)",
            "openai",
            f" and `base_url: {LOCAL_OPENAI_URL}`, your server's URL",
        )
    return words, " ".join(names), ""


_PATTERN_WORDS = {
    "policy_version": 'like "1" or "2024-06" (letters, digits and . _ : + / -)',
    "reviewer.base_url": "starting with http:// or https://",
    "reviewer.api_key_env": "that is an environment variable name like OPENAI_API_KEY",
}


def _expect(leaf: Mapping[str, Any], key: str) -> str:
    """What the schema wants at ``key``, in words."""
    if "enum" in leaf:
        return "one of " + ", ".join(str(v) for v in leaf["enum"])
    types = leaf.get("type")
    names = types if isinstance(types, list) else [types]
    words = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
        "object": "a mapping of keys to values",
        "null": "null",
    }
    text = " or ".join(words.get(str(t), str(t)) for t in names if t is not None) or "valid"
    if "array" in names:
        low, high = leaf.get("minItems", 0), leaf.get("maxItems")
        count = f"{low} to {high}" if low else f"at most {high}"
        return f"a list of {count} non-empty strings" if high else "a list of non-empty strings"
    bounds = []
    if "minimum" in leaf:
        bounds.append(f">= {leaf['minimum']}")
    if "exclusiveMinimum" in leaf:
        bounds.append(f"> {leaf['exclusiveMinimum']}")
    if "maximum" in leaf:
        bounds.append(f"<= {leaf['maximum']}")
    if bounds:
        text += " " + " and ".join(bounds)
    if "pattern" in leaf:
        text += " " + _PATTERN_WORDS.get(key, f"matching {leaf['pattern']}")
    if leaf.get("minLength"):
        text += " (not empty)"
    if "maxLength" in leaf:
        text += f" of at most {leaf['maxLength']} characters"
    return text


def _fix(path: tuple[str | int, ...], leaf: Mapping[str, Any]) -> str:
    key = _dotted(path)
    if not key:
        return "write the file as a mapping of keys to values (see examples/review-gate.config.yml)"
    if isinstance(path[-1], int):
        return f"make every item of {_dotted(path[:-1])} a non-empty quoted string"
    default = leaf.get("default")
    if default in ("", None):
        return f"correct {key}, or remove the key"
    under = f" under {_dotted(path[:-1])}:" if len(path) > 1 else ""
    return (
        f"write it as e.g. `{path[-1]}: {json.dumps(default)}`{under} (the default), "
        "or remove the key to use the default"
    )


def _input_text(value: Any) -> str:
    """A value as an action input is written: booleans as ``true``/``false``, never ``True``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _show(value: Any, leaf: Mapping[str, Any]) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()} (YAML reads yes/no/on/off/true/false as booleans)"
    if value is None:
        return "null (an empty value)"
    if isinstance(value, str):
        value = redact(value)  # before the cut
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)" if value else "an empty list"
    if isinstance(value, int | float):
        if leaf.get("type") == "string":
            return f"{value!r} (a number; quote it to make it text)"
        return repr(value)
    return f"{value!r} ({type(value).__name__})"


def _dotted(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _did_you_mean(word: str, choices: Any) -> str:
    import difflib  # only a wrong config is told what it meant

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _build(data: Mapping[str, Any]) -> Config:
    """Frozen Config from schema-valid data (types already checked by the schema)."""
    reviewer = _reviewer(data.get("reviewer") or {})
    top = {k: v for k, v in data.items() if k != "reviewer"}
    if "fallbacks" in top:
        top["fallbacks"] = tuple(_reviewer(item) for item in top["fallbacks"])
    if "escalation" in top:
        raw = top["escalation"]
        top["escalation"] = Escalation(
            after_hours=float(raw.get("after_hours", 24.0)),
            mention=tuple("@" + str(m).lstrip("@") for m in raw.get("mention", ())),
        )
    if "min_confidence" in top:
        top["min_confidence"] = float(top["min_confidence"])
    for name in ("max_diff_bytes", "max_input_tokens", "max_chunk_bytes", "max_chunks"):
        if top.get(name) is not None:
            top[name] = int(top[name])
    if "concurrency" in top:
        top["concurrency"] = int(top["concurrency"])
    if "run_deadline" in top:
        top["run_deadline"] = float(top["run_deadline"])
    if "agreement" in top:
        top["agreement"] = int(top["agreement"])
    for name in ("include", "exclude", "inputs_may_lower"):
        if name in top:
            top[name] = tuple(top[name])
    if top.get("max_cost") is not None:
        top["max_cost"] = float(top["max_cost"])
    if "pricing" in top:
        top["pricing"] = tuple(
            ModelPrice(model, float(price["input"]), float(price["output"]))
            for model, price in sorted(top["pricing"].items())
        )
    return Config(reviewer=reviewer, **top)


def _reviewer(data: Mapping[str, Any]) -> ReviewerConfig:
    """A frozen ReviewerConfig from a schema-valid ``reviewer`` (or ``fallbacks`` item)."""
    values = dict(data)
    for name in ("temperature", "connect_timeout", "read_timeout", "deadline"):
        if name in values:
            values[name] = float(values[name])
    for name in ("max_tokens", "max_response_bytes", "attempts"):
        if name in values:
            values[name] = int(values[name])
    return ReviewerConfig(**values)
