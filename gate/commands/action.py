"""``review-gate action``: run as the GitHub Action (the container's entry point)."""

from __future__ import annotations

import argparse

NAME = "action"
ORDER = 50
HELP = "run as the GitHub Action: review the event's pull request and post a commit status"
DESCRIPTION = """\
The container's entry point. Reads the workflow event (GITHUB_EVENT_NAME,
GITHUB_EVENT_PATH), the action inputs (INPUT_*; an undeclared one is an error),
the config file from the pull request's BASE commit, fetches the diff of exactly
base_sha...head_sha, asks the reviewer, and posts a commit status on the reviewed
head SHA: pending first, then success / failure / error.

Writes the job summary (GITHUB_STEP_SUMMARY) and seventeen step outputs
(GITHUB_OUTPUT): state, verdict, description, certificate, reason, family
(rejected, needs_human, coverage; unavailable or config: not about the
code), status (none when no status was posted), sha, diff-sha, input-tokens,
output-tokens, cost, cost-bound, cost-likely (empty when unknown), statement,
predicate and sarif (paths; empty when not written). The certificate, the raw
response, the in-toto statement of the decision with its predicate and, with
sarif: true, the SARIF log go to the certificate-dir input (action.yml default:
review-gate-certificate, relative to the workspace), else RUNNER_TEMP.

Supported events: pull_request and pull_request_target (opened, synchronize,
reopened, ready_for_review, labeled, unlabeled (of the override label: decided
again without it; of any other label: nothing to do), and edited when the base
branch changed),
merge_group (checks_requested), workflow_dispatch (with the pr-number input), and
issue_comment (created, holding the comment command /review-gate review).

exit codes: 0 pass, or any decision with fail-job: false; 1 fail; 2 usage error
(unsupported event, missing environment, invalid fail-job; also with fail-job:
false); 3 needs_human / incomplete / draft skipped.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # everything comes from the environment, as GitHub passes it


def run(args: argparse.Namespace) -> int:
    from gate.action.run import run_action

    del args
    return run_action()
