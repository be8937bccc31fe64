"""The server's context in a review: asked once per reviewer, before any request.

:func:`gate.review.pipeline.review_diff` calls :func:`with_served` for each reviewer it
asks, before the cut into chunks is made: the size the server tells
(:func:`gate.reviewers.window.context_of`) goes into the reviewer's ``served_window``,
so :mod:`gate.review.budget` sizes every chunk to fit it and refuses a prompt that
cannot (``context_overflow``, ``too_large``: not sent, naming the setting to raise).
It is no part of the config's digest: the question is the same, the size is the
server's evidence, recorded in the certificate (``context.context_window``).

A size that cannot be read is never a pass and never skipped (:func:`refused`): a server
that does not answer is ``incomplete`` (an outage: a fallback may be asked, a later run
asks again), an answer that is not the asked server's is ``needs_human``
(``config_context_window``: the setting is wrong).
"""

from __future__ import annotations

from dataclasses import replace

from gate.config.model import Config
from gate.decide.decision import Decision, State, Status, blocked
from gate.errors import ContextUnknown
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.window import Served, context_of

#: the reason of a refusal that is the setting's, not the server's availability
CONFIG_REASON = "config_context_window"


def with_served(
    config: Config, settings: ReviewerSettings
) -> tuple[Config, ReviewerSettings, Served | None]:
    """``config`` and ``settings`` with the context the server told (when it told one),
    and what was learnt (None with ``context_window: off``). Raises
    :class:`~gate.errors.ContextUnknown`."""
    served = context_of(settings)
    if served is None or served.tokens is None or config.reviewer.window() is not None:
        return config, settings, served
    reviewer = replace(config.reviewer, served_window=served.tokens)
    return (
        replace(config, reviewer=reviewer),
        replace(settings, served_window=served.tokens),
        served,
    )


def refused(err: ContextUnknown) -> Decision:
    """The block of a review whose server's context could not be read (module docstring)."""
    if err.reason == CONFIG_REASON:
        return blocked(State.NEEDS_HUMAN, CONFIG_REASON, str(err), status=Status.FAILURE)
    return blocked(State.INCOMPLETE, err.reason, str(err))
