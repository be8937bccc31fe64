"""A pull request cannot lower its own bar, inputs included.

The config is read from the pull request's BASE commit, so a pull request cannot edit
it. But on ``pull_request`` (and ``merge_group``) GitHub runs the workflow file as the
pull request (or the queued merge) has it, so every ``with:`` input is the author's to
write. An input that would lower the bar below the base config is refused there, naming
the input, unless the base config lists it under ``inputs_may_lower``. On
``pull_request_target``, ``issue_comment`` and ``workflow_dispatch`` the workflow is the
default branch's and its inputs are the maintainers'.

Every input is classified (:data:`LOWERS`, :data:`NEVER_LOWERS`, :data:`RUNTIME`); a test
fails when an input is added to ``action.yml`` without being placed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gate.config.inputs import INPUT_KEYS
from gate.config.model import DEFAULT_CONFIG_PATH, Config, default_config
from gate.errors import ConfigError

#: events whose workflow file (and so its inputs) comes from the pull request itself
UNTRUSTED_WORKFLOW_EVENTS = frozenset({"pull_request", "merge_group"})

Rule = Callable[[Any, Any, Any], bool]  # (base value, value with inputs, default) -> lowers


def _lower(base: Any, new: Any, _default: Any) -> bool:
    return bool(new < base)


def _turned_on(base: Any, new: Any, _default: Any) -> bool:
    return bool(new) and not base


def _raised_limit(base: Any, new: Any, _default: Any) -> bool:
    # no limit in the base: any limit only tightens it; a limit: raising or removing it
    return base is not None and (new is None or new > base)


def _changed(base: Any, new: Any, _default: Any) -> bool:
    return bool(new != base)


def _repinned(base: Any, new: Any, default: Any) -> bool:
    """The reviewer: when the base config names it, the workflow may not name another;
    what the base leaves at the default the workflow fills in (the quick start does)."""
    return bool(base != default and new != base)


#: inputs that can lower the bar, how, and the words for it
LOWERS: dict[str, tuple[Rule, str]] = {
    "min-confidence": (_lower, "lowered"),
    "allow-partial-coverage": (_turned_on, "turned on"),
    "max-cost": (_raised_limit, "raised"),
    "agreement": (_lower, "lowered"),
    "policy-version": (_changed, "changed"),
    "override-label": (_changed, "changed (another label would override the review)"),
    "temperature": (_changed, "changed"),
    # with fallbacks only (ONLY_WITH_FALLBACKS): a reviewer that times out or gives up
    # sooner hands the review to the next one, so the workflow would pick who judges
    "timeout": (_lower, "shortened (the reviewer would time out and a fallback judge instead)"),
    "attempts": (_lower, "lowered (the reviewer would give up sooner and a fallback judge)"),
    **{
        name: (_repinned, "changed from the reviewer the base config names")
        for name in (
            "provider", "model", "base-url", "api-key-env", "deployment", "api-version",
            "auth", "region", "project", "location", "public-key",
        )
    },
}  # fmt: skip

#: inputs of LOWERS that lower the bar only when the base config names ``fallbacks``:
#: without one, a reviewer that times out or gives up early only blocks
ONLY_WITH_FALLBACKS = frozenset({"timeout", "attempts"})

#: inputs that cannot lower the bar, and why
NEVER_LOWERS: dict[str, str] = {
    "max-tokens": "a smaller answer limit can only cut an answer, which blocks (an end the "
    "model chose: it stands and no fallback is asked, gate.decide.ends)",
    "status-context": "a status on another context leaves the required one pending",
    "max-diff-bytes": "raising it reviews more; lowering it leaves files out, which blocks",
    "skip-drafts": "a skipped draft gets pending, never success",
    "comment": "what is reported, not what is decided",
    "review-comments": "what is reported, not what is decided",
    "report": "a check run is success only for a success status",
    "sarif": "what is reported, not what is decided",
}

#: inputs that are not config: where each is read, and why it cannot lower the bar
RUNTIME: dict[str, str] = {
    "config": "which base file is the bar: refused unless the default one allows it",
    "token": "who writes the status, not what it says",
    "api-key": "the key for the reviewer the config names",
    "fail-job": "the job's exit; the status is posted either way",
    "certificate-dir": "where the evidence is written",
    "pr-number": "read on workflow_dispatch only",
    "fresh": "a fresh review is checked against the sender's permission",
    "mode": "replay and triage post no status on the pull request, and shadow posts only "
    "under <status-context>/shadow: the required context stays pending (a green job is "
    "no pass, as with fail-job)",
    "since": "replay only",
    "max-replays": "replay only",
    "identity": "names the token's account only where it cannot be learned (a replay or "
    "triage run posts nothing first); a review run learns it from its own first status or "
    "check run, which wins",
}


def _value(config: Config, path: tuple[str, ...]) -> Any:
    value: Any = config
    for key in path:
        value = getattr(value, key)
    return value


def lowered(base: Config, merged: Config, given: Mapping[str, str]) -> list[str]:
    """The inputs in ``given`` (non-empty) that ``merged`` lowers below ``base``, as
    ``name (how)``, except those ``base.inputs_may_lower`` allows."""
    default = default_config()
    found = []
    for name, raw in sorted(given.items()):
        if not raw.strip() or name not in LOWERS or name in base.inputs_may_lower:
            continue
        if name in ONLY_WITH_FALLBACKS and not base.fallbacks:
            continue
        rule, how = LOWERS[name]
        path = INPUT_KEYS[name]
        if rule(_value(base, path), _value(merged, path), _value(default, path)):
            found.append(f"{name} ({how})")
    return found


def check(event: str, base: Config, merged: Config, given: Mapping[str, str]) -> None:
    """Raise a ConfigError naming every input that lowers the bar on ``event``."""
    if event not in UNTRUSTED_WORKFLOW_EVENTS:
        return
    names = lowered(base, merged, given)
    if names:
        raise _refused(event, names)


def check_config_path(event: str, path: str, gatekeeper: Config) -> None:
    """Raise when the ``config`` input points the gate at another base file on ``event``,
    unless ``gatekeeper`` (the base config at the default path) lists ``config`` under
    ``inputs_may_lower``: the file the input picks cannot vouch for itself."""
    allowed = "config" in gatekeeper.inputs_may_lower
    if event in UNTRUSTED_WORKFLOW_EVENTS and path != DEFAULT_CONFIG_PATH and not allowed:
        raise _refused(event, [f"config (another file than {DEFAULT_CONFIG_PATH})"])


def _refused(event: str, names: list[str]) -> ConfigError:
    return ConfigError(
        f"input {', '.join(names)} would lower the bar below the base config, and on {event} "
        "the workflow file, so every input, comes from the pull request",
        key="inputs_may_lower",
        fix="set the value in the base branch's config instead of the workflow, run the "
        "gate on pull_request_target (examples/review-gate-forks.yml), or let a maintainer "
        "list the input under inputs_may_lower in the base config",
        reason="config_input_lowers_bar",
    )


def allowable() -> list[str]:
    """What ``inputs_may_lower`` may list: every input that can lower the bar."""
    return sorted({*LOWERS, "config"})
