"""Class: a verdict's ``read`` member (gate/decide/readback.py) that is almost the
prompt's four read words.

A model that did not see a part of the prompt cannot know its word; so a ``read``
member is accepted only if each part's word is that part's word. Each verdict below
changes the member once by a class: a word in another case, with spaces, line breaks
(CRLF, CR, U+2028, U+2029, NEL) or invisible characters (zero-width, BOM, soft hyphen)
around or inside it, in fullwidth letters or Cyrillic lookalikes, decomposed or
composed (NFC, NFD, NFKC forms), a part missing, an extra part, a part twice in the JSON
(the same or another word), the words in another order, the words of another question,
a word list instead of an object, a word of another type, a huge word (bounded). The
verdict is read end to end (fence, strict JSON, shape, binding, read words): it is read
(the pass stands) only if every word, folded to its compatibility form and letter case
and stripped of surrounding space, is the part's word, else a
:class:`~gate.errors.VerdictError` (``prompt_unread`` or a shape/JSON reason); never
another exception.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.readback import PARTS, WORDS, words_for
from gate.decide.verdict import parse_verdict
from gate.errors import VerdictError

DIFF_SHA, POLICY = "ab" * 32, "1"
WORDS_HERE = words_for(DIFF_SHA, POLICY)

#: how a word can be changed: each a function of the word
CHANGES = {
    "same": lambda w: w,
    "upper": str.upper,
    "title": str.title,
    "spaces": lambda w: f"  {w} ",
    "crlf": lambda w: f"{w}\r\n",
    "cr_inside": lambda w: f"{w[:1]}\r{w[1:]}",
    "u2028": lambda w: f"\u2028{w}\u2029",
    "nel": lambda w: f"{w}\x85",
    "zero_width_inside": lambda w: f"{w[:1]}\u200b{w[1:]}",
    "zero_width_after": lambda w: f"{w}\u200b",
    "bom": lambda w: f"\ufeff{w}",
    "soft_hyphen": lambda w: f"{w[:1]}\u00ad{w[1:]}",
    "fullwidth": lambda w: "".join(chr(ord(c) + 0xFEE0) for c in w),
    "cyrillic_a_o_e": lambda w: w.translate(str.maketrans("aoe", "\u0430\u043e\u0435")),
    "combining_acute": lambda w: f"{w}\u0301",
    "nfd_of_accent": lambda w: unicodedata.normalize("NFD", f"{w}\u00e9"),
    "doubled": lambda w: w + w,
    "cut": lambda w: w[:-1],
    "empty": lambda w: "",
    "other_word": lambda w: WORDS[(WORDS.index(w) + 1) % len(WORDS)],
    "huge": lambda w: w * 20_000,
}


def _carries(word: str, expected: str) -> bool:
    """The oracle: ``word`` is ``expected`` up to compatibility form, letter case and
    surrounding space (what a model that read the word may write)."""
    return unicodedata.normalize("NFKC", word).strip().casefold() == expected


def _verdict(read_json: str) -> str:
    obj = {"verdict": "pass", "reasons": ["the change is fine"], "confidence": 0.95,
           "diff_sha": DIFF_SHA, "policy_version": POLICY}  # fmt: skip
    return "```json\n" + json.dumps(obj)[:-1] + f', "read": {read_json}}}\n```\n'


def _outcome(read_json: str) -> dict[str, str] | None:
    """The read words of the verdict holding ``read_json``, None if it is refused."""
    refused: VerdictError | None = None
    try:
        verdict = parse_verdict(_verdict(read_json), diff_sha=DIFF_SHA, policy_version=POLICY)
    except VerdictError as err:
        refused = err
    if refused is not None:
        assert refused.message, "a refusal names its cause"
        return None
    return dict(verdict.read)


@settings(max_examples=150, deadline=None)
@given(part=st.sampled_from(PARTS), change=st.sampled_from(sorted(CHANGES)))
def test_a_word_changed_is_read_only_if_it_is_still_the_word(part: str, change: str) -> None:
    read = {**WORDS_HERE, part: CHANGES[change](WORDS_HERE[part])}
    words = _outcome(json.dumps(read))
    if words is not None:
        assert all(_carries(words[p], WORDS_HERE[p]) for p in PARTS), (change, words)
    if change in ("same", "upper", "title", "spaces", "crlf", "u2028", "nel"):
        assert words is not None, change  # case and surrounding space aside (docs/verdict.md)
    if not _carries(read[part], WORDS_HERE[part]):
        assert words is None, change


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from(["missing", "extra", "twice_same", "twice_other", "list",
                           "string", "number", "null", "nested", "order", "other_question"]),
    part=st.sampled_from(PARTS),
    other=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)  # fmt: skip
def test_a_member_of_another_shape_is_refused(shape: str, part: str, other: str) -> None:
    members = [f"{json.dumps(p)}: {json.dumps(WORDS_HERE[p])}" for p in PARTS]
    at = PARTS.index(part)
    if shape == "missing":
        del members[at]
    elif shape == "extra":
        members.append('"whole": "yes"')
    elif shape == "twice_same":
        members.append(members[at])
    elif shape == "twice_other":
        members.append(f"{json.dumps(part)}: {json.dumps(WORDS[0])}")
    elif shape == "nested":
        members[at] = f"{json.dumps(part)}: {json.dumps([WORDS_HERE[part]])}"
    read_json = "{" + ", ".join(members) + "}"
    if shape == "list":
        read_json = json.dumps([WORDS_HERE[p] for p in PARTS])
    elif shape == "string":
        read_json = json.dumps(" ".join(WORDS_HERE[p] for p in PARTS))
    elif shape in ("number", "null"):
        read_json = "42" if shape == "number" else "null"
    words: dict[str, Any] = dict(WORDS_HERE)
    if shape == "order":  # each part given the next part's word
        words = {p: WORDS_HERE[PARTS[(i + 1) % 4]] for i, p in enumerate(PARTS)}
        read_json = json.dumps(words)
    elif shape == "other_question":
        words = words_for(other, POLICY)
        read_json = json.dumps(words)
    outcome = _outcome(read_json)
    if shape in ("order", "other_question") and words == WORDS_HERE:
        assert outcome == WORDS_HERE  # the 256^-4 coincidence: the same words
        return
    assert outcome is None, shape
