"""Reading ``.github/review-gate.yml``: YAML with line tracking, validated, built into a
frozen Config.

Unknown keys, duplicate keys, YAML aliases and non-string keys are rejected: a typo
must never silently weaken the gate. YAML 1.1 surprises (``1`` is not the string
``"1"``, ``yes`` is a boolean) are type errors with a fix, not silent coercions. Every
:class:`~gate.errors.ConfigError` names the key, the line and the fix
(:mod:`gate.config.wording`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.config.model import Config, Escalation, ModelPrice, ReviewerConfig, default_config
from gate.config.schema import schema_errors
from gate.config.wording import all_problems, describe, dotted, in_line_order
from gate.errors import ConfigError
from gate.prices import CURRENCY, listed_price
from gate.providers import Provider

if TYPE_CHECKING:
    import yaml


MAX_CONFIG_BYTES = 256 * 1024
#: deepest YAML nesting read (a config needs two levels)
MAX_YAML_DEPTH = 8


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
    errors = schema_errors(data)
    if errors:
        problems = [p for e in errors for p in describe(e, source=source, lines=lines)]
        raise all_problems(in_line_order(problems), reason="config_invalid")
    return require_keys(
        require_price(build_config(data), source=source, lines=lines), source=source, lines=lines
    )


def require_keys(
    config: Config, *, source: str, lines: Mapping[tuple[str | int, ...], int] | None = None
) -> Config:
    """``config``, unless a reviewer's ``public_key`` cannot be used: set for a provider
    other than mc1 (no other dialect carries a signature, so the key would check nothing),
    or not an Ed25519 public key in PEM (:func:`gate.decide.signature.public_key_from_pem`).
    Said when the config is read, naming the key and its line, never at the first answer."""
    reviewers: list[tuple[tuple[str | int, ...], ReviewerConfig]]
    reviewers = [(("reviewer", "public_key"), config.reviewer)]
    reviewers += [(("fallbacks", n, "public_key"), fb) for n, fb in enumerate(config.fallbacks)]
    for path, reviewer in reviewers:
        if reviewer.public_key is None:
            continue
        key, line = dotted(path), (lines or {}).get(path, 0)
        if reviewer.provider != Provider.MC1:
            raise ConfigError(
                f"{key} is set for provider {reviewer.provider}, which carries no signature",
                source=source,
                line=line,
                key=key,
                fix="set provider: mc1 (a review-gate serve service), or remove public_key",
                reason="config_public_key",
            )
        from gate.decide.signature import public_key_from_pem

        try:
            public_key_from_pem(reviewer.public_key.encode("utf-8"), source=key)
        except ConfigError as err:
            raise ConfigError(
                f"{key}: {err.cause}",
                source=source,
                line=line,
                key=key,
                fix=err.fix,
                reason="config_public_key",
            ) from err
    for path in unsigned_beside_signed(config):
        key = dotted(path)
        raise ConfigError(
            f"{key} is not set, but another mc1 reviewer of the chain names a public_key: "
            "a signature failure is an outage that asks the next reviewer, so a hop that "
            "rewrites answers would break the signed one's signature on purpose and have "
            "this one's unsigned answer taken (reviewer.public_key and each fallback's)",
            source=source,
            line=(lines or {}).get(path, 0),
            key=key,
            fix=f"set {key} to the key of the service it calls, or use another provider there",
            reason="config_public_key",
        )
    return config


def unsigned_beside_signed(config: Config) -> list[tuple[str | int, ...]]:
    """The ``public_key`` paths of the mc1 reviewers of ``config``'s chain (the reviewer,
    then each fallback) that name no key while another mc1 reviewer of it names one: a
    key holds only when every mc1 reviewer the review may ask holds it (decision record
    0051); none when no mc1 reviewer names a key."""
    chain: list[tuple[tuple[str | int, ...], ReviewerConfig]]
    chain = [(("reviewer", "public_key"), config.reviewer)]
    chain += [(("fallbacks", n, "public_key"), fb) for n, fb in enumerate(config.fallbacks)]
    mc1 = [(path, r) for path, r in chain if r.provider == Provider.MC1]
    if all(r.public_key is None for _, r in mc1):
        return []
    return [path for path, r in mc1 if r.public_key is None]


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
        f"max_cost is {config.max_cost:g} {CURRENCY} but nothing gives a price for the model "
        f"{model} (neither pricing in the config nor review-gate's price table), so no review's "
        "cost could be held to it",
        source=source,
        line=(lines or {}).get(("max_cost",), 0),
        key="max_cost",
        fix=f"add the model's prices per million tokens under pricing, for example "
        f"pricing: {{{model}: {{input: 1.0, output: 4.0}}}}, or remove max_cost",
        reason="config_unpriced_max_cost",
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
            f"{dotted(path) or 'the file'} has the YAML tag {node.tag}",
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
                    f"key {shown!r} under {dotted(path) or 'the top level'} "
                    "is not read as a string by YAML",
                    source=source,
                    line=line,
                    key=dotted(path),
                    fix="use one of the documented key names (quote it if it really is meant "
                    "literally)",
                    reason="config_invalid",
                )
            key = str(key_node.value)
            if key in first:
                raise ConfigError(
                    f"duplicate key {dotted((*path, key))} (first at line {first[key]})",
                    source=source,
                    line=line,
                    key=dotted((*path, key)),
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
            f"{source} line {node.start_mark.line + 1}: {dotted(path) or 'the file'} is "
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
            f"{dotted(path)} is {node.value}, which is not a finite number",
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
        key=dotted(path),
        fix=fix,
        reason=reason,
    )


def build_config(data: Mapping[str, Any]) -> Config:
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
