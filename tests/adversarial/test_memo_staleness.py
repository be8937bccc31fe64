"""A remembered answer must never outlive what it was made of.

Class: a digest or a cut kept from the last call (``gate.diff.diff_sha``,
``gate.review.budget.chunk_setup``, ``gate.review.prompt.prompt_sha256``) answered for
other bytes or another config. Each is keyed on the very ``bytes`` object (immutable),
and the config and coverage by equality. Hypothesis draws diffs and sequences of calls:
the same object again, equal bytes in another object, a ``bytearray`` changed in place
between calls, a config that differs in one setting; every answer must equal the one
computed afresh with the memo emptied.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gate import diff as diff_module
from gate.config.model import Config
from gate.review import budget, prompt


def _diff(files: list[tuple[str, int]]) -> bytes:
    out = []
    for name, lines in files:
        body = "".join(f"+{name} line {i}\n" for i in range(lines))
        out.append(
            f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
            f"@@ -0,0 +1,{lines} @@\n{body}"
        )
    return "".join(out).encode()


DIFFS = st.lists(
    st.tuples(st.sampled_from(["a.py", "b.py", "c/d.py", "e.txt"]), st.integers(1, 300)),
    min_size=1,
    max_size=4,
    unique_by=lambda f: f[0],
).map(_diff)
CONFIGS = st.builds(
    lambda size, policy, words: Config(
        max_chunk_bytes=size, policy_version=policy, instructions=words
    ),
    st.sampled_from([2_000, 5_000, 50_000]),
    st.sampled_from(["1", "2"]),
    st.sampled_from(["", "check the tests"]),
)


def _fresh_setup(data: bytes, config: Config) -> object:
    budget.chunk_setup.forget()  # type: ignore[attr-defined]
    return budget.chunk_setup(bytes(data), config)


def _fresh_prompt(data: bytes, config: Config) -> str:
    prompt.prompt_sha256.forget()  # type: ignore[attr-defined]
    return prompt.prompt_sha256(bytes(data), config)


@settings(max_examples=120, deadline=None)
@given(
    first=DIFFS,
    second=DIFFS,
    configs=st.lists(CONFIGS, min_size=1, max_size=3),
    flip=st.integers(0, 10_000),
)
def test_no_memo_answers_for_other_bytes_or_another_config(
    first: bytes, second: bytes, configs: list[Config], flip: int
) -> None:
    buffer = bytearray(first)
    calls: list[bytes | bytearray] = [first, first, bytes(bytearray(first)), buffer, second]
    for config in configs:
        for data in calls:
            frozen = bytes(data)
            assert diff_module.diff_sha(data) == hashlib.sha256(frozen).hexdigest()  # type: ignore[arg-type]
            if isinstance(data, bytes):
                assert budget.chunk_setup(data, config) == _fresh_setup(frozen, config)
                assert prompt.prompt_sha256(data, config) == _fresh_prompt(frozen, config)
        # the buffer changes in place right after it was hashed: its digest must follow it
        diff_module.diff_sha(buffer)  # type: ignore[arg-type]
        buffer[flip % len(buffer)] ^= 0x01
        assert diff_module.diff_sha(buffer) == hashlib.sha256(bytes(buffer)).hexdigest()  # type: ignore[arg-type]
        # an equal config is the same question; a changed one is another
        other = replace(config, max_chunk_bytes=config.max_chunk_bytes + 1_000)
        assert budget.chunk_setup(first, other) == _fresh_setup(first, other)
