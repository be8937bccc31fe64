"""The preflight: ask a self-hosted server how many tokens its context holds.

Self-hosted servers cut what does not fit their context, often silently (Ollama keeps
the last ``num_ctx`` tokens). Where the server tells its context size, the gate reads
it once per review, before any request, and refuses a prompt that cannot fit
(:mod:`gate.review.budget` sizes the chunks to it). ``reviewer.context_window``:

* ``off`` (the default): nothing is asked;
* a number: the server's context in tokens, as its operator set it (llama-cpp-python's
  ``--n_ctx``, which no endpoint tells); nothing is asked;
* ``llama.cpp``: ``GET {root}/props``, ``default_generation_settings.n_ctx`` (the
  context of one slot: the server divides ``--ctx-size`` by ``--parallel``);
* ``vllm``: ``GET {base_url}/models``, the served model's ``max_model_len`` (prompt
  and answer together);
* ``ollama``: ``POST {root}/api/show`` ``{"model": ...}``, the ``num_ctx`` line of
  ``parameters`` (the Modelfile's ``PARAMETER num_ctx``). ``model_info``'s
  ``<arch>.context_length`` is the length the model was trained for, not the context
  the server gives it, and is never read;
* ``auto``: the three in that order, each asked at most once; the first that tells a
  size wins. A server that answers none of them (llama-cpp-python's server, an Ollama
  model with no ``num_ctx``) gives no size: the review goes on with the other evidence
  (the prompt tokens the server reports, the values the verdict echoes), and the
  result's notes say so.

``{root}`` is ``base_url`` without a trailing ``/v1``. Every ask has an explicit
connect and read timeout and a deadline over the whole exchange, head and body
(:data:`DEADLINE_S`, a :class:`~gate.safe.watchdog.Watchdog`), and reads at most
:data:`MAX_BODY` bytes. A failure is never a pass and never a silent skip: a server
that cannot be reached, or that answers an error status, is
:class:`~gate.errors.ContextUnknown` ``context_window_unreachable`` (an outage: the
review is not asked); one that answers a body that is not the asked server's shape, or
(named explicitly) gives no size, is ``config_context_window`` (the setting is wrong).
Under ``auto`` only "no such endpoint" (404, 405, or a JSON object without the member)
moves on to the next server.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gate.errors import ContextUnknown
from gate.reviewers.settings import ReviewerSettings
from gate.safe import strictjson
from gate.safe.redact import redact

#: the servers whose context size the gate can read, in the order ``auto`` asks them
KINDS = ("llama.cpp", "vllm", "ollama")
#: every word ``context_window`` takes (besides a number of tokens)
WORDS = ("off", "auto", *KINDS)
#: the most bytes of an answer read (/api/show holds the license, the Modelfile and the
#: tensors' list; /props the chat template)
MAX_BODY = 4 << 20
#: seconds for one ask, body included, whatever the reviewer's own timeouts
DEADLINE_S = 15.0
#: the fix every refusal names
FIX = (
    "set reviewer.context_window to the server's kind (llama.cpp, vllm, ollama), to its "
    "context in tokens, or to off"
)
#: the largest context believed (a larger figure is a body that is not the server's)
MAX_TOKENS = 100_000_000
_NUM_CTX = re.compile(r"num_ctx[ \t]+([0-9]{1,9})[ \t]*")


@dataclass(frozen=True)
class Served:
    """What the preflight learnt: the context in tokens (None: the server does not tell),
    where it was read, and a line for the result's notes."""

    tokens: int | None
    source: str
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "source": self.source}


class _NoEndpoint(Exception):
    """This server has no such endpoint (or no such member): ``auto`` asks the next."""


def root_of(base_url: str) -> str:
    """``base_url`` without a trailing slash and ``/v1``: where /props and /api/show are."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def context_of(settings: ReviewerSettings) -> Served | None:
    """The server's context as ``settings.context_window`` asks for it (module
    docstring); None with ``off``. Raises :class:`ContextUnknown`."""
    setting = settings.context_window
    if setting == "off":
        return None
    if isinstance(setting, int) and not isinstance(setting, bool):
        return Served(setting, "context_window", f"the server's context: {setting:,} tokens (set)")
    if setting == "auto":
        for kind in KINDS:
            try:
                return _ask(settings, kind)
            except _NoEndpoint:
                continue
        return Served(
            None,
            "none",
            f"context_window auto: the server at {root_of(settings.base_url)} tells no context "
            "size (llama.cpp /props, vLLM /v1/models max_model_len, Ollama /api/show "
            "num_ctx); a prompt it cuts is caught only by the prompt tokens it reports and "
            "the values the verdict repeats (docs/reviewers.md, self-hosted servers)",
        )
    if setting in KINDS:
        try:
            return _ask(settings, str(setting))
        except _NoEndpoint as missing:
            raise ContextUnknown(
                f"context_window {setting}: {missing}; {FIX}", reason="config_context_window"
            ) from None
    raise ContextUnknown(
        f"context_window {setting!r} is not known; {FIX}", reason="config_context_window"
    )


def _ask(settings: ReviewerSettings, kind: str) -> Served:
    if kind == "llama.cpp":
        url = root_of(settings.base_url) + "/props"
        data = _fetch(settings, "GET", url, None)
        tokens = _member(data, ("default_generation_settings", "n_ctx"), url)
        where = "llama.cpp /props default_generation_settings.n_ctx"
        setting = "--ctx-size (per slot: divided by --parallel)"
    elif kind == "vllm":
        url = settings.base_url.rstrip("/") + "/models"
        data = _fetch(settings, "GET", url, None)
        tokens = _model_len(data, settings.model, url)
        where = "vLLM /v1/models max_model_len"
        setting = "--max-model-len"
    else:
        url = root_of(settings.base_url) + "/api/show"
        data = _fetch(settings, "POST", url, {"model": settings.model})
        tokens = _num_ctx(data, settings.model, url)
        where = "Ollama /api/show parameters num_ctx"
        setting = "PARAMETER num_ctx in the Modelfile"
    return Served(tokens, where, f"the server's context: {tokens:,} tokens ({where}; {setting})")


def _fetch(settings: ReviewerSettings, method: str, url: str, body: Any) -> Any:
    """One ask, its JSON answer; 404/405: :class:`_NoEndpoint`; anything else that is no
    JSON answer: :class:`ContextUnknown`."""
    import httpx  # loaded when a server is asked

    from gate.safe import tls  # ssl and httpx, loaded with them
    from gate.safe.watchdog import Watchdog

    connect = min(settings.connect_timeout, DEADLINE_S)
    read = min(settings.read_timeout, DEADLINE_S)
    headers = {"accept": "application/json"}
    if settings.api_key:
        headers["authorization"] = f"Bearer {settings.api_key}"
    started = time.monotonic()
    # the deadline over the whole exchange, head included: httpx's timeouts are per read,
    # so a head trickled a byte just inside the read timeout would hold the review
    watchdog = Watchdog(DEADLINE_S)
    try:
        with (
            watchdog,
            httpx.Client(
                timeout=httpx.Timeout(connect=connect, read=read, write=read, pool=connect),
                verify=tls.context(),
                follow_redirects=False,
                trust_env=True,
            ) as client,
            client.stream(
                method, url, headers=headers, json=body, extensions={"trace": watchdog.trace}
            ) as response,
        ):
            if response.status_code in (404, 405):
                raise _NoEndpoint(f"{method} {url} answered HTTP {response.status_code}")
            raw = b""
            for piece in response.iter_bytes():
                raw += piece
                if len(raw) > MAX_BODY:
                    raise _unknown(url, f"more than {MAX_BODY:,} bytes", "config_context_window")
                if time.monotonic() - started > DEADLINE_S:
                    raise _unknown(url, f"no whole answer in {DEADLINE_S:g}s")
            status = response.status_code
    except httpx.HTTPError as err:
        if watchdog.fired:
            raise _unknown(url, f"no whole answer in {DEADLINE_S:g}s") from None
        why = redact(str(err), settings.api_key)[:300]
        raise _unknown(url, f"{type(err).__name__}: {why}") from None
    if status != 200:
        raise _unknown(url, f"HTTP {status}")
    return strictjson.loads(raw, what=f"the answer of {url}", error=_garbage(url))


def _unknown(url: str, why: str, reason: str = "context_window_unreachable") -> ContextUnknown:
    return ContextUnknown(
        f"the server's context size could not be read from {url}: {why}; the review was not "
        f"asked (a prompt that does not fit would be cut); {FIX}",
        reason=reason,
    )


def _garbage(url: str) -> Callable[..., ContextUnknown]:
    """The strict JSON parser's error: a body that is no JSON is not the server's."""

    def error(message: str, *, reason: str | None = None) -> ContextUnknown:
        return _unknown(url, f"not JSON ({message[:200]})", "config_context_window")

    return error


def _tokens(value: Any, url: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_TOKENS:
        raise _unknown(url, f"{what} is {value!r}, not a context size", "config_context_window")
    return value


def _member(data: Any, path: tuple[str, ...], url: str) -> int:
    found = data
    for name in path:
        if not isinstance(found, dict):
            raise _unknown(url, f"{'.'.join(path)} is not in an object", "config_context_window")
        if name not in found:
            raise _NoEndpoint(f"{url} has no {'.'.join(path)}")
        found = found[name]
    return _tokens(found, url, ".".join(path))


def _model_len(data: Any, model: str, url: str) -> int:
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        raise _unknown(url, "no model list (data)", "config_context_window")
    cards = [item for item in models if isinstance(item, dict) and item.get("id") == model]
    if len(cards) > 1:  # two lengths for one model: which one the server keeps is unknown
        raise _unknown(url, f"the model {model!r} is listed twice", "config_context_window")
    for item in cards:
        if item.get("max_model_len") is None:
            raise _NoEndpoint(f"{url} names no max_model_len for {model}")
        return _tokens(item["max_model_len"], url, "max_model_len")
    raise _NoEndpoint(f"{url} does not list the model {model!r}")


def _num_ctx(data: Any, model: str, url: str) -> int:
    parameters = data.get("parameters") if isinstance(data, dict) else None
    if parameters is None:
        parameters = ""
    if not isinstance(parameters, str):
        raise _unknown(url, "parameters is not text", "config_context_window")
    # every line that names num_ctx, by any line break (CR, CRLF, U+2028, NEL: a line
    # the pattern cannot read beside one it can would leave the gate the other's size)
    named = [line for line in parameters.splitlines() if "num_ctx" in line.casefold()]
    found = [match.group(1) for line in named if (match := _NUM_CTX.fullmatch(line))]
    if len(named) > len(found):
        raise _unknown(url, "a num_ctx line is not a number of tokens", "config_context_window")
    if not found:
        raise _NoEndpoint(
            f"{url} names no num_ctx for {model} (the server then uses OLLAMA_CONTEXT_LENGTH "
            "or its default; add PARAMETER num_ctx to the Modelfile)"
        )
    if len(found) > 1:
        raise _unknown(url, "num_ctx is named twice", "config_context_window")
    return _tokens(int(found[0]), url, "num_ctx")
