"""How an attempt ended: answered, chosen by the model or the diff, or an outage.

The one classification the fallback rule, the decision, the record, memory and replay
read (docs/reviewers.md, "How an attempt ends"; decision record 0040):

* :attr:`End.ANSWERED`: the attempt carried all the completeness evidence (an envelope
  was sealed); the decision table reads the verdict;
* :attr:`End.CHOSEN`: the model or the diff chose this end: a refusal, any content or
  safety filter on the prompt or the answer, a guardrail, a tool call, ``max_tokens``,
  the context window, any 4xx the prompt's content can cause, an unknown finish. The
  diff is the author's and can ask for each of them, so the end decides the review: a
  ``needs_human`` block that stands like a ``fail`` until the question changes or a
  writer asks afresh, and never a reason to ask a fallback;
* :attr:`End.OUTAGE`: the reviewer could not answer, whatever the diff: connect, TLS,
  a cut, a timeout, 5xx, 408, 429, quota, auth, a provider overload, the gate's own
  setup (a base URL that answers no dialect). Only an outage asks a fallback or earns a
  fresh ask later.

Each dialect normalizes its own finish codes to :class:`gate.decide.attempt.FinishReason`
and names its incomplete ends with a stable reason code; :func:`end_of` maps an attempt to
its end from that reason (:data:`REASONS`), an HTTP status (:func:`status_end`), or an
error frame's transience. **A code nobody mapped is the diff's doing** (``CHOSEN``): a
new code can only block, never ask a fallback. :func:`name_refusal` names what a non-200
body says about the prompt (too long, filtered) or the key, wherever the transport reads
it, so a 400 is read one way for a review in one request and for a chunk.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TYPE_CHECKING

from gate.decide.attempt import FinishReason

if TYPE_CHECKING:
    from gate.decide.attempt import Attempt


class End(StrEnum):
    """How one attempt ended (module docstring)."""

    ANSWERED = "answered"
    CHOSEN = "chosen"
    OUTAGE = "outage"


#: each normalized finish reason, where it lands (a complete attempt ends in ``STOP``;
#: ``NONE`` is a stream that never said how it ended: a cut)
FINISH_ENDS: dict[FinishReason, End] = {
    FinishReason.STOP: End.ANSWERED,
    FinishReason.LENGTH: End.CHOSEN,
    FinishReason.REFUSAL: End.CHOSEN,
    FinishReason.OTHER: End.CHOSEN,
    FinishReason.NONE: End.OUTAGE,
}

#: the reason code of a 400 the body says is over the model's context window
CONTEXT_OVERFLOW = "context_overflow"
#: the reason code of a 4xx the body says a content filter refused (Azure's 400)
CONTENT_FILTER = "content_filter"
#: the reason code of a 4xx the body says is a refused key (Gemini answers 400)
AUTH_REFUSED = "auth_refused"

#: every reason code an incomplete attempt carries, and where it lands; the HTTP statuses
#: (``http_<status>``) go by :func:`status_end`, an ``error_frame`` by its transience
REASONS: dict[str, End] = {
    # the model's own end: gate.reviewers.stream.SSEStream.judge_finish
    "refusal": End.CHOSEN,
    CONTENT_FILTER: End.CHOSEN,  # Azure's filter results or finish reason, a 400 body
    "token_exhaustion": End.CHOSEN,  # max_tokens, MAX_TOKENS, max_output_tokens, ...
    "unexpected_finish": End.CHOSEN,  # a tool call, an unknown finish reason
    "unsupported_content": End.CHOSEN,  # an answer in parts the gate cannot read as text
    "unpaired_surrogate": End.CHOSEN,  # text that is not Unicode: the model wrote it
    "size_limit": End.CHOSEN,  # an answer longer than max_response_bytes
    "envelope_size_limit": End.CHOSEN,  # the same, from an MC1 service
    "bad_encoding": End.CHOSEN,  # an answer that is not UTF-8 (decide: needs_human)
    CONTEXT_OVERFLOW: End.CHOSEN,  # the prompt is over the window: split or coverage
    "prompt_cut": End.CHOSEN,  # the server cut the prompt to fit: the diff's size chose it
    "empty_answer": End.CHOSEN,  # nothing for a prompt that did not fit: the same
    # could not answer: the network and the provider
    "connect_timeout": End.OUTAGE,
    "connect_error": End.OUTAGE,
    "timeout": End.OUTAGE,
    "deadline": End.OUTAGE,
    "run_deadline": End.OUTAGE,
    "connection_cut": End.OUTAGE,
    "network_error": End.OUTAGE,  # TLS included
    "no_response": End.OUTAGE,
    "quota_exhausted": End.OUTAGE,
    AUTH_REFUSED: End.OUTAGE,
    # the bytes did not arrive as sent, or the stream ended before its end marker
    "partial_event": End.OUTAGE,
    "missing_done": End.OUTAGE,
    "missing_message_stop": End.OUTAGE,
    "missing_finish_reason": End.OUTAGE,
    "missing_response_completed": End.OUTAGE,
    "missing_metadata": End.OUTAGE,
    "eventstream_crc": End.OUTAGE,
    "eventstream_cut": End.OUTAGE,
    "eventstream_malformed": End.OUTAGE,
    "malformed_event": End.OUTAGE,  # the provider's framing broke (the text is not read)
    "envelope_length_mismatch": End.OUTAGE,
    "envelope_digest_mismatch": End.OUTAGE,
    "envelope_missing_header": End.OUTAGE,
    "envelope_bad_header": End.OUTAGE,
    "envelope_missing_sentinel": End.OUTAGE,
    "envelope_trailing_bytes": End.OUTAGE,
    "envelope_bad_encoding": End.OUTAGE,
    "envelope_envelope_invalid": End.OUTAGE,
    # an envelope that is not whole and exact (gate.errors.EnvelopeError): the service's
    # framing or the transit, never the review's text
    "missing_header": End.OUTAGE,
    "bad_header": End.OUTAGE,
    "length_mismatch": End.OUTAGE,
    "digest_mismatch": End.OUTAGE,
    "missing_sentinel": End.OUTAGE,
    "trailing_bytes": End.OUTAGE,
    "envelope_invalid": End.OUTAGE,
    # a whole MC1 envelope that is not the configured service's (gate.reviewers.signed):
    # rewritten between the service and the gate, or signed with another key or none.
    # No diff can make the service's key sign another answer: incomplete, never a pass
    "signature_missing": End.OUTAGE,
    "signature_malformed": End.OUTAGE,
    "signature_key": End.OUTAGE,
    "signature_invalid": End.OUTAGE,
    "envelope_signature_missing": End.OUTAGE,
    "envelope_signature_malformed": End.OUTAGE,
    "envelope_signature_key": End.OUTAGE,
    "envelope_signature_invalid": End.OUTAGE,
    # the gate's setup or what stands between it and the provider: no diff can cause it
    "bad_base_url": End.OUTAGE,
    "plain_http": End.OUTAGE,
    "content_encoding": End.OUTAGE,
    "close_delimited": End.OUTAGE,
    "ambiguous_framing": End.OUTAGE,
    "not_event_stream": End.OUTAGE,
}

#: 4xx statuses that say nothing about the prompt: the key (401, 403, 407), billing
#: (402), the URL (404, 405), a timeout (408), a rate limit (429). Every other 4xx is the
#: prompt's content (400, 413, 422, ... and any status nobody mapped)
OUTAGE_4XX = frozenset({401, 402, 403, 404, 405, 407, 408, 429})

_HTTP = r"http_([0-9]{3})"

#: words of a non-200 body, lower case, and the reason they name (first match wins)
REFUSAL_MARKERS: tuple[tuple[bytes, str], ...] = (
    (b"context_length_exceeded", CONTEXT_OVERFLOW),  # OpenAI, Azure: error.code
    (b"prompt is too long", CONTEXT_OVERFLOW),  # Anthropic: invalid_request_error
    (b"exceeds the maximum number of tokens", CONTEXT_OVERFLOW),  # Gemini: INVALID_ARGUMENT
    (b"maximum context length", CONTEXT_OVERFLOW),  # OpenAI-compatible servers (vLLM, ...)
    (b"input is too long", CONTEXT_OVERFLOW),  # Bedrock: ValidationException
    (b"too many input tokens", CONTEXT_OVERFLOW),  # Bedrock Converse
    # OpenAI's 429 for one request over the key's tokens-per-minute limit: no wait heals it
    (b"request too large for", CONTEXT_OVERFLOW),
    (b'"content_filter"', CONTENT_FILTER),  # Azure: error.code of a filtered prompt
    (b"responsibleaipolicyviolation", CONTENT_FILTER),  # Azure: innererror.code
    # Gemini: ErrorInfo.reason (an HTTP 400), quoted as a whole JSON string: words a 400
    # quotes from the prompt (the diff) sit inside another string and cannot spell it
    (b'"api_key_invalid"', AUTH_REFUSED),
)
#: how an MC1 service (``review-gate serve``) names a chosen end of its upstream's answer
#: in the body of its 422 refusal: the whole JSON string ``"review-gate-end:<reason>"``,
#: ``<reason>`` a code of :data:`REASONS` that lands in ``CHOSEN`` (a prompt the upstream
#: cut, ``max_tokens``, a filter), so the gate names the end the upstream had and never a
#: bare ``http_422``; a code that is not a chosen end is not read (only ``CHOSEN`` can be
#: named this way: a body can lower an end to the diff's, never raise one to an outage)
SERVICE_END = re.compile(rb'"review-gate-end:([a-z_]{1,40})"')
#: the statuses :data:`REFUSAL_MARKERS` are read for (4xx a prompt or a key can cause, and
#: the 429 of a request over the rate limit on its own)
MARKED_STATUSES = frozenset({400, 403, 413, 422, 429})


def status_end(status: int) -> End:
    """Where an HTTP status lands: a 4xx outside :data:`OUTAGE_4XX` is the prompt's, every
    other status (5xx, 429, the key, a redirect, a 2xx other than 200) is an outage."""
    if 400 <= status < 500 and status not in OUTAGE_4XX:
        return End.CHOSEN
    return End.OUTAGE


def reason_end(reason: str, *, transient: bool = False) -> End:
    """Where an incomplete attempt's reason code lands; ``transient`` says whether an
    ``error_frame`` named a passing condition (overload, 5xx, 429). Unmapped: ``CHOSEN``."""
    if reason in REASONS:
        return REASONS[reason]
    if reason == "error_frame":
        return End.OUTAGE if transient else End.CHOSEN
    if found := re.fullmatch(_HTTP, reason):
        return status_end(int(found.group(1)))
    return End.CHOSEN  # a code nobody mapped is the diff's doing


def end_of(attempt: Attempt) -> End:
    """How ``attempt`` ended (module docstring)."""
    if attempt.complete:
        return End.ANSWERED
    return reason_end(attempt.reason, transient=attempt.retryable)


def outage(attempt: Attempt) -> bool:
    """Whether ``attempt`` is one the reviewer could not answer (an outage)."""
    return end_of(attempt) is End.OUTAGE


def name_refusal(status: int | None, body: bytes) -> str | None:
    """The reason a non-200 ``body`` names (:data:`SERVICE_END`, then
    :data:`REFUSAL_MARKERS`) for a status of
    :data:`MARKED_STATUSES`, else None (the reply keeps its ``http_<status>``)."""
    if status not in MARKED_STATUSES:
        return None
    text = body[:65_536].lower()
    said = SERVICE_END.search(text)
    if said is not None and REASONS.get(said.group(1).decode("ascii")) is End.CHOSEN:
        return said.group(1).decode("ascii")
    return next((reason for marker, reason in REFUSAL_MARKERS if marker in text), None)
