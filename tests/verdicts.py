"""Verdicts for tests, built as the contract has them (docs/verdict.md), so a test that
crafts an answer names what it varies and nothing else.

* :func:`read_words`: the ``read`` member a reviewer that saw the whole prompt writes;
* :func:`verdict_obj`: the verdict object (all six members), any of them overridden;
* :func:`fenced_verdict`: the same in the one ```` ```json ```` fence;
* :func:`answer_to`: the answer an honest reviewer gives to a prompt it received (the
  request's text, or a :class:`~gate.review.prompt.Prompt`): bound to the binding it saw,
  repeating the read words it saw (none from a part it did not see).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gate.decide.decision import Binding, binding_in
from gate.decide.readback import words_for, words_in
from gate.lab.demo import request_text
from gate.review.prompt import Prompt


def read_words(diff_sha: str | Binding, policy_version: str = "") -> dict[str, str]:
    """The read words of the prompt bound to ``diff_sha`` and ``policy_version`` (or to
    one :class:`Binding`)."""
    if isinstance(diff_sha, Binding):
        return words_for(diff_sha.diff_sha, diff_sha.policy_version)
    return words_for(diff_sha, policy_version)


def verdict_obj(
    diff_sha: str | Binding,
    policy_version: str = "",
    /,
    *,
    verdict: str = "pass",
    reasons: Any = ("the change is fine",),
    confidence: Any = 0.9,
    **over: Any,
) -> dict[str, Any]:
    """The verdict object bound to (``diff_sha``, ``policy_version``) with its read words;
    ``over`` replaces members (``read=...``, ``diff_sha=...``)."""
    if isinstance(diff_sha, Binding):
        diff_sha, policy_version = diff_sha.diff_sha, diff_sha.policy_version
    obj: dict[str, Any] = {
        "verdict": verdict,
        "reasons": list(reasons) if isinstance(reasons, tuple) else reasons,
        "confidence": confidence,
        "diff_sha": diff_sha,
        "policy_version": policy_version,
        "read": read_words(diff_sha, policy_version),
    }
    obj.update(over)
    return obj


def fenced_verdict(*args: Any, before: str = "", indent: int | None = None, **kw: Any) -> str:
    """:func:`verdict_obj` in the one ```` ```json ```` fence, after ``before``."""
    return f"{before}```json\n{json.dumps(verdict_obj(*args, **kw), indent=indent)}\n```\n"


def answer_to(prompt: Prompt | Mapping[str, Any] | str, *, before: str = "", **kw: Any) -> str:
    """An honest reviewer's answer to ``prompt`` (a Prompt, a request body of any dialect,
    or text): bound to the binding it holds, repeating the read words it holds; ``kw`` as
    :func:`verdict_obj` (``verdict="fail"``, ``confidence=0.5``, ...)."""
    if isinstance(prompt, Prompt):
        text = f"{prompt.system}\n{prompt.user}"
    elif isinstance(prompt, str):
        text = prompt
    else:
        text = request_text(prompt)
    binding = binding_in(text)
    if binding is None:
        raise AssertionError("the prompt carries no binding")
    kw.setdefault("read", words_in(text))
    return fenced_verdict(binding, before=before, **kw)
