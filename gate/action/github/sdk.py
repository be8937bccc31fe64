"""PyGithub, imported at the first call that needs it: the one place the gate reaches it.

PyGithub brings requests, urllib3 and cryptography with it (about a third of the
action's start-up imports). Nothing before the first PyGithub call needs them, so the
modules of :mod:`gate.action.github` ask this module for PyGithub's client, its paginated
lists and its urllib3 retry, and it imports them then. An error from PyGithub or requests
can only exist once they are imported, so :func:`is_github_error` and
:func:`is_requests_error` read ``sys.modules`` and never import anything themselves.

This module imports nothing of the gate (a leaf): the dependencies keep pointing one way.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Protocol


class Pacer(Protocol):
    """What the urllib3 retry needs of the gate's retry policy: its pause."""

    def pause(self, retry: int) -> None: ...


def client(
    *,
    token: str,
    base_url: str,
    timeout: int,
    user_agent: str,
    retry: Any,
    seconds_between_requests: float | None,
    seconds_between_writes: float | None,
) -> Any:
    """A PyGithub ``Github`` client (lazy: it makes no request of its own)."""
    from github import Auth, Github

    return Github(
        auth=Auth.Token(token),
        base_url=base_url,
        timeout=timeout,
        user_agent=user_agent,
        per_page=100,
        retry=retry,
        seconds_between_requests=seconds_between_requests,
        seconds_between_writes=seconds_between_writes,
        lazy=True,
    )


def paginated(kind: str, requester: Any, url: str) -> Any:
    """PyGithub's paginated list of ``kind`` (``"PullRequest"`` or ``"CommitStatus"``) at
    ``url``, for the listings PyGithub has no method for."""
    from github.CommitStatus import CommitStatus
    from github.PaginatedList import PaginatedList
    from github.PullRequest import PullRequest

    item = {"PullRequest": PullRequest, "CommitStatus": CommitStatus}[kind]
    return PaginatedList(item, requester, url, None)


def urllib3_retry(pacer: Pacer, **kwargs: Any) -> Any:
    """urllib3's ``Retry`` with ``kwargs``, pausing through ``pacer`` (the gate's policy)."""
    return _policy_retry_class()(policy=pacer, **kwargs)


@functools.cache
def _policy_retry_class() -> type[Any]:
    from urllib3.util.retry import Retry

    class PolicyRetry(Retry):
        """urllib3's retry bookkeeping, with the pauses taken from the gate's policy."""

        def __init__(self, *args: Any, policy: Pacer | None = None, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)  # urllib3's new() passes no policy: set below
            self.policy = policy

        def new(self, **kw: Any) -> PolicyRetry:
            renewed = super().new(**kw)
            renewed.policy = self.policy
            return renewed

        def _sleep_backoff(self) -> None:
            if self.policy is None:
                super()._sleep_backoff()
            else:
                self.policy.pause(len(self.history))

    return PolicyRetry


def is_github_error(err: BaseException) -> bool:
    """Whether ``err`` is PyGithub's ``GithubException`` (never imports PyGithub)."""
    module = sys.modules.get("github")
    return module is not None and isinstance(err, module.GithubException)


def is_requests_error(err: BaseException) -> bool:
    """Whether ``err`` is a ``requests.RequestException`` (never imports requests)."""
    module = sys.modules.get("requests")
    return module is not None and isinstance(err, module.RequestException)


def is_requests_timeout(err: BaseException) -> bool:
    """Whether ``err`` is a ``requests.Timeout`` (never imports requests)."""
    module = sys.modules.get("requests")
    return module is not None and isinstance(err, module.Timeout)
