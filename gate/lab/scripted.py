"""A scripted reviewer for backtests: each diff names how the model behaves, so every rate
a backtest reports has a right answer known in advance.

:class:`Scripted` is a :class:`~gate.lab.sim.ReviewerSimulator` ``chooser``: it reads the
request's prompt, finds the first ``sim:MODE`` the diff holds (none: ``pass``) and answers
with a verdict bound to the prompt's own ``diff_sha`` and policy:

=============  ===============================================================
``pass``       a confident pass
``fail``       a fail (a block about the code)
``lowconf``    a pass at confidence 0.5 (``needs_human``, low_confidence: about the code)
``malformed``  text with no verdict (``needs_human``: not about the code)
``cut``        the connection cut mid-answer, every attempt (``incomplete``)
``coin``       pass or fail by a seeded coin per (diff, n-th ask): :func:`coin`
``ratelimit``  the diff's first request gets 429 with ``Retry-After``, then a pass
``slow``       a pass after ``slow_s`` more seconds
=============  ===============================================================

``latency`` delays every answer (the bench's fixed latency). Thread-safe: the simulator
calls its chooser under its own lock.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from gate.decide.readback import words_for, words_in
from gate.lab.sim import SimResponse, extract_prompt
from gate.review.prompt import binding_in

MARK = re.compile(r"sim:([a-z]+)")
MODES = ("pass", "fail", "lowconf", "malformed", "cut", "coin", "ratelimit", "slow")


def coin(seed: int, diff_sha: str, n: int) -> str:
    """The seeded coin's verdict for the ``n``-th ask (0-based) of the diff ``diff_sha``."""
    return "pass" if random.Random(f"{seed}:{diff_sha}:{n}").random() < 0.5 else "fail"


def verdict(
    kind: str,
    diff_sha: str,
    policy: str,
    confidence: float = 0.9,
    read: Mapping[str, str] | None = None,
) -> str:
    """A fenced verdict repeating ``read`` (default: every read word of the prompt)."""
    obj = {
        "verdict": kind,
        "reasons": [f"scripted {kind}"],
        "confidence": confidence,
        "read": dict(read) if read is not None else words_for(diff_sha, policy),
        "diff_sha": diff_sha,
        "policy_version": policy,
    }
    return "```json\n" + json.dumps(obj) + "\n```\n"


class Scripted:
    """The chooser (module docstring)."""

    def __init__(
        self,
        dialect: str = "openai",
        *,
        seed: int = 0,
        latency: float = 0.0,
        slow_s: float = 0.5,
        retry_after: str = "0.2",
    ) -> None:
        self.dialect, self.seed, self.latency = dialect, seed, latency
        self.slow_s, self.retry_after = slow_s, retry_after
        self.asked: dict[str, int] = defaultdict(int)

    def __call__(self, body: dict[str, Any]) -> SimResponse:
        system, user = extract_prompt(self.dialect, body)
        read = words_in(f"{system}\n{user}")
        binding = binding_in(user)
        if binding is None:
            return SimResponse(content="no binding in the prompt")
        found = MARK.search(user)
        mode = found.group(1) if found and found.group(1) in MODES else "pass"
        n = self.asked[binding.diff_sha]
        self.asked[binding.diff_sha] += 1
        sha, policy = binding.diff_sha, binding.policy_version
        delay = self.latency + (self.slow_s if mode == "slow" else 0.0)
        paced: dict[str, Any] = {"split_at": (1,), "pause": delay} if delay > 0 else {}
        if mode == "ratelimit" and n == 0:
            return SimResponse(status=429, retry_after=self.retry_after)
        if mode == "cut":
            return SimResponse(content=verdict("pass", sha, policy, read=read), cut_after=300)
        if mode == "malformed":
            return SimResponse(content="I looked at it and it seems fine.", **paced)
        kind = {"fail": "fail", "coin": coin(self.seed, sha, n)}.get(mode, "pass")
        confidence = 0.5 if mode == "lowconf" else 0.9
        return SimResponse(content=verdict(kind, sha, policy, confidence, read), **paced)
