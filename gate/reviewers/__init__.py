"""Reviewer transports: ask a reviewer once per attempt, retry only what did not arrive.

An index; each name lives in its own module and is imported from there:

* :mod:`~gate.reviewers.transport`: :func:`review` makes at most ``settings.attempts``
  attempts through the provider's dialect module. Every attempt is recorded. An attempt
  is retried only when its bytes did not all arrive (a cut, a timeout, a connection
  error, HTTP 408/429/5xx, a transient error frame, a missing end marker); a complete
  answer is final, whatever it says, and so are token exhaustion, refusals, malformed
  streams and other 4xx answers. Transport problems never raise: they become incomplete
  attempts; only invalid settings raise :class:`~gate.errors.UsageError`.
* :mod:`~gate.reviewers.settings`: ``ReviewerSettings`` (built from the config's
  reviewer part by ``ReviewerSettings.from_config``) and its validation.
* :mod:`~gate.reviewers.base`: one streamed exchange under every limit;
  :mod:`~gate.reviewers.pool`: one chunk's attempts under the run's pacer.
* one module per dialect (:mod:`~gate.reviewers.openai`, :mod:`~gate.reviewers.anthropic`,
  :mod:`~gate.reviewers.gemini`, :mod:`~gate.reviewers.mc1`, and the clouds'), each
  exposing ``NAME``, ``build_request()`` and ``Stream``.

The provider table (names, key variables, URLs, regions) is the leaf
:mod:`gate.providers`, which the config imports without loading a transport.
"""
