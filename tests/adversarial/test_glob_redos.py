"""Class: path filters that take time polynomial (or worse) in the path's length.

Cause: ``gate.diff._glob_regex`` translated each ``*`` into the backtracking regex
``[^/]*``; with k stars in one segment, a non-matching name makes ``re`` try every
way of splitting it, O(n^k): ``**/*-*-*-*-*.lock`` took 1.7 s per 254-character
name, so a pull request of such names outlived the job.

Fix: :class:`gate.diff.Glob` runs the glob as an automaton on all its states at once
(a DFA built lazily, transitions cached), one look-up per character, so a match does
at most ``len(path) * (len(tokens) + 1)`` steps whatever the pattern; ``Glob.steps``
counts them and the tests assert that bound (no timing).

Variants: Hypothesis patterns and paths over a small alphabet, checked against the
old translation (the reference semantics) on short inputs, also with the automaton's
cache bound forced low; Hypothesis-generated hostile star patterns against long names
(which the old regex cannot finish), and the issue's case itself.
"""

from __future__ import annotations

import re
from functools import cache

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gate import diff
from gate.diff import Glob, compile_glob, glob_match, path_selected


@cache
def reference_regex(pattern: str) -> re.Pattern[str]:
    """The translation the gate used before (its semantics are the reference)."""
    i, out = 0, []
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def reference_glob_match(path: str, pattern: str) -> bool:
    pattern = pattern.removeprefix("./").removeprefix("/")
    if reference_regex(pattern).match(path):
        return True
    return "/" not in pattern and bool(reference_regex(pattern).match(path.rsplit("/", 1)[-1]))


PIECES = st.sampled_from(["*", "**", "**/", "?", "a", "b", "-", "/", ".", "\n", "é"])
PATTERNS = st.lists(PIECES, max_size=8).map("".join)
PATHS = st.text(alphabet=st.sampled_from("ab-/.\né*?"), max_size=14)


@settings(max_examples=500, deadline=None)
@given(pattern=PATTERNS, path=PATHS)
@example(pattern="**/*.lock", path="deep/dir/x.lock")
@example(pattern="a**b", path="a/x/b")
@example(pattern="**/", path="a/")
@example(pattern="***/a", path="x/a")
@example(pattern="./*.py", path="src/x.py")
def test_glob_matches_as_the_old_translation_did(pattern: str, path: str) -> None:
    assert glob_match(path, pattern) is reference_glob_match(path, pattern)
    assert Glob(pattern).match(path) is bool(reference_regex(pattern).match(path))


@settings(max_examples=200, deadline=None)
@given(pattern=PATTERNS, paths=st.lists(PATHS, min_size=1, max_size=6))
def test_same_answers_when_the_cache_is_rebuilt_on_every_new_state(
    pattern: str, paths: list[str]
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(diff, "MAX_GLOB_STATES", 2)
        glob = Glob(pattern)
        for path in paths * 2:  # the second round reads the (rebuilt) cache
            assert glob.match(path) is bool(reference_regex(pattern).match(path))


def _bound(glob: Glob, path: str) -> int:
    return len(path) * (len(glob.tokens) + 1)


@settings(max_examples=60, deadline=None)
@given(
    stars=st.integers(min_value=2, max_value=12),
    sep=st.sampled_from(["-", ".", "_", "a"]),
    prefix=st.sampled_from(["", "**/", "**", "src/**/"]),
    suffix=st.sampled_from([".lock", "x", "", "/**"]),
    length=st.integers(min_value=100, max_value=300),
    unit=st.sampled_from(["a-", "-", "a", "a.", "-_a", "a_a."]),
)
def test_hostile_star_patterns_stay_within_a_linear_step_bound(
    stars: int, sep: str, prefix: str, suffix: str, length: int, unit: str
) -> None:
    pattern = prefix + sep.join(["*"] * stars) + suffix
    for size in (length, 4 + length % 13):  # long: the bound; short: the reference too
        name = (unit * size)[:size]
        for path in (name, f"d/{name}", f"src/{name}/{name}", f"{name}.lock"):
            glob = Glob(pattern)
            matched = glob.match(path)
            assert glob.steps <= _bound(glob, path)
            if size < 20:  # the old regex answers in time only for short names
                assert matched is bool(reference_regex(pattern).match(path))


@pytest.mark.timeout(60)  # the old regex needs years for this; a bound, not a measurement
def test_the_issue_case_and_worse_stay_linear() -> None:
    names = [("a-" * 127)[:254], ("a-" * 127)[:250] + ".loc", "x" + "-" * 253]
    for pattern in ("**/*-*-*-*-*.lock", "**/*-*-*-*-*-*-*-*-*-*-*-*.lock"):
        for name in names:
            glob = compile_glob(pattern)
            before = glob.steps
            assert not glob.match(f"dir/{name}")
            assert glob.steps - before <= _bound(glob, f"dir/{name}")
        assert glob_match(f"d/{names[0]}.lock", pattern)
        assert not path_selected(f"d/{names[0]}.lock", ["**"], [pattern])
