"""The GitHub Action pipeline: orchestration only.

One run, in one direction (docs/design.md)::

    event -> pull request -> config at the BASE commit (+ action inputs)
      -> draft skip (pending, never success) | pending status
      -> override label by a writer (success "overridden by @login", no review)
      -> guards: .apply/incomplete at any depth of the head tree (truncated listing blocks),
         reviewer credentials (forks)
      -> diff of base_sha...head_sha (compare API, diff media type; its file list on 406)
      -> coverage manifest
      -> review_diff (prompt, transport, decision) -> partial-coverage guard
      -> certificate + raw response (atomic) -> final status on the reviewed SHA
         (re-read the head first: "superseded" when it moved) -> sticky comment
      -> job summary, annotations, step outputs -> exit code

This module reads the environment and decides the exit code; every GitHub call
is in :mod:`gate.action.github`, every rendering in :mod:`gate.action.report`, every decision
in :mod:`gate.decision`/:mod:`gate.pipeline`. Nothing here turns an error into
a pass: the only ``success`` statuses come from :func:`gate.decision.decide`
(through :func:`gate.pipeline.review_diff`) or from a verified human override.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from gate import certificate
from gate.action import report
from gate.action.github import (
    OVERRIDE_PERMISSIONS,
    GitHubClient,
    GitHubSettings,
    PullInfo,
    Target,
    read_event,
    target_from_event,
)
from gate.atomic import atomic_write
from gate.config import (
    DEFAULT_KEY_ENV,
    Config,
    apply_inputs,
    default_config,
    inputs_from_env,
    parse_config,
)
from gate.decision import Binding, Decision, State, Status, blocked, describe, exit_code
from gate.diff import Coverage, file_count, possibly_unlisted, unlisted
from gate.errors import ConfigError, GateError, GitHubError, UsageError
from gate.pipeline import (
    ReviewResult,
    config_sha256,
    nothing_reviewed,
    review_diff,
    select_diff,
)
from gate.reviewers import needs_api_key

DEFAULT_CONFIG_PATH = ".github/review-gate.yml"
APPLY_MARKER = ".apply/incomplete"
EXIT_USAGE = 2
EXIT_BLOCKED = 3

ClientFactory = Callable[[GitHubSettings], GitHubClient]


@dataclass
class Run:
    """What this run has learned so far (mutable while the pipeline walks forward)."""

    env: Mapping[str, str]
    inputs: dict[str, str]
    out: TextIO
    secrets: list[str] = field(default_factory=list)
    gh: GitHubClient | None = None
    settings: GitHubSettings | None = None
    target: Target | None = None
    pull: PullInfo | None = None
    head: str = ""
    base: str = ""
    context: str = "review-gate"
    config: Config | None = None
    config_sha: str = ""
    coverage: Coverage | None = None
    result: ReviewResult | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    pending_posted: bool = False
    artifacts_done: bool = False
    cert_path: str | None = None
    digests: dict[str, str] = field(default_factory=dict)

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


def _flag(value: str, default: bool) -> bool:
    text = value.strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    if not text:
        return default
    raise UsageError(f"input fail-job: {value!r} is not true or false")


def run_action(
    env: Mapping[str, str] | None = None,
    *,
    out: TextIO | None = None,
    client_factory: ClientFactory = GitHubClient,
    sleep: Callable[[float], None] = time.sleep,
    throttle: bool = True,
) -> int:
    """Run the action once; return the process exit code. Never raises."""
    environ = dict(os.environ if env is None else env)
    stream = out if out is not None else sys.stdout
    try:
        return _run_action(environ, stream, client_factory, sleep, throttle)
    except Exception as err:  # noqa: BLE001 - last resort: a message and non-zero, never a pass
        message = report.escape_data(f"review-gate failed: {type(err).__name__}: {err}")
        report.emit([f"::error::{message}"], stream)
        return EXIT_BLOCKED


def _run_action(
    environ: dict[str, str],
    stream: TextIO,
    client_factory: ClientFactory,
    sleep: Callable[[float], None],
    throttle: bool,
) -> int:
    raw_inputs = inputs_from_env(environ)
    run = Run(env=environ, inputs=raw_inputs, out=stream)
    # masks first, before anything else is printed
    run.secrets = [
        s
        for s in (
            raw_inputs.get("token"),
            raw_inputs.get("api-key"),
            environ.get("GITHUB_TOKEN"),
            *(environ.get(name) for name in DEFAULT_KEY_ENV.values()),
        )
        if s
    ]
    report.emit(report.mask_commands(run.secrets), stream)
    try:
        fail_job = _flag(raw_inputs.get("fail-job", ""), True)
    except UsageError as err:
        return _usage_failure(run, err)
    try:
        decision = _pipeline(run, client_factory, sleep, throttle)
    except UsageError as err:
        return _usage_failure(run, err)
    except GateError as err:
        decision = blocked(State.INCOMPLETE, err.reason, err.message)
        _best_effort_error(run, decision)
        return _finish_safely(run, decision, fail_job, posted=False)
    except Exception as err:  # noqa: BLE001 - the action must exit non-zero with a message, not a traceback
        detail = f"internal error {type(err).__name__}: {err}; please report this bug"
        decision = blocked(State.INCOMPLETE, "internal_error", detail)
        _best_effort_error(run, decision)
        return _finish_safely(run, decision, fail_job, posted=False)
    if decision is None:
        return _ignored(run)
    return _finish_safely(run, decision, fail_job, posted=True)


def _finish_safely(run: Run, decision: Decision, fail_job: bool, *, posted: bool) -> int:
    """Report; a failure while reporting is itself reported and blocks the job."""
    try:
        return _finish(run, decision, fail_job, posted=posted)
    except Exception as err:  # noqa: BLE001 - the job must end with a message and non-zero
        message = report.escape_data(f"review-gate could not report: {type(err).__name__}: {err}")
        report.emit([f"::error::{message}"], run.out)
        return EXIT_BLOCKED


# --- the pipeline -------------------------------------------------------------------


def _pipeline(
    run: Run, client_factory: ClientFactory, sleep: Callable[[float], None], throttle: bool
) -> Decision | None:
    """The run's decision, or None when the event asks for nothing (no status is posted)."""
    env, inputs = run.env, run.inputs
    run.context = inputs.get("status-context") or "review-gate"
    event_name, payload = read_event(env)
    run.target = target = target_from_event(
        event_name, payload, pr_number=inputs.get("pr-number", "")
    )
    if target.ignore:
        return None
    token = inputs.get("token") or env.get("GITHUB_TOKEN", "")
    settings = GitHubSettings.from_env(env, token=token)
    run.settings = settings = replace(settings, throttle=throttle)
    run.gh = gh = client_factory(settings)

    if target.pr_number is not None:
        first = gh.get_pull(target.pr_number)
        run.pull = first
        run.head, run.base = first.head_sha, first.base_sha
        if first.state != "open":
            raise UsageError(f"pull request #{first.number} is {first.state}; nothing to review")
    else:
        run.head, run.base = target.head_sha, target.base_sha
    run.extra["github"] = {
        "repository": settings.repository,
        "event": target.event,
        "action": target.action,
        "pull_request": run.pull.number if run.pull else None,
        "head_sha": run.head,
        "base_sha": run.base,
        "run_url": run.run_url,
        "api_url": settings.api_url,
    }

    # config from the BASE commit: a pull request cannot lower its own bar
    config_path = inputs.get("config") or DEFAULT_CONFIG_PATH
    try:
        run.config = config = _load_config(gh, config_path, run.base, inputs)
    except ConfigError as err:
        return _post_final(run, blocked(State.NEEDS_HUMAN, err.reason, err.message))
    run.context = config.status_context
    run.config_sha = config_sha256(config)
    run.extra["config"] = {"path": config_path, "ref": run.base, "sha256": run.config_sha}
    key_env = config.reviewer.key_env()
    api_key = inputs.get("api-key") or env.get(key_env) or None
    if api_key and api_key not in run.secrets:
        run.secrets.append(api_key)
        report.emit(report.mask_commands([api_key]), run.out)

    pull = run.pull
    if pull is not None and pull.draft and config.skip_drafts:
        skipped = replace(
            blocked(
                State.NEEDS_HUMAN,
                "draft",
                "draft pull request: the review is skipped until it is marked ready for review",
            ),
            description="draft: review skipped until the pull request is ready for review",
        )
        return _post_final(run, skipped, status=Status.PENDING, state="skipped")

    _post(run, Status.PENDING, describe("pending", "review in progress"))
    run.pending_posted = True

    override = _override(run, config)
    if override is not None:
        return _post_final(run, override)

    marker = _apply_marker(gh, run.head)
    if marker is not None:
        return _post_final(run, marker)

    missing = _missing_credentials(run, config, api_key, key_env)
    if missing is not None:
        return _post_final(run, missing)

    # pinned to the SHAs reviewed: never the pull request's current diff, which a push
    # could change between this fetch and the head re-check below
    fetch = gh.compare_diff(run.base, run.head)
    if fetch.note:
        run.notes.append(fetch.note)
    if pull is not None:
        now = gh.get_pull(pull.number)
        if now.head_sha != run.head:
            return _post_final(
                run,
                blocked(
                    State.INCOMPLETE,
                    "superseded",
                    f"superseded: the head moved to {now.head_sha[:12]} while the diff was "
                    "fetched; the run for the new head decides",
                ),
            )
        moved = _base_moved(run, now)
        if moved:
            return _post_final(
                run,
                blocked(
                    State.INCOMPLETE,
                    "superseded",
                    f"superseded: {moved} while the diff was fetched; the review under the "
                    "new base decides (re-run the job if none started)",
                ),
            )
    sections = list(fetch.sections)
    expected = pull.changed_files if pull is not None else None
    if expected is not None and file_count(sections) < expected:
        # GitHub lists at most 3000 files; whatever it did not list was not reviewed
        sections.append(unlisted(expected - file_count(sections)))
    elif expected is None and fetch.capped_at is not None:
        # a merge group has no PR file count: a list that reached GitHub's cap may have
        # left files out, so coverage cannot be called complete
        sections.append(possibly_unlisted(fetch.capped_at))
    selected = select_diff(sections, config, source=fetch.source)
    run.coverage = coverage = selected.coverage
    run.extra["coverage"] = coverage.to_json()
    empty = nothing_reviewed(coverage)
    if empty is not None:
        return _post_final(run, empty)

    try:
        run.result = result = review_diff(
            selected.data,
            config,
            api_key=api_key,
            extra_cert=run.extra,
            sleep=sleep,
            coverage=coverage,
        )
    except (UsageError, ConfigError) as err:
        return _post_final(run, blocked(State.NEEDS_HUMAN, err.reason, err.message))
    decision = result.decision
    if result.review_decision is not None and decision is not result.review_decision:
        run.extra["review_decision"] = result.review_decision.to_json()
    run.notes.extend(result.notes)
    return _post_final(run, decision)


def _load_config(gh: GitHubClient, path: str, base: str, inputs: Mapping[str, str]) -> Config:
    raw = gh.read_file(path, base)
    source = f"{path}@{base[:12]}"
    if raw is None:
        config = default_config()
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ConfigError(
                f"{source}: not UTF-8 (byte {err.start}); fix: save the file as UTF-8",
                reason="config_encoding",
            ) from err
        config = parse_config(text, source=source)
    return apply_inputs(config, inputs)


def _override(run: Run, config: Config) -> Decision | None:
    """A human override: the override label just applied, by a writer, on this exact head."""
    target, pull, gh = run.target, run.pull, run.gh
    if target is None or pull is None or gh is None:
        return None
    if target.action != "labeled" or target.label != config.override_label:
        return None
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
    run.extra["override"] = {
        "login": login,
        "permission": permission,
        "label": config.override_label,
        "head_sha": run.head,
    }
    detail = (
        f"overridden by @{login} ({permission}) with the label {config.override_label!r} "
        f"on {run.head[:12]}; no model review was used for this status"
    )
    return Decision(
        state=State.PASS,
        status=Status.SUCCESS,
        reason="override",
        description=f"overridden by @{login}"[:140],
        detail=detail,
    )


def _apply_marker(gh: GitHubClient, head: str) -> Decision | None:
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


def _missing_credentials(
    run: Run, config: Config, api_key: str | None, key_env: str
) -> Decision | None:
    if api_key:
        return None
    try:
        probe = config.reviewer.to_settings(None)
    except ConfigError:
        return None  # review_diff reports it with the config's own message
    explicit = bool(config.reviewer.api_key_env)
    if not (explicit or needs_api_key(probe)):
        return None
    if run.pull is not None and run.pull.is_fork:
        return blocked(
            State.NEEDS_HUMAN,
            "fork_no_credentials",
            f"fork PR without reviewer credentials: {key_env} is not available to runs "
            "from forks; use pull_request_target (the gate never checks out fork code) "
            "or review by hand",
        )
    return blocked(
        State.NEEDS_HUMAN,
        "missing_api_key",
        f"no reviewer API key: set the secret in {key_env} or the action input api-key",
    )


# --- statuses, certificate, report ----------------------------------------------------


def _post(run: Run, status: Status, description: str) -> None:
    assert run.gh is not None
    run.gh.create_status(
        run.head,
        state=str(status),
        description=description,
        context=run.context,
        target_url=run.run_url,
    )


def _post_final(
    run: Run, decision: Decision, *, status: Status | None = None, state: str | None = None
) -> Decision:
    """Post the final status on the reviewed SHA (re-reading the head first)."""
    posted = status or decision.status
    description = decision.description
    if run.pull is not None and run.gh is not None and decision.reason != "superseded":
        now = run.gh.get_pull(run.pull.number)
        moved = _base_moved(run, now)
        if moved:
            # same head, other base: a decision made under the old base's diff and config
            # must not stand for the new base (a success would pass the retargeted PR)
            run.extra["review_decision"] = decision.to_json()
            run.extra["base_moved_to"] = {"ref": now.base_ref, "sha": now.base_sha}
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
            posted, description, state = decision.status, decision.description, None
        elif now.head_sha != run.head:
            run.extra["superseded_by"] = now.head_sha
            description = describe(f"superseded by {now.head_sha[:7]}", decision.description)
            run.notes.append(
                f"the head moved to {now.head_sha[:12]} during the review; this status is on "
                f"the reviewed commit {run.head[:12]}, the run for the new head decides"
            )
    # what is about to be posted, for the certificate; "posted" and "final_state" are set
    # only once GitHub has accepted the status, so a failed post never reports this state
    run.extra["status_to_post"] = {
        "status": str(posted),
        "description": description,
        "sha": run.head,
    }
    # the evidence first: a status is posted only once its certificate is on disk
    try:
        run.cert_path, run.digests = _write_artifacts(run, decision)
    except Exception as err:  # noqa: BLE001 - whatever broke, no status without its evidence
        failed = blocked(
            State.INCOMPLETE,
            "certificate_unwritten",
            f"the certificate could not be written ({type(err).__name__}: {err}); "
            "check certificate-dir / RUNNER_TEMP",
        )
        run.extra.setdefault("review_decision", decision.to_json())
        run.cert_path, run.digests = None, {}
        run.artifacts_done = True
        _post(run, Status.ERROR, failed.description)
        _record_posted(run, Status.ERROR, failed.description, str(failed.state))
        return failed
    run.artifacts_done = True
    try:
        _post(run, posted, description)
    except Exception:
        # GitHub did not take the status: the certificate must not claim this decision;
        # run_action reports the error and _finish rewrites the certificate with it
        run.extra.setdefault("review_decision", decision.to_json())
        run.artifacts_done = False
        raise
    _record_posted(run, posted, description, state or str(decision.state))
    return decision


def _base_moved(run: Run, now: PullInfo) -> str:
    """How the pull request was retargeted since the run read it ("" when it was not).

    Only a change of base *branch* supersedes the review (its config and its diff
    belong to another target). New commits on the same base branch move the base
    SHA all the time in a busy repository; the diff reviewed (base...head) is still
    the pull request's change, so that alone must not turn every review into an
    error that nothing re-runs.
    """
    first = run.pull
    if first is None or now.base_ref == first.base_ref:
        return ""
    return (
        f"the base moved from {first.base_ref}@{run.base[:12]} "
        f"to {now.base_ref}@{now.base_sha[:12]}"
    )


def _ignored(run: Run) -> int:
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
    return 0


def _record_posted(run: Run, status: Status, description: str, state: str) -> None:
    """After GitHub accepted a final status: what the outputs, summary and log report."""
    run.extra["posted"] = {"status": str(status), "description": description, "sha": run.head}
    run.extra["final_state"] = state


def _best_effort_error(run: Run, decision: Decision) -> None:
    """After an error, try to replace a posted pending with an error status."""
    if run.gh is None or not run.head:
        return
    try:
        _post(run, Status.ERROR, decision.description)
        run.extra["posted"] = {
            "status": "error",
            "description": decision.description,
            "sha": run.head,
        }
    except GitHubError as err:
        run.notes.append(f"could not post the error status: {err.message}")
    except Exception as err:  # noqa: BLE001 - run_action must never raise
        run.notes.append(f"could not post the error status: {type(err).__name__}: {err}")


def _write_artifacts(run: Run, decision: Decision) -> tuple[str | None, dict[str, str]]:
    """Certificate + raw response, atomically, in certificate-dir / RUNNER_TEMP."""
    folder = Path(
        run.inputs.get("certificate-dir") or run.env.get("RUNNER_TEMP") or tempfile.gettempdir()
    )
    folder.mkdir(parents=True, exist_ok=True)
    run_id = run.env.get("GITHUB_RUN_ID") or str(os.getpid())
    stem = f"review-gate-{(run.head or 'nohead')[:12]}-{run_id}"
    result = run.result
    digests: dict[str, str] = {}
    if result is not None:
        binding = result.binding
        attempts = result.outcome.attempts
        inputs = dict(result.certificate.get("inputs", {}))
        envelope = result.outcome.envelope
        context = {**result.certificate.get("context", {}), **run.extra}
        digests["prompt"] = result.prompt_sha256
        if envelope is not None:
            digests["envelope"] = hashlib.sha256(envelope).hexdigest()
        if result.outcome.raw:
            raw_path = folder / f"{stem}.response"
            digests["raw_response"] = atomic_write(raw_path, result.outcome.raw)
            context["raw_response"] = {"path": str(raw_path), "sha256": digests["raw_response"]}
    else:
        diff_sha = run.coverage.diff_sha if run.coverage else ""
        policy = run.config.policy_version if run.config else ""
        binding = Binding(diff_sha=diff_sha, policy_version=policy)
        attempts = ()
        inputs = {k: v for k, v in (("diff", diff_sha), ("config", run.config_sha)) if v}
        envelope = None
        context = dict(run.extra)
    if binding.diff_sha:
        digests["diff_sha"] = binding.diff_sha
    if run.config_sha:
        digests["config"] = run.config_sha
    cert = certificate.build(
        decision,
        binding=binding,
        attempts=attempts,
        inputs=inputs,
        envelope=envelope,
        extra=context,
    )
    path = folder / f"{stem}.certificate.json"
    # secrets shorter than 8 characters would match by chance (and are no real keys)
    real = [s for s in run.secrets if len(s) >= 8]
    digests["certificate"] = certificate.write(path, cert, secrets=real)
    return str(path), digests


def _finish(run: Run, decision: Decision, fail_job: bool, *, posted: bool) -> int:
    state = str(run.extra.get("final_state") or decision.state)
    if not run.artifacts_done:  # the run stopped before the final status
        try:
            run.cert_path, run.digests = _write_artifacts(run, decision)
        except Exception as err:  # noqa: BLE001 - reported; the state stays the blocked one
            run.cert_path, run.digests = None, {}
            run.notes.append(f"could not write the certificate: {type(err).__name__}: {err}")
    cert_path, digests = run.cert_path, run.digests
    if run.pull is not None and run.config is not None and run.config.sticky_comment and posted:
        body = report.comment_body(_report(run, decision, state, cert_path, digests))
        try:
            assert run.gh is not None
            run.gh.upsert_comment(
                run.pull.number, marker=report.comment_marker(run.context), body=body
            )
        except GitHubError as err:
            run.notes.append(f"could not update the PR comment: {err.message}")
    rep = _report(run, decision, state, cert_path, digests)
    report.emit(report.annotation_commands(rep), run.out)
    try:
        report.append_summary(run.env.get("GITHUB_STEP_SUMMARY"), report.summary_markdown(rep))
        report.write_outputs(run.env.get("GITHUB_OUTPUT"), report.outputs_for(rep))
    except OSError as err:
        report.emit([f"::warning::could not write the summary/outputs: {err}"], run.out)
    if rep.status == "none" or not run.head:
        line = f"review-gate: no status posted: {rep.description}"
    else:
        line = f"review-gate: {rep.status} on {run.head[:12]}: {rep.description}"
    report.emit([line], run.out)
    if state == "pass" and decision.status is Status.SUCCESS:
        return 0
    if not fail_job:
        return 0
    if state == "skipped":
        return EXIT_BLOCKED
    return exit_code(decision)


def _report(
    run: Run, decision: Decision, state: str, cert_path: str | None, digests: Mapping[str, str]
) -> report.Report:
    posted = run.extra.get("posted") or {}
    return report.Report(
        decision=decision,
        state=state,
        status=str(posted.get("status", "none")),
        description=str(posted.get("description", decision.description)),
        context=run.context,
        subject=run.subject,
        sha=run.head,
        coverage=run.coverage,
        attempts=run.result.outcome.attempts if run.result else (),
        digests=digests,
        certificate_path=cert_path,
        run_url=run.run_url,
        notes=tuple(run.notes),
    )


def _usage_failure(run: Run, err: UsageError) -> int:
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
    return EXIT_USAGE
