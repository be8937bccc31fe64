"""What a review covers: the selection both front ends share, and the two coverage rules.

:func:`select_diff` splits the diff into file sections and applies the config's
``include``/``exclude`` and ``max_diff_bytes``; :func:`nothing_reviewed` blocks
(``needs_human``, ``nothing_reviewed``) when no file section is left, without calling
the model; :func:`guard_coverage` turns a pass on partial coverage into ``needs_human``
(``partial_coverage``) unless ``allow_partial_coverage``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gate.assets import asset_kind, listed_type, literal_head
from gate.config.model import Config
from gate.decide.decision import Decision, State, blocked
from gate.diff import COVER_HINT, Coverage, FileSection, SelectedDiff, select, split_diff


def select_diff(
    diff: bytes | Sequence[FileSection], config: Config, *, source: str = "diff"
) -> SelectedDiff:
    """What the reviewer is shown: per file, the config's include/exclude and byte limit.

    ``diff`` is the raw diff (split here) or its sections (the action's, which
    may hold files GitHub sent no patch for). Every file left out is recorded
    in the coverage manifest with why.
    """
    sections = split_diff(diff) if isinstance(diff, bytes) else list(diff)
    if config.binary_assets == "allow":  # a local diff's binary literal shows its bytes
        sections = [_literal_asset(sec) for sec in sections]
    return select(
        sections,
        include=config.include,
        exclude=config.exclude,
        max_bytes=config.max_diff_bytes,
        source=source,
        original=diff if isinstance(diff, bytes) else None,
        assets=config.binary_assets == "allow",
    )


def _literal_asset(sec: FileSection) -> FileSection:
    """``sec`` marked as an asset when it is binary, not marked yet, and the bytes its
    ``GIT binary patch`` literal writes match its name (gate/assets.py)."""
    if not sec.binary or sec.asset or listed_type(sec.path) is None:
        return sec
    return replace(sec, asset=asset_kind(sec.path, literal_head(sec.data)))


def nothing_reviewed(coverage: Coverage) -> Decision | None:
    """``needs_human`` (``nothing_reviewed``) when no file section is reviewed, else None.

    An empty review must never reach the model: a verdict on nothing would pass.
    """
    if coverage.reviewed:
        return None
    if coverage.total == 0:
        cause = (
            "the diff holds no file section (it is empty, or has no 'diff --git' "
            "headers: make it with git diff)"
        )
    else:
        cause = f"{coverage.summary()}: {coverage.advice()}"
    return blocked(State.NEEDS_HUMAN, "nothing_reviewed", f"nothing to review: {cause}")


#: the files a partial-coverage block names (the manifest has them all)
NAMED_GAPS = 5


def coverage_before_call(coverage: Coverage, *, allow_partial: bool) -> Decision | None:
    """``needs_human`` (``partial_coverage``) when files the review needs were left out and
    partial coverage is not allowed: decided before any request, so a review that would
    block on coverage is never paid for. Names the files and what would cover each."""
    if coverage.complete or allow_partial:
        return None
    gaps = coverage.gaps
    named = "; ".join(
        f"{item.path} ({COVER_HINT.get(item.why, str(item.why))})" for item in gaps[:NAMED_GAPS]
    )
    more = f"; and {len(gaps) - NAMED_GAPS} more" if len(gaps) > NAMED_GAPS else ""
    return blocked(
        State.NEEDS_HUMAN,
        "partial_coverage",
        f"partial coverage: {coverage.summary()}; the reviewer was not asked. Not reviewed: "
        f"{named}{more}. Cover those files, or a maintainer sets allow_partial_coverage: true "
        "in the base config",
    )


def guard_coverage(
    decision: Decision, coverage: Coverage, *, allow_partial: bool
) -> tuple[Decision, str | None]:
    """The decision once coverage is taken into account, and a note for the report.

    A pass on partial coverage is ``needs_human`` (``partial_coverage``) unless
    partial coverage is allowed; a blocking decision stays as it is, with a note.
    """
    if coverage.complete or allow_partial:
        return decision, None
    if decision.state is State.PASS:
        guarded = blocked(
            State.NEEDS_HUMAN,
            "partial_coverage",
            f"partial coverage: {coverage.summary()}; review the rest by hand or set "
            "allow_partial_coverage: true",
        )
        return guarded, None
    return decision, f"partial coverage: {coverage.summary()}"
