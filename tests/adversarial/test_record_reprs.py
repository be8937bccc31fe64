"""A record's ``repr`` is a sink: a traceback, a debug line or an f-string prints it.

Class: a record that holds a secret (the token, an API key, the environment, the raw
action inputs) shows it in its ``repr``. Records are the standard library's dataclasses,
so a field is kept out only by ``repr=False`` (or the class's own
``__repr__``). Two checks:

* every record of the gate (``lab/`` aside) whose field is named as a credential, or
  holds the environment, the raw inputs or the registered secrets, keeps it out;
* the action's own records built from generated environments (secrets of every kind,
  in the token input, ``GITHUB_TOKEN``, ``api-key`` and the providers' key variables)
  never show one of those secrets in ``repr`` or ``str``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import io
import pkgutil
import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import gate
from gate.action.github.http import GitHubSettings
from gate.action.inputs import ActionInputs
from gate.action.state import RunState
from gate.providers import SECRET_ENVS

#: a field that holds a credential, or many secrets at once
SECRET_FIELD = re.compile(r"(^|_)(token|api_key|secret_key|secret|password|authorization)$")
HOLDERS = {"env", "raw", "secrets", "environ"}  # with text values: a map or list of str


def _records() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(gate.__path__, "gate."):
        if ".lab" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and value.__module__ == info.name
            ):
                found.append(value)
    return found


def test_every_record_keeps_its_secrets_out_of_repr() -> None:
    shown = []
    for record in _records():
        # the class's own __repr__ (written in its module, not generated) decides itself
        code = inspect.unwrap(record.__repr__).__code__  # type: ignore[misc]
        own_repr = code.co_filename == sys.modules[record.__module__].__file__
        for f in dataclasses.fields(record):
            holder = f.name in HOLDERS and "str" in str(f.type) and "bytes" not in str(f.type)
            secret = SECRET_FIELD.search(f.name) or holder
            if secret and f.repr and not own_repr:
                shown.append(f"{record.__module__}.{record.__qualname__}.{f.name}")
    assert len(_records()) > 80  # the scan saw the gate's records
    assert shown == [], f"these fields print their secret in repr: {shown}"


REPOSITORY = "octo-org/hello-world"
#: a secret is no public text the records hold on purpose (the tool's name, the repository)
SECRET = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=16, max_size=40
).filter(lambda s: "review-gate" not in s and s not in REPOSITORY)


@settings(max_examples=150, deadline=None)
@given(
    token=SECRET,
    github_token=SECRET,
    api_key=SECRET,
    provider_keys=st.dictionaries(st.sampled_from(sorted(SECRET_ENVS)), SECRET, max_size=3),
    in_input=st.booleans(),
)
def test_the_action_records_never_show_a_secret(
    token: str, github_token: str, api_key: str, provider_keys: dict[str, str], in_input: bool
) -> None:
    env = {
        "GITHUB_TOKEN": github_token,
        "INPUT_API-KEY": api_key,
        "GITHUB_REPOSITORY": REPOSITORY,
        **provider_keys,
    }
    if in_input:
        env["INPUT_TOKEN"] = token
    inputs = ActionInputs.from_env(env)
    secrets = [token, github_token, api_key, *provider_keys.values()]
    run = RunState(env=env, inputs=inputs, out=io.StringIO(), secrets=secrets)
    run.settings = GitHubSettings.from_env(env, token=inputs.token)
    for shown in (repr(inputs), str(inputs), repr(run), str(run), repr(run.settings)):
        for secret in secrets:
            assert secret not in shown
