"""The ``mode`` input, read by :class:`gate.action.inputs.ActionInputs` (it used to be read
by :mod:`gate.action.replay`, which a review then had to import before its first request).

A value that is not exactly one of the four modes is a usage error naming the value:
never a review by default, and never another mode by a near spelling.
"""

from __future__ import annotations

import io

import pytest

from gate.action.inputs import ActionInputs
from gate.action.run import run_action
from gate.errors import ExitCode, UsageError


def _inputs(env: dict[str, str]) -> ActionInputs:
    return ActionInputs.from_env(env)


@pytest.mark.parametrize(
    ("env", "mode"),
    [
        ({}, "review"),
        ({"INPUT_MODE": ""}, "review"),
        ({"INPUT_MODE": "review"}, "review"),
        ({"INPUT_MODE": "shadow"}, "shadow"),
        ({"INPUT_MODE": "replay"}, "replay"),
        ({"INPUT_MODE": "  triage \n"}, "triage"),
    ],
)
def test_the_four_modes_are_read(env: dict[str, str], mode: str) -> None:
    assert _inputs(env).mode() == mode


@pytest.mark.parametrize(
    "value",
    [
        "Replay",
        "TRIAGE",
        "Shadow",
        "shadows",
        "reviews",
        "re view",
        "replay,triage",
        "0",
        "none",
        "review\x00",
    ],
)
def test_any_other_value_is_a_usage_error_naming_it(value: str) -> None:
    with pytest.raises(UsageError) as caught:
        _inputs({"INPUT_MODE": value}).mode()
    assert repr(value) in caught.value.message
    assert "review, shadow, replay or triage" in caught.value.message


def test_the_action_exits_with_a_usage_error_before_any_request() -> None:
    """The mode is read before the GitHub client is made: no request, exit code 2."""
    made: list[object] = []

    def factory(settings: object) -> object:
        made.append(settings)
        raise AssertionError("no client may be made for a bad mode")

    out = io.StringIO()
    env = {"INPUT_MODE": "replays", "GITHUB_EVENT_NAME": "pull_request"}
    code = run_action(env, out=out, client_factory=factory)  # type: ignore[arg-type]
    assert code == ExitCode.USAGE
    assert made == []
    assert "'replays' is not review, shadow, replay or triage" in out.getvalue()
