"""A config that does not conform, in words: each schema error as a
:class:`~gate.errors.ConfigError` naming the key, the line, what was expected, what was
found and the fix.

Its functions run only for a wrong config (a file or an input); a valid one is read
without them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gate.config.schema import schema_at
from gate.errors import ConfigError
from gate.providers import LOCAL_OPENAI_URL, meant_provider
from gate.safe.redact import redact

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError


def in_line_order(problems: list[ConfigError]) -> list[ConfigError]:
    """Every problem in the order of the file's lines (one without a line last), so the
    list reads top to bottom; ties in a stable order of their words."""
    return sorted(problems, key=lambda p: (p.line == 0, p.line, p.message))


def all_problems(problems: list[ConfigError], *, reason: str) -> ConfigError:
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


def describe(
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
        under = f" under {dotted(path)}" if path else ""
        reviewer = _misplaced_reviewer_keys(path, err.instance)
        return [
            ConfigError(
                f"unknown key {dotted((*path, key))}"
                + (" (a reviewer setting)" if key in reviewer else did_you_mean(key, allowed)),
                source=source,
                line=lines.get((*path, key, "<key>"), line),
                key=dotted((*path, key)),
                fix=_under_reviewer(reviewer)
                if key in reviewer
                else f"rename or remove it (known keys{under}: {', '.join(allowed)}); unknown "
                "keys are rejected so a typo cannot weaken the gate",
                setting=setting,
            )
            for key in _extra_keys(err)
        ]
    key = dotted(path) or "the file"
    leaf = schema_at(path)
    expect = _expect(leaf, key)
    default = leaf.get("default")
    got = _show(err.instance, leaf)
    if key == "reviewer.api_key_env" and isinstance(err.instance, str):
        got = "a value that is not shown (it may be the key itself: name its variable here)"
    example = _input_text(default) if input_name and default not in ("", None) else ""
    fix = "" if input_name else _fix(path, leaf)
    if fix and "array" in str(leaf.get("type")) and isinstance(err.instance, str):
        fix = f"wrap it in a list: `{path[-1]}: {json.dumps([redact(err.instance)[:60]])}`"
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
            key=dotted(path),
            fix=fix,
            setting=setting,
            example=example,
        )
    ]


def _misplaced_reviewer_keys(path: tuple[str | int, ...], instance: object) -> dict[str, Any]:
    """The reviewer's settings written at the top level (``provider:``, ``model:``), with
    their values: they belong under ``reviewer:``."""
    if path or not isinstance(instance, dict):
        return {}
    known = schema_at(("reviewer",)).get("properties", {})
    return {k: v for k, v in instance.items() if k in known and k not in ("reviewer",)}


def _under_reviewer(found: Mapping[str, Any]) -> str:
    """The fix for reviewer settings at the top level: the same values under ``reviewer:``,
    provider and model always named (each value shown as written, secrets redacted; the
    default provider, or a placeholder model, where one was not written)."""
    shown = {"provider": "openai", "model": "your-model", **found}
    order = ["provider", "model", *(k for k in found if k not in ("provider", "model"))]
    pairs = ", ".join(f"{k}: {redact(str(shown[k]))[:60]}" for k in order)
    return (
        f"move it under reviewer: `reviewer: {{{pairs}}}` (the reviewer's settings, provider "
        "and model among them, live there)"
    )


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
    key = dotted(path)
    if not key:
        return "write the file as a mapping of keys to values (see examples/review-gate.config.yml)"
    if isinstance(path[-1], int):
        return f"make every item of {dotted(path[:-1])} a non-empty quoted string"
    default = leaf.get("default")
    if default in ("", None):
        return f"correct {key}, or remove the key"
    under = f" under {dotted(path[:-1])}:" if len(path) > 1 else ""
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


def dotted(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def did_you_mean(word: str, choices: Any) -> str:
    import difflib  # only a wrong config is told what it meant

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
