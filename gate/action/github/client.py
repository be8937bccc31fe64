"""The one GitHub client the action holds: reading and writing over one HTTP policy."""

from __future__ import annotations

from gate.action.github.gitdata import GitData
from gate.action.github.pull import PullReader
from gate.action.github.write import StatusWriter


class GitHubClient(PullReader, StatusWriter, GitData):
    """A small, typed facade over PyGithub for the calls the gate makes: the reads
    (:class:`~gate.action.github.pull.PullReader`) and the writes
    (:class:`~gate.action.github.write.StatusWriter`) and the question ledger's Git
    database calls (:class:`~gate.action.github.gitdata.GitData`), over the one HTTP policy
    (:class:`~gate.action.github.http.GitHubHttp`)."""
