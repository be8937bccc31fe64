"""Fence extraction and strict JSON at the parser level."""

from __future__ import annotations

import pytest

from gate import errors
from gate.decide.verdict import MAX_DEPTH, extract_fence, parse_verdict, strict_loads


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
    content = (
        '```json\n{"verdict": "pass", "reasons": ["r"], "confidence": 0.9, '
        '"diff_sha": "abc", "policy_version": "1"}\n```\n'
    )
    verdict = parse_verdict(content, diff_sha="abc", policy_version="1")
    assert verdict.reasons == ("r",)
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
