"""The action's inputs (``with:`` in the workflow, ``INPUT_*`` in the environment), typed.

The config overrides among them (``model``, ``min-confidence``, ...) are applied by
:func:`gate.config.inputs.apply_inputs`, which rejects an undeclared input by name; the rest
are read here, once: where the config is, the tokens, whether a blocking decision
fails the job, where the certificate goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gate.config.inputs import inputs_from_env
from gate.config.model import DEFAULT_CONFIG_PATH
from gate.errors import UsageError
from gate.providers import SECRET_ENVS

#: the values of the ``mode`` input
MODES = ("review", "shadow", "replay", "triage")


@dataclass(frozen=True)
class ActionInputs:
    """Every input by its kebab-case name (``raw``), and the runtime ones, read. The token,
    the API key and ``raw`` (which holds both) are kept out of ``repr``: a traceback or a
    debug line must not print them."""

    raw: Mapping[str, str] = field(repr=False)
    config_path: str
    token: str = field(repr=False)
    api_key: str = field(repr=False)
    certificate_dir: str
    pr_number: str
    status_context: str

    @staticmethod
    def from_env(env: Mapping[str, str]) -> ActionInputs:
        raw = inputs_from_env(env)
        return ActionInputs(
            raw=raw,
            config_path=raw.get("config") or DEFAULT_CONFIG_PATH,
            token=raw.get("token") or env.get("GITHUB_TOKEN", ""),
            api_key=raw.get("api-key", ""),
            certificate_dir=raw.get("certificate-dir", ""),
            pr_number=raw.get("pr-number", ""),
            status_context=raw.get("status-context") or "review-gate",
        )

    def mode(self) -> str:
        """The ``mode`` input: ``review`` (default), ``shadow`` (the review, posted as what
        it would do and never failing the job, :mod:`gate.action.shadow`), ``replay`` (the
        scheduled job, :mod:`gate.action.replay`) or ``triage``
        (:mod:`gate.action.triage`); anything else is a UsageError. Read here so a review
        loads neither of the last two."""
        value = self.raw.get("mode", "").strip() or "review"
        if value not in MODES:
            raise UsageError(f"input mode: {value!r} is not {', '.join(MODES[:-1])} or triage")
        return value

    def fail_job(self) -> bool:
        """The ``fail-job`` input (default true); anything but true/false is a UsageError."""
        return _flag(self.raw.get("fail-job", ""), True)

    def fresh(self) -> bool:
        """The ``fresh`` input (default false): a fresh review is asked for (the sender's
        permission is checked as for the override, :func:`gate.action.guards.memory`)."""
        value = self.raw.get("fresh", "")
        if value.strip().lower() not in ("", "true", "false", "yes", "no", "1", "0", "on", "off"):
            raise UsageError(f"input fresh: {value!r} is not true or false")
        return _flag(value, False)

    def secrets(self, env: Mapping[str, str]) -> list[str]:
        """Every token and key this run may hold, to mask before anything is printed."""
        found = (
            self.raw.get("token"),
            self.raw.get("api-key"),
            env.get("GITHUB_TOKEN"),
            *(env.get(name) for name in SECRET_ENVS),
        )
        return [s for s in found if s]


def _flag(value: str, default: bool) -> bool:
    text = value.strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    if not text:
        return default
    raise UsageError(f"input fail-job: {value!r} is not true or false")
