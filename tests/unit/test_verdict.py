"""Fence extraction and strict JSON at the parser level."""

from __future__ import annotations

import pytest

from gate import errors
from gate.decide.readback import PART_NAMES, PARTS, WORDS
from gate.decide.verdict import MAX_DEPTH, check_shape, extract_fence, parse_verdict, strict_loads
from tests.verdicts import fenced_verdict, read_words, verdict_obj


def test_single_fence_is_extracted_with_text_around_it() -> None:
    content = 'Intro\n```json\n{"a": 1}\n```\nOutro\n'
    assert extract_fence(content) == '{"a": 1}'


def test_trailing_spaces_on_fence_lines_are_tolerated() -> None:
    assert extract_fence("```json  \n{}\n```\t\n") == "{}"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{}", "no_fence"),
        ("```JSON\n{}\n```\n", "bad_fence_info"),
        ("```json5\n{}\n```\n", "bad_fence_info"),
        ("```json\n{}\n", "unclosed_fence"),
        ("```json\n{}\n```json\n", "multiple_fences"),
        ("```json\n{}\n```\n```\n", "multiple_fences"),
        ("```json\n{}\n```\n````\n", "multiple_fences"),
        (" ```python\nx\n```\n```json\n{}\n```\n", "bad_fence_info"),
    ],
)
def test_fence_errors(content: str, reason: str) -> None:
    with pytest.raises(errors.FenceError) as info:
        extract_fence(content)
    assert info.value.reason == reason


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": 1, "a": 2}', "duplicate_key"),
        ('{"a": {"b": 1, "b": 1}}', "duplicate_key"),
        ('{"a": NaN}', "non_finite"),
        ('{"a": -Infinity}', "non_finite"),
        ("[]", "not_object"),
        ('"x"', "not_object"),
        ("{" * (MAX_DEPTH + 1) + "}" * (MAX_DEPTH + 1), "too_deep"),
        ("{'a': 1}", "json_syntax"),
        ('{"a": 1,}', "json_syntax"),
        ('{"a": 1} {"b": 2}', "json_syntax"),
        ('{"a": "\x01"}', "json_syntax"),
        ("", "json_syntax"),
    ],
)
def test_strict_json_errors(text: str, reason: str) -> None:
    with pytest.raises(errors.StrictJSONError) as info:
        strict_loads(text)
    assert info.value.reason == reason


def test_depth_check_ignores_brackets_inside_strings() -> None:
    assert strict_loads('{"a": "' + "[" * 100 + '"}') == {"a": "[" * 100}


def test_parse_verdict_checks_binding_last() -> None:
    content = fenced_verdict("abc", "1", reasons=["r"])
    verdict = parse_verdict(content, diff_sha="abc", policy_version="1")
    assert verdict.reasons == ("r",)
    assert verdict.read == read_words("abc", "1")
    with pytest.raises(errors.BindingError) as info:
        parse_verdict(content, diff_sha="abd", policy_version="1")
    assert info.value.reason == "diff_sha_mismatch"
    with pytest.raises(errors.BindingError) as info:
        parse_verdict(content, diff_sha="abc", policy_version="2")
    assert info.value.reason == "policy_version_mismatch"


@pytest.mark.parametrize(
    "second",
    [
        "> ```json\n> {}\n> ```\n",
        "- ```json\n  {}\n  ```\n",
        "1. ```json\n   {}\n   ```\n",
        ">```\n",
    ],
)
def test_fences_in_quotes_and_lists_count(second: str) -> None:
    content = '```json\n{"a": 1}\n```\n' + second
    with pytest.raises(errors.FenceError) as info:
        extract_fence(content)
    assert info.value.reason == "multiple_fences"


def test_a_huge_number_is_a_strict_json_error_not_a_crash() -> None:
    with pytest.raises(errors.StrictJSONError) as info:
        strict_loads('{"a": ' + "9" * 5000 + "}")
    assert info.value.reason == "bad_number"


def test_the_read_member_is_one_word_per_part_of_the_prompt() -> None:
    words = read_words("abc", "1")
    assert list(words) == list(PARTS)
    assert all(word in WORDS for word in words.values())
    assert len(WORDS) == len(set(WORDS)) == 256
    assert all(w.isascii() and w.isalpha() and w.islower() for w in WORDS)
    assert read_words("abc", "2") != words or read_words("abd", "1") != words
    shouted = {part: f" {word.upper()} " for part, word in words.items()}
    assert parse_verdict(
        fenced_verdict("abc", "1", read=shouted), diff_sha="abc", policy_version="1"
    )


@pytest.mark.parametrize("part", PARTS)
def test_a_read_word_missing_names_its_part_and_the_fix(part: str) -> None:
    read = {**read_words("abc", "1"), part: ""}
    with pytest.raises(errors.PromptUnread) as info:
        parse_verdict(fenced_verdict("abc", "1", read=read), diff_sha="abc", policy_version="1")
    assert info.value.reason == "prompt_unread"
    named = info.value.message.split(":")[0]  # what it says before the fix
    assert PART_NAMES[part] in named
    assert all(PART_NAMES[p] not in named for p in PARTS if p != part)
    assert "num_ctx" in info.value.message
    assert "max_chunk_bytes" in info.value.message


def test_read_words_out_of_place_or_of_another_prompt_are_unread() -> None:
    words = read_words("abc", "1")
    order = [words["head"], words["system"], words["middle"], words["tail"]]
    swapped = dict(zip(PARTS, order, strict=True))
    others = read_words("abd", "1")
    for read in (swapped, others):
        if read == words:
            continue
        with pytest.raises(errors.PromptUnread):
            parse_verdict(fenced_verdict("abc", "1", read=read), diff_sha="abc", policy_version="1")


@pytest.mark.parametrize(
    ("read", "error"),
    [
        (None, errors.PromptUnread),  # no read member: the contract (system message) unseen
        ("egg sun school copper", errors.ShapeError),
        ({"system": "egg"}, errors.ShapeError),
        ({"system": "a", "head": "b", "middle": "c", "tail": 1}, errors.ShapeError),
    ],
)
def test_the_read_member_has_one_shape(read: object, error: type[Exception]) -> None:
    obj = verdict_obj("abc", "1")
    if read is None:
        del obj["read"]
    else:
        obj["read"] = read
    with pytest.raises(error):
        check_shape(obj)


def test_a_verdict_made_before_the_read_words_is_read_by_its_own_contract() -> None:
    old = verdict_obj("abc", "1")
    del old["read"]
    assert check_shape(old, read=False).read == {}
    with pytest.raises(errors.ShapeError) as info:
        check_shape(verdict_obj("abc", "1"), read=False)
    assert info.value.reason == "extra_key"
