"""Class: unbounded work. A file rebuilt from its blobs (gate/action/blobdiff.py) was diffed by
difflib whole: quadratic and worse on adversarial input (every other line changed: 0.5 s
at 2,000 lines, 7.4 s at 8,000; about 20 minutes per 1 MB file, up to 300 such files per
run), so a pull request could hold the job until GitHub's six-hour limit.

Now difflib sees only the changed middle (the shared first and last lines set aside) and
only on spans whose old x new line counts are at most ``MAX_DIFF_WORK`` (and
``MAX_TOTAL_WORK`` over the file); a larger span is anchored on unique lines first. The
proof is structural, not timed: every sequence pair difflib is given is recorded, and
must be within the budget. Every section must still turn the base into the head under
``git apply`` (the oracle).
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable
from unittest import mock

import pytest

from gate.action.blobdiff import MAX_DIFF_WORK, MAX_TOTAL_WORK, section_from_blobs
from gate.diff import split_diff
from tests.unit.action.test_blobdiff import _apply


def alternating(lines: int, rng: random.Random) -> tuple[bytes, bytes]:
    old = b"".join(b"line %d\n" % i for i in range(lines))
    new = b"".join((b"line %d\n" % i) if i % 2 else b"changed %d\n" % i for i in range(lines))
    return old, new


def popular(lines: int, rng: random.Random) -> tuple[bytes, bytes]:
    old = b"".join(rng.choice([b"}\n", b"\n", b"return x\n"]) for _ in range(lines))
    new = b"".join(rng.choice([b"}\n", b"\n", b"return y\n"]) for _ in range(lines))
    return old, new


def shuffled(lines: int, rng: random.Random) -> tuple[bytes, bytes]:
    rows = [b"row %d\n" % i for i in range(lines)]
    other = rows[:]
    rng.shuffle(other)
    return b"".join(rows), b"".join(other)


def reversed_lines(lines: int, rng: random.Random) -> tuple[bytes, bytes]:
    rows = [b"row %d\n" % i for i in range(lines)]
    return b"".join(rows), b"".join(reversed(rows))


def framed(lines: int, rng: random.Random) -> tuple[bytes, bytes]:
    """A long shared head and tail around an adversarial middle, no final newline."""
    shared = b"".join(b"same %d\n" % i for i in range(lines // 2))
    old, new = alternating(lines, rng)
    return shared + old + shared + b"end", shared + new + shared + b"end!"


SHAPES: dict[str, Callable[[int, random.Random], tuple[bytes, bytes]]] = {
    "alternating": alternating,
    "popular": popular,
    "shuffled": shuffled,
    "reversed": reversed_lines,
    "framed": framed,
}


@pytest.mark.parametrize("lines", [50, 1_200, 8_000])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_difflib_never_gets_more_than_the_budget(shape: str, lines: int) -> None:
    rng = random.Random(f"{shape}/{lines}")
    old, new = SHAPES[shape](lines, rng)
    seen: list[tuple[int, int]] = []
    real = difflib.SequenceMatcher  # blobdiff imports difflib where it diffs

    def counted(junk, a, b, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((len(a), len(b)))
        return real(junk, a, b, *args, **kwargs)

    with mock.patch.object(difflib, "SequenceMatcher", counted):
        section = section_from_blobs("big.py", old, new)
    # (a shape with no line shared in order may never reach difflib: one replacement)
    assert seen or shape in ("popular", "reversed"), "the count above never saw difflib"
    for a, b in seen:
        assert a * b <= MAX_DIFF_WORK, (a, b)
    # over the file too (issue 19: large spans are anchored on unique lines, not one hunk)
    assert sum(a * b for a, b in seen) <= MAX_TOTAL_WORK
    assert [s.path for s in split_diff(section.data)] == ["big.py"]
    assert _apply(old, section.data, "big.py") == new
