"""The one verifying TLS context of the process, shared by every HTTPS client.

Building a context loads the whole CA bundle (about 45 ms of CPU each time); the GitHub
client and the reviewer transport each used to build their own per run or per attempt.
The context is exactly httpx's default (``verify=True``, ``trust_env=True``: the CA bundle,
or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set), built once on first use; nothing in it
is relaxed.
"""

from __future__ import annotations

import ssl
import threading

import httpx

_CONTEXT: ssl.SSLContext | None = None
_LOCK = threading.Lock()


def context() -> ssl.SSLContext:
    """The verifying TLS context, built on first use and kept for the process."""
    global _CONTEXT
    with _LOCK:
        if _CONTEXT is None:
            _CONTEXT = httpx.create_ssl_context(trust_env=True)
        return _CONTEXT
