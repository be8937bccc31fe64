"""Is the upstream there, and does it speak the OpenAI dialect? ``GET {upstream}/models``.

Every OpenAI-compatible server answers it (vLLM, llama.cpp's server, Ollama's ``/v1``,
LiteLLM) with ``{"object": "list", "data": [{"id": ...}, ...]}``. :func:`probe` asks it
once, under a short deadline, and says what failed and the setting that fixes it:
nothing listening (``--upstream``), a key refused (``--upstream-key-env``), nothing at
that path (the root must end in ``/v1``), an answer in another shape (another dialect:
Ollama's own ``/api``, an MC1 service, a web page). The service runs it at start-up
(a failure stops it there) and for ``GET /healthz`` (a failure is reported, cached for
:data:`HEALTH_TTL_S` so a health check cannot drive the upstream).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

from gate.reviewers.settings import shown_url

PROBE_TIMEOUT_S = 5.0
HEALTH_TTL_S = 5.0
MAX_LIST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Probed:
    """What ``GET /models`` showed: a problem ("" when none) and the models listed."""

    problem: str
    models: tuple[str, ...] = ()


def probe(upstream: str, key: str | None, *, timeout: float = PROBE_TIMEOUT_S) -> Probed:
    """Ask ``{upstream}/models`` once, within ``timeout`` seconds in all."""
    import httpx

    from gate.reviewers.base import one_line
    from gate.safe import tls
    from gate.safe.watchdog import Watchdog

    url = upstream.rstrip("/") + "/models"
    shown = shown_url(url)
    headers = {"accept": "application/json", "accept-encoding": "identity"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    body = bytearray()
    try:
        with (
            Watchdog(timeout) as watchdog,
            httpx.Client(timeout=timeout, verify=tls.context(), follow_redirects=False) as client,
            client.stream("GET", url, headers=headers, extensions={"trace": watchdog.trace}) as r,
        ):
            for chunk in r.iter_bytes():
                body += chunk
                if len(body) > MAX_LIST_BYTES:
                    break
            status = r.status_code
    except httpx.HTTPError as err:
        why = one_line(f"{type(err).__name__}: {err}", key, 160) if str(err) else type(err).__name__
        return Probed(
            f"cannot reach the upstream at {shown} within {timeout:g}s ({why}); check "
            "--upstream and that the model server is running"
        )
    return _read(shown, status, bytes(body))


def _read(shown: str, status: int, body: bytes) -> Probed:
    if status in (401, 403):
        return Probed(
            f"the upstream at {shown} refused the request (HTTP {status}); give its key in "
            "the variable --upstream-key-env names"
        )
    if status == 404:
        return Probed(
            f"nothing at {shown} (HTTP 404): --upstream must be the OpenAI-compatible root, "
            "ending in /v1 (llama.cpp and vLLM: http://HOST:PORT/v1; Ollama: "
            "http://HOST:11434/v1)"
        )
    if status != 200:
        return Probed(f"the upstream at {shown} answered HTTP {status}; check --upstream")
    try:
        value = json.loads(body)
        models = tuple(str(item["id"]) for item in value["data"])
    except (ValueError, TypeError, KeyError) as err:
        return Probed(
            f"the upstream at {shown} does not answer in the OpenAI dialect (GET /models is "
            f"not a model list: {type(err).__name__}); --upstream must be an OpenAI-compatible "
            "/v1 (vLLM, llama.cpp's server, Ollama's /v1), not another API"
        )
    return Probed("", models)


class Health:
    """The upstream's reachability for ``/healthz``, asked at most every :data:`HEALTH_TTL_S`."""

    def __init__(self, upstream: str, key: str | None) -> None:
        self._upstream, self._key = upstream, key
        self._lock = threading.Lock()
        self._at = -HEALTH_TTL_S
        self._last = Probed("not asked yet")

    def reachable(self) -> bool:
        with self._lock:  # one probe at a time; the others wait for its answer
            if time.monotonic() - self._at >= HEALTH_TTL_S:
                self._last = probe(self._upstream, self._key, timeout=2.0)
                self._at = time.monotonic()
            return not self._last.problem
