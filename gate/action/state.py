"""What one action run has learned so far, typed.

:class:`RunState` is filled in as the run walks forward (event, pull request, config,
coverage, review); :class:`Evidence` is what the certificate's ``context`` records
about the run, one typed field per key (``to_json`` spells the keys).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from gate.action.event import Target
from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.action.github.records import PullInfo
from gate.action.inputs import ActionInputs
from gate.action.shown import Shown
from gate.config.model import Config
from gate.decide.decision import Decision
from gate.diff import Coverage

if TYPE_CHECKING:  # the review pipeline's types: a run holds them only after its first call
    from gate.memory.ledger import Entry
    from gate.memory.question import QuestionKey
    from gate.memory.record import Record
    from gate.review.carry import Book
    from gate.review.context import HeadFiles
    from gate.review.cost import Preflight
    from gate.review.result import ReviewResult


@dataclass(frozen=True)
class StatusRecord:
    """A commit status: what was (or is about to be) posted, on which commit."""

    status: str
    description: str
    sha: str

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "description": self.description, "sha": self.sha}


@dataclass(frozen=True)
class Override:
    """A human override that was honoured: who, with which permission, on which head."""

    login: str
    permission: str
    label: str
    head_sha: str


@dataclass
class Evidence:
    """The run's part of the certificate's ``context`` (absent fields are left out)."""

    github: dict[str, Any] | None = None
    config: dict[str, str] | None = None
    coverage: Coverage | None = None
    override: Override | None = None
    #: the decision the review reached, when another one is posted (coverage, base moved)
    review_decision: Decision | None = None
    base_moved_to: tuple[str, str] | None = None  # (ref, sha)
    superseded_by: str | None = None
    #: what is about to be posted; ``posted`` and ``final_state`` are set only once GitHub
    #: has accepted the status, so a failed post never reports this state
    status_to_post: StatusRecord | None = None
    posted: StatusRecord | None = None
    final_state: str | None = None
    #: a ``mode: shadow`` run's post: its context, what it would have done, the question
    #: (gate.action.shadow.evidence); None for every other run
    shadow: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.github is not None:
            out["github"] = self.github
        if self.config is not None:
            out["config"] = self.config
        if self.coverage is not None:
            out["coverage"] = self.coverage.to_json()
        if self.override is not None:
            o = self.override
            out["override"] = {
                "login": o.login,
                "permission": o.permission,
                "label": o.label,
                "head_sha": o.head_sha,
            }
        if self.review_decision is not None:
            out["review_decision"] = self.review_decision.to_json()
        if self.base_moved_to is not None:
            out["base_moved_to"] = {"ref": self.base_moved_to[0], "sha": self.base_moved_to[1]}
        if self.superseded_by is not None:
            out["superseded_by"] = self.superseded_by
        for name in ("status_to_post", "posted"):
            record = getattr(self, name)
            if record is not None:
                out[name] = record.to_json()
        if self.final_state is not None:
            out["final_state"] = self.final_state
        if self.shadow is not None:
            out["shadow"] = dict(self.shadow)
        return out


@dataclass(frozen=True)
class Artifacts:
    """Where the certificate went (None when it could not be written) and the digests."""

    certificate_path: str | None
    digests: Mapping[str, str]
    #: the files written beside the certificate, by output name (statement, predicate, sarif)
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass
class RunState:
    """What this run has learned so far (filled in as the run walks forward). The
    environment and the registered secrets are kept out of ``repr``."""

    env: Mapping[str, str] = field(repr=False)
    inputs: ActionInputs
    out: TextIO
    secrets: list[str] = field(repr=False)
    context: str = "review-gate"
    #: ``mode: shadow`` (gate.action.shadow): posts what it would do, never a decision
    shadow: bool = False
    settings: GitHubSettings | None = None
    gh: GitHubClient | None = None
    target: Target | None = None
    pull: PullInfo | None = None
    head: str = ""
    base: str = ""
    config: Config | None = None
    config_sha: str = ""
    result: ReviewResult | None = None
    #: the exact diff bytes sent to the reviewer (findings are placed on its right side)
    reviewed_diff: bytes = b""
    #: the comment command that asked for this review (who, with which permission)
    command: dict[str, Any] | None = None
    #: the check run of this run (report: check-run or both), once created
    check_run_id: int | None = None
    #: what the head shows for the context on each channel (gate.action.shown), read once
    shown: Shown | None = None
    #: the opening pending was not posted: the head showed a decision of the gate's
    pending_deferred: bool = False
    notes: list[str] = field(default_factory=list)
    evidence: Evidence = field(default_factory=Evidence)
    #: None until the certificate was written (or its writing failed) for the final decision
    artifacts: Artifacts | None = None
    #: the PR's earlier records (the sticky comment's history block), and this run's key
    history: list[Record] = field(default_factory=list)
    #: whether the history was read (gate.action.history.load), and why it was not trusted
    history_loaded: bool = False
    history_problem: str | None = None
    #: whether the gate's own evidence on the PR's earlier heads was read this run
    #: (gate.action.earlier.recover: at most once)
    earlier_read: bool = False
    #: whether there is a question ledger at its ref (gate.action.ledger; None: not read),
    #: and the entry of this run's question the memory guard found there (when it looked)
    ledger_present: bool | None = None
    ledger_consulted: bool = False
    ledger_entry: Entry | None = None
    #: the record of this run's decision, as the ledger got it: the comment keeps the same
    decided_record: Record | None = None
    #: the body of the gate's own sticky comment as read (None: there is none)
    own_comment: str | None = None
    fresh: bool = False
    #: the chunk answers the gate's own comment carries from the last run (incremental
    #: review, :mod:`gate.action.carry`); None when fresh or unread
    carry: Book | None = None
    prompt_sha: str = ""
    #: the question this run asks (gate/memory/question.py), once the diff is selected
    question: QuestionKey | None = None
    #: monotonic seconds (the pending status's progress updates are spaced by it)
    clock: Callable[[], float] = time.monotonic
    #: the cost estimate made before any request (the bound and the likely figure)
    estimate: Preflight | None = None
    #: ``context: files``: the changed files' text at the head (gate.action.headfiles)
    head_files: HeadFiles | None = None

    @property
    def run_url(self) -> str | None:
        if self.settings is None:
            return None
        return self.settings.run_url(self.env.get("GITHUB_RUN_ID", ""))

    @property
    def subject(self) -> str:
        if self.target is not None and self.target.is_merge_group:
            return f"merge group {self.head[:12]}"
        if self.pull is not None:
            return f"pull request #{self.pull.number}"
        if self.target is not None and self.target.pr_number is not None:
            return f"pull request #{self.target.pr_number}"
        return "this run"
