"""Progress on long work, through the command line: in a review in chunks each attempt
line names its chunk (``chunk 2/3: attempt 1/3 ...``), so a reader of a 40-chunk run
knows where it is; a review in one request keeps its plain lines."""

from __future__ import annotations

import re

import pytest

from gate.cli import main
from gate.lab.sim import MODEL, ReviewerSimulator
from tests.adversarial.test_cost_every_answer import _diff
from tests.integration.test_review_cli import model


@pytest.mark.parametrize("chunked", [True, False])
def test_each_attempt_line_names_its_chunk(
    tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, chunked: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef-not-real")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    diff = tmp_path / "change.diff"
    diff.write_bytes(_diff(3))
    config = tmp_path / "review-gate.yml"
    config.write_text("max_chunk_bytes: 2048\nconcurrency: 1\n" if chunked else "")
    with ReviewerSimulator("openai", model("openai")) as sim:
        argv = ["review", "--diff", str(diff), "--provider", "openai", "--model", MODEL]
        argv += ["--base-url", sim.base_url, "--config", str(config)]
        code = main(argv)
        served = sim.count
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [line for line in err.splitlines() if "attempt 1/" in line]
    assert len(lines) == served
    if not chunked:
        assert all(line.startswith("attempt 1/3 openai") for line in lines), lines
        return
    found = [re.match(r"chunk (\d+)/(\d+): attempt 1/3 openai", line) for line in lines]
    assert all(found), lines
    totals = {int(m.group(2)) for m in found if m}
    assert len(totals) == 1
    (total,) = totals
    assert total > 1
    assert sorted(int(m.group(1)) for m in found if m) == list(range(1, total + 1))
