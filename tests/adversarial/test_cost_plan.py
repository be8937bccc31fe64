"""Class: a max_cost estimate that does not count the requests the review will send.

Cause: :func:`gate.review.cost.over_budget` (``max_cost``, checked before any request) priced one
prompt times ``attempts``; the review asks ``agreement`` times (issue 11) and, for a diff
over one chunk, once per chunk with each chunk's own prompt and its own ``max_tokens``
(issue 10). A configured ``max_cost`` was then exceeded up to k times, or up to
``max_chunks`` times, and the size of the diff, which sets the number of chunks, is the
PR author's.

Fix: :func:`gate.review.cost.request_bytes` lists the requests the review makes, cut by
:func:`gate.review.budget.chunk_setup` exactly as the review cuts them, each asked
``agreement`` times; the estimate sums them. A split after the provider refuses a chunk
as over its window cannot be planned and is named in :mod:`gate.review.cost`'s docstring.

Variants: (agreement 1, 2, 3) x (whole diff, diff in chunks) through the whole action:
a generous max_cost lets the review run and the requests the simulator saw are priced at
their most; then the same question under a max_cost just below that must send nothing
(6 variants, 12 runs).
"""

from __future__ import annotations

import pytest

from gate.config.inputs import apply_inputs
from gate.config.load import parse_config
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    fake,
    pr_payload,
    run_gate,
    setup_pull,
    sim_factory,
)

__all__ = ["fake", "sim_factory"]

PRICED = "pricing:\n  sim-model: {input: 3, output: 15}\n"
INPUTS = {"provider": "openai", "model": "sim-model", "attempts": "1"}


def file_diff(name: str, lines: int) -> str:
    body = "".join(f"+value_{i} = {i}\n" for i in range(lines))
    return (
        f"diff --git a/{name} b/{name}\nnew file mode 100644\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{lines} @@\n{body}"
    )


SMALL = file_diff("src/a.py", 5).encode()
LARGE = "".join(file_diff(f"src/m{i}.py", 60) for i in range(3)).encode()  # ~3 chunks
LAYOUTS = {"whole": (SMALL, ""), "chunks": (LARGE, "max_chunk_bytes: 1024\n")}


def config_text(agreement: int, extra: str, max_cost: float) -> str:
    return PRICED + extra + f"agreement: {agreement}\nmax_cost: {max_cost}\n"


def prompt_bytes(request: dict) -> int:
    return sum(len(str(m.get("content", "")).encode()) for m in request["messages"])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("agreement", [1, 2, 3])
def test_max_cost_covers_every_request_the_review_sends(
    tmp_path, fake, sim_factory, agreement, layout
):
    diff, extra = LAYOUTS[layout]
    text = config_text(agreement, extra, 1000.0)
    config = apply_inputs(parse_config(text, source="test"), INPUTS)
    setup_pull(fake, diff=diff, config=text)
    sim = sim_factory()
    run_gate(tmp_path, fake, sim, pr_payload())
    sent = [prompt_bytes(r) for r in sim.requests]
    assert len(sent) == agreement * (1 if layout == "whole" else 3), "the review ran as planned"
    # what those requests may cost at most: every prompt byte a token, every answer max_tokens
    most = (sum(size + 64 for size in sent) * 3 + len(sent) * config.reviewer.max_tokens * 15) / 1e6
    # the same question under a max_cost just below that: nothing may be sent
    fake.set_file(BASE, CONFIG_PATH, config_text(agreement, extra, most * 0.99))
    again = sim_factory()
    result = run_gate(tmp_path, fake, again, pr_payload("synchronize"))
    assert again.requests == [], f"{len(again.requests)} requests sent over max_cost"
    assert result.outputs["reason"] == "over_budget"
    assert fake.violations == []
