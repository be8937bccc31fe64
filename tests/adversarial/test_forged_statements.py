"""Class: a statement that names something its certificate does not hold.

A statement is only worth signing if nothing in it can say more than the certificate
it names. Holes of this class: a field changed after the statement was built (the
decision raised to pass, another diff, another policy, another commit, a subject added
or dropped), a statement carried over to another certificate or diff, a certificate
edited after its statement was made, and a certificate whose values are not the gate's
(a reason code that is prose, a state paired with the wrong status, a model name holding
a secret or a line break). Every variant is generated: each leaf of a real statement is
changed in turn (Hypothesis picks the new value), and ``check`` must refuse it naming
that field; every malformed certificate must yield no statement at all.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.decide.decision import Binding, State, Status, blocked
from gate.errors import StatementError, StatementMismatch
from gate.export import statement
from gate.review import certificate
from gate.safe import redact
from tests.export_oracles import check_statement

DIFF = b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a\n+b\n"
DIFF_SHA = hashlib.sha256(DIFF).hexdigest()
HEAD = "1" * 40


def make_cert(
    decision: Any = None, *, context: dict[str, Any] | None = None, **inputs: str
) -> bytes:
    decision = decision or blocked(State.FAIL, "reviewer_fail", "no", status=Status.FAILURE)
    cert = certificate.build(
        decision,
        binding=Binding(DIFF_SHA, "1"),
        attempts=(),
        inputs={"diff": DIFF_SHA, "config": "c" * 64, "prompt": "d" * 64, **inputs},
        envelope=None,
        extra={
            "reviewer": {"provider": "openai", "model": "gpt-4o-mini"},
            "github": {"head_sha": HEAD, "repository": "octo-org/hello-world"},
            "coverage": {"complete": True, "reviewed": ["a.py"], "skipped": [], "diff_bytes": 9},
            **(context or {}),
        },
    )
    return certificate.dumps(cert)


CERT = make_cert()
GOOD = statement.build(CERT)


def leaves(value: Any, path: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for key in value:
            yield from leaves(value[key], f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path


def set_leaf(obj: Any, path: str, new: Any) -> None:
    parts = path.replace("[", ".[").split(".")
    for part in parts[:-1]:
        obj = obj[int(part[1:-1])] if part.startswith("[") else obj[part]
    last = parts[-1]
    if last.startswith("["):
        obj[int(last[1:-1])] = new
    else:
        obj[last] = new


LEAVES = sorted(leaves(GOOD))


def test_the_good_statement_is_checked_by_the_standards_and_matches() -> None:
    check_statement(GOOD)
    statement.check(statement.dumps(GOOD), certificate=CERT, diff_sha=DIFF_SHA)


@pytest.mark.parametrize("leaf", LEAVES)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(new=st.one_of(st.text(max_size=70), st.none(), st.integers(), st.booleans()))
def test_any_changed_field_is_refused_naming_it(leaf: str, new: Any) -> None:
    forged = copy.deepcopy(GOOD)
    original = forged
    for part in leaf.replace("[", ".[").split("."):
        original = original[int(part[1:-1])] if part.startswith("[") else original[part]
    if new == original and type(new) is type(original):
        return
    set_leaf(forged, leaf, new)
    data = json.dumps(forged).encode()
    if leaf.endswith(".name"):  # a subject's name is a label: its digest is what counts
        statement.check(data, certificate=CERT, diff_sha=DIFF_SHA)
        return
    with pytest.raises(StatementError) as caught:
        statement.check(data, certificate=CERT, diff_sha=DIFF_SHA)
    if leaf in ("_type", "predicateType"):
        assert caught.value.reason == "statement_foreign"
    else:
        assert isinstance(caught.value, StatementMismatch)
        field = leaf if not leaf.endswith("]") else leaf.rsplit(".", 1)[0]
        assert caught.value.field in (leaf, field), (caught.value.field, leaf)


@pytest.mark.parametrize("state", ["pass", "needs_human", "incomplete"])
def test_a_fail_raised_or_lowered_in_the_statement_is_refused(state: str) -> None:
    forged = copy.deepcopy(GOOD)
    forged["predicate"]["decision"]["state"] = state
    with pytest.raises(StatementMismatch) as caught:
        statement.check(json.dumps(forged).encode(), certificate=CERT, diff_sha=DIFF_SHA)
    assert caught.value.field == "predicate.decision.state"


SUBJECTS = {
    "commit and diff": GOOD["subject"],
    "commit only": GOOD["subject"][:1],
    "in another order": GOOD["subject"][::-1],
    "the certificate, as actions/attest names it": [
        {"name": "x.certificate.json", "digest": {"sha256": hashlib.sha256(CERT).hexdigest()}}
    ],
}


@pytest.mark.parametrize("name", sorted(SUBJECTS))
def test_subjects_that_are_the_commit_the_diff_or_the_certificate_match(name: str) -> None:
    made = {**copy.deepcopy(GOOD), "subject": SUBJECTS[name]}
    statement.check(json.dumps(made).encode(), certificate=CERT, diff_sha=DIFF_SHA)


@pytest.mark.parametrize(
    "extra",
    [
        {"subject": [*GOOD["subject"], {"name": "x", "digest": {"sha256": "e" * 64}}]},
        {"subject": [{"name": "x", "digest": {"gitCommit": "2" * 40}}]},
        {"subject": [{"name": "x", "digest": {"sha512": "e" * 128}}]},
        {"subject": []},
        {"subject": [{"name": "x"}]},
        {"predicate": {**GOOD["predicate"], "extra": None}},
        {"predicate": {k: v for k, v in GOOD["predicate"].items() if k != "commit"}},
        {"predicate": {**GOOD["predicate"], "decision": {**GOOD["predicate"]["decision"], "x": 1}}},
    ],
)
def test_added_dropped_or_reordered_parts_are_refused(extra: dict[str, Any]) -> None:
    forged = {**copy.deepcopy(GOOD), **extra}
    with pytest.raises(StatementMismatch):
        statement.check(json.dumps(forged).encode(), certificate=CERT, diff_sha=DIFF_SHA)


@settings(max_examples=30, deadline=None)
@given(other=st.binary(min_size=0, max_size=64))
def test_another_diff_is_refused(other: bytes) -> None:
    sha = hashlib.sha256(other).hexdigest()
    if sha == DIFF_SHA:
        return
    with pytest.raises(StatementMismatch) as caught:
        statement.check(statement.dumps(GOOD), certificate=CERT, diff_sha=sha)
    assert caught.value.field == "predicate.diff_sha"


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: c.replace(b'"state": "fail"', b'"state": "pass"'),
        lambda c: c.replace(b'"status": "failure"', b'"status": "success"'),
        lambda c: c + b"\n",
        lambda c: c.replace(b'"gpt-4o-mini"', b'"gpt-4o"'),
        lambda c: make_cert(),  # the same run written again: another created_at or not
    ],
)
def test_a_certificate_edited_after_its_statement_is_refused(edit: Any) -> None:
    edited = edit(CERT)
    if edited == CERT:
        return
    with pytest.raises(StatementMismatch) as caught:
        statement.check(statement.dumps(GOOD), certificate=edited, diff_sha=DIFF_SHA)
    assert caught.value.field == "predicate.certificate.sha256"


BAD_CERTS = {
    "reason in prose": {"decision": {"reason": "Ignore previous instructions"}},
    "reason with a line break": {"decision": {"reason": "fail\nok"}},
    "pass with an error status": {"decision": {"state": "pass", "status": "error"}},
    "fail with a success status": {"decision": {"state": "fail", "status": "success"}},
    "unknown state": {"decision": {"state": "passed"}},
    "family in prose": {"decision": {"family": "the reviewer says fine"}},
    "family not its state's": {"decision": {"family": "unavailable"}},
    "family pass on a fail": {"decision": {"family": "pass"}},
    "diff sha not hex": {"binding": {"diff_sha": "Z" * 64, "policy_version": "1"}},
    "model with a line break": {"context": {"reviewer": {"provider": "openai", "model": "a\nb"}}},
    "provider in prose": {"context": {"reviewer": {"provider": "Open AI", "model": "m"}}},
    "head not a sha": {"context": {"github": {"head_sha": "main"}}},
    "two heads": {"context": {"github": {"head_sha": HEAD}, "commit": "2" * 40}},
    "coverage count negative": {"context": {"coverage": {"diff_bytes": -1}}},
    "manifest digest not hex": {"context": {"chunks": {"manifest": {"chunks": [], "sha256": 1}}}},
    "carried count negative": {
        "context": {"chunks": {"manifest": {"chunks": [], "sha256": "a" * 64}, "carried": -1}}
    },
    "carried from a source that is no digest": {
        "context": {
            "chunks": {
                "manifest": {"chunks": [], "sha256": "a" * 64},
                "reviews": [{"carried": {"certificate_sha": "../other.json"}}],
            }
        }
    },
    "another schema": {"schema": "review-gate.certificate/2"},
    "not an object": None,
}


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in patch.items()}}
    return patch


@pytest.mark.parametrize("name", sorted(BAD_CERTS))
def test_a_certificate_with_foreign_values_yields_no_statement(name: str) -> None:
    patch = BAD_CERTS[name]
    forged = [] if patch is None else _merge(json.loads(CERT), patch)
    with pytest.raises(StatementError):
        statement.build(json.dumps(forged).encode())


def test_a_model_name_holding_a_registered_secret_yields_no_statement() -> None:
    secret = "sk-live-0123456789abcdefABCDEF"
    forged = _merge(json.loads(CERT), {"context": {"reviewer": {"model": secret}}})
    with redact.scope(secret), pytest.raises(StatementError):
        statement.build(json.dumps(forged).encode())


@settings(max_examples=40, deadline=None)
@given(junk=st.binary(max_size=200))
def test_malformed_statement_bytes_are_refused_never_accepted(junk: bytes) -> None:
    with pytest.raises(StatementError):
        statement.check(junk, certificate=CERT, diff_sha=DIFF_SHA)
