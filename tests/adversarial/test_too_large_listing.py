"""Class: the prompt's scope saying something the plan does not do.

Cause: every chunk's prompt lists every file of the pull request and says the files not in
this chunk are "in other chunks". The list was computed before the plan, so a file the
plan left out (``too_large``: one hunk over a chunk) was listed as an ordinary change
(``modified``), in no chunk at all; with ``allow_partial_coverage: true`` the reviewer was
told it had been covered elsewhere.

Fix: the list and the plan are computed together (:func:`gate.review.pipeline.chunk_setup`,
:func:`gate.review.chunks.plan_file_list`): a file the plan leaves out is listed once, as
``not reviewed: too_large``, and the scope text says such files are in no chunk.

Variants: a too-large file at every position among reviewed ones, one or two of them,
through the real prompts the reviewer receives.
"""

from __future__ import annotations

import json
import re
from typing import Any
from unittest import mock

import pytest

from gate.config.model import Config, ReviewerConfig
from gate.decide import envelope
from gate.decide.attempt import ReviewOutcome
from gate.lab.demo import answer
from gate.review.pipeline import review_diff
from gate.review.prompt import binding_in
from gate.review.scope import select_diff
from gate.reviewers.pool import PacedOutcome


def _file(name: str, lines: int) -> str:
    head = f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
    return head + f"@@ -1 +1,{lines} @@\n-old\n" + "".join(f"+x_{j} = {j}\n" for j in range(lines))


def _variants() -> list[tuple[int, tuple[int, ...]]]:
    return [(4, (at,)) for at in range(5)] + [(4, (0, 4)), (3, (1, 2))]


@pytest.mark.parametrize(("small", "big_at"), _variants())
def test_a_left_out_file_is_listed_as_not_reviewed(small: int, big_at: tuple[int, ...]) -> None:
    parts = [_file(f"src/m{i}.py", 20) for i in range(small)]
    big = {f"gen/big{i}.py" for i in range(len(big_at))}
    for offset, (name, at) in enumerate(zip(sorted(big), big_at, strict=True)):
        parts.insert(at + offset, _file(name, 400))
    reviewer = ReviewerConfig(provider="openai", model="m", base_url="http://127.0.0.1:9")
    config = Config(
        reviewer=reviewer, max_chunk_bytes=900, concurrency=1, allow_partial_coverage=True
    )
    selected = select_diff("".join(parts).encode(), config)
    users: list[str] = []

    def respond(settings: Any, *, system: str, user: str, **_: Any) -> PacedOutcome:
        users.append(user)
        binding = binding_in(user)
        assert binding is not None
        sealed = envelope.seal(answer("pass", binding).encode())
        return PacedOutcome(ReviewOutcome(attempts=(), envelope=sealed))

    with mock.patch("gate.review.chunked.review_paced", respond):
        result = review_diff(
            selected.data, config, api_key="k", coverage=selected.coverage, sleep=lambda _s: None
        )
    assert result.coverage is not None
    assert {s.path for s in result.coverage.skipped} == big
    assert users
    for user in users:
        assert "listed as not reviewed, which are in no chunk" in user
        listed = re.findall(r"^(.+?) (\d+) (\".*\")$", user, re.MULTILINE)
        status = {json.loads(path): change for change, _, path in listed}
        for name in big:
            assert status.get(name) == "not reviewed: too_large", (name, status)
        rows = [json.loads(path) for _, _, path in listed]
        assert len(rows) == len(set(rows)) == small + len(big)
