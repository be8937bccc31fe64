"""Generated git histories for backtest tests: merges, squash merges, direct pushes, reverts.

Each change adds one file whose line names the scripted reviewer's behaviour for it
(``sim:MODE``, :mod:`gate.lab.scripted`), so a test knows every answer in advance.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.gitrepo import git_env

#: the first commit's time; each commit is one hour later
START = 1_700_000_000


@dataclass
class History:
    repo: Path
    clock: int = START

    def git(self, *args: str) -> str:
        self.clock += 3600
        env = git_env(self.repo.parent)
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{self.clock} +0000"
        done = subprocess.run(
            ["git", "-C", str(self.repo), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env=env,
        )
        return done.stdout.strip()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def _write(self, name: str, mode: str) -> None:
        (self.repo / name).write_text(f"value = '{name}'  # sim:{mode}\n", encoding="utf-8")
        self.git("add", name)

    def merge(self, name: str, mode: str) -> str:
        """A pull request merged with a merge commit; the merge's sha."""
        self.git("checkout", "-q", "-b", f"pr-{name}")
        self._write(name, mode)
        self.git("commit", "-q", "-m", f"add {name}")
        self.git("checkout", "-q", "main")
        self.git("merge", "-q", "--no-ff", f"pr-{name}", "-m", f"Merge pull request from {name}")
        return self.head()

    def squash(self, name: str, mode: str, number: int) -> str:
        """A squash-merged pull request (subject ending ``(#N)``); its sha."""
        self._write(name, mode)
        self.git("commit", "-q", "-m", f"add {name} (#{number})")
        return self.head()

    def direct(self, name: str) -> str:
        """A direct push: no pull request, not a case."""
        self._write(name, "fail")
        self.git("commit", "-q", "-m", f"direct {name}")
        return self.head()

    def revert(self, sha: str, *, merge: bool = False) -> str:
        self.git("revert", "--no-edit", *(["-m", "1"] if merge else []), sha)
        return self.head()


def new_history(path: Path) -> History:
    path.mkdir(parents=True)
    history = History(path)
    history.git("init", "-q", "-b", "main")
    (path / "README").write_text("start\n", encoding="utf-8")
    history.git("add", "README")
    history.git("commit", "-q", "-m", "start")
    return history
