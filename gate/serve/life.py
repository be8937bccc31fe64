"""Start-up and shutdown of ``review-gate serve``.

:func:`start` reads the key, probes the upstream (:func:`gate.serve.probe.probe`: a
failure stops it there, naming the setting) and binds; :func:`run` serves until ``stop``
is set (``SIGTERM``, ``SIGINT``), then stops accepting (the listening socket is closed: a
new connection is refused), lets the requests in flight finish within ``grace`` seconds,
cuts the rest (:meth:`gate.serve.service.Service.drain`) and returns.
"""

from __future__ import annotations

import stat
import threading

from gate.errors import UsageError
from gate.serve import keys
from gate.serve.config import ServeConfig
from gate.serve.handler import Server
from gate.serve.probe import probe
from gate.serve.service import Log, Service


def start(config: ServeConfig, log: Log, *, check_upstream: bool = True) -> tuple[Service, Server]:
    """The key read, the upstream probed, the socket bound; UsageError naming the setting."""
    key, key_id = keys.load(config.key_path)
    if check_upstream:
        probed = probe(config.upstream, config.upstream_key)
        if probed.problem:
            raise UsageError(f"the upstream check failed: {probed.problem}")
        if config.model and probed.models and config.model not in probed.models:
            log(f"warning: --model {config.model} is not among the upstream's models")
        if config.context_window != "off":
            log(window_line(config, probed.models))
    for warning in warnings(config):
        log(warning)
    service = Service(config, key, key_id, log)
    try:
        server = Server(service, (config.host, config.port))
    except OSError as err:
        service.watch.close()
        raise UsageError(
            f"cannot listen on {config.host}:{config.port}: {err.strerror}; choose --port or --host"
        ) from err
    return service, server


def window_line(config: ServeConfig, models: tuple[str, ...]) -> str:
    """``--context-window`` asked once at start-up (then before each call): the size the
    upstream tells, or UsageError naming the setting when it cannot be read."""
    from gate.errors import ContextUnknown
    from gate.reviewers.window import context_of

    model = config.model or (models[0] if models else "")
    settings = config.upstream_settings(model=model, max_tokens=1, temperature=0.0)
    try:
        served = context_of(settings)
    except ContextUnknown as err:
        raise UsageError(f"--context-window {config.context_window}: {err.message}") from None
    assert served is not None  # not off
    return f"context window: {served.note}"


def warnings(config: ServeConfig) -> list[str]:
    """What start-up says loudly: a bind beyond loopback, a private key others can read."""
    said = []
    if not config.loopback:
        said.append(
            f"WARNING: listening on {config.host}, NOT on loopback: anyone who can reach this "
            "address can ask the upstream with a valid token, over plain HTTP; put TLS in "
            "front of it and allow the Host names clients use with --allow-host"
        )
    try:
        mode = stat.S_IMODE(config.key_path.stat().st_mode)
    except OSError:
        mode = 0
    if mode & 0o077:
        said.append(
            f"WARNING: --key {config.key_path} can be read by other users (mode {mode:o}); "
            f"chmod 600 {config.key_path}"
        )
    return said


def run(service: Service, server: Server, stop: threading.Event) -> None:
    """Serve until ``stop`` is set, then shut down gracefully (module docstring)."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="serve-accept"
    )
    thread.start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        service.stopping.set()
        server.shutdown()  # the accept loop ends ...
        server.server_close()  # ... and new connections are refused from here
        thread.join(timeout=5)
        service.log(f"stopping: {service.in_flight} in flight, grace {service.config.grace:g}s")
        cut = service.drain()
        service.watch.close()
        service.log(f"stopped; {cut} request(s) cut unsealed")
