"""Parsing an agent's write tool result: strict, no defaults.

This module owns the two tool-result shapes (``write_file`` and
``delete_path``) and :func:`parse_tool_result`, which refuses (raises
:class:`ApplyError` with a ``reason`` code) any deviation: JSON that does not
parse, duplicate keys, unknown or missing fields, wrong types, bad values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gate.decide.attempt import EndReason
from gate.diff import SHA256_HEX
from gate.errors import ApplyError
from gate.safe import strictjson
from gate.safe.atomic import sha256_hex

MAX_APPLY_ID = 200
END_REASONS = frozenset(str(reason) for reason in EndReason)

_WRITE_KEYS = frozenset(
    {"tool", "path", "content_length", "sha256", "encoding", "content"}
    | {"stream_end_reason", "apply_id"}
)
_DELETE_KEYS = frozenset({"tool", "path", "apply_id"})


@dataclass(frozen=True)
class WriteFile:
    """A parsed ``write_file`` tool result (content still in its transfer encoding)."""

    path: str
    content_length: int
    sha256: str
    encoding: str
    content: str = field(repr=False)
    apply_id: str
    stream_end_reason: str | None


@dataclass(frozen=True)
class DeletePath:
    """A parsed ``delete_path`` tool result."""

    path: str
    apply_id: str


def refuse(reason: str, message: str) -> ApplyError:
    return ApplyError(message, reason=reason)


def _refusal(message: str, *, reason: str | None = None) -> ApplyError:
    """The loader's error as a refusal: a repeated key keeps its own code, the rest is not JSON."""
    if reason == strictjson.DUPLICATE_KEY:
        return refuse("duplicate_key", message)
    if reason == strictjson.JSON_SYNTAX:
        message += "; a cut-off tool result is never applied"
    return refuse("not_json", message)


def _load(raw: bytes) -> dict[str, Any]:
    doc = strictjson.loads(raw, what="the tool result", error=_refusal)
    if not isinstance(doc, dict):
        raise refuse("not_object", f"tool result is a JSON {type(doc).__name__}, not an object")
    return doc


def _field(doc: Mapping[str, Any], key: str, kind: type, *, required: bool = True) -> Any:
    if key not in doc:
        if required:
            raise refuse(
                "missing_field",
                f"tool result has no {key!r}; the worker applies nothing it cannot verify "
                "(no defaults): send path, content_length, sha256, encoding and content",
            )
        return None
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise refuse(
            "wrong_type",
            f"tool result field {key!r} is a JSON {_json_type(value)}, expected {_json_name(kind)}",
        )
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _json_name(kind: type) -> str:
    return {int: "an integer", str: "a string"}.get(kind, kind.__name__)


def parse_tool_result(raw: bytes) -> WriteFile | DeletePath:
    """Parse a tool result strictly; raise :class:`ApplyError` (a refusal) on any deviation."""
    doc = _load(raw)
    tool = _field(doc, "tool", str)
    if tool not in ("write_file", "delete_path"):
        raise refuse("unknown_tool", f"tool {tool!r} is not write_file or delete_path")
    allowed = _WRITE_KEYS if tool == "write_file" else _DELETE_KEYS
    unknown = sorted(set(doc) - allowed)
    if unknown:
        raise refuse(
            "unknown_field",
            f"{tool} tool result has unknown field(s) {', '.join(map(repr, unknown))}; "
            "a misspelt field could hide a missing one, so nothing is applied",
        )
    path = _field(doc, "path", str)
    apply_id = _field(doc, "apply_id", str, required=False)
    if apply_id is not None and (
        not apply_id or len(apply_id) > MAX_APPLY_ID or not apply_id.isprintable()
    ):
        raise refuse("bad_value", f"apply_id must be 1..{MAX_APPLY_ID} printable characters")
    if apply_id is None:
        apply_id = "auto-" + sha256_hex(raw)[:12]
    if tool == "delete_path":
        return DeletePath(path=path, apply_id=apply_id)
    length = _field(doc, "content_length", int)
    if length < 0:
        raise refuse("bad_value", f"content_length is {length}; it must be >= 0")
    digest = _field(doc, "sha256", str)
    if not SHA256_HEX.fullmatch(digest):
        raise refuse("bad_value", "sha256 must be 64 lowercase hex digits of the decoded bytes")
    encoding = _field(doc, "encoding", str)
    if encoding not in ("utf-8", "base64"):
        raise refuse("bad_value", f"encoding {encoding!r} is not 'utf-8' or 'base64'")
    content = _field(doc, "content", str)
    end = _field(doc, "stream_end_reason", str, required=False)
    if end is not None and end not in END_REASONS:
        raise refuse(
            "bad_value",
            f"stream_end_reason {end!r} is not one of {', '.join(sorted(END_REASONS))}",
        )
    return WriteFile(
        path=path,
        content_length=length,
        sha256=digest,
        encoding=encoding,
        content=content,
        apply_id=apply_id,
        stream_end_reason=end,
    )
