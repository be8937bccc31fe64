"""The front door (gate/serve/door.py) and the token's checks (gate/serve/config.py), pure."""

from __future__ import annotations

import pytest

from gate.errors import UsageError
from gate.serve.config import MIN_TOKEN, read_token
from gate.serve.door import Door, check, host_name

DOOR = Door.of(100, ["reviewer.internal"])


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("127.0.0.1:8430", "127.0.0.1"),
        ("LOCALHOST", "localhost"),
        ("[::1]:8430", "::1"),
        ("[::1]", "::1"),
        ("reviewer.internal:80", "reviewer.internal"),
        ("::1", "::1"),
    ],
)
def test_host_name(value: str, name: str) -> None:
    assert host_name(value) == name


def _post(*headers: tuple[str, str]) -> str | None:
    refusal = check(DOOR, "POST", [("Host", "127.0.0.1:1"), ("Content-Length", "10"), *headers])
    return refusal.reason if refusal else None


def test_the_door() -> None:
    assert _post() is None
    assert check(DOOR, "GET", [("host", "[::1]:9")]) is None
    assert check(DOOR, "GET", [("host", "reviewer.internal")]) is None
    assert check(DOOR, "GET", []).reason == "bad_host"  # type: ignore[union-attr]
    assert check(DOOR, "GET", [("host", "a"), ("host", "a")]).reason == "bad_host"  # type: ignore[union-attr]
    assert check(DOOR, "GET", [("host", "127.0.0.1.nip.io")]).status == 403  # type: ignore[union-attr]
    assert _post(("Origin", "null")) == "origin_refused"
    assert _post(("sec-fetch-site", "same-origin")) == "origin_refused"
    assert _post(("sec-fetch-site", "none")) is None
    assert _post(("Transfer-Encoding", "chunked")) == "length_required"
    assert _post(("content-length", "10")) == "bad_length"
    refusal = check(DOOR, "POST", [("host", "localhost"), ("content-length", "101")])
    assert refusal is not None
    assert (refusal.status, refusal.reason) == (413, "body_too_large")
    assert check(DOOR, "POST", [("host", "localhost"), ("content-length", "-1")]).status == 400  # type: ignore[union-attr]
    assert check(DOOR, "POST", [("host", "localhost"), ("content-length", "\uff11")]).status == 400  # type: ignore[union-attr]
    assert check(DOOR, "POST", [("host", "localhost")]).status == 411  # type: ignore[union-attr]


def test_the_token_comes_from_a_variable_or_a_file(tmp_path: object) -> None:
    good = "t" * MIN_TOKEN
    assert read_token(env="T", environ={"T": f" {good}\n"}) == good
    for environ, words in (
        ({}, "empty"),
        ({"T": "short"}, "fewer"),
        ({"T": "a b" * 20}, "whitespace"),
    ):
        with pytest.raises(UsageError, match=words) as raised:
            read_token(env="T", environ=environ)
        assert "a b" not in raised.value.message  # the value is never shown
    from pathlib import Path

    path = Path(str(tmp_path)) / "token"
    path.write_text(good + "\n")
    assert read_token(file=str(path), environ={}) == good
    with pytest.raises(UsageError, match="--token-file"):
        read_token(file=str(path) + ".none", environ={})


def test_start_up_warns_loudly_of_a_bind_beyond_loopback_and_a_readable_key(
    tmp_path: object,
) -> None:
    from pathlib import Path

    from gate.serve.config import ServeConfig
    from gate.serve.life import warnings

    key = Path(str(tmp_path)) / "k"
    key.write_text("x")
    key.chmod(0o600)
    base = {"upstream": "http://127.0.0.1:1/v1", "key_path": key, "token": "t" * MIN_TOKEN}
    assert warnings(ServeConfig(**base)) == []
    assert warnings(ServeConfig(**base, host="::1")) == []
    (said,) = warnings(ServeConfig(**base, host="0.0.0.0"))
    assert "NOT on loopback" in said
    key.chmod(0o644)
    (said,) = warnings(ServeConfig(**base))
    assert "chmod 600" in said
