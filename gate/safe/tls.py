"""The one verifying TLS context of the process, shared by every HTTPS client.

Building a context loads the whole CA bundle (about 45 ms of CPU each time); the GitHub
client and the reviewer transport each used to build their own per run or per attempt.
The context is exactly httpx's default (``verify=True``, ``trust_env=True``: the CA bundle,
or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set), built once on first use; nothing in it
is relaxed.

A client whose every request is plain ``http://`` (a loopback GitHub in tests and ``act``,
a local model) never meets TLS: :func:`for_url` then hands it a context that trusts no
certificate at all instead of building the verifying one, so the gate's first request
does not wait ~25 ms on a CA bundle it cannot use. Any proxy variable in the environment
(a proxy may be reached over TLS) keeps the verifying context.
"""

from __future__ import annotations

import os
import ssl
import threading

import httpx

_CONTEXT: ssl.SSLContext | None = None
_NOTHING: ssl.SSLContext | None = None
_LOCK = threading.Lock()


def context() -> ssl.SSLContext:
    """The verifying TLS context, built on first use and kept for the process."""
    global _CONTEXT
    with _LOCK:
        if _CONTEXT is None:
            _CONTEXT = httpx.create_ssl_context(trust_env=True)
        return _CONTEXT


def for_url(url: str) -> ssl.SSLContext:
    """The context a client of ``url`` needs: :func:`context`, unless ``url`` is plain
    ``http://`` and no proxy is configured, where nothing it sends can meet TLS; then a
    context that trusts no certificate (every TLS peer fails verification), built in
    microseconds."""
    if not url.lower().startswith("http://") or _proxied():
        return context()
    global _NOTHING
    with _LOCK:
        if _NOTHING is None:
            _NOTHING = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies; trusts no CA
        return _NOTHING


def _proxied() -> bool:
    """Whether any ``*_proxy`` variable is set (httpx reads them: ``trust_env``)."""
    return any(name.lower().endswith("_proxy") and value for name, value in os.environ.items())
