"""The audit certificate: schema-valid, re-verifiable, atomic, secret-free."""

from __future__ import annotations

import base64
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from gate.decide.attempt import Attempt, EndReason, FinishReason
from gate.decide.decision import Binding, decide
from gate.decide.envelope import seal
from gate.errors import UsageError
from gate.review import certificate
from tests.verdicts import fenced_verdict

SHA = "a" * 64
BINDING = Binding(SHA, "1")


def schema_validator() -> Draft202012Validator:
    files = resources.files("gate") / "schemas"
    cert = json.loads((files / "certificate.schema.json").read_text())
    verdict = json.loads((files / "verdict.schema.json").read_text())
    registry: Registry[Any] = Registry().with_resource(
        "verdict.schema.json", Resource.from_contents(verdict)
    )
    registry = registry.with_resource(verdict["$id"], Resource.from_contents(verdict))
    return Draft202012Validator(cert, registry=registry)


def envelope(verdict: str = "pass") -> bytes:
    return seal(fenced_verdict(BINDING, verdict=verdict, reasons=["ok"]).encode())


ATTEMPT = Attempt(
    number=1,
    provider="openai",
    complete=True,
    reason="",
    detail="",
    end_reason=EndReason.TRAILER,
    finish_reason=FinishReason.STOP,
    provider_finish_reason="stop",
    http_status=200,
    bytes_received=812,
    raw_sha256="b" * 64,
    usage={"prompt_tokens": 10, "completion_tokens": 20},
)


@pytest.mark.parametrize("raw", [envelope(), envelope("fail"), b"junk", None])
def test_certificate_matches_its_schema(raw: bytes | None) -> None:
    decision = decide(raw, binding=BINDING, attempts=[ATTEMPT])
    cert = certificate.build(
        decision,
        binding=BINDING,
        attempts=[ATTEMPT],
        inputs={"diff": SHA},
        envelope=raw,
        extra={"repository": "o/r"},
    )
    errors = sorted(schema_validator().iter_errors(cert), key=str)
    assert not errors, errors[0].message
    assert cert["decision"]["state"] == decision.state
    assert cert["attempts"][0]["finish_reason"] == "stop"


def test_certificate_round_trips_the_envelope(tmp_path: Path) -> None:
    raw = envelope()
    cert = certificate.build(
        decide(raw, binding=BINDING), binding=BINDING, attempts=(), inputs={}, envelope=raw
    )
    path = tmp_path / "c.json"
    digest = certificate.write(path, cert)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    loaded = json.loads(path.read_text())
    assert certificate.envelope_from(loaded) == raw
    assert decide(certificate.envelope_from(loaded), binding=BINDING).state == "pass"


def test_tampered_envelope_in_certificate_is_refused() -> None:
    raw = envelope()
    cert = certificate.build(
        decide(raw, binding=BINDING), binding=BINDING, attempts=(), inputs={}, envelope=raw
    )
    cert["envelope"]["base64"] = base64.b64encode(envelope("fail")).decode()
    with pytest.raises(UsageError, match="does not match its recorded sha256"):
        certificate.envelope_from(cert)
    cert["envelope"] = None
    with pytest.raises(UsageError, match="holds no envelope"):
        certificate.envelope_from(cert)


def test_a_certificate_holding_a_secret_is_written_redacted(tmp_path: Path) -> None:
    secret = "sk-live-0123456789abcdef"
    cert = certificate.build(
        decide(None, binding=BINDING),
        binding=BINDING,
        attempts=(),
        inputs={},
        envelope=None,
        extra={"oops": f"Bearer {secret}"},
    )
    path = tmp_path / "c.json"
    certificate.write(path, cert, secrets=[secret])
    text = path.read_text()
    assert secret not in text
    written = json.loads(text)
    assert written["context"]["oops"] == "Bearer [redacted]"
    assert written["context"]["redacted"] == ["$.context.oops"]
