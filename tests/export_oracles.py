"""The standards' own checks for what gate.export writes, shared by the tests.

- the in-toto Statement: the in-toto organisation's Python bindings (PyPI
  ``in-toto-attestation``: ``json_format.Parse`` into ``statement_pb2.Statement``, then
  ``Statement.validate()``), and a JSON Schema transcribed from the in-toto spec;
- SARIF: the OASIS SARIF 2.1.0 (Errata 01) JSON Schema, draft-04;
- the predicate: the project's own ``gate/schemas/decision-predicate.schema.json``.

The two standards' schemas are not copied into this repository (their sources and
licences are in ``$REVIEW_GATE_STANDARD_SCHEMAS/SOURCES.md``; default
``shared/schemas`` beside the clone, as CI lays it out, else ``/work/shared/schemas``).
Where they are absent the checks that need them skip, saying which file is missing, except
under ``CI=true``, where they fail; the bindings and the project's schema always run.
"""

from __future__ import annotations

import json
import os
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest


def _standards_folder() -> Path:
    """$REVIEW_GATE_STANDARD_SCHEMAS, else ``shared/schemas`` beside the clone (as CI lays it)."""
    named = os.environ.get("REVIEW_GATE_STANDARD_SCHEMAS")
    if named:
        return Path(named)
    beside = Path(__file__).resolve().parents[2] / "shared" / "schemas"
    return beside if beside.is_dir() else Path("/work/shared/schemas")


STANDARDS = _standards_folder()
# In CI the standards' schemas must be there: a missing one fails instead of skipping.
REQUIRED = os.environ.get("CI") == "true"
IN_TOTO_SCHEMA = "in-toto-statement-v1.schema.json"
SARIF_SCHEMA = "sarif-schema-2.1.0.json"


@cache
def _standard(name: str) -> dict[str, Any] | None:
    path = STANDARDS / name
    if not path.is_file():
        return None
    loaded = json.loads(path.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def standard(name: str) -> dict[str, Any]:
    schema = _standard(name)
    if schema is None:
        missing = f"{STANDARDS / name} is missing (set REVIEW_GATE_STANDARD_SCHEMAS)"
        if REQUIRED:
            pytest.fail(f"CI=true: {missing}")
        pytest.skip(missing)
    assert schema is not None
    return schema


@cache
def predicate_schema() -> dict[str, Any]:
    text = resources.files("gate").joinpath("schemas/decision-predicate.schema.json").read_text()
    loaded = json.loads(text)
    assert isinstance(loaded, dict)
    return loaded


def check_statement(statement: dict[str, Any]) -> None:
    """Every check the standards and the project have for a statement (raises)."""
    from google.protobuf import json_format
    from in_toto_attestation.v1 import statement as bindings
    from in_toto_attestation.v1 import statement_pb2

    jsonschema.Draft202012Validator(predicate_schema()).validate(statement["predicate"])
    proto = json_format.Parse(
        json.dumps(statement), statement_pb2.Statement(), ignore_unknown_fields=True
    )
    bindings.Statement.copy_from_pb(proto).validate()
    schema = _standard(IN_TOTO_SCHEMA)
    if schema is not None:
        jsonschema.Draft7Validator(schema).validate(statement)
    elif REQUIRED:
        pytest.fail(f"CI=true: {STANDARDS / IN_TOTO_SCHEMA} is missing")


def check_sarif(log: dict[str, Any]) -> None:
    """The OASIS SARIF 2.1.0 schema (skips when it is not at hand)."""
    jsonschema.Draft4Validator(standard(SARIF_SCHEMA)).validate(log)
