"""Evidence that the reviewer read the whole prompt: the prompt tokens it reports.

The gate proves the answer arrived whole; a server can still have cut the question.
Self-hosted servers do it silently: Ollama keeps the last ``num_ctx`` tokens (2,048 by
default) of a prompt that does not fit, and an honest model that saw half a diff answers
a bound, confident pass about the half it saw.

Where the server reports how many prompt tokens it read (``usage.prompt_tokens`` from
OpenAI-compatible servers, llama.cpp, Ollama and vLLM; ``input_tokens`` plus the cache
counts from Anthropic; ``promptTokenCount`` from Gemini), a count below
:func:`lower_bound` of the prompt's bytes is a cut prompt: the answer is not sealed, the
attempt ends ``prompt_cut`` (not about the code, not retried: the same prompt is cut
the same way), naming the fix. The bound is one token per :data:`MAX_BYTES_PER_TOKEN` bytes
of the system and user messages. Real tokenizers give three to five bytes a token for
code and prose, and a chat template only adds tokens, so a whole prompt is far above it;
a prompt cut to less than an eighth of its tokens is always caught, one cut by less may
not be (the fenced diff's end is the evidence that catches those: docs/reviewers.md).
A server that reports no count gives no evidence either way: the answer is judged as
before, and docs/reviewers.md says what the gate can and cannot promise for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.reviewers.base import Reply

#: the input-token counts the providers report, first found wins ...
INPUT_KEYS = ("prompt_tokens", "input_tokens", "promptTokenCount")
#: ... plus the cached parts Anthropic counts apart from ``input_tokens``
INPUT_EXTRA = ("cache_creation_input_tokens", "cache_read_input_tokens")
#: a whole prompt has at least one token per this many bytes (the estimate that sizes
#: requests, gate.review.chunks.BYTES_PER_TOKEN, is the other side: at most that many)
MAX_BYTES_PER_TOKEN = 8
#: a run of whitespace or of one repeated character counts at most this many characters
RUN_COUNTED = 8
#: a run longer than :data:`RUN_COUNTED`: whitespace of any mix, or one character repeated
_RUN = re.compile(rf"\s{{{RUN_COUNTED + 1},}}|(.)\1{{{RUN_COUNTED},}}", re.DOTALL)


def count(usage: Mapping[str, int], keys: tuple[str, ...], extra: tuple[str, ...]) -> int | None:
    """The first of ``keys`` the usage holds, plus every ``extra`` it holds; None if none."""
    found = [usage[k] for k in keys if isinstance(usage.get(k), int)]
    if not found:
        return None
    return found[0] + sum(usage[k] for k in extra if isinstance(usage.get(k), int))


def prompt_tokens(usage: Mapping[str, int]) -> int | None:
    """The prompt tokens the server says it read, or None when it does not say."""
    return count(usage, INPUT_KEYS, INPUT_EXTRA)


def counted_bytes(text: str) -> int:
    """The UTF-8 bytes of ``text``, each run longer than :data:`RUN_COUNTED` characters
    counted as its first :data:`RUN_COUNTED` (module docstring)."""
    size = len(text.encode("utf-8"))
    for run in _RUN.finditer(text):
        found = run.group(0)
        size -= len(found.encode("utf-8")) - len(found[:RUN_COUNTED].encode("utf-8"))
    return size


def lower_bound(*texts: str) -> int:
    """The fewest tokens the whole of ``texts`` (the system and user messages) can be
    read as: one per :data:`MAX_BYTES_PER_TOKEN` of their :func:`counted_bytes`."""
    return sum(counted_bytes(text) for text in texts) // MAX_BYTES_PER_TOKEN


def checked(reply: Reply, *, system: str, user: str) -> Reply:
    """``reply``, or, when the server read fewer prompt tokens than the bound, the same
    attempt unsealed as ``prompt_cut`` (never retried)."""
    read = prompt_tokens(reply.usage)
    need = lower_bound(system, user)
    if not reply.complete or read is None or read >= need:
        return reply
    prompt_bytes = len(system.encode("utf-8")) + len(user.encode("utf-8"))
    return replace(
        reply,
        complete=False,
        envelope=None,
        retryable=False,
        reason="prompt_cut",
        detail=(
            f"the server read {read:,} prompt tokens, fewer than the {need:,} a whole "
            f"prompt of {prompt_bytes:,} bytes needs (at least 1 token per "
            f"{MAX_BYTES_PER_TOKEN} bytes, each run of a repeated character counted as "
            f"{RUN_COUNTED}): it cut the prompt, so the answer is about part of "
            "the change; raise the server's context (Ollama num_ctx, llama.cpp --ctx-size or "
            "llama-cpp-python --n_ctx, vLLM --max-model-len) or lower max_chunk_bytes; "
            "not retryable"
        ),
    )
