"""The typed configuration: the frozen records every stage reads, after the file and the
inputs are merged.

:class:`ReviewerConfig` is the reviewer part (``ReviewerSettings.from_config`` in
:mod:`gate.reviewers.settings` makes it transport settings; the dependency points one way).
:meth:`Config.to_json` spells the config as the file would (no secrets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from gate.errors import ConfigError
from gate.providers import AZURE_TOKEN_ENV, DEFAULT_KEY_ENV, Provider
from gate.safe.redact import first_key, remember

DEFAULT_CONFIG_PATH = ".github/review-gate.yml"
#: the values of ``context`` (what the reviewer is shown besides the diff)
CONTEXTS = ("diff", "files")


@dataclass(frozen=True)
class ReviewerConfig:
    """The reviewer section of the config."""

    provider: str = "openai"
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    max_tokens: int = 4096
    temperature: float = 0.0
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    deadline: float = 300.0
    max_response_bytes: int = 4 * 1024 * 1024
    attempts: int = 3
    # the clouds (issue 13): where the model lives and how the gate proves who it is
    deployment: str | None = None  # azure-openai: the deployment path (else the v1 path)
    api_version: str | None = None  # azure-openai: api-version with a deployment
    auth: str | None = None  # azure-openai: "api-key" (default) or "entra" (bearer token)
    region: str | None = None  # bedrock: AWS region (else AWS_REGION / AWS_DEFAULT_REGION)
    project: str | None = None  # vertex: Google Cloud project id
    location: str | None = None  # vertex: region, e.g. us-east5, or "global"
    # self-hosted servers (issue 33): ask the server to keep the answer in the contract's shape
    output_grammar: str = "none"  # "none", "gbnf" (llama.cpp) or "vllm"
    #: mc1 (issue 33): the reviewer service's Ed25519 public key, PEM text; when set, every
    #: answer must carry its signature (gate.decide.signature), else it is incomplete
    public_key: str | None = None
    #: the server's context (issue 33, gate/reviewers/window.py): "off", "auto", a server
    #: kind ("llama.cpp", "vllm", "ollama") whose endpoint tells it, or tokens
    context_window: str | int = "off"
    #: the context the server told this run (never read from a file, never in the
    #: config's digest: the question is the same, the size is the server's evidence)
    served_window: int | None = None

    def window(self) -> int | None:
        """The server's context in tokens, set or told; None: unknown."""
        if isinstance(self.context_window, int) and not isinstance(self.context_window, bool):
            return self.context_window
        return self.served_window

    def key_env(self) -> str:
        """The environment variable that holds the API key (explicit, or the provider's)."""
        if self.api_key_env:
            return self.api_key_env
        if self.provider == Provider.AZURE_OPENAI and self.auth == "entra":
            return AZURE_TOKEN_ENV
        return DEFAULT_KEY_ENV[self.provider]


@dataclass(frozen=True)
class ModelPrice:
    """A model's price in US dollars (:data:`gate.prices.CURRENCY`) per million input and
    output tokens."""

    model: str
    input: float
    output: float


@dataclass(frozen=True)
class Escalation:
    """Triage (``mode: triage``): after ``after_hours`` a waiting pull request's line
    mentions ``mention`` (``@user`` or ``@org/team``) in the tracking issue."""

    after_hours: float = 24.0
    mention: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """The whole configuration, after the file and the inputs are merged."""

    reviewer: ReviewerConfig = field(default_factory=ReviewerConfig)
    policy_version: str = "1"
    min_confidence: float = 0.8
    include: tuple[str, ...] = ("**",)
    exclude: tuple[str, ...] = ()
    #: what max_chunks chunks of max_chunk_bytes hold (issue 10: raised from 1,000,000)
    max_diff_bytes: int = 40 * 262_144
    allow_partial_coverage: bool = False
    #: images, fonts, audio, video known by name and first bytes (gate/assets.py): "allow"
    #: records them as not reviewable without blocking; "block" makes them partial coverage
    binary_assets: str = "allow"
    #: a change whose every file include/exclude leaves out: "pass" passes it with no
    #: reviewer call, "block" makes it needs_human (gate.review.scope.nothing_in_scope)
    nothing_in_scope: str = "pass"
    #: action inputs a pull request's own workflow may use to lower the bar below this
    #: config (gate/action/bar.py); none by default
    inputs_may_lower: tuple[str, ...] = ()
    status_context: str = "review-gate"
    instructions: str = ""
    override_label: str = "review-gate:override"
    skip_drafts: bool = True
    sticky_comment: bool = True
    review_comments: bool = False
    #: the findings also as SARIF 2.1.0 beside the certificate (gate.export.sarif)
    sarif: bool = False
    report: str = "status"  # status | check-run | both (gate.action.checks)
    #: price per million tokens by model name (gate.review.cost)
    pricing: tuple[ModelPrice, ...] = ()
    max_cost: float | None = None
    #: large pull requests are reviewed in chunks (gate/review/chunks.py, gate/review/chunked.py);
    #: None: the model's window from gate.review.chunks.CONTEXT_WINDOWS, else 100k tokens
    max_input_tokens: int | None = None
    max_chunk_bytes: int = 262_144
    #: 64, not 40: content-defined chunks are about 70% full (gate/review/chunks.py),
    #: so 64 of them hold max_diff_bytes
    max_chunks: int = 64
    concurrency: int = 4
    run_deadline: float = 3600.0
    agreement: int = 1
    #: incremental review (docs/decisions/0009-carrying.md): ``auto`` carries bound
    #: chunk passes for a diff reviewed in chunks and reviews a diff that fits one request
    #: whole; ``always`` reviews in chunks of ``max_chunk_bytes`` even then; ``off`` never
    #: carries (every chunk is sent)
    incremental: str = "auto"
    #: reviewers asked, in order, only when the one before could not answer for an
    #: ``unavailable`` reason (quota, rate limit, outage, timeout, cut) after its retries
    fallbacks: tuple[ReviewerConfig, ...] = ()
    #: triage: when a waiting pull request is escalated, and to whom
    escalation: Escalation = field(default_factory=Escalation)
    #: triage: a label the gate keeps on each pull request waiting for a human (None: none)
    needs_human_label: str | None = None
    #: what the reviewer is shown besides the diff (gate/review/context.py): ``diff`` (the
    #: diff alone) or ``files`` (also the new version of each changed file, whole or
    #: around its hunks, within ``context_bytes`` per request); coverage stays the diff
    context: str = "diff"
    context_bytes: int = 32_768

    def chain(self) -> tuple[Config, ...]:
        """This config, then one per fallback (its reviewer in place, no fallbacks of its
        own): every reviewer the review may ask, in order."""
        return (self, *(replace(self, reviewer=fb, fallbacks=()) for fb in self.fallbacks))

    def to_json(self) -> dict[str, Any]:
        """The config as the file would spell it (no secrets: keys are named, never held)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "pricing":
                out[f.name] = {p.model: {"input": p.input, "output": p.output} for p in value}
            elif f.name in ABSENT_AT_DEFAULT:
                if value != f.default and value != Escalation():  # absent at the default
                    out[f.name] = (
                        {"after_hours": value.after_hours, "mention": list(value.mention)}
                        if isinstance(value, Escalation)
                        else value
                    )
            elif f.name == "fallbacks":
                if value:  # absent when empty: a config without fallbacks keeps its digest
                    out[f.name] = [reviewer_json(fb) for fb in value]
            elif isinstance(value, ReviewerConfig):
                out[f.name] = reviewer_json(value)
            elif isinstance(value, tuple):
                out[f.name] = list(value)
            else:
                out[f.name] = value
        return out


#: keys :meth:`Config.to_json` leaves out at their default, so the digest of every config
#: written before they existed (and of every certificate naming it) stays the same
ABSENT_AT_DEFAULT = frozenset(
    {"escalation", "needs_human_label", "nothing_in_scope", "context", "context_bytes"}
)
#: the same for the keys of a reviewer (and of each fallback)
REVIEWER_ABSENT_AT_DEFAULT = frozenset({"public_key", "context_window"})
#: a reviewer's fields that are no setting (what a run learnt), never in the digest
REVIEWER_LEARNT = frozenset({"served_window"})


def reviewer_json(reviewer: ReviewerConfig) -> dict[str, Any]:
    """A reviewer as the file would spell it (keys of :data:`REVIEWER_ABSENT_AT_DEFAULT`
    only when set; never :data:`REVIEWER_LEARNT`)."""
    return {
        f.name: getattr(reviewer, f.name)
        for f in fields(reviewer)
        if f.name not in REVIEWER_LEARNT
        and (f.name not in REVIEWER_ABSENT_AT_DEFAULT or getattr(reviewer, f.name) != f.default)
    }


def remember_fallback_keys(config: Config, environ: Mapping[str, str]) -> None:
    """Register each fallback's key in ``environ`` as a secret of the run
    (:func:`gate.safe.redact.remember`), checked or not, missing ones skipped: what a
    front end calls before reading any file text, so ``context: files`` leaves out a
    changed file that holds one (it went to the first reviewer's provider whole)."""
    remember(*(environ.get(fallback.key_env()) for fallback in config.fallbacks))


def fallback_keys(config: Config, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Each fallback's key, from its own variable (``api_key_env``, else the provider's),
    checked (:func:`gate.safe.redact.first_key`); a fallback without one is a ConfigError
    naming the setting and the fix, before any reviewer is asked. Each is registered as a
    secret of the run first (:func:`remember_fallback_keys`)."""
    keys = []
    remember_fallback_keys(config, environ)
    for index, fallback in enumerate(config.fallbacks):
        env = fallback.key_env()
        key = first_key((environ.get(env), f"the environment variable {env}"))
        if not key:
            who = f"{fallback.provider} {fallback.model}".strip()
            raise ConfigError(
                f"fallbacks[{index}] ({who}) has no API key: the environment variable {env} "
                "is empty",
                key=f"fallbacks.{index}.api_key_env",
                fix=f"pass the secret to the step (env: {env}: ${{{{ secrets.{env} }}}}), "
                f"or name the variable that holds it in fallbacks[{index}].api_key_env",
                reason="config_fallback_key",
            )
        keys.append(key)
    return tuple(keys)


def default_config() -> Config:
    """The configuration used when the repository has no config file."""
    return Config()
