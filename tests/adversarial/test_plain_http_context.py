"""The context that trusts nothing is handed out only where no TLS can be met.

Class: the GitHub client gets ``gate.safe.tls.for_url``'s context that loads no CA
(built for a plain ``http://`` API) where a request could still meet TLS: an https URL
written oddly (case, whitespace, userinfo), or a proxy httpx would take from the
environment (``trust_env``: urllib's ``getproxies``, names in any case, empty values,
``all_proxy``). Hypothesis draws URLs and environments; the oracles are httpx's own URL
parser and urllib's proxy reader. Wherever either says TLS may be met, the verifying
context comes back; and whatever comes back demands a certificate and checks the host.
"""

from __future__ import annotations

import os
import ssl
import urllib.request

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.safe import tls


def _cased(word: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda ups: "".join(c.upper() if up else c for c, up in zip(word, ups, strict=True))
    )


SCHEMES = st.sampled_from(["http", "https", "HTTP", "Http", "HTTPS", "hTtPs", "ftp"])
URLS = st.builds(
    lambda lead, scheme, user, host, port, path: f"{lead}{scheme}://{user}{host}{port}{path}",
    st.sampled_from(["", " ", "\t"]),
    SCHEMES,
    st.sampled_from(["", "user:pw@", "x@"]),
    st.sampled_from(["127.0.0.1", "localhost", "api.github.com", "[::1]"]),
    st.sampled_from(["", ":8080", ":443"]),
    st.sampled_from(["", "/", "/api/v3"]),
)
PROXY_NAMES = st.sampled_from(["http_proxy", "https_proxy", "all_proxy", "no_proxy"]).flatmap(
    _cased
)
ENVIRONMENTS = st.dictionaries(
    PROXY_NAMES,
    st.sampled_from(["", "http://proxy.example:3128", "https://proxy.example:3128", "*"]),
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(url=URLS, env=ENVIRONMENTS)
def test_the_context_that_trusts_nothing_only_where_no_tls_can_be_met(
    url: str, env: dict[str, str]
) -> None:
    saved = {k: v for k, v in os.environ.items() if k.lower().endswith("_proxy")}
    for name in saved:
        del os.environ[name]
    os.environ.update(env)
    try:
        ctx = tls.for_url(url)
        proxies = urllib.request.getproxies()  # what httpx's trust_env reads
    finally:
        for name in env:
            os.environ.pop(name, None)
        os.environ.update(saved)
    try:
        scheme = httpx.URL(url.strip()).scheme
    except httpx.InvalidURL:
        scheme = "?"
    if ctx is not tls.context():
        assert scheme == "http"
        assert not proxies
        assert ctx.cert_store_stats()["x509_ca"] == 0
    # whichever it is, no TLS peer passes without a certificate for its host name
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname


@pytest.mark.parametrize("url", ["https://api.github.com", " http://127.0.0.1", "ftp://x"])
def test_what_is_not_plain_http_gets_the_verifying_context(url: str) -> None:
    assert tls.for_url(url) is tls.context()
