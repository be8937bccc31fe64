"""``review-gate action``: run as the GitHub Action (the container's entry point)."""

from __future__ import annotations

import argparse

NAME = "action"
ORDER = 50
HELP = "run as the GitHub Action: review the event's pull request and post a commit status"
DESCRIPTION = """\
The container's entry point. Reads the workflow event (GITHUB_EVENT_NAME,
GITHUB_EVENT_PATH), the action inputs (INPUT_*), the config file from the pull
request's BASE commit, fetches the diff, asks the reviewer, and posts a commit
status on the reviewed head SHA: pending first, then success / failure / error.
Writes the job summary (GITHUB_STEP_SUMMARY), step outputs (GITHUB_OUTPUT:
state, verdict, description, certificate) and the certificate to RUNNER_TEMP.

Supported events: pull_request and pull_request_target (opened, synchronize,
reopened, ready_for_review, labeled), merge_group, workflow_dispatch (with the
pr-number input).

exit codes: 0 pass (or fail-job: false), 1 fail, 2 usage error (unsupported
event, missing environment), 3 needs_human / incomplete / draft skipped.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # everything comes from the environment, as GitHub passes it


def run(args: argparse.Namespace) -> int:
    from gate.run import run_action

    del args
    return run_action()
