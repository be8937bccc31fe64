"""gate.safe.tls: the verifying context, and the one for a client that never meets TLS."""

from __future__ import annotations

import os
import ssl

import pytest

from gate.safe import tls


def test_an_https_url_gets_the_verifying_context() -> None:
    ctx = tls.for_url("https://api.github.com")
    assert ctx is tls.context()
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname


@pytest.mark.parametrize("name", ["HTTPS_PROXY", "http_proxy", "ALL_PROXY", "no_proxy"])
def test_any_proxy_keeps_the_verifying_context(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "https://proxy.example:3128")
    assert tls.for_url("http://127.0.0.1:8080") is tls.context()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "HTTP://localhost/api/v3"])
def test_plain_http_gets_a_context_that_trusts_nothing(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)
    ctx = tls.for_url(url)
    assert ctx is not tls.context()
    # it still verifies, with no CA to verify against: no TLS peer can pass
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] == 0
    assert ctx.get_ca_certs() == []


@pytest.mark.parametrize(
    "env",
    [
        {"Https_Proxy": "http://proxy.example:3128"},  # any casing: urllib lowers the name
        {"all_proxy": "http://proxy.example:3128"},
        {"HTTP_PROXY": "", "http_proxy": "https://proxy.example:3128"},
        {"HTTPS_PROXY": "https://proxy.example:3128", "NO_PROXY": "*.internal"},
    ],
)
def test_whenever_httpx_would_take_a_proxy_the_context_verifies(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    """The rule is a superset of what httpx reads (``trust_env``: urllib's
    ``getproxies``): no environment where the GitHub client goes through a proxy, which
    may be reached over TLS, gets the context that trusts nothing."""
    import urllib.request

    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert urllib.request.getproxies()  # what httpx's trust_env reads
    assert tls.for_url("http://127.0.0.1:8080") is tls.context()
