"""The local reviewer (``demo`` and ``demo --serve``) says it is canned (issue 34, finding 5).

Its scripted model answers every diff the same way without reading it. Reasons that read
like a review ("invoice_total now rounds to the cent") shown for the user's own diff
invite the question "is it reading my diff?": each reason it gives says instead that it
is a canned answer of the local reviewer, and names nothing of any diff.
"""

from __future__ import annotations

import json

import pytest

from gate.config.model import Config
from gate.decide.decision import Binding, binding_for
from gate.lab.demo import answer, load_sample
from gate.lab.serve import MODELS, choose
from gate.review.prompt import build_prompt

#: a diff that is not the bundled sample: what a user trying `demo --serve` sends
USER_DIFF = b"""diff --git a/src/parse.py b/src/parse.py
--- a/src/parse.py
+++ b/src/parse.py
@@ -1 +1 @@
-def parse(x): return x
+def parse(x): return x.strip()
"""


def _reasons(text: str) -> list[str]:
    fenced = text.split("```json\n", 1)[1].split("\n```", 1)[0]
    reasons = json.loads(fenced)["reasons"]
    assert isinstance(reasons, list)
    return [str(r) for r in reasons]


@pytest.mark.parametrize("mode", ["pass", "fail", "echo"])
def test_every_scripted_reason_says_it_is_canned(mode: str) -> None:
    text = answer(mode, Binding("ab" * 32, "1"))
    reasons = _reasons(text.split("The answer format is:", 1)[-1].split("```\n\n", 1)[-1])
    assert reasons
    for reason in reasons:
        assert "canned answer of the local reviewer" in reason, reason
    # nothing of the bundled sample: the same words are given for every diff
    sample_names = {"invoice_total", "rounding", "tax", "LineItem", "billing"}
    assert not [r for r in reasons if any(name in r for name in sample_names)]
    assert "invoice_total" in load_sample().decode()  # the words would be the sample's


@pytest.mark.parametrize("model", [m for m in MODELS if m != "cut"])
def test_serve_answers_a_users_diff_with_canned_reasons(model: str) -> None:
    prompt = build_prompt(USER_DIFF, binding=binding_for(USER_DIFF, Config()))
    body = {"model": model, "messages": [{"role": "user", "content": prompt.user}]}
    content = choose(body).content
    assert content is not None
    reasons = _reasons(content.split("The answer format is:", 1)[-1].split("```\n\n", 1)[-1])
    assert reasons
    for reason in reasons:
        assert "canned answer of the local reviewer" in reason, reason
        assert "parse" not in reason
