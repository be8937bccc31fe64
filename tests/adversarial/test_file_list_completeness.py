"""Class: list completeness. Binding each entry of a pull request's file list to the head
tree (its blob id) proves every entry is the head's; it does not prove the list names
every changed file. The run compares only the list's *length* with the pull request's
``changed_files``, so a list that holds one entry twice (a page repeated while the list
shifted under a push and back), or an entry for a file the head did not change, in
place of a changed file, reached full coverage and a ``pass`` with that file never shown
to the reviewer.

The list must name exactly the files that differ between the merge base's tree and the
head's (a rename's old path among them), each once. Every variant is run through the
whole action against the fake GitHub; none may pass or post ``success``.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.lab.demo import ScriptedModel
from gate.lab.sim import ReviewerSimulator
from tests.adversarial.test_file_list_binding import FILES, blocked, past_the_compare_cap
from tests.fakes.github import FakeGitHub
from tests.fakes.large_pull import OLD, blob_id
from tests.integration.action.test_run_fake_github import BASE, HEAD, pr_payload, run_gate

Entries = list[dict[str, Any]]
#: a variant: the fake GitHub as it was set up, the list it will answer, a random source
Variant = Callable[[FakeGitHub, Entries, random.Random], Entries]


def _dropped(entries: Entries, rng: random.Random) -> tuple[Entries, int]:
    """The list without one entry (a file the head changed), and where it was."""
    i = rng.randrange(len(entries))
    return entries[:i] + entries[i + 1 :], i


def _duplicate(fake: FakeGitHub, entries: Entries, rng: random.Random) -> Entries:
    """One entry dropped, another listed twice: the count still matches."""
    rest, i = _dropped(entries, rng)
    j = rng.randrange(len(rest))
    return [*rest[: i % len(rest)], copy.deepcopy(rest[j]), *rest[i % len(rest) :]]


def _unchanged_file(status: str) -> Variant:
    """One entry dropped, a file the head has unchanged listed in its place."""

    def variant(fake: FakeGitHub, entries: Entries, rng: random.Random) -> Entries:
        rest, i = _dropped(entries, rng)
        path = f"docs/same_{rng.randrange(1000):03d}.md"
        fake.set_file(BASE, path, OLD)
        fake.set_file(HEAD, path, OLD)
        extra = {"sha": blob_id(OLD), "filename": path, "status": status, "additions": 0,
                 "deletions": 0, "changes": 0, "blob_url": "", "raw_url": "",
                 "contents_url": "", "patch": "@@ -1 +1 @@\n-pass\n+pass\n"}  # fmt: skip
        return [*rest[:i], extra, *rest[i:]]

    return variant


def _rename_claims_a_modified_file(
    fake: FakeGitHub, entries: Entries, rng: random.Random
) -> Entries:
    """A changed file is listed only as the old name of a rename of a file the head added."""
    rest, i = _dropped(entries, rng)
    hidden = entries[i]["filename"]
    path = f"new/added_{rng.randrange(1000):03d}.py"
    fake.set_file(HEAD, path, OLD)
    extra = {"sha": blob_id(OLD), "filename": path, "previous_filename": hidden,
             "status": "renamed", "additions": 0, "deletions": 0, "changes": 0,
             "blob_url": "", "raw_url": "", "contents_url": ""}  # fmt: skip
    return [*rest[:i], extra, *rest[i:]]


VARIANTS: dict[str, Variant] = {
    "one entry twice": _duplicate,
    "unchanged file (modified)": _unchanged_file("modified"),
    "unchanged file (unchanged)": _unchanged_file("unchanged"),
    "unchanged file (changed)": _unchanged_file("changed"),
    "unchanged file (copied)": _unchanged_file("copied"),
    "rename over a modified file": _rename_claims_a_modified_file,
}


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_list_that_leaves_a_changed_file_out_never_passes(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Callable[..., ReviewerSimulator],
    name: str,
    seed: int,
) -> None:
    past_the_compare_cap(fake_github)
    entries = fake_github.files[7]
    # a new list object: the compare API keeps answering the real (capped) comparison
    fake_github.files[7] = VARIANTS[name](fake_github, entries, random.Random(f"{name}/{seed}"))
    assert fake_github.pulls[7]["changed_files"] == FILES
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    blocked(result, fake_github, sim)


@pytest.mark.parametrize("shifted_page", [2, 3, 4])
@pytest.mark.parametrize("at", [0, 57])
def test_a_page_repeated_and_one_skipped_under_a_push_never_passes(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Callable[..., ReviewerSimulator],
    shifted_page: int,
    at: int,
) -> None:
    """A push inserts a file early in the list, so the page read next repeats the entry
    before it; a push back to the same head removes it, so the page after that skips one.
    Every entry read is the head's; one changed file is never read."""
    past_the_compare_cap(fake_github)
    real = fake_github.files[7]
    inserted = {**copy.deepcopy(real[at]), "filename": "aaa/pushed_then_reverted.py"}
    shifted = [*real[:at], inserted, *real[at:]]
    pages: list[int] = []

    def push(number: int) -> None:  # called after each page is answered
        pages.append(number)
        fake_github.files[7] = shifted if len(pages) == shifted_page - 1 else real

    fake_github.files[7] = real
    fake_github.on_list_files = push
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert len(pages) >= shifted_page
    blocked(result, fake_github, sim)


def test_the_exact_list_still_passes(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    """The control: the whole list, a rename among it, passes with full coverage."""
    past_the_compare_cap(fake_github)
    entries = fake_github.files[7]
    old, new = "old/name.py", "new/name.py"
    fake_github.set_file(BASE, old, b"x = 1\n")
    fake_github.set_file(HEAD, new, b"x = 1\n")
    rename = {"sha": blob_id(b"x = 1\n"), "filename": new, "previous_filename": old,
              "status": "renamed", "additions": 0, "deletions": 0, "changes": 0,
              "blob_url": "", "raw_url": "", "contents_url": ""}  # fmt: skip
    fake_github.files[7] = [*entries, rename]
    fake_github.pulls[7]["changed_files"] = FILES + 1
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert result.outputs["state"] == "pass", result.stdout[-1500:]
    assert result.certificate["context"]["coverage"]["complete"] is True
