"""A bar per base: a sibling's pass holds only for its own whole question (issue 31, finding 10).

Class: *the sibling check compares the selected bytes, not the coverage.* A commit status
lands on the commit, so a ``success`` satisfies every open pull request whose head that
commit is. The gate withholds it while another open pull request of the same head asks
another question; but it compared only the selected bytes and the config. Two bases whose
merge bases differ only by files the gate cannot review (a binary file, which the
selection leaves out) give the same selected bytes: pull request #8 blocks on coverage,
and #7's pass of the same bytes turned the shared head green for #8.

The fix: the sibling's question is its selected bytes, its coverage and its config; a
pass holds for it only when its coverage would let the same pass stand under its own
base (:func:`gate.action.guards.siblings`).

The variants generate the unreviewable files (names, count), which pull request is opened
first and the event that decides #7 again (a reopen, or a writer's fresh review by label
or comment command); the head must never show ``success`` while #8 is open and not covered.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.action.guards import FRESH_LABEL as FRESH
from gate.lab.demo import verdict_block
from gate.lab.sim import ReviewerSimulator, extract_prompt
from gate.review.prompt import binding_in
from tests.adversarial.test_state_machine import reset
from tests.fakes.events import issue_comment_event, pull_request_event
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import CONFIG_PATH, REPO, run_gate

Sim = Callable[..., ReviewerSimulator]
MAIN, STAGING, HEAD = "2" * 40, "4" * 40, "c3" * 20
CODE = (
    b"diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n"
    b"@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
)


def binary(path: str, number: int) -> bytes:
    return (
        f"diff --git a/{path} b/{path}\nindex 1111111..{number:07x} 100644\n"
        f"Binary files a/{path} and b/{path} differ\n"
    ).encode()


def passes(request: dict[str, Any]) -> str:
    binding = binding_in(extract_prompt("openai", request)[1])
    assert binding is not None
    return verdict_block(binding, "pass", ["the change is fine"], 0.95)


names = st.lists(
    st.from_regex(r"[a-z]{1,8}/[a-z]{1,8}\.(bin|dat|so|o|db)", fullmatch=True),
    min_size=1,
    max_size=3,
    unique=True,
)


@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    files=names,
    first=st.sampled_from([7, 8]),
    again=st.sampled_from(["reopened", "fresh_label", "command"]),
)
def test_a_sibling_left_partly_unreviewed_is_not_passed_by_its_twin(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Sim,
    files: list[str],
    first: int,
    again: str,
) -> None:
    fake = reset(fake_github)
    fake.permissions["maintainer"] = "write"
    for base in (MAIN, STAGING):  # the same config on both bases: only coverage differs
        fake.set_file(base, CONFIG_PATH, "policy_version: 'strict'\n")
    sim = sim_factory(passes)  # every answer passes
    unreviewable = b"".join(binary(path, i + 1) for i, path in enumerate(files))
    bases = {7: (MAIN, "main", CODE), 8: (STAGING, "staging", CODE + unreviewable)}

    def run(number: int, action: str) -> int:
        base, _ref, _diff = bases[number]
        if action == "command":  # a writer asks #7 afresh: fair for #7, never for #8
            payload = issue_comment_event(
                repository=REPO, number=number, body="/review-gate review", login="maintainer"
            )
            return run_gate(tmp_path, fake, sim, payload, event="issue_comment").code
        label = FRESH if action == "fresh_label" else None
        payload = pull_request_event(
            "labeled" if label else action, repository=REPO, number=number, head_sha=HEAD,
            base_sha=base, label=label, sender="maintainer",
        )  # fmt: skip
        return run_gate(tmp_path, fake, sim, payload).code

    for number in (first, 15 - first):
        base, ref, diff = bases[number]
        fake.add_pull(number, head_sha=HEAD, base_sha=base, diff=diff, base_ref=ref)
        run(number, "opened")
    run(7, again)
    newest = [s for s in fake.status_list(HEAD) if s["context"] == "review-gate"][-1]
    assert newest["state"] != "success", (
        f"#8 into staging leaves {files} unreviewed, yet its head shows {newest}"
    )
    assert fake.violations == [], fake.violations
