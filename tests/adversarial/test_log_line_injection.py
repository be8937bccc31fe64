"""Class: reviewer-controlled words forging workflow commands through the live lines the
action writes to the job's log while it reviews (issue 20's heartbeat, now in the action).

Cause: each attempt is logged as it ends (:func:`gate.reviewers.transport.attempt_line`),
and its detail carries a provider's own error words; its provider and chunk names come
from the config. Unescaped, a line break in them starts a line the runner reads as its
own command (``::add-mask::``, ``::stop-commands::``, ``::error::``), ``##[`` is a legacy
command anywhere in a line, and two threads writing at once (the chunks' workers, the
heartbeat) could run two lines into one.

Fix: :class:`gate.action.progress.LogLines` writes each line through
:func:`gate.safe.untrusted.line` (redacted, escaped, neutral) and
:func:`gate.action.report.emit`, whole, under one lock.

Oracle: the runner's own parser (``tests/fakes/runner.py``, ported from
``ActionCommand.TryParseV2`` and ``TryParse``, over lines split as .NET's ``ReadLine``
splits them). Variants: Hypothesis builds attempts from every character that parser gives
a meaning to; threads write at once; and one whole run posts a provider's hostile error
body through the action.
"""

from __future__ import annotations

import io
import json
import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.action.progress import LogLines
from gate.decide.attempt import Attempt, ChunkAttempt, EndReason
from gate.lab.sim import SimResponse
from gate.reviewers.transport import attempt_line
from tests.adversarial.test_annotation_injection import TEXT
from tests.fakes.runner import commands_in, runner_lines
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import (
    API_KEY,
    HEAD,
    pr_payload,
    run_gate,
    setup_pull,
)

fake = base.fake
sim_factory = base.sim_factory


def _attempt(detail: str, provider: str, chunk: str | None) -> Attempt:
    attempt = Attempt(
        number=1,
        provider=provider,
        complete=False,
        reason="http_error",
        detail=detail,
        end_reason=EndReason.HTTP_ERROR,
        http_status=400,
    )
    return attempt if chunk is None else ChunkAttempt.of(attempt, chunk)


@settings(max_examples=300, deadline=None)
@given(
    details=st.lists(TEXT, min_size=1, max_size=4),
    provider=TEXT,
    chunk=st.none() | TEXT,
)
def test_an_attempts_words_make_no_command_and_stay_one_line(
    details: list[str], provider: str, chunk: str | None
) -> None:
    out = io.StringIO()
    log = LogLines(out)
    for detail in details:
        log(attempt_line(_attempt(detail, provider, chunk), 2))
        log(detail)  # a line that is untrusted from its first character
    text = out.getvalue()
    assert commands_in(text) == [], text
    assert "##[" not in text
    assert len(runner_lines(text)) == 2 * len(details) + 1  # one line each, then the end


class _PiecewiseStream(io.StringIO):
    """A stream whose writes land in pieces, yielding to other threads between them (as a
    pipe's partial writes can): only a lock keeps two writers' lines apart."""

    def write(self, text: str) -> int:
        for start in range(0, len(text), 64):
            super().write(text[start : start + 64])
            time.sleep(0)
        return len(text)


def test_lines_written_from_threads_at_once_stay_whole() -> None:
    out = _PiecewiseStream()
    log = LogLines(out)
    words = [f"worker {n}: " + "x" * 2000 for n in range(4)]
    start = threading.Barrier(len(words))

    def write(text: str) -> None:
        start.wait(timeout=10)
        for _ in range(50):
            log(text)

    threads = [threading.Thread(target=write, args=(w,)) for w in words]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    lines = runner_lines(out.getvalue())[:-1]
    assert len(lines) == 200
    assert set(lines) == set(words)


def test_a_providers_hostile_error_body_reaches_the_log_as_words_only(
    tmp_path, fake, sim_factory
) -> None:
    hostile = (
        "quota\n::add-mask::x\r::stop-commands::tok\n##[error]forged\u2028"
        f"::error file=a.py,line=1::forged {API_KEY}"
    )
    body = json.dumps({"error": {"message": hostile, "type": "invalid_request_error"}})
    setup_pull(fake, config="policy_version: '7'\n")
    sim = sim_factory(script=(SimResponse(status=400, error_body=body),))
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3, result.stdout
    attempts = [line for line in result.stdout.splitlines() if line.startswith("attempt 1/1 ")]
    assert len(attempts) == 1, result.stdout
    assert "forged" in attempts[0]  # the words are there, as words
    shown = [line for line in result.stdout.splitlines() if not line.startswith("::add-mask::")]
    assert not any(API_KEY in line for line in shown)  # masked first, then never shown
    # the runner reads only the gate's own commands: the masks, and its one error line
    # (the words inside that are its data, escaped), none made of the provider's words
    commands = commands_in(result.stdout)
    masks = [data for name, _props, data in commands if name == "add-mask"]
    assert masks == [fake.token, API_KEY]
    others = [(name, props) for name, props, _data in commands if name != "add-mask"]
    # a 400 is an end the prompt can cause (gate.decide.ends): it stands as needs_human
    assert others == [("error", {"title": "review-gate: needs_human"})], commands
    assert "##[" not in result.stdout
    assert fake.states(HEAD)[-1] in ("failure", "error")
