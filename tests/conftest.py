"""Fixtures every test folder shares: the reviewer simulator, the fake GitHub, a git repository.

pytest loads this file for any test under ``tests/``, and ``pythonpath = ["."]`` in
pyproject.toml puts the repository root on ``sys.path``, so one test file runs alone
(``pytest tests/contract/test_github.py``) as well as in the whole suite.

- :func:`sim_factory`: start :class:`~gate.lab.sim.ReviewerSimulator` servers on 127.0.0.1;
  every one is stopped when the test ends, whatever happened.
- :func:`fake_github`: a :class:`~tests.fakes.github.FakeGitHub` on 127.0.0.1; when the test
  ends it asserts that every request, and every answer of the fake, matched GitHub's OpenAPI
  description (needs ``npm ci --prefix tests/node``).
- :func:`git_repo`: an empty git repository (branch ``main``) in the test's ``tmp_path``, with
  git isolated from the user's configuration (:mod:`tests.gitrepo`).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from gate.lab.sim import ReviewerSimulator, SimResponse
from tests.fakes.github import FakeGitHub
from tests.gitrepo import git


@pytest.fixture
def sim_factory() -> Iterator[Callable[..., ReviewerSimulator]]:
    """``make(responder=None, script=(), *, dialect="openai", tls=None)`` starts a simulator."""
    started: list[ReviewerSimulator] = []

    def make(
        responder: Callable[[dict[str, Any]], str] | None = None,
        script: Sequence[SimResponse] = (),
        *,
        dialect: str = "openai",
        tls: ssl.SSLContext | None = None,
    ) -> ReviewerSimulator:
        sim = ReviewerSimulator(dialect, responder, script=script, tls=tls)
        sim.start()
        started.append(sim)
        return sim

    yield make
    for sim in started:
        sim.stop()


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    """The fake GitHub for ``octo-org/hello-world``, checked against GitHub's description."""
    with FakeGitHub("octo-org/hello-world") as gh:
        yield gh
        assert gh.violations == [], "requests outside GitHub's OpenAPI description"
        assert gh.response_violations == [], "the fake answered outside the description"


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """An empty git repository at ``tmp_path / "repo"`` on branch ``main``."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    return path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep the end-to-end tests on one xdist worker (``--dist loadgroup``).

    They share one built image, one act cache and the local registry, so under
    ``pytest -n 2`` (as ``.ci/run`` runs the suite) they run in order on one worker while
    the other worker takes the rest. Without xdist the marker is inert.
    """
    for item in items:
        if item.get_closest_marker("e2e") is not None:
            item.add_marker(pytest.mark.xdist_group("e2e"))
