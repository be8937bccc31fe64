"""Line-anchored findings: a reviewer's reasons placed on the lines of the reviewed diff.

The verdict contract is unchanged by findings (its keys, strict). The prompt asks the reviewer to
start a reason with ``path:line:`` or ``path:start-end:`` when it concerns specific
lines (:data:`gate.review.prompt.SYSTEM_PROMPT`); this module reads that prefix back.

- :func:`right_side` parses the hunks of the exact diff bytes that were reviewed and
  returns, per file, which lines of the NEW file appear in the diff (context and added
  lines; a removed line has no right-side number). Per hunk, because a review comment's
  range must lie inside one hunk.
- :func:`parse_reason` splits one reason into a location (path, start, end) and its text.
  The path must be a file of the reviewed diff, spelled exactly; paths may contain ``:``,
  so every ``:N:``/``:N-M:`` position is tried and a prefix naming a reviewed file wins.
- :func:`findings_for` classifies every reason: **anchored** (the path is in the diff and
  the whole range lies inside one hunk's right side), **outside** (it names a location,
  but not one on the right side of the reviewed diff: kept in the summary only, and the
  summary says so) or **general** (no location).

Everything here is pure and never raises on reviewer text: the reasons are the
reviewer's, so rendering them (annotations, review comments, Markdown) is the sinks' job,
each with its own escaping (:mod:`gate.action.findings_report`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from gate.diff import hunk_counts, split_diff

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
#: ``:N:`` or ``:N-M:`` after a path; line numbers are at most 9 digits
_LOCATION = re.compile(r":([1-9][0-9]{0,8})(?:-([1-9][0-9]{0,8}))?:")
#: prefixes a reviewer may put before a reviewed path (the diff's "b/" name, "./")
_LENIENT_PREFIXES = ("b/", "./")
#: the longest path prefix considered (a reason is the reviewer's text)
MAX_PATH_CHARS = 1024


class Anchor(StrEnum):
    ANCHORED = "anchored"  # on the right side of the reviewed diff
    OUTSIDE = "outside"  # names a location that is not on the right side of the diff
    GENERAL = "general"  # names no location


@dataclass(frozen=True)
class Finding:
    """One reason, with where it points (``path``/``start``/``end`` empty when general)."""

    reason: str  # the whole reason, as the reviewer wrote it
    text: str  # the reason without its location prefix
    anchor: Anchor
    path: str = ""
    start: int = 0
    end: int = 0

    @property
    def anchored(self) -> bool:
        return self.anchor is Anchor.ANCHORED

    @property
    def location(self) -> str:
        if not self.path:
            return ""
        lines = str(self.start) if self.end == self.start else f"{self.start}-{self.end}"
        return f"{self.path}:{lines}"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"anchor": str(self.anchor), "text": self.text}
        if self.path:
            out.update(path=self.path, start=self.start, end=self.end)
        return out


@dataclass(frozen=True)
class Hunk:
    """The right-side (new file) lines one hunk shows: consecutive numbers, in order
    (context and added lines both advance the new file's line number)."""

    lines: tuple[int, ...]

    def holds(self, start: int, end: int) -> bool:
        return bool(self.lines) and self.lines[0] <= start <= end <= self.lines[-1]


RightSide = Mapping[str, tuple[Hunk, ...]]


def _hunks(data: bytes) -> tuple[Hunk, ...]:
    """The hunks of one file section, counting lines exactly as the header promises."""
    hunks: list[Hunk] = []
    lines = data.split(b"\n")
    i = 0
    while i < len(lines):
        match = _HUNK.match(lines[i])
        i += 1
        if match is None:
            continue
        old_left, new_left = hunk_counts(match)
        number = int(match.group(3))
        right: list[int] = []
        while i < len(lines) and (old_left > 0 or new_left > 0):
            line = lines[i]
            kind = line[:1]
            if kind == b" " and old_left > 0 and new_left > 0:
                right.append(number)
                number += 1
                old_left -= 1
                new_left -= 1
            elif kind == b"-" and old_left > 0:
                old_left -= 1
            elif kind == b"+" and new_left > 0:
                right.append(number)
                number += 1
                new_left -= 1
            elif kind == b"\\":
                pass  # "\ No newline at end of file"
            else:
                break  # a malformed hunk: what was counted so far stands
            i += 1
        hunks.append(Hunk(tuple(right)))
    return tuple(hunks)


def right_side(diff: bytes) -> dict[str, tuple[Hunk, ...]]:
    """Per file of ``diff`` (its new name), the right-side lines of each hunk."""
    out: dict[str, tuple[Hunk, ...]] = {}
    for section in split_diff(diff):
        if section.binary or section.no_patch or section.unparseable:
            continue
        hunks = _hunks(section.data)
        if hunks:
            out[section.path] = out.get(section.path, ()) + hunks
    return out


def parse_reason(reason: str, paths: Iterable[str] = ()) -> tuple[str, int, int, str] | None:
    """``(path, start, end, text)`` when ``reason`` starts with a location, else None.

    A path of ``paths`` (the reviewed files) followed by ``:N:``/``:N-M:`` wins; without
    one, the first location after a path-like prefix (no whitespace) is returned, so a
    reason naming a file or line outside the diff is recognised as such.
    """
    known = set(paths)
    head = reason[: MAX_PATH_CHARS + 24]
    fallback: tuple[str, int, int, str] | None = None
    for match in _LOCATION.finditer(head):
        path = reason[: match.start()]
        if not path or len(path) > MAX_PATH_CHARS:
            continue
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) is not None else start
        text = reason[match.end() :].strip()
        if path in known:
            return path, start, end, text
        for prefix in _LENIENT_PREFIXES:  # the diff's b/ side, or ./ (a common spelling)
            if path.startswith(prefix) and path[len(prefix) :] in known:
                return path[len(prefix) :], start, end, text
        if fallback is None and not any(ch.isspace() for ch in path):
            fallback = (path, start, end, text)
    return fallback


def classify(reason: str, sides: RightSide) -> Finding:
    """One reason as a :class:`Finding` against the right side of the reviewed diff."""
    parsed = parse_reason(reason, sides.keys())
    if parsed is None:
        return Finding(reason=reason, text=reason, anchor=Anchor.GENERAL)
    path, start, end, text = parsed
    hunks = sides.get(path, ())
    inside = any(h.holds(start, end) for h in hunks)
    return Finding(
        reason=reason,
        text=text or reason,
        anchor=Anchor.ANCHORED if inside else Anchor.OUTSIDE,
        path=path,
        start=start,
        end=end,
    )


def findings_for(reasons: Sequence[str], diff: bytes) -> tuple[Finding, ...]:
    """Every reason classified against the right side of ``diff`` (the bytes reviewed)."""
    if not reasons:
        return ()
    sides = right_side(diff)
    return tuple(classify(reason, sides) for reason in reasons)
