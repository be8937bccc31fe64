"""Class: a second definition of "the question" (issue 18, "each value defined once").

Issue 24's incremental review carried chunk answers keyed on its own ``chunk_question``
(``gate/review/budget.py``: the config alone), beside issue 18's one question key
(``gate/memory/question.py``). Two definitions drift: the certificate named a chunk
question that nothing tied to the question its own key describes, and a certificate
whose question was written by another rule (an old one, or an edited one) was carried
as long as the string matched. Now the chunk question is derived from the one key
(:meth:`QuestionKey.chunk_question`: the key's policy, config digest and model, and the
chunk prompts' template digest, recorded beside it in the certificate), and a row whose
question cannot be bound to its key is never trusted.

Generated over configs that change one field of the key, pushes that change only the
diff, and certificates mutated to break the binding. Fails on main 482136c (no derived
question; the old rule's entries and unbound certificates were carried).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gate.config.model import Config
from gate.decide.decision import State
from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator
from gate.memory.question import key_for, key_of_certificate
from gate.review import certificate
from gate.review.budget import chunk_prompt
from gate.review.carry import Book, Carried
from gate.review.chunks import Chunk
from gate.review.result import ReviewResult, config_sha256
from gate.review.scope import select_diff
from tests.integration.test_incremental import book_of, config_for, pr, review

Sim = Callable[..., ReviewerSimulator]

#: configs that each change one field of the question key (the diff stays)
VARIANTS: dict[str, Callable[[Config], Config]] = {
    "policy": lambda c: replace(c, policy_version="2"),
    "model": lambda c: replace(c, reviewer=replace(c.reviewer, model="sim-model-2")),
    "min_confidence": lambda c: replace(c, min_confidence=0.9),
    "instructions": lambda c: replace(c, instructions="Also check the docs."),
    "max_tokens": lambda c: replace(c, reviewer=replace(c.reviewer, max_tokens=1500)),
}


def _old_question(config: Config) -> str:
    """Issue 24's own rule (``review-gate.chunk-question/1``), as main computed it."""
    template = chunk_prompt(Chunk(number=0, pieces=()), 0, (), config).sha256()
    canonical = json.dumps(
        {
            "schema": "review-gate.chunk-question/1",
            "policy_version": config.policy_version,
            "config_sha": config_sha256(config),
            "provider": config.reviewer.provider,
            "model": config.reviewer.model,
            "template_sha": template,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _chunks(result: ReviewResult) -> dict[str, Any]:
    chunks: dict[str, Any] = result.certificate["context"]["chunks"]
    return chunks


def _derived(result: ReviewResult) -> str:
    """The chunk question the certificate's own key derives."""
    key = key_of_certificate(result.certificate)
    assert key is not None
    return key.chunk_question(_chunks(result)["template_sha"])


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_chunk_question_is_derived_from_the_one_key(sim_factory: Sim, variant: str) -> None:
    sim = sim_factory(ScriptedModel("pass"))
    base = config_for(sim)
    changed = VARIANTS[variant](base)
    first, other = review(base, pr()), review(changed, pr())
    pushed = review(base, pr(changed=5))
    for result, config, diff in ((first, base, pr()), (other, changed, pr()),
                                 (pushed, base, pr(changed=5))):  # fmt: skip
        assert result.chunks, "reviewed in chunks"
        key = key_of_certificate(result.certificate)
        assert key == key_for(select_diff(diff, config).data, config)  # the one key
        assert _chunks(result)["question"] == _derived(result)
    # a changed field of the key is a new chunk question; a push (the diff only) is not
    assert _chunks(other)["question"] != _chunks(first)["question"]
    assert _chunks(pushed)["question"] == _chunks(first)["question"]
    assert key_of_certificate(pushed.certificate) != key_of_certificate(first.certificate)


@pytest.mark.parametrize("changed", [3, 17, 31])
def test_answers_recorded_under_the_old_rule_carry_nothing(
    sim_factory: Sim, tmp_path: Path, changed: int
) -> None:
    """Old carry blocks stay readable (the block's format is unchanged), but their
    question is of another rule: no chunk matches, every chunk is sent, and the run's
    own answers (under the derived question) replace them."""
    sim = sim_factory(ScriptedModel("pass"))
    config = config_for(sim)
    first = review(config, pr())
    old = Book.of(
        Carried(_old_question(config), e.diff_sha, e.envelopes, run=e.run)
        for e in book_of(first, tmp_path).entries.values()
    )
    before = sim.count
    second = review(config, pr(changed=changed), old)
    assert second.decision.state is State.PASS
    assert all(r.carried is None for r in second.chunks)
    assert sim.count - before == len(second.chunks)
    assert _chunks(second)["question"] == _derived(second) != _old_question(config)


def _unbind_question(cert: dict[str, Any], config: Config) -> None:
    cert["context"]["chunks"]["question"] = _old_question(config)


def _drop_template(cert: dict[str, Any], config: Config) -> None:
    cert["context"]["chunks"].pop("template_sha", None)


def _other_template(cert: dict[str, Any], config: Config) -> None:
    cert["context"]["chunks"]["template_sha"] = "0" * 64


def _other_config(cert: dict[str, Any], config: Config) -> None:
    cert["inputs"]["config"] = "1" * 64


def _other_policy(cert: dict[str, Any], config: Config) -> None:
    cert["binding"]["policy_version"] = "2"


def _other_model(cert: dict[str, Any], config: Config) -> None:
    cert["context"]["reviewer"]["model"] = "another-model"


UNBOUND = {
    "old_rule": _unbind_question,
    "no_template": _drop_template,
    "other_template": _other_template,
    "other_config": _other_config,
    "other_policy": _other_policy,
    "other_model": _other_model,
}


@pytest.mark.parametrize("mutation", sorted(UNBOUND))
def test_a_certificate_whose_question_its_key_does_not_derive_is_refused(
    sim_factory: Sim, tmp_path: Path, mutation: str
) -> None:
    from gate.commands.review import carry_book
    from gate.errors import UsageError

    sim = sim_factory(ScriptedModel("pass"))
    config = config_for(sim)
    first = review(config, pr())
    good = tmp_path / "good.json"
    certificate.write(good, first.certificate)
    assert carry_book([str(good)]) is not None  # the untouched certificate is carried
    cert = json.loads(good.read_bytes())
    UNBOUND[mutation](cert, config)
    path = tmp_path / f"{mutation}.json"
    path.write_text(json.dumps(cert))
    with pytest.raises(UsageError, match="cannot be bound"):
        carry_book([str(path)])
