"""Class: a binary asset that is an executable file.

An asset is a file no build or interpreter runs (issue 20). The old read path
(:mod:`gate.action.assets`) took mode ``100755`` for a regular file like ``100644``, so a
``.png`` whose first bytes are PNG's signature and whose mode is executable did not
block. Such a file runs: ``\\x89PNG\\r\\n\\x1a\\n`` has no NUL before its first line
break, so ``execve`` fails with ENOEXEC and ``sh`` (or bash) runs the file as a script,
its later lines as commands; a ``run-parts`` directory, a hook or a ``./assets/x.png``
in a Makefile runs it. The fix lives in the read path: only mode ``100644`` is an asset;
an executable one blocks as any binary (partial coverage), before the reviewer is asked.

Variants: every listed type with its own signature and a shell line after it, at mode
``100755`` (not an asset) and ``100644`` (an asset), on the head (added or changed) and
on the base (deleted); and one run of the action over the fake GitHub.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

import pytest

from gate.action.assets import mark_assets
from gate.action.github.records import TreeListing
from gate.diff import split_diff
from tests.adversarial.test_binary_assets import SIGNATURES, binary_section, blob_id
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import (
    DIFF,
    HEAD,
    pr_payload,
    run_gate,
    setup_pull,
)

fake = base.fake
sim_factory = base.sim_factory

SCRIPT = b"\necho ran-as-a-script\n"


@dataclass
class OneTree:
    """The two calls :func:`mark_assets` makes, over one tree (any ref)."""

    path: str
    data: bytes
    mode: str
    reads: list[str] = field(default_factory=list)

    def tree_paths(self, ref: str) -> TreeListing:
        sha = blob_id(self.data)
        return TreeListing((self.path,), False, {self.path: sha}, {self.path: self.mode})

    def blob(self, sha: str, *, limit: int) -> bytes:
        self.reads.append(sha)
        return self.data


def _deleted(path: str, old_id: str) -> bytes:
    return (
        f"diff --git a/{path} b/{path}\ndeleted file mode 100755\n"
        f"index {old_id[:7]}..0000000\nBinary files a/{path} and /dev/null differ\n"
    ).encode()


@pytest.mark.parametrize("side", ["head", "base"])
@pytest.mark.parametrize("mode", ["100755", "100644"])
@pytest.mark.parametrize("ext", sorted(SIGNATURES))
def test_an_executable_file_is_never_an_asset(ext: str, mode: str, side: str) -> None:
    path = f"assets/x{ext}"
    data = SIGNATURES[ext] + SCRIPT
    tree = OneTree(path, data, mode)
    diff = binary_section(path, blob_id(data)) if side == "head" else _deleted(path, blob_id(data))
    (section,) = mark_assets(tree, split_diff(diff), base="b" * 40, head="c" * 40)  # type: ignore[arg-type]
    assert (section.asset != "") is (mode == "100644")


@pytest.mark.skipif(os.name != "posix", reason="runs the file as a POSIX shell would")
def test_the_png_signature_runs_as_a_script(tmp_path) -> None:
    """Why the mode matters: the oracle is the shell itself."""
    script = tmp_path / "logo.png"
    script.write_bytes(SIGNATURES[".png"] + SCRIPT)
    script.chmod(0o755)
    ran = subprocess.run(["sh", "-c", str(script)], capture_output=True, timeout=10, check=False)
    assert b"ran-as-a-script" in ran.stdout


def test_an_executable_png_blocks_before_the_reviewer_is_asked(tmp_path, fake, sim_factory) -> None:
    data = SIGNATURES[".png"] + SCRIPT
    fake.set_file(HEAD, "logo.png", data, mode="100755")
    setup_pull(fake, diff=DIFF + binary_section("logo.png", blob_id(data)))
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3, result.stdout
    assert sim.requests == []
    assert result.outputs["reason"] == "partial_coverage"
    assert result.certificate["context"]["coverage"]["skipped"][0]["why"] == "binary"
