"""The GitHub Action pipeline: orchestration only.

One run, in one direction (docs/design.md)::

    event -> pull request -> config at the BASE commit (+ action inputs)
      -> draft skip (pending, never success) | pending status
      -> override label by a writer (success "overridden by @login", no review)
      -> guards: .apply/incomplete at any depth of the head tree (truncated listing blocks),
         reviewer credentials (forks)
      -> diff of base_sha...head_sha (compare API, diff media type; its file list on 406)
      -> superseded (head or base moved meanwhile) -> coverage manifest -> nothing to review
      -> review_diff (prompt, transport, decision) -> partial-coverage guard
      -> certificate + raw response (atomic) -> final status on the reviewed SHA
         (re-read the head first: "superseded" when it moved) -> sticky comment
      -> job summary, annotations, step outputs -> exit code

:func:`_review` is that list, in one screen. The event is read in
:mod:`gate.action.event`, the inputs in :mod:`gate.action.inputs`, every guard is a
function of :mod:`gate.action.guards`, every GitHub call is in
:mod:`gate.action.github`, every rendering in :mod:`gate.action.report`, every
decision in :mod:`gate.decide.decision`/:mod:`gate.review.pipeline`. Nothing here turns an error
into a pass: the only ``success`` statuses come from :func:`gate.decide.decision.decide`
(through :func:`gate.review.pipeline.review_diff`), from a verified human override, or
from a change with nothing in scope and no gap (:func:`gate.review.scope.nothing_in_scope`).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gate.action import bar, command, report
from gate.action.blobfetch import FetchBudget
from gate.action.event import Target, read_event, target_from_event
from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.action.github.records import DiffFetch, PullInfo
from gate.action.inputs import ActionInputs
from gate.action.state import Artifacts, RunState, StatusRecord
from gate.config.inputs import apply_inputs
from gate.config.load import parse_config
from gate.config.model import (
    DEFAULT_CONFIG_PATH,
    Config,
    default_config,
    fallback_keys,
    remember_fallback_keys,
)
from gate.decide.decision import (
    Binding,
    Decision,
    State,
    Status,
    blocked,
    describe,
    exit_code,
    status_description,
)
from gate.diff import FileSection, file_count, possibly_unlisted, unlisted
from gate.errors import ConfigError, ExitCode, GateError, GitHubError, UsageError
from gate.safe import redact, untrusted

if TYPE_CHECKING:
    from gate.action.shown import Shown
    from gate.decide.attempt import Attempt
    from gate.diff import Coverage, SelectedDiff
    from gate.findings import Finding
    from gate.memory.question import QuestionKey
    from gate.review.result import ChunkReview, ReviewResult

# Start-up (issue 22): the imports above are what the run needs up to its first GitHub
# request. The review pipeline (guards, memory, diff selection, reviewers, certificate,
# reports) is imported inside the function that uses it, so it loads after that request;
# tests/integration/action/test_first_calls_over_httpx.py holds it to that.

ClientFactory = Callable[[GitHubSettings], GitHubClient]


@redact.scope()  # the secrets of this run: report.mask_commands registers them
def run_action(
    env: Mapping[str, str] | None = None,
    *,
    out: TextIO | None = None,
    client_factory: ClientFactory = GitHubClient,
    sleep: Callable[[float], None] = time.sleep,
    throttle: bool = True,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Run the action once; return the process exit code. Never raises."""
    environ = dict(os.environ if env is None else env)
    stream = out if out is not None else sys.stdout
    try:
        return _run_action(environ, stream, client_factory, sleep, throttle, clock)
    except Exception as err:  # noqa: BLE001 - last resort: a message and non-zero, never a pass
        message = report.escape_data(f"review-gate failed: {type(err).__name__}: {err}")
        report.emit([f"::error::{message}"], stream)
        return ExitCode.BLOCKED


def _run_action(
    environ: dict[str, str],
    stream: TextIO,
    client_factory: ClientFactory,
    sleep: Callable[[float], None],
    throttle: bool,
    clock: Callable[[], float],
) -> int:
    inputs = ActionInputs.from_env(environ)
    run = RunState(env=environ, inputs=inputs, out=stream, secrets=inputs.secrets(environ))
    run.clock = clock
    # masks first, before anything else is printed
    report.emit(report.mask_commands(run.secrets), stream)
    try:
        chosen = inputs.mode()
        if chosen == "replay":  # the scheduled job (issue 11)
            from gate.action import replay

            return replay.run_replay(run, client_factory, sleep, throttle)
        if chosen == "triage":  # the human queue (issue 21): reads statuses, never posts one
            from gate.action import triage

            return triage.run_triage(run, client_factory, sleep, throttle)
        fail_job = inputs.fail_job()
    except UsageError as err:
        return _usage_failure(run, err)
    run.shadow = chosen == "shadow"
    code = _reviewed(run, fail_job, client_factory, sleep, throttle)
    if run.shadow:  # what it would have done is posted; the job never fails (gate.action.shadow)
        from gate.action import shadow

        return shadow.exit_code(code)
    return code


def _reviewed(
    run: RunState,
    fail_job: bool,
    client_factory: ClientFactory,
    sleep: Callable[[float], None],
    throttle: bool,
) -> int:
    """The review run's exit code: the decision posted and reported, or the error's block."""
    try:
        decision = _review(run, client_factory, sleep, throttle)
    except UsageError as err:
        return _usage_failure(run, err)
    except GateError as err:
        decision = blocked(State.INCOMPLETE, err.reason, err.message)
        _best_effort_error(run, decision)
        # a status GitHub refused (its cap, a 5xx after retries): the block goes on every
        # channel still open, the comment included
        refused = err.reason == "github_status_refused" or err.reason.startswith("github_http_5")
        return _finish_safely(run, decision, fail_job, posted=refused and run.config is not None)
    except Exception as err:  # noqa: BLE001 - the action must exit non-zero with a message, not a traceback
        detail = f"internal error {type(err).__name__}: {err}; please report this bug"
        decision = blocked(State.INCOMPLETE, "internal_error", detail)
        _best_effort_error(run, decision)
        return _finish_safely(run, decision, fail_job, posted=False)
    if decision is None:
        return _ignored(run)
    return _finish_safely(run, decision, fail_job, posted=True)


def _finish_safely(run: RunState, decision: Decision, fail_job: bool, *, posted: bool) -> int:
    """Report; a failure while reporting is itself reported and blocks the job."""
    try:
        return _finish(run, decision, fail_job, posted=posted)
    except Exception as err:  # noqa: BLE001 - the job must end with a message and non-zero
        message = report.escape_data(f"review-gate could not report: {type(err).__name__}: {err}")
        report.emit([f"::error::{message}"], run.out)
        return ExitCode.BLOCKED


# --- the run, in order ----------------------------------------------------------------


def _review(
    run: RunState, client_factory: ClientFactory, sleep: Callable[[float], None], throttle: bool
) -> Decision | None:
    """The run's decision, or None when the event asks for nothing (no status is posted)."""
    run.context = _context(run, run.inputs.status_context)
    run.target = target = target_from_event(*read_event(run.env), pr_number=run.inputs.pr_number)
    if target.ignore:
        return None
    if run.shadow and (command_event := _shadow_ignores(target)) is not None:
        run.target = replace(target, ignore=command_event)
        return None
    run.gh = gh = _client(run, client_factory, sleep, throttle)
    if (refused := command.start(run, gh)) is not None:  # /review-gate review by a non-writer
        run.target = replace(target, ignore=refused)
        return None
    _read_pull(run, gh)  # the first request: the pipeline loads after it (issue 22)
    from gate.action import guards, headfiles
    from gate.review import cost, scope

    if (fork := guards.fork_on_pull_request(target.event, run.pull)) is not None:
        report.emit([f"::error::{report.escape_data(fork)}"], run.out)
        run.notes.append(fork)
    # config from the BASE commit: a pull request cannot lower its own bar
    try:
        run.config = config = _load_config(run, gh)
    except ConfigError as err:
        return _post_final(run, blocked(State.NEEDS_HUMAN, err.reason, err.message))
    _record_config(run, config)
    if (unlabeled := _other_label_removed(target, config)) is not None:
        run.target = replace(target, ignore=unlabeled)
        return None
    try:
        api_key = _api_key(run, config)
    except ConfigError as err:
        return _post_final(run, blocked(State.NEEDS_HUMAN, err.reason, err.message))

    skipped = guards.draft(run.pull, config)
    if skipped is not None:
        return _post_final(run, skipped, status=Status.PENDING, state="skipped")
    _start(run)
    before_diff: tuple[Callable[[], Decision | None], ...] = (
        lambda: guards.override(run, config),
        lambda: guards.apply_marker(gh, run.head),
        lambda: guards.credentials(
            run.pull, config, api_key, actor=run.env.get("GITHUB_ACTOR", "")
        ),
    )
    for guard in before_diff:
        if (decision := guard()) is not None:
            return _post_final(run, decision)

    fetch = _fetch(run, gh, config)
    if (moved := guards.superseded(run, gh)) is not None:
        return _post_final(run, moved)
    selected = scope.select_diff(_sections(run, gh, config, fetch), config, source=fetch.source)
    run.evidence.coverage = coverage = selected.coverage
    run.reviewed_diff = selected.data
    empty = scope.before_any_request(coverage, config)
    if empty is None or empty.status is Status.SUCCESS:  # context: files, for a question
        # every key of the run known before any file text: context leaves such a file out
        # (registered for redaction only: _ask masks each once it is checked)
        remember_fallback_keys(config, run.env)
        run.head_files = headfiles.fetch(gh, run.head, selected.data, config)
    head = run.head_files
    if empty is not None:
        if empty.status is Status.SUCCESS:  # assets or excluded files only: no call to make
            _question(run, selected.data, config)  # what another base's pull must answer
        return _post_final(run, empty)  # nothing to review, or partial: before any request
    run.estimate = cost.preflight(selected.data, config, coverage, head)
    report.emit([untrusted.line(run.estimate.line())], run.out)
    if (costly := cost.over_budget(selected.data, config, coverage, head)) is not None:
        return _post_final(run, costly)  # max_cost: decided before any request

    key = _question(run, selected.data, config)
    if not run.shadow and (kept := guards.memory(run, gh, key)) is not None:
        return _post_final(run, kept)  # a shadow run has no memory: it asks, as backtest does

    try:
        run.result = result = _ask(run, selected.data, config, coverage, api_key, sleep)
    except (UsageError, ConfigError) as err:
        return _post_final(run, blocked(State.NEEDS_HUMAN, err.reason, err.message))
    if result.review_decision is not None and result.decision is not result.review_decision:
        run.evidence.review_decision = result.review_decision
    run.notes.extend(result.notes)
    if result.coverage is not None:  # chunking may have left a too_large file out
        run.evidence.coverage = result.coverage
    return _post_final(run, result.decision)


def _ask(
    run: RunState,
    data: bytes,
    config: Config,
    coverage: Coverage,
    api_key: str | None,
    sleep: Callable[[float], None],
) -> ReviewResult:
    """The review itself, with its progress where people look: each attempt and a
    heartbeat in the log, the chunks done in the ``pending`` status (gate.action.progress)."""
    from gate.action import progress
    from gate.review import pipeline
    from gate.reviewers.heartbeat import Heartbeat
    from gate.reviewers.transport import attempt_line

    if run.pending_deferred:  # a model is asked: the head's earlier decision is withdrawn
        run.pending_deferred = False
        _post(run, Status.PENDING, describe("pending", "review in progress"))
    keys = fallback_keys(config, run.env)
    _mask(run, keys)
    log = progress.LogLines(run.out)
    chunks = progress.ChunkProgress(
        lambda text: _post(run, Status.PENDING, text, always=True), clock=run.clock, notes=run.notes
    )

    def on_attempt(attempt: Attempt) -> None:  # live, as each attempt ends
        log(attempt_line(attempt, config.reviewer.attempts))
        chunks.attempt(attempt)

    with Heartbeat(log):
        return pipeline.review_diff(
            data,
            config,
            api_key=api_key,
            sleep=sleep,
            coverage=coverage,
            on_attempt=on_attempt,
            fallback_keys=keys,
            carry=run.carry,
            question=run.question,
            head=run.head_files,
        )


def _start(run: RunState) -> None:
    """The pending status, then the PR's records: read before any guard, once the token's
    identity is known from what it just posted, so every path carries them forward
    (:mod:`gate.action.history`). When the head shows a decision of the gate's already,
    the pending waits until a model is asked (:func:`_ask`), and the identity is read from
    the author of what the head shows (gate.action.shown)."""
    from gate.action import checks, history, shown

    if run.shadow:  # no pending, no records: it posts only what it would have done
        run.notes.append(
            "mode: shadow: this run posts what the gate would have done under "
            f"{run.context!r} and never blocks; the required gate decides"
        )
        return
    mode = run.config.report if run.config is not None else "status"
    assert run.gh is not None
    wants = {"statuses": checks.wants_status(mode), "checks": checks.wants_check(mode)}
    if shown.defer_pending(run.gh, _shown(run), run.head, **wants):
        run.pending_deferred = True  # the head shows the gate's decision: it stands meanwhile
    else:
        _post(run, Status.PENDING, describe("pending", "review in progress"))
    history.load(run)


def _context(run: RunState, required: str) -> str:
    """The context the run posts under: the required one, or a shadow run's own."""
    if not run.shadow:
        return required
    from gate.action import shadow

    return shadow.context_for(required)


def _shadow_ignores(target: Target) -> str | None:
    from gate.action import shadow

    return shadow.ignores(target)


def _question(run: RunState, data: bytes, config: Config) -> QuestionKey:
    """The question this run asks (:mod:`gate.memory.question`), kept on the run."""
    from gate.memory import question

    run.question = key = question.key_for(data, config, head=run.head_files)
    run.prompt_sha = key.prompt_sha
    return key


def _client(
    run: RunState, client_factory: ClientFactory, sleep: Callable[[float], None], throttle: bool
) -> GitHubClient:
    """The GitHub client, with the token from the input or ``GITHUB_TOKEN`` (registered
    as a secret before anything can print it)."""
    token = redact.first_key(
        (run.inputs.raw.get("token"), "the action input token"),
        (run.env.get("GITHUB_TOKEN"), "the environment variable GITHUB_TOKEN"),
    )
    settings = GitHubSettings.from_env(run.env, token=token or "")
    run.settings = replace(settings, throttle=throttle, sleep=sleep)
    return client_factory(run.settings)


def _fetch(run: RunState, gh: GitHubClient, config: Config) -> DiffFetch:
    """The diff, pinned to the SHAs reviewed: never the pull request's current diff, which
    a push could change between this fetch and the head re-check after it."""
    fetch = gh.compare_diff(
        run.base,
        run.head,
        pr_number=run.pull.number if run.pull else None,
        budget=FetchBudget.from_config(config),
    )
    if fetch.note:
        run.notes.append(fetch.note)
    return fetch


def _sections(
    run: RunState,
    gh: GitHubClient,
    config: Config,
    fetch: DiffFetch,
    *,
    pull: PullInfo | None = None,
) -> list[FileSection]:
    """The fetched sections, binary assets marked (``binary_assets: allow``), and a
    section for every file GitHub did not list, so coverage can never read complete
    (``pull``: another pull request of the head, from its own base; else the run's)."""
    from gate.action.assets import mark_assets

    sections = list(fetch.sections)
    base, pull = (pull.base_sha, pull) if pull is not None else (run.base, run.pull)
    if config.binary_assets == "allow":  # images, fonts, audio, video: by name and bytes
        sections = mark_assets(gh, sections, base=base, head=run.head)
    expected = pull.changed_files if pull is not None else None
    if expected is not None and file_count(sections) < expected:
        # GitHub lists at most 3000 files; whatever it did not list was not reviewed
        sections.append(unlisted(expected - file_count(sections)))
    elif expected is None and fetch.capped_at is not None:
        # a merge group has no PR file count: a list that reached GitHub's cap may have
        # left files out, so coverage cannot be called complete
        sections.append(possibly_unlisted(fetch.capped_at))
    return sections


def _read_pull(run: RunState, gh: GitHubClient) -> None:
    """The head and base to review: the pull request's as it is now, or the merge group's."""
    target = run.target
    assert target is not None
    if target.pr_number is not None:
        run.pull = first = gh.get_pull(target.pr_number)
        run.head, run.base = first.head_sha, first.base_sha
        if first.state != "open":
            raise UsageError(f"pull request #{first.number} is {first.state}; nothing to review")
    else:
        run.head, run.base = target.head_sha, target.base_sha
    assert run.settings is not None
    run.evidence.github = {
        "repository": run.settings.repository,
        "event": target.event,
        "action": target.action,
        "pull_request": run.pull.number if run.pull else None,
        "head_sha": run.head,
        "base_sha": run.base,
        "run_url": run.run_url,
        "api_url": run.settings.api_url,
    }
    if run.command is not None:
        run.evidence.github["command"] = run.command


def _load_config(run: RunState, gh: GitHubClient) -> Config:
    """The base commit's config with the inputs applied; on an event whose workflow file
    comes from the pull request, inputs that lower the bar are refused (gate.action.bar)."""
    path, inputs = run.inputs.config_path, run.inputs.raw
    event = run.target.event if run.target is not None else ""
    if path != DEFAULT_CONFIG_PATH and event in bar.UNTRUSTED_WORKFLOW_EVENTS:
        bar.check_config_path(event, path, _base_config(gh, DEFAULT_CONFIG_PATH, run.base))
    config = _base_config(gh, path, run.base)
    merged = apply_inputs(config, inputs)
    bar.check(event, config, merged, inputs)
    return merged


def _base_config(gh: GitHubClient, path: str, base: str) -> Config:
    raw = gh.read_file(path, base)
    source = f"{path}@{base[:12]}"
    if raw is None:
        return default_config()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"not UTF-8 (byte {err.start})",
            source=source,
            fix="save the file as UTF-8",
            reason="config_encoding",
        ) from err
    return parse_config(text, source=source)


def _record_config(run: RunState, config: Config) -> None:
    from gate.review.result import config_sha256

    run.context = _context(run, config.status_context)
    run.config_sha = config_sha256(config)
    run.evidence.config = {
        "path": run.inputs.config_path,
        "ref": run.base,
        "sha256": run.config_sha,
    }


def _api_key(run: RunState, config: Config) -> str | None:
    """The reviewer's key (input, else the config's variable), checked and masked before use.

    A key with control or non-ASCII characters is a ConfigError naming where it came
    from, never showing it (:func:`gate.safe.redact.first_key`).
    """
    key_env = config.reviewer.key_env()
    api_key = redact.first_key(
        (run.inputs.api_key, "the action input api-key"),
        (run.env.get(key_env), f"the environment variable {key_env}"),
    )
    _mask(run, (api_key,))
    return api_key


def _mask(run: RunState, keys: Sequence[str | None]) -> None:
    """Mask each key not masked yet (``::add-mask::``, and registered for redaction)."""
    for key in keys:
        if key and key not in run.secrets:
            run.secrets.append(key)
            report.emit(report.mask_commands([key]), run.out)


# --- statuses, certificate, report ----------------------------------------------------


def _post(
    run: RunState,
    status: Status,
    description: str,
    *,
    tag: str = "",
    kind: str = "",
    always: bool = False,
) -> None:
    """Post ``status`` where the config's ``report`` says, marked with its ``kind`` and
    question ``tag`` (gate.action.github.mark), on each channel whose head does not show
    it already (gate.action.shown: a decision the head shows is never written again;
    ``always``: a review's progress, written while a model is asked)."""
    from gate.action import checks, shown
    from gate.action.github.mark import Mark, kind_for

    assert run.gh is not None
    if run.shadow:  # its own context and kinds, never the required ones
        from gate.action import shadow

        shadow.post(run, _shown(run), status, description, tag=tag)
        return
    mode = run.config.report if run.config is not None else "status"
    seen = _shown(run)
    marked = Mark(kind or kind_for(str(status), "", ""), tag or None)
    same_check = shown.shows(seen.check, str(status), marked) and shown.shows_check(run.gh, seen)
    if checks.wants_check(mode) and (always or not same_check):
        run.check_run_id = checks.post(
            run.gh,
            check_id=run.check_run_id,
            name=run.context,
            head=run.head,
            status=status,
            description=description,
            details_url=run.run_url,
            marked=marked,
        )
        shown.wrote_check(run.gh, seen, str(status), marked)
    same = shown.shows(seen.status, str(status), marked) and shown.shows_status(run.gh, seen)
    if not checks.wants_status(mode) or (not always and same):
        return
    counted = replace(marked, count=shown.next_count(seen))
    run.gh.create_status(
        run.head,
        state=str(status),
        description=description,
        context=run.context,
        target_url=run.run_url,
        marked=counted,
    )
    shown.wrote_status(run.gh, seen, str(status), counted)


def _shown(run: RunState) -> Shown:
    """What the head shows on the run's channels, read once by key (gate.action.shown)."""
    from gate.action import checks, shown

    if run.shown is None:
        assert run.gh is not None
        mode = run.config.report if run.config is not None else "status"
        run.shown = shown.read(
            run.gh,
            run.head,
            run.context,
            statuses=checks.wants_status(mode),
            checks=checks.wants_check(mode),
        )
    return run.shown


def _post_final(
    run: RunState, decision: Decision, *, status: Status | None = None, state: str | None = None
) -> Decision:
    """Post the final status on the reviewed SHA (re-reading the head first)."""
    from gate.action import checks, guards, shown
    from gate.action.github.mark import Mark, kind_for

    if status is None and decision.status is Status.SUCCESS and decision.reason != "override":
        decision = _every_base(run, decision)
    posted = status or decision.status
    # a posted status other than the decision's own (a skipped draft's pending) is no block
    description = decision.description if status is not None else status_description(decision)
    if run.pull is not None and run.gh is not None and decision.reason != "superseded":
        now = run.gh.get_pull(run.pull.number)
        moved = guards.base_moved(run.pull, run.base, now)
        if moved:
            # same head, other base: a decision made under the old base's diff and config
            # must not stand for the new base (a success would pass the retargeted PR)
            run.evidence.review_decision = decision
            run.evidence.base_moved_to = (now.base_ref, now.base_sha)
            run.notes.append(
                f"the base changed during the review ({moved}); the decision under the old "
                "base is kept in the certificate as review_decision and is not posted"
            )
            decision = blocked(
                State.INCOMPLETE,
                "superseded",
                f"superseded: {moved} during the review; the review under the new base "
                "decides (re-run the job if none started)",
            )
            posted, description, state = decision.status, status_description(decision), None
        elif now.head_sha != run.head:
            run.evidence.superseded_by = now.head_sha
            description = describe(f"superseded by {now.head_sha[:7]}", decision.description)
            run.notes.append(
                f"the head moved to {now.head_sha[:12]} during the review; this status is on "
                f"the reviewed commit {run.head[:12]}, the run for the new head decides"
            )
    # which question this decision answered, on the commit itself, and its kind: in the
    # status's mark and the check run's external_id (gate.action.github.mark)
    tag = run.question.tag_hex if run.question is not None and posted is not Status.PENDING else ""
    kind = kind_for(str(posted), state or str(decision.state), decision.reason)
    wants_status = checks.wants_status(run.config.report if run.config else "status")
    if posted is Status.SUCCESS and wants_status and run.gh is not None:
        seen = _shown(run)
        if not shown.room_for_success(run.gh, seen, Mark(kind, tag or None)):
            run.evidence.review_decision = decision
            decision = blocked(State.NEEDS_HUMAN, "status_budget", shown.budget_spent(seen))
            posted, description, state = decision.status, status_description(decision), None
            tag, kind = "", kind_for(str(posted), str(decision.state), decision.reason)
    description = report.with_assets(description, run.evidence.coverage)
    run.evidence.status_to_post = StatusRecord(str(posted), description, run.head)
    # the evidence first: a status is posted only once its certificate is on disk
    try:
        run.artifacts = _write_artifacts(run, decision)
    except Exception as err:  # noqa: BLE001 - whatever broke, no status without its evidence
        failed = blocked(
            State.INCOMPLETE,
            "certificate_unwritten",
            f"the certificate could not be written ({type(err).__name__}: {err}); "
            "check certificate-dir / RUNNER_TEMP",
        )
        if run.evidence.review_decision is None:
            run.evidence.review_decision = decision
        run.artifacts = Artifacts(None, {})
        _post(run, Status.ERROR, status_description(failed))
        _record_posted(run, Status.ERROR, status_description(failed), str(failed.state))
        return failed
    unrecorded = None if status is not None or run.shadow else _ledger(run, decision, state)
    if unrecorded is not None:
        run.evidence.review_decision = run.evidence.review_decision or decision
        return _post_final(run, unrecorded)  # a pass the question ledger could not keep
    try:
        _post(run, posted, description, tag=tag, kind=kind)
    except Exception:
        # GitHub did not take the status: the certificate must not claim this decision;
        # run_action reports the error and _finish rewrites the certificate with it
        if run.evidence.review_decision is None:
            run.evidence.review_decision = decision
        run.artifacts = None
        raise
    _record_posted(run, posted, description, state or str(decision.state))
    return decision


def _ledger(run: RunState, decision: Decision, state: str | None) -> Decision | None:
    """The decision in the question ledger, before its status (gate.action.ledger.record)."""
    from gate.action import history, ledger

    assert run.artifacts is not None
    rec = history.record_for(run, decision, state or str(decision.state), run.artifacts)
    run.decided_record = rec  # the comment records the very row the ledger got
    return ledger.record(run, rec, decision)


def _every_base(run: RunState, decision: Decision) -> Decision:
    """``decision`` (a pass), or the block that withholds it while another open pull
    request of the same head is not answered by it (:func:`gate.action.guards.siblings`)."""
    from gate.action import guards

    gh, config = run.gh, run.config
    if gh is None or config is None:
        return decision
    raw, path = run.inputs.raw, run.inputs.config_path

    def question_of(other: PullInfo) -> tuple[Config, SelectedDiff]:
        """The question ``other`` asks from its own base: its config, bytes and coverage."""
        from gate.review import scope

        config = apply_inputs(_base_config(gh, path, other.base_sha), raw)
        fetch = gh.compare_diff(
            other.base_sha, run.head, pr_number=other.number, budget=FetchBudget.from_config(config)
        )
        sections = _sections(run, gh, config, fetch, pull=other)
        return config, scope.select_diff(sections, config, source=fetch.source)

    sibling = guards.siblings(run, gh, question_of)
    if sibling is None:
        return decision
    run.evidence.review_decision = decision
    return sibling


def _other_label_removed(target: Target, config: Config) -> str | None:
    """Why an ``unlabeled`` event asks for nothing: a label other than the override was
    removed (the diff, the config and the writer's exceptions are the same, so the gate's
    status stands as it is and no model is asked); None for any other event, and for the
    removal of the override label, which the run decides again without it
    (docs/security.md, rule 5)."""
    if target.action != "unlabeled" or target.label in (None, config.override_label):
        return None  # a payload naming no label is decided again: never assume it harmless
    return (
        f"{target.event} unlabeled: a label other than the override label "
        f"{config.override_label!r} was removed; nothing changes, no status posted"
    )


def _ignored(run: RunState) -> int:
    """An event that asks for nothing (an edit of the title or body): say so, post nothing,
    exit 0 so the workflow does not fail; the outputs read state ``skipped``, status ``none``."""
    target = run.target
    message = target.ignore if target is not None else "nothing to review"
    decision = blocked(State.NEEDS_HUMAN, "not_reviewed_event", message)
    rep = report.Report(
        decision=decision,
        state="skipped",
        status="none",
        description=message,
        context=run.context,
        subject=run.subject,
        sha="",
    )
    report.emit([f"::notice::{report.escape_data('review-gate: ' + message)}"], run.out)
    try:
        report.append_summary(run.env.get("GITHUB_STEP_SUMMARY"), report.summary_markdown(rep))
        report.write_outputs(run.env.get("GITHUB_OUTPUT"), report.outputs_for(rep))
    except OSError as err:
        report.emit([f"::warning::could not write the summary/outputs: {err}"], run.out)
    return ExitCode.PASS


def _record_posted(run: RunState, status: Status, description: str, state: str) -> None:
    """After GitHub accepted a final status: what the outputs, summary and log report."""
    shown_as = str(status)
    if run.shadow:  # what the shadow posted, and what it would have done
        from gate.action import shadow

        shown_as, description = shadow.recorded(run, status, description)
    run.evidence.posted = StatusRecord(shown_as, description, run.head)
    run.evidence.final_state = state


def _best_effort_error(run: RunState, decision: Decision) -> None:
    """After an error, try to replace a posted pending with an error status."""
    if run.gh is None or not run.head:
        return
    try:
        description = status_description(decision)
        tag = run.question.tag_hex if run.question is not None else ""
        _post(run, Status.ERROR, description, tag=tag)
        run.evidence.posted = StatusRecord("error", description, run.head)
    except GitHubError as err:
        run.notes.append(f"could not post the error status: {err.message}")
    except Exception as err:  # noqa: BLE001 - run_action must never raise
        run.notes.append(f"could not post the error status: {type(err).__name__}: {err}")


def _write_artifacts(run: RunState, decision: Decision) -> Artifacts:
    """Certificate + raw response, atomically, in certificate-dir / RUNNER_TEMP.

    The certificate is built here, once, from the run's typed state."""
    import tempfile  # the certificate's folder, after the decision

    from gate.action import findings_report
    from gate.review import certificate, cost

    if run.shadow:  # what it would have done, where it said so, and the question
        from gate.action import shadow

        run.evidence.shadow = shadow.evidence(run, decision.status)
    folder = Path(run.inputs.certificate_dir or run.env.get("RUNNER_TEMP") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    run_id = run.env.get("GITHUB_RUN_ID") or str(os.getpid())
    stem = f"review-gate-{(run.head or 'nohead')[:12]}-{run_id}"
    context: dict[str, Any] = run.evidence.to_json()
    digests: dict[str, str] = {}
    result = run.result
    if result is not None:
        binding = result.binding
        digests["prompt"] = result.prompt_sha256
        if result.outcome.envelope is not None:
            digests["envelope"] = hashlib.sha256(result.outcome.envelope).hexdigest()
        if result.outcome.raw:
            raw_path = folder / f"{stem}.response"
            digests["raw_response"] = certificate.write_response(raw_path, result.outcome.raw)
            context["raw_response"] = {"path": str(raw_path), "sha256": digests["raw_response"]}
        if run.config is not None:
            context["cost"] = cost.cost_of(
                result.paid_attempts(), run.config, models=result.paid_models()
            ).to_json()
        found = findings_report.findings_of(decision, run.reviewed_diff, _chunks(run))
        if found:
            context["findings"] = [f.to_json() for f in found]
        cert = result.certificate_for(decision, extra=context)
    else:
        coverage = run.evidence.coverage
        diff_sha = coverage.diff_sha if coverage else ""
        policy = run.config.policy_version if run.config else ""
        binding = Binding(diff_sha=diff_sha, policy_version=policy)
        cert = certificate.build(
            decision,
            binding=binding,
            attempts=(),
            inputs={k: v for k, v in (("diff", diff_sha), ("config", run.config_sha)) if v},
            envelope=None,
            extra=context,
        )
    if binding.diff_sha:
        digests["diff_sha"] = binding.diff_sha
    if run.config_sha:
        digests["config"] = run.config_sha
    path = folder / f"{stem}.certificate.json"
    # secrets shorter than 8 characters would match by chance (and are no real keys)
    real = [s for s in run.secrets if len(s) >= 8]
    digests["certificate"] = certificate.write(path, cert, secrets=real)
    files = _write_exports(run, decision, path, binding)
    return Artifacts(str(path), digests, files)


def _write_exports(
    run: RunState, decision: Decision, cert_path: Path, binding: Binding
) -> dict[str, str]:
    """The statement and its predicate (always) and the SARIF log (``sarif: true``),
    beside the certificate. Neither can change the decision: one that cannot be written
    is a note in the summary, and its output stays empty."""
    from gate.action import findings_report
    from gate.export import sarif, statement

    files: dict[str, str] = {}
    try:
        made, predicate = statement.write_beside(cert_path)
        files.update(statement=str(made), predicate=str(predicate))
    except (GateError, OSError) as err:
        run.notes.append(f"no in-toto statement was written: {_cause(err)}")
    if run.config is None or not run.config.sarif:
        return files
    target = cert_path.with_name(cert_path.name.removesuffix(".certificate.json") + sarif.SUFFIX)
    try:
        log = sarif.build(
            findings_report.findings_of(decision, run.reviewed_diff, _chunks(run)),
            state=str(decision.state),
            reason=decision.reason,
            policy_version=binding.policy_version,
            diff_sha=binding.diff_sha,
            commit=run.head or None,
        )
        sarif.write(target, log)
        files["sarif"] = str(target)
    except (GateError, OSError) as err:
        run.notes.append(f"no SARIF file was written: {_cause(err)}")
    return files


def _cause(err: Exception) -> str:
    return err.message if isinstance(err, GateError) else f"{type(err).__name__}: {err}"


def _finish(run: RunState, decision: Decision, fail_job: bool, *, posted: bool) -> int:
    from gate.action import cost_report, findings_report, history
    from gate.review import cost

    state = run.evidence.final_state or str(decision.state)
    if run.artifacts is None:  # the run stopped before the final status
        try:
            run.artifacts = _write_artifacts(run, decision)
        except Exception as err:  # noqa: BLE001 - reported; the state stays the blocked one
            run.artifacts = Artifacts(None, {})
            run.notes.append(f"could not write the certificate: {type(err).__name__}: {err}")
    artifacts = run.artifacts
    findings = findings_report.findings_of(decision, run.reviewed_diff, _chunks(run))
    posted = posted and not run.shadow  # a shadow run writes no comment and no review
    if run.pull is not None and run.config is not None and run.config.sticky_comment and posted:
        body = report.comment_body(_report(run, decision, state, artifacts))
        kept = history.with_history(body, run, decision, state, artifacts)
        try:
            assert run.gh is not None
            if kept is not None:  # None: the comment holds records this run could not keep
                run.gh.upsert_comment(
                    run.pull.number, marker=report.comment_marker(run.context), body=kept
                )
        except GitHubError as err:
            run.notes.append(f"could not update the PR comment: {err.message}")
    if run.pull is not None and run.config is not None and run.config.review_comments and posted:
        _post_review(run, decision, state, findings)
    rep = _report(run, decision, state, artifacts)
    anchored = findings_report.annotation_commands(
        findings, failed=state == "fail", context=run.context
    )
    lines = report.annotation_commands(rep) + anchored
    if run.shadow:
        from gate.action import shadow

        lines = shadow.quiet(lines)
    report.emit(lines, run.out)
    try:
        extra, outputs = findings_report.summary_lines(findings), report.outputs_for(rep)
        if run.estimate is not None:
            extra += cost_report.estimate_lines(run.estimate)
            outputs.update(run.estimate.outputs())
        if run.result is not None and run.config is not None:
            spent = cost.cost_of(
                run.result.paid_attempts(), run.config, models=run.result.paid_models()
            )
            extra += cost_report.summary_lines(spent)
            outputs.update(spent.outputs())
        outputs.update(artifacts.files)
        summary = report.summary_markdown(rep) + "\n".join(extra)
        failed = state == "fail" and not run.shadow
        _publish_check(run, rep.description, summary, findings, failed=failed)
        report.append_summary(run.env.get("GITHUB_STEP_SUMMARY"), summary)
        report.write_outputs(run.env.get("GITHUB_OUTPUT"), outputs)
    except OSError as err:
        report.emit([f"::warning::could not write the summary/outputs: {err}"], run.out)
    if rep.status == "none" or not run.head:
        line = f"review-gate: no status posted: {rep.description}"
    else:
        line = f"review-gate: {rep.status} on {run.head[:12]}: {rep.description}"
    report.emit([line], run.out)
    if state == "pass" and decision.status is Status.SUCCESS:
        return ExitCode.PASS
    if not fail_job:
        return ExitCode.PASS
    if state == "skipped":
        return ExitCode.BLOCKED
    return exit_code(decision)


def _publish_check(
    run: RunState, description: str, summary: str, findings: tuple[Finding, ...], *, failed: bool
) -> None:
    """The check run's output: the job summary and every anchored finding (pages of 50)."""
    from gate.action import checks

    if run.check_run_id is None or run.gh is None:
        return
    try:
        checks.publish(
            run.gh,
            run.check_run_id,
            description=description,
            summary=summary,
            items=checks.check_annotations(findings, failed=failed),
        )
    except GitHubError as err:
        message = report.escape_data(f"could not write the check run output: {err.message}")
        report.emit([f"::warning::{message}"], run.out)


def _post_review(
    run: RunState, decision: Decision, state: str, findings: tuple[Finding, ...]
) -> None:
    """The gate's pull request review (review_comments): only for a decision with a verdict,
    and only when it fails or has a finding on a changed line."""
    from gate.action import reviews

    if decision.verdict is None or run.pull is None or run.gh is None:
        return
    if state != "fail" and not any(f.anchored for f in findings):
        return
    posted = run.evidence.posted
    try:
        done = reviews.post_review(
            run.gh,
            run.pull.number,
            run.head,
            context=run.context,
            state=state,
            description=posted.description if posted else decision.description,
            findings=findings,
        )
        report.emit([f"review-gate: pull request review: {done}"], run.out)
    except GitHubError as err:
        run.notes.append(f"could not post the pull request review: {err.message}")


def _report(run: RunState, decision: Decision, state: str, artifacts: Artifacts) -> report.Report:
    from gate.action import guards, next_step
    from gate.review.chunked import chunk_rows

    posted = run.evidence.posted
    return report.Report(
        decision=decision,
        state=state,
        status=posted.status if posted else "none",
        description=posted.description if posted else decision.description,
        context=run.context,
        subject=run.subject,
        sha=run.head,
        coverage=run.evidence.coverage,
        attempts=run.result.outcome.attempts if run.result else (),
        chunks=tuple(chunk_rows(run.result.chunks)) if run.result else (),
        digests=artifacts.digests,
        certificate_path=artifacts.certificate_path,
        run_url=run.run_url,
        notes=tuple(run.notes),
        next_step=next_step.next_step(
            decision.family,
            override_label=run.config.override_label if run.config else Config().override_label,
            fresh_label=guards.FRESH_LABEL,
            standing=decision.source == "cached",
        ),
    )


def _usage_failure(run: RunState, err: UsageError) -> int:
    """A misconfigured workflow (unsupported event, missing env): loud, exit code 2."""
    decision = blocked(State.NEEDS_HUMAN, err.reason, err.message)
    rep = report.Report(
        decision=decision,
        state="error",
        status="none",
        description=err.message,
        context=run.context,
        subject=run.subject,
        sha=run.head,
    )
    report.emit(report.annotation_commands(rep), run.out)
    try:
        report.append_summary(run.env.get("GITHUB_STEP_SUMMARY"), report.summary_markdown(rep))
        report.write_outputs(run.env.get("GITHUB_OUTPUT"), report.outputs_for(rep))
    except OSError:
        pass
    return ExitCode.USAGE


def _chunks(run: RunState) -> tuple[ChunkReview, ...]:
    """The chunks the review was made of (none when it was one request, or not made)."""
    return run.result.chunks if run.result is not None else ()
