"""Validate HTTP requests (and the fake's responses) against GitHub's official OpenAPI description.

The description is the one GitHub publishes for api.github.com, installed from npm
``@octokit/openapi`` into ``tests/node/node_modules`` (``npm ci --prefix tests/node``).

A request is valid when:

- its path matches a path template of the description and its method exists there;
- every path parameter matches its schema (integers are digits, enums are members...);
- every query parameter is declared by the operation and matches its schema; required ones
  are present;
- a JSON body is present exactly when the operation declares one, and it validates against
  the body schema (JSON Schema draft 4 semantics, OpenAPI 3.0 ``nullable`` honoured);
- a custom ``Accept: application/vnd.github.*`` media type is one the operation documents
  (in its response content types or its description).

:func:`Contract.check_request` returns a list of violations (empty when valid).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote

import jsonschema
import referencing
import referencing.jsonschema

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
SPEC_PATH = NODE_DIR / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
SPEC_URI = "urn:github:api.github.com"
INSTALL_HINT = "run `npm ci --prefix tests/node` (installs @octokit/openapi and webhooks-examples)"

# media types every operation accepts
_GENERIC_ACCEPT = {
    "application/json",
    "application/vnd.github+json",
    "application/vnd.github.v3+json",
    "*/*",
}


class ContractUnavailable(RuntimeError):
    pass


def _nullable_to_union(node: Any) -> Any:
    """OpenAPI 3.0 ``nullable: true`` -> JSON Schema ``type: [T, "null"]`` (in place)."""
    if isinstance(node, dict):
        if node.get("nullable") is True:
            typ = node.get("type")
            if isinstance(typ, str):
                node["type"] = [typ, "null"]
            elif "enum" in node and None not in node["enum"]:
                node["enum"] = [*node["enum"], None]
            elif typ is None:
                pass
        if "enum" in node and node.get("nullable") is True and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
        for value in node.values():
            _nullable_to_union(value)
    elif isinstance(node, list):
        for value in node:
            _nullable_to_union(value)
    return node


@dataclass(frozen=True)
class Route:
    template: str
    regex: re.Pattern[str]
    literals: int


@lru_cache(maxsize=1)
def load_contract() -> Contract:
    if not SPEC_PATH.is_file():
        raise ContractUnavailable(
            f"GitHub's OpenAPI description is missing ({SPEC_PATH}); {INSTALL_HINT}"
        )
    spec = json.loads(SPEC_PATH.read_bytes())
    return Contract(spec)


#: the most answers one memo of :class:`Contract` keeps before it starts again
_MEMO_CAP = 4096

_K = TypeVar("_K")
_V = TypeVar("_V")


def _memo(memo: dict[_K, _V], key: _K, value: _V) -> _V:
    """``value`` kept under ``key`` in ``memo`` (emptied first when it is full)."""
    if len(memo) >= _MEMO_CAP:
        memo.clear()
    memo[key] = value
    return value


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


class Contract:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.version = str(spec.get("info", {}).get("version", ""))
        self._validators: dict[str, jsonschema.Draft4Validator] = {}
        # answers of pure functions of the (never changed) description, by their input:
        # the same paths, payloads and answers come back thousands of times in a test run,
        # and matching ~1000 route patterns or validating a pull request's schema each
        # time was most of the fake's CPU (each memo is cleared when it reaches _MEMO_CAP)
        self._matches: dict[tuple[str, str], tuple[str | None, dict[str, str], list[str]]] = {}
        self._checked: dict[tuple[str, str], list[str]] = {}
        self._filled: dict[tuple[str, str, int, bytes], bytes] = {}
        schema_doc = _nullable_to_union(copy.deepcopy(spec))
        resource = referencing.Resource.from_contents(
            schema_doc, default_specification=referencing.jsonschema.DRAFT4
        )
        self.registry: referencing.Registry[Any] = referencing.Registry().with_resource(
            SPEC_URI, resource
        )
        routes = []
        for template in spec["paths"]:
            literals = 0
            pattern = ""
            for segment in template.strip("/").split("/"):
                if segment.startswith("{") and segment.endswith("}"):
                    name = segment[1:-1]
                    pattern += f"/(?P<{_group(name)}>[^/]+)"
                else:
                    literals += 1
                    pattern += "/" + re.escape(segment)
            routes.append(Route(template, re.compile(pattern + r"\Z"), literals))
        # multi-segment path parameters (contents/{path}) may contain slashes
        self._multi = {
            (t, m): [p["name"] for p in self.parameters(t, m) if p.get("x-multi-segment")]
            for t, ops in spec["paths"].items()
            for m in ops
            if m in ("get", "put", "post", "patch", "delete")
        }
        fixed = []
        for route in routes:
            names = {n for (t, _m), ns in self._multi.items() if t == route.template for n in ns}
            if names:
                pattern = route.regex.pattern
                for name in names:
                    pattern = pattern.replace(
                        f"(?P<{_group(name)}>[^/]+)", f"(?P<{_group(name)}>.+)"
                    )
                route = Route(route.template, re.compile(pattern), route.literals)
            fixed.append(route)
        self.routes = sorted(fixed, key=lambda r: (-r.literals, r.template))

    # -- spec access --------------------------------------------------------------------

    def _resolve(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            target: Any = self.spec
            for part in ref.lstrip("#/").split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    def parameters(self, template: str, method: str) -> list[dict[str, Any]]:
        item = self.spec["paths"][template]
        params = [self._resolve(p) for p in item.get("parameters", [])]
        params += [self._resolve(p) for p in item[method].get("parameters", [])]
        return params

    def match(self, path: str, method: str) -> tuple[str | None, dict[str, str], list[str]]:
        """(template, path params, violations)."""
        found = self._matches.get((path, method))
        if found is None:
            found = _memo(self._matches, (path, method), self._match(path, method))
        template, params, problems = found
        return template, dict(params), list(problems)

    def _match(self, path: str, method: str) -> tuple[str | None, dict[str, str], list[str]]:
        method = method.lower()
        path_only = False
        for route in self.routes:
            found = route.regex.match(path)
            if not found:
                continue
            if method not in self.spec["paths"][route.template]:
                path_only = True
                continue
            params = {_ungroup(k): unquote(v) for k, v in found.groupdict().items()}
            return route.template, params, []
        if path_only:
            return None, {}, [f"{method.upper()} {path}: the path exists but not with this method"]
        return None, {}, [f"{method.upper()} {path}: no such path in GitHub's REST API description"]

    def operation_id(self, template: str, method: str) -> str:
        return str(self.spec["paths"][template][method.lower()].get("operationId", ""))

    # -- validation -------------------------------------------------------------------

    def _validate_value(self, schema_pointer: str, value: Any) -> list[str]:
        # one validator per schema, built at its first use: a validator is immutable, and
        # building one per request made every request of the fake wait ~20 ms
        try:  # the same JSON text under the same schema: the same answer
            key = (schema_pointer, json.dumps(value, allow_nan=True))
        except (TypeError, ValueError):
            key = None
        if key is not None and (known := self._checked.get(key)) is not None:
            return list(known)
        validator = self._validators.get(schema_pointer)
        if validator is None:
            validator = jsonschema.Draft4Validator(
                {"$ref": f"{SPEC_URI}#{schema_pointer}"}, registry=self.registry
            )
            self._validators[schema_pointer] = validator
        problems = [
            f"{'/'.join(str(p) for p in err.absolute_path) or '(root)'}: {err.message}"
            for err in validator.iter_errors(value)
        ]
        if key is not None:
            _memo(self._checked, key, list(problems))
        return problems

    def check_request(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
    ) -> tuple[str | None, list[str]]:
        """Return (operationId, violations) for one request."""
        template, path_params, problems = self.match(path, method)
        if template is None:
            return None, problems
        method = method.lower()
        op = self.spec["paths"][template][method]
        where = f"{method.upper()} {template} ({op.get('operationId')})"
        out: list[str] = []
        declared = {(p["in"], p["name"]): p for p in self.parameters(template, method)}
        for name, raw in path_params.items():
            param = declared.get(("path", name))
            if param is None:
                out.append(f"{where}: undeclared path parameter {name}")
                continue
            out += [f"{where}: path {name}={raw!r}: {m}" for m in self._check_param(param, raw)]
        query_items = parse_qsl(query, keep_blank_values=True)
        given = {k for k, _ in query_items}
        for name, raw in query_items:
            param = declared.get(("query", name))
            if param is None:
                out.append(f"{where}: query parameter {name!r} is not declared by the operation")
                continue
            out += [f"{where}: query {name}={raw!r}: {m}" for m in self._check_param(param, raw)]
        for (loc, name), param in declared.items():
            if loc == "query" and param.get("required") and name not in given:
                out.append(f"{where}: required query parameter {name!r} is missing")
        out += self._check_body(template, method, op, headers, body, where)
        out += self._check_accept(op, headers, where)
        return str(op.get("operationId", "")), out

    def _check_param(self, param: Mapping[str, Any], raw: str) -> list[str]:
        schema = self._resolve(param.get("schema") or {})
        typ = schema.get("type")
        value: Any = raw
        if typ == "integer":
            if not re.fullmatch(r"-?\d+", raw):
                return [f"expected an integer, got {raw!r}"]
            value = int(raw)
        elif typ == "boolean":
            if raw not in ("true", "false"):
                return [f"expected true/false, got {raw!r}"]
            value = raw == "true"
        elif typ == "number":
            try:
                value = float(raw)
            except ValueError:
                return [f"expected a number, got {raw!r}"]
        validator = jsonschema.Draft4Validator(_nullable_to_union(copy.deepcopy(schema)))
        return [err.message for err in validator.iter_errors(value)]

    def _check_body(
        self,
        template: str,
        method: str,
        op: Mapping[str, Any],
        headers: Mapping[str, str],
        body: bytes,
        where: str,
    ) -> list[str]:
        spec_body = self._resolve(op.get("requestBody")) if op.get("requestBody") else None
        if spec_body is None:
            if body.strip():
                return [f"{where}: the operation takes no request body, but one was sent"]
            return []
        if not body.strip():
            if spec_body.get("required"):
                return [f"{where}: the request body is required"]
            return []
        content = spec_body.get("content", {})
        if "application/json" not in content:
            return [f"{where}: body media types {sorted(content)} are not JSON; cannot check it"]
        ctype = headers.get("content-type", "")
        if ctype and not ctype.split(";")[0].strip().endswith("json"):
            return [f"{where}: Content-Type {ctype!r} is not JSON"]
        try:
            value = json.loads(body)
        except ValueError as err:
            return [f"{where}: the body is not JSON ({err})"]
        pointer = "/" + _pointer(
            "paths", template, method, "requestBody", "content", "application/json", "schema"
        )
        if "$ref" in op.get("requestBody", {}):
            ref = op["requestBody"]["$ref"].lstrip("#")
            pointer = ref + "/" + _pointer("content", "application/json", "schema")
        return [f"{where}: body {m}" for m in self._validate_value(pointer, value)]

    def _check_accept(
        self, op: Mapping[str, Any], headers: Mapping[str, str], where: str
    ) -> list[str]:
        accept = headers.get("accept", "")
        problems = []
        documented: set[str] = set()
        for code, response in op.get("responses", {}).items():
            if str(code).startswith("2"):
                documented |= set(self._resolve(response).get("content", {}))
        description = str(op.get("description", ""))
        for media in (m.split(";")[0].strip() for m in accept.split(",") if m.strip()):
            if media in _GENERIC_ACCEPT or not media.startswith("application/vnd.github"):
                continue
            if media in documented or f"`{media}`" in description:
                continue
            problems.append(
                f"{where}: Accept {media!r} is not a media type this operation documents"
            )
        return problems

    # -- complete answers -------------------------------------------------------------

    def response_schema(self, template: str, method: str, status: int) -> Any:
        responses = self.spec["paths"][template][method.lower()].get("responses", {})
        response = self._resolve(responses.get(str(status), {}))
        content = response.get("content", {})
        return content.get("application/json", {}).get("schema")

    def _flatten(self, schema: Any) -> dict[str, Any]:
        """One object schema out of allOf / oneOf / anyOf (first option), refs resolved."""
        schema = self._resolve(schema) or {}
        if "allOf" in schema:
            merged: dict[str, Any] = {"properties": {}, "required": []}
            for part in schema["allOf"]:
                flat = self._flatten(part)
                merged["properties"].update(flat.get("properties", {}))
                merged["required"] += list(flat.get("required", []))
                for key in ("type", "items", "enum", "format", "nullable"):
                    if key in flat:
                        merged[key] = flat[key]
            return merged
        for key in ("oneOf", "anyOf"):
            if schema.get(key):
                return self._flatten(schema[key][0])
        return dict(schema)

    def filled(self, template: str, method: str, status: int, body: bytes) -> bytes:
        """The JSON answer ``body`` with :meth:`fill` applied under its documented schema."""
        key = (template, method, status, body)
        known = self._filled.get(key)
        if known is None:
            schema = self.response_schema(template, method, status)
            known = (
                body if schema is None else json.dumps(self.fill(schema, json.loads(body))).encode()
            )
            _memo(self._filled, key, known)
        return known

    def fill(self, schema: Any, value: Any, depth: int = 0) -> Any:
        """``value`` completed with a minimal value for every required field it lacks.

        The fake sends what it knows; the description decides what else a real answer has.
        """
        flat = self._flatten(schema)
        if value is None or depth > 12:
            return value
        typ = flat.get("type")
        if isinstance(value, dict) and (typ == "object" or "properties" in flat):
            props = flat.get("properties", {})
            out = dict(value)
            for key in flat.get("required", []):
                if key not in out:
                    out[key] = self.minimal(props.get(key, {}), depth + 1)
            for key, item in list(out.items()):
                if key in props:
                    out[key] = self.fill(props[key], item, depth + 1)
            return out
        if isinstance(value, list) and typ == "array":
            return [self.fill(flat.get("items", {}), item, depth + 1) for item in value]
        return value

    def minimal(self, schema: Any, depth: int = 0) -> Any:
        flat = self._flatten(schema)
        if flat.get("nullable") or depth > 12:
            return None
        if flat.get("enum"):
            return flat["enum"][0]
        typ = flat.get("type")
        if isinstance(typ, list):
            typ = next((t for t in typ if t != "null"), None)
        if typ == "object" or "properties" in flat:
            return self.fill(flat, {}, depth)
        if typ == "array":
            return []
        if typ == "string":
            return _FORMAT_DEFAULTS.get(str(flat.get("format")), "")
        if typ in ("integer", "number"):
            return flat.get("minimum", 0)
        if typ == "boolean":
            return False
        return None

    def check_response(self, template: str, method: str, status: int, value: Any) -> list[str]:
        """Validate one of the fake's own JSON answers against the documented response schema."""
        responses = self.spec["paths"][template][method.lower()].get("responses", {})
        if str(status) not in responses:
            return [f"{method.upper()} {template}: status {status} is not documented"]
        response = responses[str(status)]
        pointer = "/" + _pointer("paths", template, method.lower(), "responses", str(status))
        if "$ref" in response:
            pointer = response["$ref"].lstrip("#")
            response = self._resolve(response)
        content = response.get("content", {})
        if "application/json" not in content:
            return []
        pointer += "/" + _pointer("content", "application/json", "schema")
        return [
            f"{method.upper()} {template} -> {status}: {m}"
            for m in self._validate_value(pointer, value)
        ]


_FORMAT_DEFAULTS = {
    "date-time": "2026-01-01T00:00:00Z",
    "uri": "https://example.invalid/",
    "uri-template": "https://example.invalid/{id}",
    "email": "nobody@example.invalid",
    "date": "2026-01-01",
}


def _group(name: str) -> str:
    return "p_" + re.sub(r"\W", "_", name)


def _ungroup(group: str) -> str:
    return group[2:]
