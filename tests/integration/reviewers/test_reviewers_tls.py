"""HTTPS: a healthy answer over TLS seals, and the deadline watchdog also stops a TLS stall.

A throw-away self-signed certificate for 127.0.0.1 is made with ``cryptography``
(already installed with PyGithub) and trusted only for the length of a test.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from gate.decide.envelope import verify_text
from gate.lab.sim import ReviewerSimulator, SimResponse
from gate.reviewers.transport import review
from gate.safe import tls as shared_tls

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "review-gate test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path = tmp_path / "cert.pem"
    key_path = tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cafile=str(cert_path))
    monkeypatch.setattr(shared_tls, "_CONTEXT", client)  # trust this certificate, this test only
    return server


def test_a_healthy_answer_over_tls_is_sealed(tls: ssl.SSLContext) -> None:
    with ReviewerSimulator("anthropic", lambda _r: "over TLS ✓", tls=tls) as sim:
        assert sim.base_url.startswith("https://127.0.0.1:")
        outcome = review(sim.settings(attempts=1), system="s", user="u")
    assert outcome.envelope is not None
    assert verify_text(outcome.envelope) == "over TLS ✓"


def test_an_untrusted_certificate_is_a_connect_error(
    tls: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_tls, "_CONTEXT", ssl.create_default_context())
    with ReviewerSimulator("openai", tls=tls) as sim:
        outcome = review(sim.settings(attempts=1), system="s", user="u")
    assert outcome.last is not None
    assert outcome.last.reason == "connect_error"
    assert outcome.envelope is None


@pytest.mark.parametrize("stall_after", [0, 120, 400])
def test_the_deadline_stops_a_tls_stall(tls: ssl.SSLContext, stall_after: int) -> None:
    script = [SimResponse(stall_after=stall_after)]
    with ReviewerSimulator("openai", tls=tls, script=script) as sim:
        outcome = review(
            sim.settings(deadline=1.0, read_timeout=30.0, attempts=1), system="s", user="u"
        )
    assert outcome.last is not None
    assert outcome.last.reason == "deadline"
    assert outcome.envelope is None


def test_the_deadline_stops_a_tls_trickle(tls: ssl.SSLContext) -> None:
    script = [SimResponse(segment_size=1, pause=0.05)]
    with ReviewerSimulator("gemini", tls=tls, script=script) as sim:
        outcome = review(
            sim.settings(deadline=1.0, read_timeout=0.5, attempts=1), system="s", user="u"
        )
    assert outcome.last is not None
    assert outcome.last.reason == "deadline"


def test_the_context_for_plain_http_refuses_a_tls_peer(
    tls: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The context a plain-http client gets (no CA bundle loaded) is no way around
    verification: the same server the verifying context trusts here is refused."""
    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)
    nothing = shared_tls.for_url("http://127.0.0.1")
    assert nothing is not shared_tls.context()
    with ReviewerSimulator("openai", tls=tls) as sim:
        port = int(sim.base_url.split(":")[2].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            trusted = shared_tls.context().wrap_socket(raw, server_hostname="127.0.0.1")
            trusted.close()
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            pytest.raises(ssl.SSLCertVerificationError),
        ):
            nothing.wrap_socket(raw, server_hostname="127.0.0.1")
