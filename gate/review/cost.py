"""What a review cost: tokens per attempt and in total, priced by the config; the budget.

- :func:`usage_of` reads an attempt's token counts from the provider's own usage record
  (OpenAI ``prompt_tokens``/``completion_tokens``, Anthropic ``input_tokens`` plus its
  cache counts/``output_tokens``, Gemini ``promptTokenCount``/``candidatesTokenCount``
  plus ``thoughtsTokenCount``). An attempt without a complete record (cut, refused,
  simulated without usage) has unknown tokens.
- :func:`cost_of` prices every paid request (each retry, each of the ``agreement``
  answers, each chunk and each half of a chunk that overflowed:
  :meth:`gate.review.pipeline.ReviewResult.paid_attempts`) that a provider answered (a
  2xx status: :func:`billable`; a request that never connected, or that a provider
  refused with an error status, is not billed and not counted as paid) with the
  config's ``pricing`` for the reviewer's model, else the dated table in
  :mod:`gate.prices` (per million tokens). A total is given only when every attempt is
  known: a partial sum would read as the whole cost. Unknown is empty, never zero.
- :func:`preflight` is what every run prints before it asks: the bound ``max_cost`` is
  held to, and a likely figure (input at :data:`gate.review.chunks.BYTES_PER_TOKEN` bytes a
  token, one attempt per answer), labelled as such.
- :func:`over_budget` is the ``max_cost`` guard, before any request: the estimate is,
  over every request the review makes (one, or one per chunk:
  :func:`gate.review.budget.chunk_setup`, the same cut the review makes),
  ``attempts x agreement x (prompt bytes x input price + max_tokens x output price)``
  per million, plus :data:`TOKEN_OVERHEAD` tokens per attempt for the chat framing.
  It is conservative: a tokenizer's token covers at least one byte, the answer is at
  most ``max_tokens``, and the gate asks each chunk at most ``attempts`` times for
  each of its ``agreement`` answers. Not counted: the halves of a chunk that overflows
  the model's window (the overflowing request is refused before any token is
  generated; its halves, at most :data:`gate.review.chunked.MAX_SPLIT_DEPTH` levels deep,
  carry the same diff bytes again plus one prompt each). An estimate that cannot be
  made (no price for the model) blocks too: an unknown cost is not under a limit.

Every amount is in US dollars (:data:`gate.prices.CURRENCY`); a figure shown to people
names it (:func:`amount`), a step output is the bare number (:func:`money`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gate.config.model import Config, ModelPrice
from gate.decide.attempt import Attempt
from gate.decide.decision import Decision, State, Status, binding_for, blocked
from gate.diff import Coverage
from gate.prices import CURRENCY, listed_price
from gate.review.budget import chunk_setup, request_size, too_many
from gate.review.chunks import BYTES_PER_TOKEN, estimate_tokens
from gate.review.context import HeadFiles, shown_for
from gate.review.prompt import build_prompt
from gate.reviewers.prompt_read import count, prompt_tokens

PER = 1_000_000
#: tokens added per attempt to the byte count for the provider's message framing
TOKEN_OVERHEAD = 64

_OUTPUT_KEYS = ("completion_tokens", "output_tokens", "candidatesTokenCount")
_OUTPUT_EXTRA = ("thoughtsTokenCount",)


@dataclass(frozen=True)
class Usage:
    """One attempt's tokens and cost; None where unknown."""

    attempt: int
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
        }


@dataclass(frozen=True)
class CostReport:
    """Every attempt's usage, the totals (None unless every attempt is known) and the price."""

    model: str
    price: ModelPrice | None
    attempts: tuple[Usage, ...]
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    #: where the price came from: the config's ``pricing``, a dated row of the table, or ""
    price_source: str = ""
    #: requests no provider could bill: never sent, or refused with an error status
    unbilled: int = 0

    def to_json(self) -> dict[str, Any]:
        price = {"input": self.price.input, "output": self.price.output} if self.price else None
        out = {
            "model": self.model,
            "price_per_million": price,
            "price_source": self.price_source,
            "attempts": [u.to_json() for u in self.attempts],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
        }
        if self.unbilled:  # absent when none: a run every provider answered reads as before
            out["unbilled"] = self.unbilled
        return out

    def outputs(self) -> dict[str, str]:
        """The step outputs ``input-tokens``, ``output-tokens``, ``cost`` (empty when unknown)."""
        return {
            "input-tokens": "" if self.input_tokens is None else str(self.input_tokens),
            "output-tokens": "" if self.output_tokens is None else str(self.output_tokens),
            "cost": money(self.cost),
        }


def money(value: float | None) -> str:
    """An amount as a step output writes it: the bare number (6 decimals), "" for unknown."""
    return "" if value is None else f"{value:.6f}"


def amount(value: float) -> str:
    """An amount for people: ``0.004200 USD``."""
    return f"{money(value)} {CURRENCY}"


def billable(attempt: Attempt) -> bool:
    """Whether a provider answered ``attempt``, so it may bill it: a 2xx status, or any
    end after the request was sent (a cut or a timeout while it answered: unsure is
    paid). A request that never reached a provider (no connection, no TLS session:
    :data:`gate.reviewers.base.NEVER_SENT`) or that a provider refused with an error
    status (401, 429, 5xx) generated nothing to pay for."""
    from gate.reviewers.base import NEVER_SENT  # loaded: the attempts came through it

    if attempt.http_status is not None:
        return 200 <= attempt.http_status < 300
    return attempt.reason not in NEVER_SENT


def price_for(config: Config) -> ModelPrice | None:
    """The model's price: the config's ``pricing`` first, else the dated table's row."""
    model = config.reviewer.model
    own = next((p for p in config.pricing if p.model == model), None)
    if own is not None:
        return own
    row = listed_price(model)
    return None if row is None else ModelPrice(model, row.input, row.output)


def price_source(config: Config) -> str:
    """Where :func:`price_for`'s price comes from, for people: ``config pricing``, the
    table's page and date, or "" when there is none."""
    model = config.reviewer.model
    if any(p.model == model for p in config.pricing):
        return "config pricing"
    row = listed_price(model)
    return "" if row is None else f"review-gate's price table: {row.source} as of {row.date}"


def usage_of(attempt: Attempt) -> tuple[int | None, int | None]:
    """(input tokens, output tokens) the provider reported for ``attempt``."""
    usage = attempt.usage or {}
    return prompt_tokens(usage), count(usage, _OUTPUT_KEYS, _OUTPUT_EXTRA)


def price(tokens_in: int, tokens_out: int, rate: ModelPrice) -> float:
    return (tokens_in * rate.input + tokens_out * rate.output) / PER


def cost_of(
    attempts: Sequence[Attempt], config: Config, *, models: Sequence[str] | None = None
) -> CostReport:
    """The cost of ``attempts``; ``models`` names each one's model when the review asked
    more than one reviewer (``fallbacks:``, :meth:`ReviewResult.paid_models`), so each is
    priced at its own rate; the report names the models in order."""
    each = list(models) if models is not None else [config.reviewer.model] * len(attempts)
    if len(each) != len(attempts):
        raise ValueError("cost_of needs one model per attempt")
    asked = " then ".join(dict.fromkeys(each))  # every reviewer asked, paid or not
    paid = [(a, m) for a, m in zip(attempts, each, strict=True) if billable(a)]
    unbilled = len(attempts) - len(paid)
    attempts, each = [a for a, _ in paid], [m for _, m in paid]
    rates = {
        m: price_for(replace(config, reviewer=replace(config.reviewer, model=m))) for m in each
    }
    last = each[-1] if each else config.reviewer.model
    if last != config.reviewer.model:
        config = replace(config, reviewer=replace(config.reviewer, model=last))
    rate = price_for(config)
    rows = []
    # numbered by request paid for, in order: attempt numbers restart for each answer
    # and each chunk, so theirs would repeat
    for number, (attempt, model) in enumerate(zip(attempts, each, strict=True), start=1):
        tokens_in, tokens_out = usage_of(attempt)
        own = rates[model]
        known = tokens_in is not None and tokens_out is not None and own is not None
        cost = price(tokens_in or 0, tokens_out or 0, own) if known and own else None
        rows.append(Usage(number, tokens_in, tokens_out, cost))
    every = bool(rows)
    total_in = sum(u.input_tokens or 0 for u in rows)
    total_out = sum(u.output_tokens or 0 for u in rows)
    return CostReport(
        model=asked or config.reviewer.model,
        price=rate,
        attempts=tuple(rows),
        input_tokens=total_in if every and all(u.input_tokens is not None for u in rows) else None,
        output_tokens=total_out
        if every and all(u.output_tokens is not None for u in rows)
        else None,
        cost=sum(u.cost or 0.0 for u in rows)
        if every and all(u.cost is not None for u in rows)
        else None,
        price_source=price_source(config),
        unbilled=unbilled,
    )


def estimate(
    diff: bytes, config: Config, coverage: Coverage | None = None, head: HeadFiles | None = None
) -> tuple[int, int, float | None]:
    """(input tokens, output tokens, cost) at most, over every attempt (cost None: no price)."""
    return _estimate(request_bytes(diff, config, coverage, head), config)


def _estimate(sizes: Sequence[int], config: Config) -> tuple[int, int, float | None]:
    tries = config.reviewer.attempts * config.agreement
    tokens_in = tries * sum(size + TOKEN_OVERHEAD for size in sizes)
    tokens_out = tries * len(sizes) * config.reviewer.max_tokens
    rate = price_for(config)
    return tokens_in, tokens_out, price(tokens_in, tokens_out, rate) if rate else None


def request_bytes(
    diff: bytes, config: Config, coverage: Coverage | None = None, head: HeadFiles | None = None
) -> list[int]:
    """The prompt bytes of each request the review of ``diff`` makes (each chunk's prompt
    as it will really be sent: :func:`gate.review.budget.request_size`);
    none when the review will block before any request (no room in the window, or over
    ``max_chunks``: ``too_large`` says so better than a cost would). ``coverage`` is the
    selection's (its skipped files are listed in every chunk's prompt too); ``head``: the
    files ``context: files`` shows beside each request's diff, counted in its size."""
    setup = chunk_setup(diff, config, coverage, head)
    if setup is None:
        binding = binding_for(diff, config)
        prompt = build_prompt(
            diff,
            binding=binding,
            instructions=config.instructions,
            context=shown_for(diff, config, head).text,
        )
        return [prompt.size]
    if setup.limit < 1 or too_many(setup.plan, config, setup.overhead) is not None:
        return []
    total = len(setup.plan.chunks)
    return [request_size(chunk, total, setup.files, config, head) for chunk in setup.plan.chunks]


def over_budget(
    diff: bytes, config: Config, coverage: Coverage | None = None, head: HeadFiles | None = None
) -> Decision | None:
    """``needs_human`` (``over_budget``) when the estimate exceeds ``max_cost`` or cannot be
    made; None when there is no limit or the review fits under it."""
    if config.max_cost is None:
        return None
    # with fallbacks: the worst case, every reviewer of the list asked in full
    chain = config.chain()
    each = [_estimate(request_bytes(diff, c, coverage, head), c) for c in chain]
    sizes = request_bytes(diff, config, coverage, head)
    tokens_in = sum(e[0] for e in each)
    tokens_out = sum(e[1] for e in each)
    costs = [e[2] for e in each]
    cost = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    model = " then ".join(c.reviewer.model or "(no model)" for c in chain)
    if cost is None:
        return blocked(
            State.NEEDS_HUMAN,
            "over_budget",
            f"max_cost is {config.max_cost:g} {CURRENCY} but pricing has no price for the model "
            f"{model}, "
            "so the cost cannot be estimated; add it under pricing or remove max_cost",
            status=Status.FAILURE,
        )
    if cost <= config.max_cost:
        return None
    return blocked(
        State.NEEDS_HUMAN,
        "over_budget",
        f"estimated cost {amount(cost)} exceeds max_cost {config.max_cost:g} {CURRENCY} "
        f"({tokens_in} input and {tokens_out} output tokens at most, over "
        f"{_asks(len(sizes), config)}, for {model}"
        f"{', each fallback asked in full' if len(chain) > 1 else ''}); "
        "the reviewer was not asked: raise max_cost, lower max_tokens, attempts or "
        "agreement, or review by hand",
        status=Status.FAILURE,
    )


#: the answer size the likely figure assumes: a verdict with a handful of reasons
LIKELY_ANSWER_TOKENS = 1_000


@dataclass(frozen=True)
class Preflight:
    """What a review will cost, known before any request: the bound ``max_cost`` is held
    to (every attempt, every token a byte, answers at ``max_tokens``) and a likely figure
    (one attempt per answer, ~3 bytes a token, answers of ~1,000 tokens). Costs are None
    when the model has no price."""

    model: str
    requests: int
    answers: int
    bound_tokens: tuple[int, int]
    bound: float | None
    likely_tokens: tuple[int, int]
    likely: float | None
    price_source: str
    #: the config's ``max_cost`` the bound is held to (None: no limit)
    max_cost: float | None = None

    def line(self) -> str:
        """One line for the CLI, the job summary and the log: what the figures are, each
        amount with its currency; the bound named as ``max_cost``'s only when one is set,
        and token counts alone when the model has no price."""
        if self.requests == 0:
            return "cost estimate: no request will be made"
        ask = f"{self.requests} request{'s' if self.requests > 1 else ''}"
        if self.answers > 1:
            ask += f" x {self.answers} answers"
        bound_in, bound_out = self.bound_tokens
        likely_in, likely_out = self.likely_tokens
        bound = f"{bound_in:,} input + {bound_out:,} output tokens, every attempt"
        likely = (
            f"estimated at ~{BYTES_PER_TOKEN} bytes a token: {likely_in:,} input + "
            f"{likely_out:,} output tokens, one attempt per answer"
        )
        if self.bound is None or self.likely is None:
            return (
                f"cost estimate for {ask}: no price for {self.model or '(no model)'}, so tokens "
                f"only: at most {bound}; likely about {likely_in:,} input + {likely_out:,} "
                f"output tokens (~{BYTES_PER_TOKEN} bytes a token, one attempt per answer); "
                "add the model under pricing for a cost"
            )
        held = (
            f"; max_cost {self.max_cost:g} {CURRENCY} is held to it"
            if self.max_cost is not None
            else ""
        )
        return (
            f"cost estimate for {ask}: at most {amount(self.bound)} ({bound}{held}); "
            f"likely about {amount(self.likely)} ({likely})"
        )

    def outputs(self) -> dict[str, str]:
        """The step outputs ``cost-bound`` and ``cost-likely`` (empty when unpriced)."""
        return {"cost-bound": money(self.bound), "cost-likely": money(self.likely)}

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "requests": self.requests,
            "answers": self.answers,
            "bound": {"input_tokens": self.bound_tokens[0],
                      "output_tokens": self.bound_tokens[1], "cost": self.bound},
            "likely": {"input_tokens": self.likely_tokens[0],
                       "output_tokens": self.likely_tokens[1], "cost": self.likely,
                       "bytes_per_token": BYTES_PER_TOKEN},
            "price_source": self.price_source,
        }  # fmt: skip


def preflight(
    diff: bytes, config: Config, coverage: Coverage | None = None, head: HeadFiles | None = None
) -> Preflight:
    """The estimate every run prints before it asks (:class:`Preflight`)."""
    sizes = request_bytes(diff, config, coverage, head)
    bound_in, bound_out, bound = _estimate(sizes, config)
    answers = config.agreement
    likely_in = answers * sum(estimate_tokens(size) + TOKEN_OVERHEAD for size in sizes)
    likely_out = answers * len(sizes) * min(config.reviewer.max_tokens, LIKELY_ANSWER_TOKENS)
    rate = price_for(config)
    return Preflight(
        model=config.reviewer.model,
        requests=len(sizes),
        answers=answers,
        bound_tokens=(bound_in, bound_out),
        bound=bound,
        likely_tokens=(likely_in, likely_out),
        likely=price(likely_in, likely_out, rate) if rate else None,
        price_source=price_source(config),
        max_cost=config.max_cost,
    )


def fits(sizes: Sequence[int], config: Config) -> bool:
    """Whether requests of these prompt bytes (each asked ``attempts`` x ``agreement``
    times) are estimated within ``max_cost`` (False when no price makes an estimate)."""
    if config.max_cost is None:
        return True
    cost = _estimate(sizes, config)[2]
    return cost is not None and cost <= config.max_cost


def _asks(requests: int, config: Config) -> str:
    """``3 attempts`` or ``12 chunks x 3 attempts x 2 answers``: what the estimate counts."""
    parts = [f"{requests} chunks"] if requests > 1 else []
    parts.append(f"{config.reviewer.attempts} attempts")
    if config.agreement > 1:
        parts.append(f"{config.agreement} answers")
    return " x ".join(parts)
