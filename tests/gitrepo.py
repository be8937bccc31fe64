"""A throwaway git repository for tests: git run with no user or system configuration.

Each call gets ``HOME`` set to a folder of the test's own, no ``GIT_*`` variable from the
caller's environment and a fixed identity, so a developer's hooks, templates or signing
settings never change what a test sees.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git_env(home: Path) -> dict[str, str]:
    """The environment for a git process: ``home`` as HOME, no system config, a test identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.invalid",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.invalid",
    )
    return env


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``git -C repo ARGS`` (60 s at most), with HOME at the repository's parent."""
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=check,
        env=git_env(repo.parent),
    )


def git_bytes(repo: Path, *args: str) -> bytes:
    """``git -C repo ARGS``'s standard output as bytes (a diff, a blob), 60 s at most."""
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        timeout=60,
        check=True,
        env=git_env(repo.parent),
    ).stdout
