"""The dated price table: what the models the examples and docs name cost, with no setup.

Each row is one model id exactly as the reviewer is configured with it (no prefix
matching: ``gpt-4o-2024-05-13`` is priced differently from ``gpt-4o``), in US dollars per
million tokens, with the page it was read from and the date it was read. A config's
``pricing`` overrides a row for the same model (:func:`gate.review.cost.price_for`), so a
price that changed, a discount, or a model not listed here is one config entry away.

Where a provider charges more for long prompts, the row holds the long-prompt price:
``max_cost`` is a bound, and a bound priced at the lower tier would not hold for a large
pull request. The summary says which source each price came from.

A leaf module: :mod:`gate.config.load` reads it to refuse ``max_cost`` without a price when the
config is validated, :mod:`gate.review.cost` to price a review.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the currency of every price and cost the gate reads or writes: this table's rows, the
#: config's ``pricing`` and ``max_cost``, and every figure derived from them
CURRENCY = "USD"


@dataclass(frozen=True)
class ListedPrice:
    """One model's price per million tokens, where it was read, and when."""

    model: str
    input: float
    output: float
    source: str
    date: str


_OPENAI = "https://openai.com/api/pricing/"
_ANTHROPIC = "https://www.anthropic.com/pricing#api"
_BEDROCK = "https://aws.amazon.com/bedrock/pricing/"
_VERTEX = "https://cloud.google.com/vertex-ai/generative-ai/pricing"
_GEMINI = "https://ai.google.dev/gemini-api/docs/pricing"

#: every model the examples, README and docs name, that a provider charges for
#: (``llama3.1`` through a local Ollama costs nothing per token and is not listed:
#: give it a ``pricing`` entry of 0 to use ``max_cost`` with it)
PRICE_TABLE: tuple[ListedPrice, ...] = (
    ListedPrice("gpt-4o-mini", 0.15, 0.60, _OPENAI, "2025-06-01"),
    ListedPrice("gpt-4o", 2.50, 10.00, _OPENAI, "2025-06-01"),
    ListedPrice("claude-sonnet-4-5", 3.00, 15.00, _ANTHROPIC, "2025-10-01"),
    ListedPrice("claude-sonnet-4-20250514", 3.00, 15.00, _ANTHROPIC, "2025-06-01"),
    ListedPrice("claude-sonnet-4@20250514", 3.00, 15.00, _VERTEX, "2025-06-01"),
    ListedPrice("us.anthropic.claude-sonnet-4-20250514-v1:0", 3.00, 15.00, _BEDROCK, "2025-06-01"),
    # Gemini 2.5 Pro: 1.25 / 10.00 up to 200k prompt tokens, 2.50 / 15.00 above; the bound
    # takes the higher tier
    ListedPrice("gemini-2.5-pro", 2.50, 15.00, _GEMINI, "2025-06-17"),
)


def listed_price(model: str) -> ListedPrice | None:
    """The table's row for exactly ``model``, or None."""
    return next((row for row in PRICE_TABLE if row.model == model), None)
