"""Class: a ``review-gate serve`` request body that is almost the gate's MC1 request.

``parse`` (gate/serve/upstream.py) is the service's one door for the request: what it
returns is forwarded upstream, sized against the upstream's context and signed (the
request's exact bytes, the prompt's digest). Each body below is a well-formed request
changed once by a class: a member twice (the same or another value: which one would be
signed and which forwarded?), a member missing or extra, a member of another type
(number as string, float, exponent, bool, huge, null, list), the nonce missing, short or
long, a BOM, bytes that are not UTF-8, a NUL or garbage after the object, line endings
(CRLF, CR, U+2028, NEL) and invisible or fullwidth characters inside and around keys,
a lone surrogate escaped in any string (``"\\ud800"``), and huge strings (bounded). Each
is ``BadQuestion`` (a 400 naming the fault) or a Question whose every value is the one
member the body holds and whose digests can be made (no crash later: exit 3 or a 500 is a
defect too). Checked failing before the fix: a lone surrogate in ``user`` or ``system``
was accepted, and the prompt digest the signature covers then raised UnicodeEncodeError.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.decide.signature import prompt_sha256, request_sha256
from gate.serve.upstream import MAX_TOKENS, BadQuestion, Question, parse

GOOD: dict[str, Any] = {
    "model": "m",
    "system": "the contract",
    "user": "the diff",
    "max_tokens": 512,
    "temperature": 0,
    "nonce": "0" * 32,
}
KEYS = sorted(GOOD)

#: JSON texts of values that are not what a member must be
WRONG_VALUES = ['"512"', "512.0", "5.12e2", "true", "null", "[512]", '{"n": 512}', "-1", "0",
                str(MAX_TOKENS + 1), "9" * 5000, "1e400", '""', '"' + "x" * 129 + '"',
                '"a\\ud800b"', '"\\udc00"', '"\\ud83d"']  # fmt: skip


def _member(key: str, value: str) -> str:
    return f"{json.dumps(key)}: {value}"


def _body(members: list[str]) -> bytes:
    return ("{" + ", ".join(members) + "}").encode("utf-8", "surrogatepass")


def _good_members() -> list[str]:
    return [_member(key, json.dumps(GOOD[key])) for key in KEYS]


def _accepted(body: bytes) -> Question | None:
    """The Question ``parse`` makes of ``body``, checked whole, or None if refused."""
    refused: BadQuestion | None = None
    try:
        question = parse(body)
    except BadQuestion as err:
        refused = err
    if refused is not None:
        assert refused.reason == "bad_request"
        assert refused.message.startswith("not an MC1 request: ")
        return None
    # what the service does next with it: digests and sizes (a crash here was a 500)
    prompt_sha256(question.system, question.user)
    assert question.request_sha256 == request_sha256(body)
    question.system.encode("utf-8")
    question.user.encode("utf-8")
    question.model.encode("utf-8")
    return question


def test_the_gates_own_request_is_read() -> None:
    question = _accepted(_body(_good_members()))
    assert question is not None
    assert (question.model, question.user, question.max_tokens) == ("m", "the diff", 512)


@settings(max_examples=120, deadline=None)
@given(
    key=st.sampled_from(KEYS),
    change=st.sampled_from(["twice_same", "twice_other", "missing", "wrong", "extra"]),
    value=st.sampled_from(WRONG_VALUES),
)
def test_a_member_changed_once_is_refused(key: str, change: str, value: str) -> None:
    members = _good_members()
    at = KEYS.index(key)
    if change == "twice_same":
        members.append(members[at])
    elif change == "twice_other":
        members.append(_member(key, json.dumps("other") if key != "max_tokens" else "7"))
    elif change == "missing":
        del members[at]
    elif change == "wrong":
        members[at] = _member(key, value)
    else:
        members.append(_member(key + "\u200b", json.dumps(GOOD[key])))
    question = _accepted(_body(members))
    if change == "wrong" and _fits(key, value):  # a value that is right after all
        assert question is not None
        assert getattr(question, key) == json.loads(value)
        return
    assert question is None, (key, change, value)


def _fits(key: str, value: str) -> bool:
    """Whether ``value`` (of :data:`WRONG_VALUES`) is right for ``key`` after all: any
    string that is text for the messages, a named model, temperature 0."""
    if key in ("system", "user", "model"):
        return value.startswith('"') and "\\u" not in value and (key != "model" or value != '""')
    return key == "temperature" and value == "0"


@settings(max_examples=80, deadline=None)
@given(
    field=st.sampled_from(["system", "user", "model"]),
    text=st.text(
        alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF),
        max_size=40,
    ),
    lone=st.sampled_from(["", "\\ud800", "\\udfff", "\\ud83d", "\\udc00\\ud800"]),
)
def test_any_string_is_read_exactly_or_refused(field: str, text: str, lone: str) -> None:
    """Any text, escaped or not, with or without a lone surrogate: the very text, or a
    refusal; never a Question whose digest cannot be made."""
    value = json.dumps(text)[:-1] + lone + '"'
    members = [_member(key, value if key == field else json.dumps(GOOD[key])) for key in KEYS]
    question = _accepted(_body(members))
    if lone:
        assert question is None, "a lone surrogate is no text: refused"
    elif question is not None:
        assert getattr(question, field) == text


@settings(max_examples=40, deadline=None)
@given(
    wrapper=st.sampled_from(
        [b"\xef\xbb\xbf", b"\xff", b"\0", b" trailing", b"{}", b"\r\n\xc3", b"\xe2\x80\xa8"]
    ),
    before=st.booleans(),
)
def test_bytes_around_the_request_are_refused(wrapper: bytes, before: bool) -> None:
    body = _body(_good_members())
    assert _accepted(wrapper + body if before else body + wrapper) is None


@settings(max_examples=20, deadline=None)
@given(
    ending=st.sampled_from(["\r\n", "\r", "\n", "\t"]),
    invisible=st.sampled_from(["\u2028", "\x85", "\u200b", "\ufeff", "\uff02"]),
)
def test_whitespace_json_allows_is_read_and_other_characters_are_not(
    ending: str, invisible: str
) -> None:
    members = _good_members()
    assert _accepted(("{" + ending + ("," + ending).join(members) + "}").encode()) is not None
    assert _accepted(("{" + invisible + ", ".join(members) + "}").encode()) is None


def test_huge_strings_are_read_or_refused_whole() -> None:
    """A 4 MB user message is the gate's to send (bounded by its own max_chunk_bytes)."""
    members = _good_members()
    members[KEYS.index("user")] = _member("user", json.dumps("x" * (4 << 20)))
    question = _accepted(_body(members))
    assert question is not None
    assert len(question.user) == 4 << 20
