"""The action's guards: each a small function returning a :class:`Decision` or None.

:mod:`gate.action.run` takes them in order (docs/decisions/0022-guards.md): draft, then a pending
status, override, apply marker, credentials, then the diff, superseded (head or base
moved while it was fetched), coverage (:func:`gate.review.scope.before_any_request`, the
command line's too), memory (an earlier decision of the same question), and only then
the review. The first guard that returns a decision ends the run with it; None lets the
run go on. Only the override can return a pass for a writer's label on this exact head,
memory only by repeating a success the gate's own identity posted on this head for the
same question, and coverage only for a change with nothing in scope and no gap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from gate import FILES_URL
from gate.action import carry, earlier, ledger
from gate.action.earlier import Seen
from gate.action.github.client import GitHubClient
from gate.action.github.pull import OVERRIDE_PERMISSIONS
from gate.action.github.records import PullInfo
from gate.action.state import Override, RunState
from gate.config.model import Config
from gate.decide.decision import MAX_DESCRIPTION, Decision, State, Status, blocked, describe
from gate.diff import Coverage, SelectedDiff
from gate.errors import ConfigError, GateError
from gate.memory import Question, decisive, question, recall, status_confirms_pass
from gate.memory.question import QuestionKey
from gate.review.carry import Book, CarryError
from gate.review.scope import before_any_request
from gate.reviewers.settings import ReviewerSettings, needs_api_key

APPLY_MARKER = ".apply/incomplete"
#: the label a writer applies to ask for a fresh review (the memory is not consulted)
FRESH_LABEL = "review-gate:fresh"


def draft(pull: PullInfo | None, config: Config) -> Decision | None:
    """A draft pull request is skipped (the caller posts it as pending, never success)."""
    if pull is None or not pull.draft or not config.skip_drafts:
        return None
    return replace(
        blocked(
            State.NEEDS_HUMAN,
            "draft",
            "draft pull request: the review is skipped until it is marked ready for review",
        ),
        description="draft: review skipped until the pull request is ready for review",
    )


def override(run: RunState, config: Config) -> Decision | None:
    """A human override: the override label just applied, by a writer, on this exact head."""
    target, pull, gh = run.target, run.pull, run.gh
    if target is None or pull is None or gh is None:
        return None
    if target.action != "labeled" or target.label != config.override_label:
        return _override_kept(run, config, gh)
    labelled_head = target.pull.head_sha if target.pull else ""
    if labelled_head != run.head:
        run.notes.append(
            f"override label was applied on {labelled_head[:12]}, but the head is now "
            f"{run.head[:12]}: a new push needs a new override"
        )
        return None
    if config.override_label not in pull.labels:
        run.notes.append(
            f"the override label {config.override_label!r} is no longer on the pull request"
        )
        return None
    login = target.sender
    permission = gh.permission(login) if login else "none"
    if permission not in OVERRIDE_PERMISSIONS:
        run.notes.append(
            f"override label applied by @{login} (permission {permission}) was ignored: "
            "only users with write, maintain or admin permission can override"
        )
        return None
    unmet = _override_siblings(run, config, gh)
    if unmet is not None:
        return unmet
    run.evidence.override = Override(login, permission, config.override_label, run.head)
    detail = (
        f"overridden by @{login} ({permission}) with the label {config.override_label!r} "
        f"on {run.head[:12]}; no model review was used for this status"
    )
    return Decision(
        state=State.PASS,
        status=Status.SUCCESS,
        reason="override",
        description=f"overridden by @{login}"[:MAX_DESCRIPTION],
        detail=detail,
    )


def _override_siblings(run: RunState, config: Config, gh: GitHubClient) -> Decision | None:
    """An override's ``success`` lands on the commit, so it would satisfy every open pull
    request whose head that commit is; it holds only when the writer's label is on each of
    them (the state machine found a pull request into another base passed by a label put on
    its sibling)."""
    pull = run.pull
    if pull is None:
        return None
    unlabelled = [
        other
        for other in gh.pulls_for_commit(run.head)
        if other.number != pull.number and config.override_label not in other.labels
    ]
    if not unlabelled:
        return None
    named = ", ".join(f"#{p.number} into {p.base_ref}" for p in unlabelled[:5])
    return blocked(
        State.NEEDS_HUMAN,
        "sibling_pull",
        f"the override covers this pull request only, but this commit is also the head of "
        f"{named}; a success here would satisfy its required check too. A writer can put "
        f"the label {config.override_label!r} on it as well, or close it",
    )


def _override_kept(run: RunState, config: Config, gh: GitHubClient) -> Decision | None:
    """A writer's override stays in force for its head across non-push events (a reopen,
    another label, a re-run): the gate's record of an override on this exact head, the
    override label still on the pull request, and the gate's own newest final status on
    the head still ``success``. A push (a new head) needs a new override."""
    pull = run.pull
    if pull is None or config.override_label not in pull.labels:
        return None
    found = next(
        (r for r in reversed(run.history) if r.source == "override" and r.head_sha == run.head),
        None,
    )
    if found is None:
        return None
    if not all(status_confirms_pass([s for s, _, _ in seen]) for seen in evidence(run, gh)):
        return None
    unmet = _override_siblings(run, config, gh)
    if unmet is not None:
        return unmet
    run.evidence.override = Override("(recorded)", "write", config.override_label, run.head)
    return Decision(
        state=State.PASS,
        status=Status.SUCCESS,
        reason="override",
        description=describe("overridden", f"the override of {found.time} on this head stands"),
        detail=(
            f"the override recorded at {found.time} on {run.head[:12]} stays in force for this "
            "head (the label is still on the pull request and the gate's success stands); "
            "no model review was used for this status"
        ),
    )


def apply_marker(gh: GitHubClient, head: str) -> Decision | None:
    """Block while an ``.apply/incomplete`` exists at any depth of the head tree, or when
    GitHub's listing of that tree was truncated (absence cannot be known)."""
    listing = gh.tree_paths(head)
    found = [p for p in listing.paths if p == APPLY_MARKER or p.endswith("/" + APPLY_MARKER)]
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return blocked(
            State.NEEDS_HUMAN,
            "apply_incomplete",
            f"{found[0]} exists in the head tree{more}: an agent write was not applied "
            "whole; finish or revert it and delete the marker",
        )
    if listing.truncated:
        return blocked(
            State.NEEDS_HUMAN,
            "tree_truncated",
            f"GitHub truncated the listing of the head tree ({len(listing.paths)} paths), so "
            f"the absence of {APPLY_MARKER} cannot be checked; review by hand",
        )
    return None


#: the workflow for pull requests from forks, as an absolute link
FORKS_EXAMPLE_URL = f"{FILES_URL}/examples/review-gate-forks.yml"


def fork_on_pull_request(event: str, pull: PullInfo | None) -> str | None:
    """What to tell a fork's ``pull_request`` run: GitHub gives it a read-only token and no
    secrets, so the status branch protection waits for may never arrive. Said at the
    start, in the log and as an annotation, never a silent wait."""
    if event != "pull_request" or pull is None or not pull.is_fork:
        return None
    return (
        f"pull request #{pull.number} comes from a fork, and on pull_request GitHub gives a "
        "fork's run a read-only token and no secrets: the reviewer cannot be asked and the "
        "required status may never be posted. Run the gate on pull_request_target with the "
        f"workflow for forks, which never checks out or runs the pull request's code: "
        f"{FORKS_EXAMPLE_URL}"
    )


#: the actor of the runs Dependabot starts (``GITHUB_ACTOR``): they read Dependabot
#: secrets, never Actions secrets
DEPENDABOT = "dependabot[bot]"
#: the recipe for bots' runs (docs/action.md)
BOTS_DOC_URL = f"{FILES_URL}/docs/action.md#dependabot-and-other-bots"


def credentials(
    pull: PullInfo | None, config: Config, api_key: str | None, *, actor: str = ""
) -> Decision | None:
    """No reviewer key where one is needed: name the variable, and why this run has none
    (a fork's run gets no secrets; a run Dependabot started reads Dependabot secrets, not
    Actions secrets; another bot's run reads Actions secrets as a person's would)."""
    if api_key:
        return None
    try:
        probe = ReviewerSettings.from_config(config.reviewer, None)
    except ConfigError:
        return None  # review_diff reports it with the config's own message
    explicit = bool(config.reviewer.api_key_env)
    if not (explicit or needs_api_key(probe)):
        return None
    key_env = config.reviewer.key_env()
    if pull is not None and pull.is_fork:
        return blocked(
            State.NEEDS_HUMAN,
            "fork_no_credentials",
            f"fork PR without reviewer credentials: {key_env} is not available to runs "
            f"from forks; use pull_request_target ({FORKS_EXAMPLE_URL}: it never checks "
            "out fork code) or review by hand",
        )
    if actor == DEPENDABOT:
        return blocked(
            State.NEEDS_HUMAN,
            "missing_api_key",
            f"no reviewer API key in this run: {DEPENDABOT} started it, and a run Dependabot "
            f"starts reads Dependabot secrets, not Actions secrets, so {key_env} is empty here "
            f"even when it is set for Actions; add it as a Dependabot secret of the same name "
            f"(Settings > Secrets and variables > Dependabot, or gh secret set {key_env} "
            f"--app dependabot), see {BOTS_DOC_URL}",
        )
    who = f" (started by {actor}, a bot: its runs read Actions secrets)" if _bot(actor) else ""
    return blocked(
        State.NEEDS_HUMAN,
        "missing_api_key",
        f"no reviewer API key{who}: set the secret in {key_env} or the action input api-key",
    )


def _bot(login: str) -> bool:
    """A GitHub App's account (``renovate[bot]``), as ``GITHUB_ACTOR`` names it."""
    return login.endswith("[bot]")


def base_moved(first: PullInfo | None, base: str, now: PullInfo) -> str:
    """How the pull request was retargeted since the run read it ("" when it was not).

    Only a change of base *branch* supersedes the review (its config and its diff
    belong to another target). New commits on the same base branch move the base
    SHA all the time in a busy repository; the diff reviewed (base...head) is still
    the pull request's change, so that alone must not turn every review into an
    error that nothing re-runs.
    """
    if first is None or now.base_ref == first.base_ref:
        return ""
    return f"the base moved from {first.base_ref}@{base[:12]} to {now.base_ref}@{now.base_sha[:12]}"


def superseded(run: RunState, gh: GitHubClient) -> Decision | None:
    """The head or the base moved while the diff was fetched: the new run decides."""
    if run.pull is None:
        return None
    now = gh.get_pull(run.pull.number)
    if now.head_sha != run.head:
        return blocked(
            State.INCOMPLETE,
            "superseded",
            f"superseded: the head moved to {now.head_sha[:12]} while the diff was "
            "fetched; the run for the new head decides",
        )
    moved = base_moved(run.pull, run.base, now)
    if moved:
        return blocked(
            State.INCOMPLETE,
            "superseded",
            f"superseded: {moved} while the diff was fetched; the review under the "
            "new base decides (re-run the job if none started)",
        )
    return None


def siblings(
    run: RunState,
    gh: GitHubClient,
    question_of: Callable[[PullInfo], tuple[Config, SelectedDiff]],
) -> Decision | None:
    """One head, every base: a ``success`` on a commit satisfies every open pull request
    whose head is that commit (``GET /repos/{owner}/{repo}/commits/{sha}/pulls``). Another
    open pull request of this head holds only when its own whole question, asked from its
    base (``question_of``: its base's config, the bytes selected from its diff, and its
    coverage), is exactly this run's and passes the same guards: the same key, coverage
    that does not block, and the same files reviewed and left out. Otherwise the success
    is withheld and the block names it: "a pull request cannot lower its own bar" holds
    across pull requests, and two bases whose diffs differ only by files the gate cannot
    review ask two questions. Called only for a reviewed or kept pass, or one with nothing
    in scope (an override is a writer's exception for exactly this head)."""
    pull, key, mine = run.pull, run.question, run.evidence.coverage
    if pull is None or key is None:
        return None
    unmet: list[PullInfo] = []
    for other in gh.pulls_for_commit(run.head):
        if other.number == pull.number:
            continue
        try:
            config, selected = question_of(other)
            theirs = selected.coverage
            same = (
                question.key_for(selected.data, config, head=run.head_files) == key
                and _coverage_holds(theirs, config)
                and mine is not None
                and (theirs.reviewed, theirs.skipped) == (mine.reviewed, mine.skipped)
            )
        except (ConfigError, GateError):
            same = False
        if not same:
            unmet.append(other)
    if not unmet:
        return None
    named = ", ".join(f"#{p.number} into {p.base_ref}" for p in unmet[:5])
    more = f" and {len(unmet) - 5} more" if len(unmet) > 5 else ""
    return blocked(
        State.NEEDS_HUMAN,
        "sibling_pull",
        f"this commit is also the head of {named}{more}, whose base config, diff or coverage "
        "this review did not answer; a success here would satisfy that pull request's "
        "required check too. Its own run decides it; close one of them, push to this branch, "
        "or a writer can override",
    )


def _coverage_holds(selected: Coverage, config: Config) -> bool:
    """What the selection alone decides does not block: nothing is decided before a
    request, or it is a pass with no reviewer call (nothing in scope, assets only)."""
    early = before_any_request(selected, config)
    return early is None or early.state is State.PASS


def fresh_requested(run: RunState, gh: GitHubClient) -> bool:
    """A fresh review asked for by a writer, bound to what the writer saw: the
    ``review-gate:fresh`` label just applied on this exact head (a label applied on an
    earlier head is ignored with a note: the author may have pushed since), the ``fresh``
    input of a ``workflow_dispatch``, or a writer's ``/review-gate review`` comment
    (:mod:`gate.action.command` checked the permission; the record keeps the head it
    reviewed). The sender's permission is checked as for the override."""
    target = run.target
    if target is None:
        return False
    if run.command is not None:
        login, permission = run.command.get("login"), run.command.get("permission")
        run.notes.append(f"a fresh review was asked by @{login} ({permission}) with the command")
        return True
    by_label = target.action == "labeled" and target.label == FRESH_LABEL
    by_input = run.inputs.fresh()
    if not (by_label or by_input):
        return False
    how = f"the label {FRESH_LABEL!r}" if by_label else "the input fresh"
    labelled_head = target.pull.head_sha if target.pull else ""
    if by_label and labelled_head != run.head:
        run.notes.append(
            f"{how} was applied on {labelled_head[:12]}, but the head is now {run.head[:12]}: "
            "it asks for nothing on a head the writer did not see; apply it again"
        )
        return False
    login = target.sender
    permission = gh.permission(login) if login else "none"
    if permission not in OVERRIDE_PERMISSIONS:
        run.notes.append(
            f"a fresh review asked with {how} by @{login or 'unknown'} (permission "
            f"{permission}) was ignored: only write, maintain or admin can ask for one"
        )
        return False
    run.notes.append(f"a fresh review was asked by @{login} ({permission}) with {how}")
    return True


def evidence(run: RunState, gh: GitHubClient) -> list[Seen]:
    """The gate's own statuses and check runs on the head (:func:`earlier.seen_on`)."""
    return earlier.seen_on(run, gh, run.head)


def standing_status(run: RunState, statuses: Seen, key: QuestionKey) -> Decision | None:
    """The gate's own newest decisive status (or check run) on this head, when it is a
    ``failure`` that answered this question (its tag, :func:`gate.memory.question.tag`),
    or an untagged ``failure`` no record of this pull request explains (its record was
    lost): that failure stands, whichever pull request asks. Statuses and check runs are
    kept by GitHub with their creator, so no PR author can edit or remove this evidence."""
    final = earlier.newest_decisive(statuses)
    if final is None or final[0] != "failure":
        return None
    tagged = final[2]
    if tagged is not None and tagged != key.tag_hex:
        return None  # a block of another question: this one is asked
    if tagged is None and any(
        r.head_sha == run.head and r.status == "failure" for r in run.history
    ):
        return None
    detail = (
        f"the gate's own failure status on {run.head[:12]} stands: it answered this question "
        f"({key.id[:12]}) or no record explains it (its record was lost, or another pull "
        "request with this head was blocked); no new call was made. The author can change the "
        "diff; a writer can ask for a fresh review with the review-gate:fresh label"
    )
    return replace(
        blocked(State.FAIL, "failure_stands", detail, status=Status.FAILURE),
        description=describe("fail stands", f"the gate's failure on {run.head[:7]} stands"),
        source="cached",
    )


def carried(run: RunState, body: str | None) -> Book | None:
    """The chunk answers the gate's own comment carries (:mod:`gate.action.carry`); a
    block that is not well-formed carries nothing, with a note (every chunk is sent)."""
    try:
        return carry.read(body)
    except CarryError as err:
        run.notes.append(
            f"the carried chunk answers in the review-gate comment were not read "
            f"({err.message}); every chunk is sent"
        )
        return None


def memory(run: RunState, gh: GitHubClient, key: QuestionKey) -> Decision | None:
    """An earlier decision of the same question (:mod:`gate.memory`): a standing block
    stands, a pass on this head is kept, with no model call; None asks the reviewer.

    The question ledger is looked up first, by the question's key
    (:func:`gate.action.ledger.consult`: its entry joins the records as the newest; a
    ledger the gate cannot trust blocks); the other records come only from the sticky
    comment the token itself wrote (the adoption rule, read by
    :func:`gate.action.history.load` before the first guard); a pass is
    kept only when the newest final status the gate's own identity posted on this head
    is a success, and the gate's own newest ``failure`` on the head stands when no
    record explains it; before the reviewer is asked, so does one on an earlier head of
    the pull request (:func:`earlier.recover`: a record lost to a failed comment write).
    A history that could not be read is never trusted and never concluded empty: the run
    blocks until a writer asks for a fresh review.
    """
    if run.pull is None:
        return None
    run.fresh = fresh_requested(run, gh)
    # a writer's fresh review (label, input) or comment command asks for every chunk again
    if not run.fresh and run.command is None:
        run.carry = carried(run, run.own_comment)
    if run.fresh:
        return None
    if run.history_problem is not None:
        return blocked(
            State.NEEDS_HUMAN,
            "history_unreadable",
            f"the history in the review-gate comment could not be read "
            f"({run.history_problem}), so an earlier fail of this diff cannot be ruled out; "
            "it is kept as it is. A writer can ask for a fresh review with the "
            f"{FRESH_LABEL} label, or restore the comment",
        )
    if (untrusted := ledger.consult(run, gh, key)) is not None:
        return untrusted  # the memory of record: its entry of this question joins the history
    block, kept = decisive(run.history, key)
    if block is not None:  # a standing block of this question: found by its key, no scan
        return recall(run.history, Question(key, run.head), status_confirmed=False)
    channels = evidence(run, gh)
    for seen in channels:
        if (stood := standing_status(run, seen, key)) is not None:
            return stood
    confirmed = (
        kept is not None
        and kept.head_sha == run.head
        and bool(channels)
        and all(status_confirms_pass([state for state, _, _ in seen]) for seen in channels)
    )
    found = recall(run.history, Question(key, run.head), status_confirmed=confirmed)
    # with a question ledger and the comment's history, a block is in one of them unless
    # GitHub refused both writes of one run (docs/security.md): no earlier head is read
    covered = bool(run.ledger_present) and not earlier.needed(run)
    if found is None and not run.earlier_read and not covered:
        # about to ask the model: a block whose record was lost (the comment write failed,
        # or the ledger's) still stands on the commit it was posted on, maybe an earlier head
        lost = earlier.unexplained(earlier.recover(run, gh), run.history)
        if lost:
            run.history = [*run.history, *lost]
            found = recall(run.history, Question(key, run.head), status_confirmed=False)
    return found
