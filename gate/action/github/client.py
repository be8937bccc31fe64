"""The one GitHub client the action holds: reading and writing over one HTTP policy."""

from __future__ import annotations

from gate.action.github.pull import PullReader
from gate.action.github.write import StatusWriter


class GitHubClient(PullReader, StatusWriter):
    """A small, typed facade over PyGithub for the calls the gate makes: the reads
    (:class:`~gate.action.github.pull.PullReader`) and the writes
    (:class:`~gate.action.github.write.StatusWriter`), both over the one HTTP policy
    (:class:`~gate.action.github.http.GitHubHttp`)."""
