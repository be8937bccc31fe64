"""The preflight (gate/reviewers/window.py) over real TCP on 127.0.0.1: each server's
context endpoint in its own shape (the simulator's :class:`SimServer`), and every way
an answer can fail: no answer, a stall past the timeout, an error status, a body that
is not the server's. A failure is never a size and never a silent skip (``ContextUnknown``);
only ``auto`` moves past a server that has no such endpoint, and says so.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.errors import ContextUnknown, UsageError
from gate.lab.sim import ReviewerSimulator, SimServer, context_json
from gate.reviewers.settings import ReviewerSettings, validate
from gate.reviewers.window import MAX_BODY, context_of, root_of

UNREACHABLE = "context_window_unreachable"
WRONG = "config_context_window"


def _settings(sim: ReviewerSimulator, setting: str | int, **more: float) -> ReviewerSettings:
    return sim.settings(context_window=setting, read_timeout=more.get("read", 5.0))


@pytest.mark.parametrize(
    ("kind", "asked"),
    [
        ("llama.cpp", [("GET", "/props")]),
        ("vllm", [("GET", "/props"), ("GET", "/v1/models")]),
        ("ollama", [("GET", "/props"), ("GET", "/v1/models"), ("POST", "/api/show")]),
    ],
)
def test_each_server_tells_its_context_in_its_own_shape(
    kind: str, asked: list[tuple[str, str]]
) -> None:
    with ReviewerSimulator("openai", server=SimServer(kind, 4096)) as sim:
        auto = context_of(_settings(sim, "auto"))
        assert auto is not None
        assert auto.tokens == 4096
        assert [(r.method, r.path) for r in sim.preflights] == asked  # each asked once
        named = context_of(_settings(sim, kind))
        assert named is not None
        assert named.tokens == 4096
        assert sim.count == 0  # no chat request


def test_ollama_is_asked_for_the_model_and_its_trained_length_is_never_read() -> None:
    body = context_json(SimServer("ollama", None), "POST", "/api/show", "sim-model")
    assert body is not None
    assert json.loads(body)["model_info"]["llama.context_length"] == 8192
    with ReviewerSimulator("openai", server=SimServer("ollama", None)) as sim:
        with pytest.raises(ContextUnknown) as err:
            context_of(_settings(sim, "ollama"))
        assert err.value.reason == WRONG
        assert "num_ctx" in str(err.value)
        assert sim.preflights[-1].body == {"model": "sim-model"}


@pytest.mark.parametrize("kind", ["llama-cpp-python", "ollama"])
def test_auto_with_no_size_says_so_and_goes_on(kind: str) -> None:
    with ReviewerSimulator("openai", server=SimServer(kind, None)) as sim:
        served = context_of(_settings(sim, "auto"))
        assert served is not None
        assert served.tokens is None
        assert "tells no context size" in served.note
        assert len(sim.preflights) == 3


def test_a_named_server_without_its_endpoint_blocks() -> None:
    with ReviewerSimulator("openai", server=SimServer("llama-cpp-python", None)) as sim:
        for kind in ("llama.cpp", "vllm", "ollama"):
            with pytest.raises(ContextUnknown) as err:
                context_of(_settings(sim, kind))
            assert err.value.reason == WRONG


def test_off_asks_nothing_and_a_number_is_the_size() -> None:
    with ReviewerSimulator("openai", server=SimServer("llama.cpp", 4096)) as sim:
        assert context_of(_settings(sim, "off")) is None
        served = context_of(_settings(sim, 2048))
        assert served is not None
        assert served.tokens == 2048
        assert sim.preflights == []


#: bodies of /props that are not llama.cpp's answer: each a ContextUnknown, never a size
GARBAGE = [
    b"",
    b"<html>hello</html>",
    b'{"default_generation_settings": {"n_ctx": "8192"}}',
    b'{"default_generation_settings": {"n_ctx": true}}',
    b'{"default_generation_settings": {"n_ctx": 0}}',
    b'{"default_generation_settings": {"n_ctx": -4096}}',
    b'{"default_generation_settings": {"n_ctx": 8192.5}}',
    b'{"default_generation_settings": {"n_ctx": 1e12}}',
    b'{"default_generation_settings": {"n_ctx": 100000001}}',
    b'{"default_generation_settings": {"n_ctx": 8192, "n_ctx": 1000000}}',
    b'{"default_generation_settings": {"n_ctx": 8192}} trailing',
    b'{"default_generation_settings": {"n_ctx": NaN}}',
    b"[8192]",
]


@pytest.mark.parametrize("body", GARBAGE)
@pytest.mark.parametrize("setting", ["auto", "llama.cpp"])
def test_a_body_that_is_not_the_servers_fails_closed(body: bytes, setting: str) -> None:
    server = SimServer("llama.cpp", 8192, body=body)
    with ReviewerSimulator("openai", server=server) as sim:
        with pytest.raises(ContextUnknown) as err:
            context_of(_settings(sim, setting))
        assert err.value.reason in (WRONG, UNREACHABLE)


@pytest.mark.parametrize("status", [401, 403, 500, 503, 301])
def test_an_error_status_fails_closed(status: int) -> None:
    with ReviewerSimulator("openai", server=SimServer("llama.cpp", 8192, status=status)) as sim:
        with pytest.raises(ContextUnknown) as err:
            context_of(_settings(sim, "auto"))
        assert err.value.reason == UNREACHABLE
        assert f"HTTP {status}" in str(err.value)


def test_a_body_over_the_limit_fails_closed() -> None:
    huge = b'{"pad": "' + b"x" * MAX_BODY + b'", "default_generation_settings": {"n_ctx": 8}}'
    with ReviewerSimulator("openai", server=SimServer("llama.cpp", body=huge)) as sim:
        with pytest.raises(ContextUnknown) as err:
            context_of(_settings(sim, "llama.cpp"))
        assert err.value.reason == WRONG


def test_a_stall_past_the_read_timeout_fails_closed() -> None:
    with ReviewerSimulator("openai", server=SimServer("llama.cpp", stall_s=30.0)) as sim:
        with pytest.raises(ContextUnknown) as err:
            context_of(replace(_settings(sim, "auto"), read_timeout=0.3))
        assert err.value.reason == UNREACHABLE
        assert "ReadTimeout" in str(err.value)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts and closes at once (no HTTP answer), then one nobody listens on."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.05)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    listener.close()


def test_a_closed_connection_and_a_refused_one_fail_closed(silent_port: int) -> None:
    base = ReviewerSettings(
        provider="openai",
        model="m",
        base_url=f"http://127.0.0.1:{silent_port}/v1",
        context_window="auto",
        connect_timeout=2.0,
        read_timeout=2.0,
    )
    with pytest.raises(ContextUnknown) as err:
        context_of(base)
    assert err.value.reason == UNREACHABLE
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    free = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with pytest.raises(ContextUnknown) as refused:
        context_of(replace(base, base_url=f"http://127.0.0.1:{free}/v1"))
    assert refused.value.reason == UNREACHABLE


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=200) | st.text(max_size=120).map(str.encode))
def test_any_body_is_the_size_it_says_or_fails_closed(body: bytes) -> None:
    """Whatever /props answers, the preflight returns exactly the n_ctx of a well-formed
    answer, or raises: it never returns no size for a server named explicitly."""
    with ReviewerSimulator("openai", server=SimServer("llama.cpp", body=body)) as sim:
        try:
            served = context_of(_settings(sim, "llama.cpp"))
        except ContextUnknown:
            return
    assert served is not None
    data = json.loads(body)
    assert served.tokens == data["default_generation_settings"]["n_ctx"]


def test_the_root_drops_v1_only() -> None:
    assert root_of("http://h:8080/v1") == "http://h:8080"
    assert root_of("http://h:8080/v1/") == "http://h:8080"
    assert root_of("http://h:11434") == "http://h:11434"
    assert root_of("http://h/proxy/v1") == "http://h/proxy"


def test_only_the_openai_provider_asks_a_server() -> None:
    settings_ = ReviewerSettings(
        provider="anthropic", model="m", base_url="http://127.0.0.1:1", api_key="k"
    )
    validate(settings_)
    with pytest.raises(UsageError) as err:
        validate(replace(settings_, context_window="auto"))
    assert err.value.reason == WRONG
