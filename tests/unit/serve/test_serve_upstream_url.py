"""``serve --upstream`` with credentials in it is refused at start-up, its password unshown.

Outside attack of issue 33, item 2 (decision 0052). The gate refuses a reviewer
``base_url`` that carries credentials (:func:`gate.reviewers.settings.validate`), because
the transport's messages name the URL: ``serve`` builds its upstream settings without
``validate`` and accepted ``http://user:password@host/v1``, so an upstream that could
not be reached answered the gate 502 "cannot connect to http://user:password@..." and
the password went on into the gate's attempt detail, certificate and status.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.errors import UsageError
from gate.serve.config import ServeConfig

SECRET = "planted-upstream-pw"


@pytest.mark.parametrize(
    "upstream",
    [
        f"http://ops:{SECRET}@127.0.0.1:8080/v1",
        f"https://{SECRET}@models.internal/v1",
        f"http://ops:{SECRET}@[::1]:8080/v1",
    ],
)
def test_credentials_in_the_upstream_are_refused_unshown(upstream: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        ServeConfig(upstream=upstream, key_path=tmp_path / "k", token="t" * 40)
    assert SECRET not in str(err.value)
    assert "--upstream-key-env" in str(err.value)


def test_an_upstream_without_credentials_is_taken(tmp_path: Path) -> None:
    config = ServeConfig(
        upstream="http://127.0.0.1:8080/v1", key_path=tmp_path / "k", token="t" * 40
    )
    assert config.upstream_settings(model="m", max_tokens=1, temperature=0).base_url == (
        "http://127.0.0.1:8080/v1"
    )
