"""Reviewer context (``context: files``, gate/review/context.py): what one request shows
besides its diff, within ``context_bytes``; what is left out and why; the question key,
the estimate and ``max_cost`` count it; coverage never widens."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.config.model import Config, ModelPrice
from gate.decide.decision import binding_for
from gate.errors import GateError
from gate.memory.question import key_for
from gate.review import cost
from gate.review.budget import chunk_prompt, chunk_setup
from gate.review.context import (
    INTRO,
    MAX_FILE_BYTES,
    NOTHING,
    HeadFiles,
    LeftWhy,
    fetch_plan,
    file_text,
    most_shown,
    paths_to_fetch,
    record,
    shown_for,
    whole_prompt_sha256,
)
from gate.review.prompt import build_prompt, prompt_sha256
from gate.review.scope import select_diff
from gate.safe import redact

LINES = "".join(f"value_{i} = {i}\n" for i in range(1, 401))
NEW = LINES.replace("value_200 = 200\n", "value_200 = -200\n")


def modify(path: str, line: int = 200) -> bytes:
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{line - 1},3 +{line - 1},3 @@\n"
        f" value_{line - 1} = {line - 1}\n-value_{line} = {line}\n+value_{line} = -{line}\n"
        f" value_{line + 1} = {line + 1}\n"
    ).encode()


DELETE = b"diff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n"  # noqa: E501
FILES = replace(Config(), context="files")


def head(**texts: bytes | None) -> HeadFiles:
    return HeadFiles("test", tuple(file_text(path, data) for path, data in texts.items()))


def test_context_diff_shows_nothing_and_keeps_the_prompt_and_key_as_they_were() -> None:
    diff = modify("a.py")
    assert shown_for(diff, Config(), head(**{"a.py": NEW.encode()})) is NOTHING
    # the digest every existing question was asked under is unchanged
    binding = binding_for(diff, Config())
    before = build_prompt(diff, binding=binding, instructions="").sha256()
    assert whole_prompt_sha256(diff, Config(), None) == before
    assert "context" not in Config().to_json()  # absent at the default: old config digests hold


def test_a_file_that_fits_is_shown_whole_with_its_byte_range_and_digests() -> None:
    diff = modify("a.py")
    shown = shown_for(diff, FILES, head(**{"a.py": NEW.encode()}))
    (part,) = shown.parts
    assert (part.first, part.last, part.lines) == (1, 400, 400)
    row = shown.to_json()["shown"][0]
    assert row["bytes"] == [0, len(NEW.encode())]
    assert row["sha256"] == hashlib.sha256(NEW.encode()).hexdigest()
    # git's blob id: what fetches the very bytes again (git cat-file blob ID)
    assert row["blob"] == hashlib.sha1(b"blob %d\0" % len(NEW) + NEW.encode()).hexdigest()
    assert shown.text.startswith(INTRO)
    assert 'file "a.py" lines 1-400 of 400\n' in shown.text
    assert len(shown.text.encode()) <= FILES.context_bytes
    assert not shown.partial


def test_a_file_over_the_budget_is_shown_around_its_hunks() -> None:
    config = replace(FILES, context_bytes=2048)
    shown = shown_for(modify("a.py"), config, head(**{"a.py": NEW.encode()}))
    (part,) = shown.parts
    assert (part.first, part.last) == (179, 221)  # 20 lines each side of lines 199-201
    text = NEW.encode()
    start, end = shown.to_json()["shown"][0]["bytes"]
    assert text[start:end].decode() == part.text
    assert "value_200 = -200\n" in part.text
    assert len(shown.text.encode()) <= 2048


def test_what_does_not_fit_is_left_out_and_named_never_a_crash() -> None:
    config = replace(FILES, context_bytes=1024)  # under the intro and one part: nothing fits
    diff = modify("a.py") + modify("b.py")
    shown = shown_for(diff, config, head(**{"a.py": NEW.encode(), "b.py": NEW.encode()}))
    assert shown.parts == ()
    assert shown.text == ""  # nothing shown: the prompt is the diff's alone
    assert [(x.path, x.why) for x in shown.left_out] == [
        ("a.py", LeftWhy.OVER_BUDGET),
        ("b.py", LeftWhy.OVER_BUDGET),
    ]
    assert shown.partial


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (None, LeftWhy.UNAVAILABLE),
        (b"x\0y\n", LeftWhy.BINARY),
        (b"caf\xe9\n", LeftWhy.UNDECODABLE),
        (b"a" * (MAX_FILE_BYTES + 1), LeftWhy.TOO_LARGE),
    ],
)
def test_each_file_the_rule_at_input_refuses_is_named(data: bytes | None, why: LeftWhy) -> None:
    shown = shown_for(modify("a.py"), FILES, head(**{"a.py": data}))
    assert shown.parts == ()
    assert [(x.path, x.why) for x in shown.left_out] == [("a.py", why)]
    assert shown.to_json()["left_out"][0]["why"] == str(why)


def test_a_file_holding_a_secret_of_this_run_is_never_shown() -> None:
    secret = "sk-live-context-secret-0123456789"
    with redact.scope(secret):
        text = NEW.replace("value_3 = 3", f"KEY = {secret!r}").encode()
        shown = shown_for(modify("a.py"), FILES, head(**{"a.py": text}))
    assert shown.parts == ()
    assert [(x.path, x.why) for x in shown.left_out] == [("a.py", LeftWhy.SECRET)]
    assert secret not in shown.text


def test_deleted_excluded_and_unfetched_files_are_named_not_shown() -> None:
    config = replace(FILES, exclude=("gen/**",))
    diff = modify("a.py") + modify("gen/x.py") + DELETE + modify("c.py")
    shown = shown_for(diff, config, head(**{"a.py": NEW.encode(), "gen/x.py": NEW.encode()}))
    assert [p.path for p in shown.parts] == ["a.py"]
    assert [(x.path, x.why) for x in shown.left_out] == [
        ("gen/x.py", LeftWhy.EXCLUDED),
        ("old.py", LeftWhy.DELETED),
        ("c.py", LeftWhy.UNAVAILABLE),
    ]
    assert paths_to_fetch(diff, config) == ["a.py", "c.py"]  # never fetched: excluded, gone


def test_a_deleted_file_alone_is_not_partial() -> None:
    shown = shown_for(DELETE, FILES, head())
    assert not shown.partial
    assert record(FILES, head(), [(None, DELETE)]) == {
        "mode": "files",
        "budget": FILES.context_bytes,
        "source": "test",
        "partial": False,
        "partial_blocks": False,
        "requests": [{"chunk": None, **shown.to_json()}],
    }


def test_files_without_head_files_is_a_bug_never_a_silent_diff_only_review() -> None:
    with pytest.raises(GateError) as err:
        shown_for(modify("a.py"), FILES, None)
    assert err.value.reason == "internal_error"


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(1024, 20_000),
    lines=st.lists(
        st.text(min_size=0, max_size=60).map(lambda s: s.replace("\n", "")), max_size=300
    ),
    at=st.integers(1, 300),
)
def test_the_section_never_exceeds_the_budget_and_parts_are_the_files_bytes(
    budget: int, lines: list[str], at: int
) -> None:
    text = "".join(line + "\n" for line in lines) or "x\n"
    count = text.count("\n")
    line = min(at, count)
    diff = (
        f"diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -{line},1 +{line},1 @@\n-a\n+b\n"
    ).encode()
    config = replace(FILES, context_bytes=budget)
    shown = shown_for(diff, config, head(**{"f.txt": text.encode()}))
    assert len(shown.text.encode()) <= budget
    raw = text.encode()
    for row, part in zip(shown.to_json()["shown"], shown.parts, strict=True):
        start, end = row["bytes"]
        assert raw[start:end] == part.text.encode()
        assert row["sha256"] == hashlib.sha256(raw[start:end]).hexdigest()
    assert most_shown(config, head(**{"f.txt": text.encode()})) >= len(shown.text.encode())


def test_the_setting_and_the_files_text_are_part_of_the_question() -> None:
    diff = modify("a.py")
    files = head(**{"a.py": NEW.encode()})
    plain = key_for(diff, Config())
    with_files = key_for(diff, FILES, head=files)
    assert with_files != plain
    assert with_files.config_sha != plain.config_sha  # the setting is in the config's digest
    assert with_files == key_for(diff, FILES, head=head(**{"a.py": NEW.encode()}))
    other = head(**{"a.py": NEW.replace("value_1 = 1", "value_1 = 11").encode()})
    changed = key_for(diff, FILES, head=other)
    assert changed != with_files  # a changed file outside the diff is a new question
    assert changed.diff_sha == with_files.diff_sha  # the verdict still binds the diff alone
    assert with_files.prompt_sha == prompt_sha256(diff, FILES, shown_for(diff, FILES, files).text)


def test_the_estimate_and_max_cost_count_the_context() -> None:
    priced = replace(
        FILES, reviewer=replace(FILES.reviewer, model="m"), pricing=(ModelPrice("m", 1.0, 1.0),)
    )
    diff = modify("a.py")
    files = head(**{"a.py": NEW.encode()})
    section = len(shown_for(diff, priced, files).text.encode())
    alone = cost.request_bytes(diff, replace(priced, context="diff"))
    shown = cost.request_bytes(diff, priced, None, files)
    assert shown[0] - alone[0] == section + 1  # the section and the line break joining it
    bound_alone = cost.preflight(diff, replace(priced, context="diff")).bound
    bound = cost.preflight(diff, priced, None, files).bound
    assert bound_alone is not None
    assert bound is not None
    assert bound > bound_alone
    # a max_cost between the two: the diff alone fits, the diff and its files do not
    limit = (bound_alone + bound) / 2
    assert cost.over_budget(diff, replace(priced, context="diff", max_cost=limit)) is None
    over = cost.over_budget(diff, replace(priced, max_cost=limit), None, files)
    assert over is not None
    assert over.reason == "over_budget"


def test_each_chunk_shows_its_own_files_within_its_own_budget() -> None:
    config = replace(
        FILES,
        incremental="always",
        max_chunk_bytes=1024,
        context_bytes=4096,
        max_input_tokens=8192,
    )
    diff = b"".join(modify(f"m{i}.py") for i in range(8))
    files = head(**{f"m{i}.py": NEW.encode() for i in range(8)})
    setup = chunk_setup(diff, config, None, files)
    assert setup is not None
    assert len(setup.plan.chunks) > 1
    total = len(setup.plan.chunks)
    for chunk in setup.plan.chunks:
        shown = shown_for(chunk.data, config, files)
        mine = {piece.path for piece in chunk.pieces}
        assert {p.path for p in shown.parts} | {x.path for x in shown.left_out} == mine
        assert len(shown.text.encode()) <= config.context_bytes
        prompt = chunk_prompt(chunk, total, setup.files, config, files)
        assert shown.text in prompt.user
    sizes = cost.request_bytes(diff, config, None, files)
    bare = cost.request_bytes(diff, replace(config, context="diff"))
    assert len(sizes) == len(bare) == total
    assert all(a > b for a, b in zip(sizes, bare, strict=True))


def test_coverage_stays_the_diff() -> None:
    diff = modify("a.py")
    selected = select_diff(diff, FILES)
    assert selected.coverage == select_diff(diff, Config()).coverage
    assert selected.coverage.reviewed == ("a.py",)


def test_the_fetch_is_planned_from_sizes_before_any_byte_is_read() -> None:
    fetch, left = fetch_plan([("a", 10), ("b", None), ("c", MAX_FILE_BYTES + 1), ("d", 5)])
    assert fetch == ["a", "d"]
    assert [(t.path, t.why) for t in left] == [
        ("b", LeftWhy.UNAVAILABLE),
        ("c", LeftWhy.TOO_LARGE),
    ]


def test_replay_of_a_context_files_config_is_unreplayable_and_says_why() -> None:
    from gate.memory.replay import Outcome, Recorded, replay_one

    diff = modify("a.py")
    recorded = Recorded(
        name="r",
        diff_sha=hashlib.sha256(diff).hexdigest(),
        policy_version="1",
        provider=None,
        model=None,
        base_url=None,
        prompt_sha=None,
        verdict="pass",
        state="pass",
        degraded=None,
    )
    row = replay_one(recorded, diff, FILES, api_key=None)
    assert row.outcome is Outcome.UNREPLAYABLE
    assert "context: files" in row.note


def test_the_settings_are_read_checked_and_kept_out_of_old_digests() -> None:
    from gate.config.load import parse_config
    from gate.errors import ConfigError
    from gate.review.result import config_sha256

    got = parse_config("context: files\ncontext_bytes: 4096\n", source="x.yml")
    assert (got.context, got.context_bytes) == ("files", 4096)
    assert config_sha256(parse_config("context: diff\n", source="x.yml")) == config_sha256(Config())
    for text, key in (("context: full\n", "context"), ("context_bytes: 10\n", "context_bytes")):
        with pytest.raises(ConfigError) as err:
            parse_config(text, source="x.yml")
        assert f"{key} must be" in err.value.message


def test_a_case_from_a_cases_file_has_no_head_so_its_files_are_named_unavailable() -> None:
    from gate.backtest.cases import Case
    from gate.backtest.runner import files_of

    diff = modify("a.py")
    case = Case("c1", "block", False, "", text=diff)
    assert case.head is None
    assert files_of(case, diff, Config()) is None  # context: diff reads nothing
    shown = shown_for(diff, FILES, files_of(case, diff, FILES))
    assert shown.parts == ()
    (left,) = shown.left_out
    assert (left.path, left.why) == ("a.py", LeftWhy.UNAVAILABLE)
    assert "no head commit" in left.detail
    merge = Case("m", "allow", True, "", repo=Path("."), revs=("p1...p2",))
    squash = Case("s", "allow", True, "", repo=Path("."), revs=("p", "sq"))
    assert (merge.head, squash.head) == ("p2", "sq")


def test_a_selection_over_many_changed_files_looks_each_path_up_once() -> None:
    """Attack (a budget blow-up): a merge that vendors tens of thousands of files. The
    selection looked each changed path up by scanning every fetched file: quadratic,
    27 s a selection at 40,000 files, several selections a review. Counted, not timed:
    path comparisons grow with the files, not with their square."""
    from dataclasses import replace as with_

    from gate.config.model import Config
    from gate.review.context import HeadFiles, file_text, shown_for

    compared = [0]

    class Path(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            compared[0] += 1
            return str.__eq__(self, other)

    count = 2_000
    names = [f"d/f{i}.txt" for i in range(count)]
    diff = b"".join(
        f"diff --git a/{n} b/{n}\n--- a/{n}\n+++ b/{n}\n@@ -1 +1 @@\n-a\n+b\n".encode()
        for n in names
    )
    head = HeadFiles("t", tuple(with_(file_text(n, b"b\n"), path=Path(n)) for n in names))
    shown = shown_for(diff, with_(Config(), context="files"), head)
    assert len(shown.parts) + len(shown.left_out) == count
    assert compared[0] <= 4 * count, compared[0]


def test_verify_reads_a_malformed_context_record_without_crashing() -> None:
    """A certificate is anyone's file: a number where the record lists parts made
    ``verify`` end in an internal error (TypeError) instead of reading past it."""
    from gate.commands.verify import context_note

    record = {"source": "git x", "requests": [{"shown": 5, "left_out": "ab"}, 7]}
    note = context_note({"context": {"reviewer_context": record}})
    assert note is not None
    assert "shown 0 parts of 0 changed files" in note
    assert "0 left out" in note
