"""Class: a paid request missing from the reported cost.

Every request the reviewer answered is paid for: each retry, each of the ``agreement``
answers, each chunk. Before issue 20 the whole-diff path reported the first answer's
attempts only, so ``--agreement 3`` showed the cost of one call. Generated: the number of
answers, the chunking, and which responses are cut (a cut response has no usage and is
retried). The oracle is the simulator's own count of the requests it served.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.cli import main
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse
from tests.integration.test_review_cli import model

PRICE_IN, PRICE_OUT = 3.0, 15.0


def _diff(files: int) -> bytes:
    out = b""
    for n in range(files):
        body = b"".join(b"+line %d of file %d\n" % (i, n) for i in range(60))
        out += b"diff --git a/f%d.py b/f%d.py\n--- a/f%d.py\n+++ b/f%d.py\n" % (n, n, n, n)
        out += b"@@ -0,0 +1,60 @@\n" + body
    return out


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    answers=st.integers(1, 3),
    chunked=st.booleans(),
    cuts=st.lists(st.booleans(), max_size=3),
)
def test_every_paid_request_is_counted(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answers: int,
    chunked: bool,
    cuts: list[bool],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef-not-real")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    folder = tmp_path_factory.mktemp("cost")
    diff = folder / "change.diff"
    diff.write_bytes(_diff(3))
    config = folder / "review-gate.yml"
    text = f"pricing:\n  {MODEL}: {{input: {PRICE_IN}, output: {PRICE_OUT}}}\n"
    if chunked:
        text += "max_chunk_bytes: 2048\nconcurrency: 1\n"
    config.write_text(text)
    # the first requests as scripted (a cut one is retried), then whole answers
    script = [SimResponse(cut_after=60) if cut else SimResponse() for cut in cuts]
    with ReviewerSimulator("openai", model("openai"), script=script) as sim:
        argv = ["review", "--diff", str(diff), "--provider", "openai", "--model", MODEL]
        argv += ["--base-url", sim.base_url, "--config", str(config), "--json"]
        argv += ["--agreement", str(answers), "--attempts", "3"]
        capsys.readouterr()
        main(argv)
        out = capsys.readouterr().out
        served = sim.count
    spent = json.loads(out)["cost"]
    assert served >= answers
    # one row per request the reviewer served: none left out, none counted twice
    assert len(spent["attempts"]) == served, (served, spent)
    rows = spent["attempts"]
    if all(row["input_tokens"] is not None for row in rows):
        assert spent["input_tokens"] == sum(row["input_tokens"] for row in rows)
        assert spent["output_tokens"] == sum(row["output_tokens"] for row in rows)
        want = (spent["input_tokens"] * PRICE_IN + spent["output_tokens"] * PRICE_OUT) / 1e6
        assert spent["cost"] == pytest.approx(want)
    else:  # a cut response reported no usage: the total is unknown, never the smaller sum
        assert spent["cost"] is None
