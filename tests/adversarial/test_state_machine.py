"""The GitHub-side state machine as a whole (issue 18): a model-based test.

A Hypothesis ``RuleBasedStateMachine`` plays a PR author (push, force-push back to an
earlier head, an empty commit, a rebase (a new commit with the same diff, not a
descendant, force-pushed: the old commits leave the pull request), reopen, draft/ready,
a retarget MAIN <-> STAGING (``edited`` with ``changes.base``), a second PR from the same
commit, a sibling PR into a weaker base, ``.apply/incomplete`` added and removed, spam
comments), writers (override, fresh label, comment command, deleting the gate's comment:
not a fresh start) and GitHub (5xx on the next comment or status writes; a status list
that lacks the newest one or two statuses, as a lagging read replica answers: GitHub
answers a status POST with 201 once it is stored, so a write that is "lost" after a 201
is not something GitHub does, but a read a moment later that does not list it yet is),
volume (dozens of rejected pushes, 100+ commits whose runs posted nothing, dozens of
reopens), the question ledger's writes (a writer first at every compare-and-swap, or
once; 5xx on every ledger write; issue 31) and a second workflow in ``mode: shadow``
whose reviewer says pass or fail whatever the truth (issue 32: it changes nothing a
required run reads, so nothing it writes becomes a pass or a standing block)
against the action's entry point and the fake GitHub (every request checked against
GitHub's OpenAPI description). Each head keeps its chain of commits, which the fake
serves as the pull request's commits, and a push names the head it replaced
(``before``).

The reviewer is scripted and adversarial: the first answer to a question is its truth
(variants ``bad`` fail under the strict policy of ``main``), every later answer passes,
so any re-roll shows. The invariant, after every step: the newest ``review-gate`` status
on a head is ``success`` only when, for every open pull request with that head, the
question under that pull request's base config has answers since the last writer's
fresh request that are all passes (no standing fail or unstable set precedes the pass),
unless a writer's override for exactly that head applies.

Each example starts a fresh fake GitHub. The seed is printed (``REVIEW_GATE_SM_SEED``
replays one); ``REVIEW_GATE_SM_EXAMPLES`` sets the number of examples (default 200).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from gate.action.run import run_action
from gate.decide.attempt import Attempt, EndReason, FinishReason, ReviewOutcome
from gate.decide.envelope import seal
from gate.review.prompt import binding_in
from gate.reviewers import transport
from tests.fakes.events import issue_comment_event, pull_request_edited_event, pull_request_event
from tests.fakes.github import MAX_STATUSES, FakeGitHub
from tests.verdicts import fenced_verdict

REPO = "octo-org/hello-world"
CONFIG_PATH = ".github/review-gate.yml"
MAIN, STAGING = "2" * 40, "4" * 40
#: every base names a fallback reviewer (anthropic), asked only after an outage of the
#: primary (openai); the runner's input attempts: 1 is the base's own (gate/action/bar.py)
FALLBACK = (
    "reviewer:\n  attempts: 1\nfallbacks:\n  - {provider: anthropic, model: backup-model, "
    "base_url: 'http://127.0.0.1:9', api_key_env: BACKUP_KEY, attempts: 1}\n"
)
CONFIGS = {
    MAIN: "policy_version: 'strict'\n" + FALLBACK,
    STAGING: "policy_version: 'lax'\n" + FALLBACK,
}
REFS = {MAIN: "main", STAGING: "staging"}
OVERRIDE, FRESH = "review-gate:override", "review-gate:fresh"
VARIANTS = ("good", "bad", "bad2")


def diff_for(variant: str) -> bytes:
    """The diff of a variant; ``bad#<n>``: the n-th of many rejected diffs (volume rules);
    ``end-<n>``: a diff the ends rule pushes, never asked before."""
    fixed = {"good": "return a + b", "bad": "return eval(a)", "bad2": "os.system(b)"}
    if variant.startswith("end-"):
        body = f"return {variant!r}"
    else:
        body = fixed.get(variant) or f"return eval(a) + {int(variant.removeprefix('bad#'))}"
    return (
        b"diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n"
        b"@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    " + body.encode() + b"\n"
    )


@dataclass
class Reviewer:
    """The scripted reviewer: the first answer of a question is its truth, later ones pass."""

    answers: dict[tuple[str, str], list[tuple[str, bool]]] = field(default_factory=dict)
    truth: dict[str, str] = field(default_factory=dict)  # diff_sha -> variant
    fresh: bool = False  # the next answers are a writer's fresh review
    #: diff_sha -> an end the diff makes the primary (openai) choose, on its next answer
    primary_ends: dict[str, str] = field(default_factory=dict)
    #: while a shadow run asks: its answer, whatever the truth (kept apart from ``answers``,
    #: which are the required gate's: a shadow's answer is nobody's memory)
    shadow: str | None = None
    shadow_answers: list[tuple[tuple[str, str], str]] = field(default_factory=list)

    def __call__(self, settings: Any, *, system: str, user: str, **_: Any) -> ReviewOutcome:
        binding = binding_in(user)
        assert binding is not None
        key = (binding.diff_sha, binding.policy_version)
        if self.shadow is not None:
            self.shadow_answers.append((key, self.shadow))
            return ReviewOutcome(attempts=(), envelope=seal(_fenced(self.shadow, *key)))
        log = self.answers.setdefault(key, [])
        primary = settings.provider == "openai"
        end = self.primary_ends.pop(binding.diff_sha, None) if primary else None
        if end is not None:
            log.append((end, self.fresh))  # an answer, and not a pass
            return ReviewOutcome(attempts=(diff_caused_end(end),), envelope=None)
        bad = self.truth.get(binding.diff_sha, "good") != "good"
        verdict = "fail" if (bad and binding.policy_version == "strict" and not log) else "pass"
        log.append((verdict, self.fresh))
        return ReviewOutcome(attempts=(), envelope=seal(_fenced(verdict, *key)))


def _fenced(verdict: str, diff_sha: str, policy_version: str) -> bytes:
    """A bound, confident answer of ``verdict``, fenced."""
    return fenced_verdict(
        diff_sha, policy_version, verdict=verdict, reasons=[f"scripted {verdict}"], confidence=0.95
    ).encode()


#: ends the diff can cause, as the primary's transport reports them: (reason, finish, status)
DIFF_ENDS: dict[str, tuple[str, FinishReason, int | None]] = {
    "content_filter": ("content_filter", FinishReason.REFUSAL, 200),
    "refusal": ("refusal", FinishReason.REFUSAL, 200),
    "tool_call": ("unexpected_finish", FinishReason.OTHER, 200),
    "max_tokens": ("token_exhaustion", FinishReason.LENGTH, 200),
    "context_length_400": ("context_overflow", FinishReason.NONE, 400),
    "other_400": ("http_400", FinishReason.NONE, 400),
}


def diff_caused_end(end: str) -> Attempt:
    reason, finish, status = DIFF_ENDS[end]
    return Attempt(
        number=1, provider="openai", complete=False, reason=reason, detail=f"scripted {end}",
        end_reason=EndReason.TRAILER if status == 200 else EndReason.HTTP_ERROR,
        finish_reason=finish, http_status=status,
    )  # fmt: skip


def _sha(*parts: object) -> str:
    return hashlib.sha1(repr(parts).encode(), usedforsecurity=False).hexdigest()


#: state the fake keeps between requests, cleared before each example (one server for all)
_FAKE_STATE = (
    "pulls", "diffs", "files", "refuse_diff", "refuse_compare", "contents", "compares",
    "truncated_trees", "modes", "merge_bases", "permissions", "statuses", "comments", "reviews",
    "reactions", "check_runs", "issues", "faults", "requests", "commits", "git",
)  # fmt: skip


def reset(fake: FakeGitHub) -> FakeGitHub:
    with fake.lock:
        for name in _FAKE_STATE:
            getattr(fake, name).clear()
        fake.token_app = fake.token_login = None
        fake.status_lag = fake.status_lag_reads = 0
    return fake


class Gate(RuleBasedStateMachine):
    #: the one fake GitHub of the test (set by the test function)
    server: FakeGitHub

    def __init__(self) -> None:
        super().__init__()
        self.fake = reset(self.server)
        self.tmp = Path(tempfile.mkdtemp(prefix="rg-sm-"))
        self.reviewer = Reviewer()
        self.heads: dict[str, str] = {}  # head sha -> diff variant
        self.chains: dict[str, tuple[str, ...]] = {}  # head sha -> its commits, oldest first
        self.history: list[str] = []  # heads of PR 7, in push order
        self.pulls: dict[int, str] = {}  # open pull number -> base sha
        self.overrides: dict[int, str] = {}  # pull -> the head a writer overrode
        self.pushes = 0
        self.volume = 0  # the rejected diffs of many_rejected_pushes
        self.fake.permissions["maintainer"] = "write"
        for base, text in CONFIGS.items():
            self.fake.set_file(base, CONFIG_PATH, text)

    def teardown(self) -> None:
        violations = self.fake.violations + self.fake.response_violations
        assert violations == [], violations

    # -- helpers ---------------------------------------------------------------------

    def _commit(self, variant: str, parent: str | None = None) -> str:
        """A new commit with ``variant``'s diff from the base, on top of ``parent`` (None:
        on the base itself: a first commit, or a rebase)."""
        self.pushes += 1
        head = _sha("head", self.pushes, variant)
        self.heads[head] = variant
        self.chains[head] = (*(self.chains[parent] if parent else ()), head)
        self.reviewer.truth[hashlib.sha256(diff_for(variant)).hexdigest()] = variant
        for base in CONFIGS:
            self.fake.add_compare(base, head, diff_for(variant))
        return head

    def _move(self, head: str) -> None:
        """PR 7's branch is pushed to ``head`` (its commits are ``head``'s chain), and the
        workflow runs on ``synchronize`` with the head it replaced as ``before``."""
        before = self.fake.pulls[7]["head"]["sha"]
        self.fake.move_head(7, head, commits=list(self.chains[head]))
        self._event(7, "synchronize", before=before)

    def _open(self, number: int, head: str, base: str, **kw: Any) -> None:
        self.fake.add_pull(
            number, head_sha=head, base_sha=base, diff=diff_for(self.heads[head]),
            base_ref=REFS[base], **kw,
        )  # fmt: skip
        self.pulls[number] = base

    def _run(
        self, payload: dict[str, Any], event: str = "pull_request", *, mode: str = "review"
    ) -> None:
        path = self.tmp / "event.json"
        path.write_text(json.dumps(payload))
        environ = {
            "GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(path),
            "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": self.fake.api_url,
            "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "1",
            "RUNNER_TEMP": str(self.tmp), "INPUT_TOKEN": self.fake.token,
            "INPUT_PROVIDER": "openai", "INPUT_MODEL": "sim-model",
            "INPUT_BASE-URL": "http://127.0.0.1:9/v1", "INPUT_API-KEY": "sk-scripted-0123456789",
            "INPUT_ATTEMPTS": "1", "BACKUP_KEY": "sk-backup-0123456789abcdef",
            "INPUT_MODE": mode,
        }  # fmt: skip
        run_action(environ, out=io.StringIO(), sleep=lambda _s: None, throttle=False)
        self.reviewer.fresh = False

    def _event(
        self,
        number: int,
        action: str,
        *,
        before: str = "",
        changes: Any = None,
        mode: str = "review",
        **kw: Any,
    ) -> None:
        pull = self.fake.pulls[number]
        head, base = pull["head"]["sha"], pull["base"]["sha"]
        if changes is not None:  # GitHub's examples hold no edited payload
            payload = pull_request_edited_event(
                repository=REPO, number=number, head_sha=head, base_sha=base, changes=changes,
                base_ref=pull["base"]["ref"],
            )  # fmt: skip
        else:
            payload = pull_request_event(
                action, repository=REPO, number=number, head_sha=head, base_sha=base, **kw
            )
        if before:
            payload["before"] = before
        self._run(payload, mode=mode)

    # -- the author ------------------------------------------------------------------

    @initialize(variant=st.sampled_from(VARIANTS))
    def open_pull(self, variant: str) -> None:
        head = self._commit(variant)
        self.history.append(head)
        self._open(7, head, MAIN)
        self._event(7, "opened")

    @rule(variant=st.sampled_from(VARIANTS))
    def push(self, variant: str) -> None:
        head = self._commit(variant, self.fake.pulls[7]["head"]["sha"])
        self.history.append(head)
        self._move(head)

    @rule(data=st.data())
    def force_push_back(self, data: st.DataObject) -> None:
        self._move(data.draw(st.sampled_from(self.history)))

    @rule()
    def empty_commit(self) -> None:
        current = self.fake.pulls[7]["head"]["sha"]
        head = self._commit(self.heads[current], current)
        self.history.append(head)
        self._move(head)

    @rule()
    def rebase(self) -> None:
        # a new commit, not a descendant of the old head, with the same diff, force-pushed:
        # the old commits leave the pull request (only the push's before names the old head)
        head = self._commit(self.heads[self.fake.pulls[7]["head"]["sha"]])
        self.history.append(head)
        self._move(head)

    @rule()
    def retarget(self) -> None:
        # the base branch changes MAIN <-> STAGING (an edited event with changes.base)
        old = self.pulls[7]
        new = STAGING if old == MAIN else MAIN
        self.fake.move_base(7, new, REFS[new])
        self.pulls[7] = new
        changes = {"base": {"ref": {"from": REFS[old]}, "sha": {"from": old}}}
        self._event(7, "edited", changes=changes)  # reviewed: the base changed

    @rule(action=st.sampled_from(["reopened", "labeled"]))
    def other_event(self, action: str) -> None:
        self._event(7, action, label="docs" if action == "labeled" else None)

    @rule()
    def draft_then_ready(self) -> None:
        pull = self.fake.pulls[7]
        labels = tuple(lb["name"] for lb in pull["labels"])
        base = self.pulls[7]
        self._open(7, pull["head"]["sha"], base, draft=True, labels=labels)
        self._event(7, "converted_to_draft", draft=True)
        self._open(7, pull["head"]["sha"], base, labels=labels)
        self._event(7, "ready_for_review")

    @rule(base=st.sampled_from([MAIN, STAGING]))
    def pull_from_the_same_commit(self, base: str) -> None:
        number = 8 if base == MAIN else 9
        self.fake.faults.clear()
        self._open(number, self.fake.pulls[7]["head"]["sha"], base)
        self._event(number, "opened")

    @rule()
    def apply_marker_in_and_out(self) -> None:
        head = self.fake.pulls[7]["head"]["sha"]
        self.fake.set_file(head, ".apply/incomplete", "x")
        self._event(7, "synchronize")
        with self.fake.lock:
            self.fake.contents[head].pop(".apply/incomplete", None)
        self._event(7, "synchronize")

    @rule(count=st.integers(1, 30))
    def spam(self, count: int) -> None:
        for i in range(count):
            self.fake.add_comment(7, f"spam {i}", login="mallory")

    # -- writers ---------------------------------------------------------------------

    @rule()
    def override(self) -> None:
        pull = self.fake.pulls[7]
        head = pull["head"]["sha"]
        if OVERRIDE not in [lb["name"] for lb in pull["labels"]]:
            pull["labels"].append({"id": 99, "name": OVERRIDE})
        self.overrides[7] = head
        self._event(7, "labeled", label=OVERRIDE, sender="maintainer")

    @rule()
    def remove_override(self) -> None:
        pull = self.fake.pulls[7]
        pull["labels"] = [lb for lb in pull["labels"] if lb["name"] != OVERRIDE]
        self.overrides.pop(7, None)
        # the workflows run on "unlabeled": removing the label decides the head again
        # without it (docs/security.md, rule 5)
        self._event(7, "unlabeled", label=OVERRIDE, sender="maintainer")

    @rule(by=st.sampled_from(["label", "command"]))
    def fresh_review(self, by: str) -> None:
        self.reviewer.fresh = True
        if by == "label":
            self._event(7, "labeled", label=FRESH, sender="maintainer")
        else:
            payload = issue_comment_event(
                repository=REPO, number=7, body="/review-gate review", login="maintainer"
            )
            self._run(payload, event="issue_comment")

    @rule()
    def delete_the_gates_comment(self) -> None:
        # a writer's power that forgets the PR's records; not a fresh start: the gate's own
        # tagged failures on the earlier heads still stand (gate/action/earlier.py)
        with self.fake.lock:
            self.fake.comments[7] = [
                c for c in self.fake.comments.get(7, []) if "review-gate:sticky" not in c["body"]
            ]

    # -- GitHub ----------------------------------------------------------------------

    @rule(status=st.sampled_from([500, 502, 503]), what=st.sampled_from(["comment", "status"]))
    def github_fault(self, status: int, what: str) -> None:
        pattern = r"^(POST|PATCH) .*comments" if what == "comment" else r"^POST .*/statuses/"
        self.fake.inject(pattern, status, count=6)
        self._event(7, "synchronize")
        self.fake.faults.clear()

    @rule(lag=st.integers(1, 2), reads=st.integers(1, 4))
    def lagging_status_list(self, lag: int, reads: int) -> None:
        # a read replica behind the primary: GitHub answered 201 to the newest statuses,
        # and the next list reads lack them (GitHub promises no read-after-write
        # consistency; two events in quick succession run concurrently)
        with self.fake.lock:
            self.fake.status_lag, self.fake.status_lag_reads = lag, reads
        self._event(7, "reopened")
        with self.fake.lock:
            self.fake.status_lag = self.fake.status_lag_reads = 0

    # -- ends the diff can cause (issue 31, gate/decide/ends.py) -------------------------

    @rule(end=st.sampled_from(sorted(DIFF_ENDS)))
    def diff_caused_end_on_the_primary(self, end: str) -> None:
        # a push of a diff never asked before, whose words make the primary end its answer
        # without a verdict (a content filter, a refusal, a tool call, max_tokens, a 400 for
        # the context length); the fallback would pass it: it must not be asked, and the
        # end must stand for every later run of the same question
        variant = f"end-{self.pushes}"
        self.reviewer.primary_ends[hashlib.sha256(diff_for(variant)).hexdigest()] = end
        head = self._commit(variant, self.fake.pulls[7]["head"]["sha"])
        self.history.append(head)
        self._move(head)

    # -- volume and the question ledger (issue 31): what stands is found by its key ---

    @rule(count=st.integers(8, 24))
    def many_rejected_pushes(self, count: int) -> None:
        # dozens of rejected pushes, each a new diff: the comment's history fills up and
        # stops taking records; the ledger takes one entry per question whatever the count
        for _ in range(count):
            self.volume += 1
            head = self._commit(f"bad#{self.volume}", self.fake.pulls[7]["head"]["sha"])
            self.history.append(head)
            self._move(head)

    @rule(count=st.integers(100, 130), variant=st.sampled_from(VARIANTS))
    def bury_under_commits(self, count: int, variant: str) -> None:
        # 100+ commits whose runs were cancelled (nothing posted), then one that is run:
        # the gate's own failures sink below the earlier heads it would read
        for _ in range(count):
            parent = self.fake.pulls[7]["head"]["sha"]
            head = self._commit(self.heads[parent], parent)
            self.fake.move_head(7, head, commits=list(self.chains[head]))
        head = self._commit(variant, self.fake.pulls[7]["head"]["sha"])
        self.history.append(head)
        self._move(head)

    @rule(count=st.integers(5, 40))
    def many_reopens(self, count: int) -> None:
        for _ in range(count):
            self._event(7, "reopened")

    @rule(
        fault=st.sampled_from(["conflict", "conflict_once", 500, 502, 503]),
        variant=st.sampled_from(VARIANTS),
    )
    def ledger_write_fault(self, fault: str | int, variant: str) -> None:
        # every write of the ledger meets a writer first (the compare-and-swap loses each
        # try, or once) or answers 5xx; a push is decided meanwhile
        with self.fake.lock:
            if isinstance(fault, int):
                self.fake.inject(r"^(POST|PATCH) .*/git/", fault, count=60)
            else:
                self.fake.git.races = 100 if fault == "conflict" else 1
        self.push(variant)
        with self.fake.lock:
            self.fake.faults.clear()
            self.fake.git.races = 0

    # -- issue 31: writes bounded by decisions, the status cap, one head into many bases --

    def _in_context(self, head: str) -> list[dict[str, Any]]:
        return [s for s in self.fake.status_list(head) if s["context"] == "review-gate"]

    @rule(count=st.integers(100, 300))
    def hundreds_of_reopens(self, count: int) -> None:
        # an author reopens PR 7 again and again: a reopen that decides what the head
        # already shows writes nothing, so the storm ends once the head is stable (two
        # reopens in a row that wrote no status); a gate that writes per event would go on
        # writing until GitHub's cap
        head, quiet = self.fake.pulls[7]["head"]["sha"], 0
        for _ in range(count):
            before = len(self._in_context(head))
            self._event(7, "reopened")
            quiet = quiet + 1 if len(self._in_context(head)) == before else 0
            if quiet == 2:
                break

    @rule(left=st.integers(1, 30))
    def status_cap(self, left: int) -> None:
        # GitHub keeps 1,000 statuses per commit and context (the fake answers 422 past it):
        # an older gate, or another writer, filled PR 7's head's context to ``left`` short
        # of the cap, repeating what the head shows; then the head is decided again
        head = self.fake.pulls[7]["head"]["sha"]
        shown = self._in_context(head)
        if not shown:
            return
        newest = shown[-1]
        words = re.sub(r" \[rg:[^\]]*\]\Z", "", newest["description"] or "")
        for _ in range(MAX_STATUSES - left - len(shown)):
            self.fake.add_status(head, state=newest["state"], description=words)
        self._event(7, "reopened")

    @rule(bases=st.lists(st.sampled_from([MAIN, STAGING]), min_size=2, max_size=5))
    def many_pulls_on_one_head(self, bases: list[str]) -> None:
        # one head, many pull requests into different bases, each opened in turn: a success
        # on the commit satisfies each of them, so each must have earned it under its base
        head = self.fake.pulls[7]["head"]["sha"]
        self.fake.faults.clear()
        for i, base in enumerate(bases):
            number = 20 + i
            if number in self.pulls:
                continue
            self._open(number, head, base)
            self._event(number, "opened")

    # -- issue 32: a shadow workflow beside the required one -------------------------

    def _what_required_runs_read(self) -> Any:
        """Everything a required run reads of the gate's own: the required context's
        statuses and check runs on every head, the question ledger, the comments, the
        pull request reviews."""
        with self.fake.lock:
            statuses = {
                head: [
                    dict(s)
                    for s in self.fake.statuses.get(head, [])
                    if s["context"] == "review-gate"
                ]
                for head in self.heads
            }
            checks = [dict(c) for c in self.fake.check_runs.values() if c["name"] == "review-gate"]
            comments = {n: [c["body"] for c in cs] for n, cs in self.fake.comments.items()}
            reviews = {n: len(rs) for n, rs in self.fake.reviews.items()}
            return statuses, checks, dict(self.fake.git.refs), comments, reviews

    @rule(
        answer=st.sampled_from(["pass", "fail"]),
        action=st.sampled_from(["synchronize", "reopened", "labeled"]),
        number=st.sampled_from([7, 8, 20]),
    )
    def shadow_run(self, answer: str, action: str, number: int) -> None:
        # the team's shadow workflow runs on the same events; its reviewer passes a bad
        # diff or fails a good one. It writes only under its own context and kinds, so
        # every required run after it reads what it read before, and asks for itself
        if number not in self.pulls or self.fake.pulls[number]["state"] != "open":
            number = 7
        before = self._what_required_runs_read()
        self.reviewer.shadow = answer
        try:
            label = {"label": "docs"} if action == "labeled" else {}
            self._event(number, action, mode="shadow", **label)
        finally:
            self.reviewer.shadow = None
        assert self._what_required_runs_read() == before

    # -- the promise -----------------------------------------------------------------

    @invariant()
    def success_only_for_a_clean_pass_or_an_override(self) -> None:
        for head in self.heads:
            statuses = [s for s in self.fake.status_list(head) if s["context"] == "review-gate"]
            if not statuses or statuses[-1]["state"] != "success":
                continue
            for number, base in self.pulls.items():
                pull = self.fake.pulls[number]
                if pull["head"]["sha"] != head or pull["state"] != "open":
                    continue
                labels = [lb["name"] for lb in pull["labels"]]
                if self.overrides.get(number) == head and OVERRIDE in labels:
                    continue
                diff_sha = hashlib.sha256(diff_for(self.heads[head])).hexdigest()
                policy = "strict" if base == MAIN else "lax"
                log = self.reviewer.answers.get((diff_sha, policy), [])
                fresh = [i for i, (_v, f) in enumerate(log) if f]
                since = log[fresh[-1] :] if fresh else log
                assert since, f"success on {head[:7]} for #{number}: the question was never asked"
                assert all(v == "pass" for v, _f in since), (
                    f"success on {head[:7]} for #{number} after answers {log}"
                )


@pytest.mark.timeout(1200)  # 200 examples of up to 6 action runs each, on a shared runner
def test_the_state_machine_never_turns_a_rejected_diff_into_success(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chosen = int(os.environ.get("REVIEW_GATE_SM_SEED") or random.randrange(2**32))
    examples = int(os.environ.get("REVIEW_GATE_SM_EXAMPLES") or 200)
    print(f"state machine seed: {chosen} (REVIEW_GATE_SM_SEED={chosen} replays it)")
    reviewer_stub: list[Reviewer] = []

    with FakeGitHub(REPO) as server:

        class Scripted(Gate):
            def __init__(self) -> None:
                Gate.server = server
                super().__init__()
                reviewer_stub[:] = [self.reviewer]

        monkeypatch.setattr(transport, "review", lambda *a, **kw: reviewer_stub[0](*a, **kw))
        run_state_machine_as_test(
            seed(chosen)(Scripted),
            settings=settings(
                max_examples=examples,
                stateful_step_count=5,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
                print_blob=True,
            ),
        )
