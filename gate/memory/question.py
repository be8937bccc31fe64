"""The question a review answers: one key, defined once.

A decision is an answer to a question, and the memory, the certificate and replay must
agree on what that question was, whatever the shape of the review (one request, chunks,
a context-overflow split, ``agreement: k``). :class:`QuestionKey` is that question:

* ``diff_sha``: SHA-256 of the exact diff bytes selected for review (the binding);
* ``policy_version``: the policy the verdict must repeat;
* ``config_sha``: the digest of the whole effective config (base config + inputs);
* ``model``: the reviewer model;
* ``prompt_sha``: the digest of the **whole-diff** prompt, with the files
  ``context: files`` shows beside it (:func:`gate.review.context.whole_prompt_sha256`),
  even when the diff was reviewed in chunks:
  known before any call, the same for every review shape. The chunk prompts' digests
  travel beside it (``chunk_prompts``, not part of equality: the chunk cut follows from
  the diff and the config, which the key holds).

The API is small: :func:`key_for` (what a review of these bytes under this config
would ask), :func:`key_of_record` and :func:`key_of_certificate` (what an earlier
decision answered), :meth:`QuestionKey.answered_by` (the one comparison),
:attr:`QuestionKey.id` (a stable digest of the five fields, for the question ledger and
logs; its first 16 hex digits, ``tag_hex``, are the question in the mark the gate puts
on what it posts, gate.action.github.mark), and
:meth:`QuestionKey.chunk_question` (the question each chunk of a review in chunks answers,
what incremental review carries by: derived from this key, defined nowhere else).
A changed byte anywhere in the five fields is a new question.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gate.diff import diff_sha
from gate.memory.record import Record
from gate.review.context import HeadFiles, whole_prompt_sha256
from gate.review.result import config_sha256

if TYPE_CHECKING:
    from gate.config.model import Config
    from gate.review.result import ReviewResult


@dataclass(frozen=True)
class QuestionKey:
    """What a review asks (module docstring); equality is the five fields."""

    diff_sha: str
    policy_version: str
    config_sha: str
    model: str
    prompt_sha: str
    #: the chunk prompts' digests in chunk order, when reviewed in chunks (evidence only)
    chunk_prompts: tuple[str, ...] = field(default=(), compare=False)
    #: the fallbacks' models: a decision by any reviewer the config may ask answers the
    #: same question (a fail by a fallback stands for the reviewer before it, and back)
    fallback_models: tuple[str, ...] = field(default=(), compare=False)

    @property
    def tag_hex(self) -> str:
        """The id's first 16 hex digits: the question's tag on the commit (:func:`tag`)."""
        return self.id[:16]

    @property
    def id(self) -> str:
        """SHA-256 over the five fields, one a line (a stable name for the question)."""
        fields = (self.diff_sha, self.policy_version, self.config_sha, self.model)
        text = "\n".join(("review-gate.question/1", *fields, self.prompt_sha))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def chunk_question(self, template_sha: str, *, model: str | None = None) -> str:
        """The question each chunk of a review in chunks answers, besides the chunk's own
        bytes (what a later run carries a chunk's answer by, :mod:`gate.review.carry`):
        this key's fields that hold for every chunk (policy, config digest, and the model,
        or ``model`` when a fallback answered) and ``template_sha``, the digest of the chunk
        prompt's template (:func:`gate.review.budget.chunk_template_sha`: the system prompt
        and the scope's wording around an empty chunk). The whole diff's digest and prompt
        are left out on purpose: a chunk's answer carries to the next push because the
        rest of the diff changed around it. A new shape gets a new schema name, so a
        chunk question of another shape never matches."""
        canonical = json.dumps(
            {
                "schema": CHUNK_QUESTION_SCHEMA,
                "policy_version": self.policy_version,
                "config_sha": self.config_sha,
                "model": self.model if model is None else model,
                "template_sha": template_sha,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
        )
        return hashlib.sha256(canonical.encode("ascii")).hexdigest()

    def answered_by(self, record: Record) -> bool:
        """Whether ``record`` decided exactly this question (by this model or a fallback),
        or is a row recovered from the gate's own failure tagged with this question."""
        found = key_of_record(record)
        if found is None:
            return record.question_tag is not None and record.question_tag == self.tag_hex
        if record.model not in (self.model, *self.fallback_models):
            return False
        return replace(found, model=self.model) == self

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "diff_sha": self.diff_sha,
            "policy_version": self.policy_version,
            "config_sha": self.config_sha,
            "model": self.model,
            "prompt_sha": self.prompt_sha,
            "chunk_prompts": list(self.chunk_prompts),
        }


#: the schema of a chunk's question (:meth:`QuestionKey.chunk_question`); ``/1`` was
#: issue 24's own ``chunk_question``, keyed on the config alone: its answers carry nothing
CHUNK_QUESTION_SCHEMA = "review-gate.chunk-question/2"


def key_for(
    diff: bytes,
    config: Config,
    *,
    chunk_prompts: tuple[str, ...] = (),
    head: HeadFiles | None = None,
) -> QuestionKey:
    """The question a review of ``diff`` (the selected bytes) under ``config`` asks;
    ``head``: the files ``context: files`` shows (their text is in the prompt digest)."""
    return QuestionKey(
        diff_sha=diff_sha(diff),
        policy_version=config.policy_version,
        config_sha=config_sha256(config),
        model=config.reviewer.model,
        prompt_sha=whole_prompt_sha256(diff, config, head),
        chunk_prompts=chunk_prompts,
        fallback_models=tuple(fb.model for fb in config.fallbacks),
    )


def chunk_prompts_of(result: ReviewResult) -> tuple[str, ...]:
    """The chunk prompts' digests of a review in chunks (split halves included), in order."""
    return tuple(chunk.prompt_sha256 for chunk in result.chunks)


def key_of_record(record: Record) -> QuestionKey | None:
    """The question a record answered, or None when it answered none (made before the
    diff, the config or the prompt was known)."""
    if record.diff_sha is None or record.config_sha is None or record.prompt_sha is None:
        return None
    return QuestionKey(
        diff_sha=record.diff_sha,
        policy_version=record.policy_version,
        config_sha=record.config_sha,
        model=record.model,
        prompt_sha=record.prompt_sha,
    )


def key_of_certificate(cert: Mapping[str, Any]) -> QuestionKey | None:
    """The question a certificate (``review-gate.certificate/1``) answered, or None when
    it names no complete question (a block made before the review)."""
    binding, inputs = _obj(cert.get("binding")), _obj(cert.get("inputs"))
    reviewer = _obj(_obj(cert.get("context")).get("reviewer"))
    values = (
        binding.get("diff_sha"),
        binding.get("policy_version"),
        inputs.get("config"),
        reviewer.get("model"),
        inputs.get("prompt"),
    )
    if not all(isinstance(v, str) and v for v in values):
        return None
    reviews = _obj(_obj(cert.get("context")).get("chunks")).get("reviews")
    prompts = tuple(
        str(c["prompt_sha256"])
        for c in (reviews if isinstance(reviews, list) else [])
        if isinstance(c, dict) and isinstance(c.get("prompt_sha256"), str)
    )
    diff_sha, policy, config, model, prompt = (str(v) for v in values)
    return QuestionKey(diff_sha, policy, config, model, prompt, chunk_prompts=prompts)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
