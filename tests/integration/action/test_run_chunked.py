"""A large pull request through the whole action: fake GitHub, simulator, chunks.

About 40 files reviewed in several chunks: every file covered, the chunk table in the
summary and the sticky comment, the manifest in the certificate; and one chunk cut on
the wire blocks the whole run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gate.lab.demo import ScriptedModel, request_text
from gate.lab.sim import ReviewerSimulator, SimResponse
from tests.fakes.github import FakeGitHub
from tests.fakes.large_pull import blob_id
from tests.integration.action.test_run_fake_github import (
    BASE,
    CONFIG_PATH,
    HEAD,
    pr_payload,
    run_gate,
)

FILES = 40


def large_diff(files: int = FILES) -> bytes:
    out = b""
    for i in range(files):
        name = f"app/part{i:02d}.py"
        out += f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
        out += b"@@ -1 +1,12 @@\n-pass\n"
        out += b"".join(f"+setting_{j} = {i * j}\n".encode() for j in range(12))
    return out


CONFIG = "max_chunk_bytes: 4096\nconcurrency: 3\n"


def setup(fake: FakeGitHub) -> None:
    fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=large_diff())
    fake.set_file(BASE, CONFIG_PATH, CONFIG)


def test_a_large_pull_request_is_reviewed_in_chunks(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    setup(fake_github)
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert result.code == 0, result.stdout
    cert = result.certificate
    chunks = cert["context"]["chunks"]["manifest"]["chunks"]
    assert len(chunks) >= 4
    assert sim.count == len(chunks)
    assert len(cert["context"]["coverage"]["reviewed"]) == FILES
    assert cert["context"]["coverage"]["complete"] is True
    assert f"### Chunks: {len(chunks)}" in result.summary
    assert f"| 1/{len(chunks)} |" in result.summary
    assert "### Chunks:" in fake_github.comments[7][0]["body"]
    assert fake_github.decided_states(HEAD) == ["pending", "success"]


def test_one_cut_chunk_blocks_the_run(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    setup(fake_github)
    # one attempt per chunk (INPUT_ATTEMPTS=1): the third request is cut mid-answer
    sim = sim_factory(
        ScriptedModel("pass"), [SimResponse(), SimResponse(), SimResponse(cut_after=300)]
    )
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert result.code == 3, result.stdout
    assert result.outputs["state"] == "incomplete"
    assert fake_github.decided_states(HEAD) == ["pending", "error"]
    states = [r["decision"]["state"] for r in result.certificate["context"]["chunks"]["reviews"]]
    assert states.count("incomplete") == 1
    assert "`incomplete`" in result.summary


def test_files_without_a_patch_are_rebuilt_from_blobs(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    old, new = b"RATE = 1\nLIMIT = 2\n", b"RATE = 1\nLIMIT = 3\nextra = True\n"
    image = b"\x89PNG\r\n\x1a\n\0\0\0"
    files = [
        {  # GitHub listed these without a patch (too large)
            "sha": blob_id(new), "filename": "big/config.py", "status": "modified",
            "additions": 2, "deletions": 1, "changes": 3,
            "blob_url": "", "raw_url": "", "contents_url": "",
        },
        {
            "sha": blob_id(image), "filename": "logo.png", "status": "added",
            "additions": 0, "deletions": 0, "changes": 0,
            "blob_url": "", "raw_url": "", "contents_url": "",
        },
    ]  # fmt: skip
    fake_github.add_pull(7, head_sha=HEAD, base_sha=BASE, files=files, refuse_diff=True)
    fake_github.set_file(BASE, "big/config.py", old)
    fake_github.set_file(HEAD, "big/config.py", new)
    fake_github.set_file(HEAD, "logo.png", image)
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    coverage = result.certificate["context"]["coverage"]
    assert coverage["reviewed"] == ["big/config.py"]
    # a PNG by name and by its blob's bytes: a binary asset (issue 20)
    assert [(s["path"], s["why"]) for s in coverage["skipped"]] == [("logo.png", "binary_asset")]
    sent = request_text(sim.requests[0])
    assert "+LIMIT = 3" in sent
    assert "+extra = True" in sent
    assert "-LIMIT = 2" in sent
    # the asset stays unreviewed and named, and does not block
    assert result.outputs["state"] == "pass"
    assert any(r.operation == "git/get-blob" for r in fake_github.requests)
