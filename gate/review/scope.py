"""What a review covers: the selection both front ends share, and the coverage rules.

:func:`select_diff` splits the diff into file sections and applies the config's
``include``/``exclude`` and ``max_diff_bytes``; :func:`nothing_in_scope` passes a change
that leaves the reviewer nothing to read and nothing unreviewed that blocks (binary
assets only, files the base config excludes), without calling the model;
:func:`nothing_reviewed` blocks (``needs_human``, ``nothing_reviewed``) when no file
section is left otherwise, without calling the model; :func:`guard_coverage` turns a
pass on partial coverage into ``needs_human`` (``partial_coverage``) unless
``allow_partial_coverage``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gate.assets import listed_type, literal_kind
from gate.config.model import Config
from gate.decide.decision import Decision, State, blocked, passed_without_review
from gate.diff import (
    COVER_HINT,
    Coverage,
    FileSection,
    SelectedDiff,
    SkipWhy,
    select,
    split_diff,
)


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
    """``sec`` marked as an asset when it is binary, not marked yet, and its header's
    modes and the bytes its ``GIT binary patch`` literals write make one (the one rule:
    :func:`gate.assets.change_kind`)."""
    if not sec.binary or sec.asset or listed_type(sec.path) is None:
        return sec
    return replace(sec, asset=literal_kind(sec.path, sec.old_path, sec.data))


def before_any_request(coverage: Coverage, config: Config) -> Decision | None:
    """What the selection alone decides, before any request (both front ends ask this):
    a pass with nothing in scope (:func:`nothing_in_scope`), a block with nothing to review
    (:func:`nothing_reviewed`: never ask the model about nothing), or a block on files left
    out (:func:`coverage_before_call`: never pay for a review that will block); else None."""
    return (
        nothing_in_scope(coverage, config)
        or nothing_reviewed(coverage)
        or coverage_before_call(coverage, allow_partial=config.allow_partial_coverage)
    )


def nothing_in_scope(coverage: Coverage, config: Config) -> Decision | None:
    """A pass with no reviewer call when the change has files, none of them is left for
    the reviewer, and none left out blocks: each is a binary asset (``no_code_changed``:
    "no code changed: 2 binary assets not reviewable") or a file the base config's
    include/exclude leaves out (``nothing_in_scope``: "nothing in scope: 3 files excluded
    by config", unless ``nothing_in_scope: block``). None otherwise: anything reviewable
    goes to the reviewer, and a gap (a plain binary, an executable PNG, a file over a
    limit) blocks as before (:func:`nothing_reviewed`, :func:`coverage_before_call`).

    Neither is an author's choice: the include/exclude globs and ``binary_assets`` are the
    base config's, and an asset is known by its name, mode and bytes (:mod:`gate.assets`).
    """
    if coverage.reviewed or not coverage.skipped or not coverage.complete:
        return None
    excluded = [item.path for item in coverage.skipped if item.why is SkipWhy.FILTERED]
    if excluded and config.nothing_in_scope != "pass":
        return None
    assets = [item.path for item in coverage.skipped if item.why is SkipWhy.BINARY_ASSET]
    phrase = coverage.asset_phrase()
    kinds = "a binary asset (an image, font, audio or video file, not reviewable)"
    if not excluded:
        detail = (
            f"no reviewer call: every changed file is {kinds}: {_named(assets)}; "
            "binary_assets: block in the config makes such files block"
        )
        return passed_without_review("no_code_changed", phrase, detail)
    files = f"{len(excluded)} file{'s' * (len(excluded) != 1)} excluded by config"
    which = f"left out by include/exclude in the config ({_named(excluded)})"
    if assets:
        which += f" or {kinds} ({_named(assets)})"
    detail = (
        f"no reviewer call: every changed file is {which}; nothing_in_scope: block in the "
        "config makes such a change block"
    )
    return passed_without_review(
        "nothing_in_scope", f"{files}, {phrase}" if phrase else files, detail
    )


def _named(paths: Sequence[str]) -> str:
    more = f" and {len(paths) - NAMED_GAPS} more" if len(paths) > NAMED_GAPS else ""
    return ", ".join(paths[:NAMED_GAPS]) + more


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
    named = "; ".join(f"{item.path} ({COVER_HINT[item.why]})" for item in gaps[:NAMED_GAPS])
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
