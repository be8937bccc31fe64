"""Class: an outage read as a rejection. "Could not review" must never look like "changes
rejected", and a family must never be guessed.

Every blocking decision gets one family from its state and reason alone; every decision the
infrastructure made (any ``incomplete``, any reason) or the gate's setup made (any
``config_*`` or setup reason) posts a status that says it is not about the code, within
140 characters whatever the description's length; nothing that blocks reads as a pass.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.decision import (
    CONFIG_REASONS,
    COVERAGE_REASONS,
    MAX_DESCRIPTION,
    Family,
    State,
    Status,
    blocked,
    family_of,
    status_description,
)

REASONS = st.one_of(
    st.sampled_from(sorted(CONFIG_REASONS | COVERAGE_REASONS)),
    st.from_regex(r"[a-z][a-z0-9_]{0,30}", fullmatch=True),
    st.from_regex(r"config_[a-z_]{1,20}", fullmatch=True),
)
DETAILS = st.text(min_size=0, max_size=400)
BLOCKING = st.sampled_from([State.FAIL, State.NEEDS_HUMAN, State.INCOMPLETE])


@settings(max_examples=150, deadline=None)
@given(state=BLOCKING, reason=REASONS, detail=DETAILS)
def test_a_block_never_reads_as_a_pass_and_names_its_family(
    state: State, reason: str, detail: str
) -> None:
    status = Status.FAILURE if state is State.FAIL else Status.ERROR
    decision = blocked(state, reason, detail or "x", status=status)
    family = decision.family
    assert family is not Family.PASS
    text = status_description(decision)
    assert len(text) <= MAX_DESCRIPTION
    assert text.startswith(str(family)), text
    assert not text.startswith("pass"), text
    if not family.about_the_code:
        assert text.startswith(f"{family}, not about the code: "), text
    assert decision.to_json()["family"] == str(family)


@settings(max_examples=100, deadline=None)
@given(reason=REASONS)
def test_incomplete_is_unavailable_and_fail_is_rejected_whatever_the_reason(reason: str) -> None:
    assert family_of("incomplete", reason) is Family.UNAVAILABLE
    assert family_of("fail", reason) is Family.REJECTED
    assert family_of("pass", reason) is Family.PASS


@settings(max_examples=100, deadline=None)
@given(reason=REASONS)
def test_needs_human_is_config_or_coverage_only_by_its_reason(reason: str) -> None:
    family = family_of("needs_human", reason)
    if reason.startswith("config_") or reason in CONFIG_REASONS:
        assert family is Family.CONFIG
    elif reason in COVERAGE_REASONS:
        assert family is Family.COVERAGE
    else:
        assert family is Family.NEEDS_HUMAN


@settings(max_examples=100, deadline=None)
@given(
    state=st.text(max_size=20).filter(
        lambda s: s not in {"pass", "fail", "incomplete", "needs_human", "skipped"}
    )
)
def test_an_unknown_state_has_no_family(state: str) -> None:
    try:
        family_of(state, "reviewer_pass")
    except ValueError:
        return
    raise AssertionError(f"a family was guessed for {state!r}")


def _setup_reasons() -> set[str]:
    """Every reason code the tree gives a ConfigError or a UsageError (keyword or class)
    where one can become a decision: the command line's own refusals (``commands/``,
    ``lab/``) exit 2 and are never a decision, so they are not scanned."""
    import ast
    from pathlib import Path

    import gate
    from gate import errors

    found = {errors.ConfigError.reason, errors.UsageError.reason}
    root = Path(gate.__file__).parent
    for path in root.rglob("*.py"):
        if path.relative_to(root).parts[0] in ("commands", "lab"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name not in ("ConfigError", "UsageError"):
                continue
            for kw in node.keywords:
                if kw.arg == "reason" and isinstance(kw.value, ast.Constant):
                    found.add(str(kw.value.value))
    return found


def test_every_setup_error_the_tree_raises_is_the_config_family() -> None:
    reasons = _setup_reasons()
    assert len(reasons) > 5  # the scan found the tree's errors
    wrong = sorted(r for r in reasons if family_of("needs_human", r) is not Family.CONFIG)
    assert not wrong, f"setup errors outside the config family: {wrong}"


@settings(max_examples=150, deadline=None)
@given(
    state=st.sampled_from(["success", "pending", "failure", "error"]),
    lead=st.sampled_from(["rejected: ", "fail: ", "pass: ", "", "superseded by 1234567: "]),
    rest=DETAILS,
)
def test_triage_lists_no_pass_no_pending_and_no_rejection(state: str, lead: str, rest: str) -> None:
    """Class: the human queue holding what no human must act on (or missing what one must).
    A success or a pending status never waits; a rejection waits for its author."""
    from gate.action.triage import WAITING, family_of_status

    found = family_of_status(state, lead + rest)
    if (
        state in ("success", "pending")
        or lead.strip(": ") in ("rejected", "fail")
        or (lead.startswith("superseded") and rest.startswith(("rejected", "fail:")))
    ):
        assert found is None
    else:
        assert found is None or found in WAITING
    for family in WAITING:
        assert family_of_status("error", f"{family}: {rest}") is family
