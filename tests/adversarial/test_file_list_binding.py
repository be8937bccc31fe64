"""Class: list binding. A pull request GitHub will not diff (406) and whose compare list
stops at 300 files is read from the pull request's file list: the *current* one, over many
pages. Whatever that list says must belong to the head the gate reviews, or the run must
not pass: a push while the pages are read (or force-pushed back to the same head), an
entry whose blob is not the head's, a removed file the head still has, a path spelled
differently from the head tree's (``./x``, ``X``, a trailing slash, a NUL).

Every variant is run through the whole action against the fake GitHub; each mutation of
the list must end in a run that is not ``pass`` and posts no ``success``. The unmutated
list is the control: it passes.
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
from tests.fakes.github import FakeGitHub
from tests.fakes.large_pull import add_large_pull
from tests.integration.action.test_run_fake_github import BASE, HEAD, pr_payload, run_gate

FILES = 305  # past the compare API's 300
Mutation = Callable[[list[dict[str, Any]], random.Random], None]


def _pick(entries: list[dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    return entries[rng.randrange(len(entries))]


def _other_blob(entries: list[dict[str, Any]], rng: random.Random) -> None:
    entry = _pick(entries, rng)
    entry["sha"] = format(rng.getrandbits(160), "040x")


def _neighbours_blob(entries: list[dict[str, Any]], rng: random.Random) -> None:
    i = rng.randrange(len(entries) - 1)
    entries[i]["sha"] = entries[i + 1]["sha"]


def _no_blob(entries: list[dict[str, Any]], rng: random.Random) -> None:
    _pick(entries, rng)["sha"] = ""


def _removed_but_present(entries: list[dict[str, Any]], rng: random.Random) -> None:
    _pick(entries, rng)["status"] = "removed"


def _alias(spelling: Callable[[str], str]) -> Mutation:
    def mutate(entries: list[dict[str, Any]], rng: random.Random) -> None:
        entry = _pick(entries, rng)
        entry["filename"] = spelling(entry["filename"])

    return mutate


def _foreign_file(entries: list[dict[str, Any]], rng: random.Random) -> None:
    extra = copy.deepcopy(_pick(entries, rng))
    extra["filename"] = "not/in/the/head.py"
    entries.insert(rng.randrange(len(entries)), extra)


MUTATIONS: dict[str, Mutation] = {
    "other blob": _other_blob,
    "neighbour's blob": _neighbours_blob,
    "no blob id": _no_blob,
    "removed but in the head": _removed_but_present,
    "dot-slash alias": _alias(lambda p: "./" + p),
    "case alias": _alias(str.upper),
    "trailing slash": _alias(lambda p: p + "/"),
    "leading slash": _alias(lambda p: "/" + p),
    "doubled slash": _alias(lambda p: p.replace("/", "//", 1)),
    "trailing NUL": _alias(lambda p: p + "\0"),
    "file not in the head": _foreign_file,
}


def past_the_compare_cap(fake: FakeGitHub) -> None:
    """Pull request 7: FILES small files, each with its patch (the compare list is full)."""
    add_large_pull(fake, 7, head_sha=HEAD, base_sha=BASE, files=FILES, total=FILES * 300,
                   without_patch=0)  # fmt: skip


def blocked(result: Any, fake: FakeGitHub, sim: ReviewerSimulator) -> None:
    """Not a pass, no success posted, and nothing unbound reached the reviewer."""
    assert result.outputs.get("state") != "pass", result.stdout[-1500:]
    assert "success" not in [s["state"] for s in fake.status_list(HEAD)]
    assert result.code != 0
    assert sim.count == 0


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_list_that_is_not_the_heads_never_passes(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Callable[..., ReviewerSimulator],
    name: str,
    seed: int,
) -> None:
    past_the_compare_cap(fake_github)
    MUTATIONS[name](fake_github.files[7], random.Random(f"{name}/{seed}"))
    fake_github.pulls[7]["changed_files"] = len(fake_github.files[7])
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    blocked(result, fake_github, sim)
    assert result.outputs["state"] == "incomplete", result.outputs
    assert "does not match its head commit" in result.outputs["description"]


def test_a_push_back_to_the_same_head_while_the_pages_are_read_never_passes(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    """Pages 2 and later are another commit's list; the head is the same before and after."""
    past_the_compare_cap(fake_github)
    other = copy.deepcopy(fake_github.files[7])
    for entry in other[100:]:
        entry["sha"] = format(int(entry["sha"], 16) ^ 1, "040x")  # another commit's blobs
    pages: list[int] = []

    def swap(number: int) -> None:
        pages.append(number)
        if len(pages) == 1:  # after the first page: the list becomes the other commit's
            fake_github.files[7] = other

    fake_github.on_list_files = swap
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert len(pages) >= 2
    blocked(result, fake_github, sim)


def test_the_unmutated_list_passes(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Callable[..., ReviewerSimulator]
) -> None:
    past_the_compare_cap(fake_github)
    sim = sim_factory(ScriptedModel("pass"))
    result = run_gate(tmp_path, fake_github, sim, pr_payload())
    assert result.outputs["state"] == "pass", result.stdout[-1500:]
    assert result.certificate["context"]["coverage"]["complete"] is True
    assert len(result.certificate["context"]["coverage"]["reviewed"]) == FILES
