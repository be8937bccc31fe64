"""The question ledger against the fake GitHub's Git database (issue 31).

The Git data API calls (blobs, trees, commits, refs; a non-forced ref update is a
compare-and-swap answered 422 when it is no fast-forward), every request and answer
checked against GitHub's OpenAPI description by the ``fake_github`` fixture; the ledger's
write and lookup; and the bad input a run must never trust nor write over: an entry that
does not parse, a foreign object at the ref, a tree not of the gate's shape, a conflict
that does not resolve, 5xx on every write, a token that may not write.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest

from gate.action import ledger
from gate.action.github.client import GitHubClient
from gate.action.github.gitdata import RefMoved, TreeEntry
from gate.action.github.http import GitHubSettings
from gate.errors import LedgerError
from gate.lab.sim import ReviewerSimulator
from gate.memory.ledger import shard_of
from gate.memory.question import QuestionKey
from tests.adversarial.test_deleted_comment import Author, decided, diff_for
from tests.adversarial.test_ledger_by_key import FirstAnswerBlocks
from tests.fakes.github import FakeGitHub
from tests.integration.action.test_run_fake_github import Outcome

Sim = Callable[..., ReviewerSimulator]
BAD, GOOD = diff_for("return eval(a)"), diff_for("return a + b")


def _client(fake: FakeGitHub) -> GitHubClient:
    settings = GitHubSettings(
        repository=fake.repository, api_url=fake.api_url, token=fake.token, throttle=False
    )
    return GitHubClient(settings)


def _ref(fake: FakeGitHub) -> tuple[str, str] | None:
    with fake.lock:
        return fake.git.refs.get(ledger.REF)


def _entries(fake: FakeGitHub) -> dict[str, bytes]:
    """Every file of the ledger's tree, by path (``<shard>/<id>.json``)."""
    with fake.lock:
        _kind, sha = fake.git.refs[ledger.REF]
        root = fake.git.trees[fake.git.commits[sha]["tree"]]
        return {
            f"{shard}/{name}": fake.git.blobs[oid]
            for shard, (_m, _t, folder) in root.items()
            for name, (_m2, _t2, oid) in fake.git.trees[folder].items()
        }


def _replace_root(
    fake: FakeGitHub, change: Callable[[dict[str, tuple[str, str, str]]], None]
) -> None:
    """A writer's commit on the ledger whose root tree is ``change``d (forced)."""
    with fake.lock:
        _kind, sha = fake.git.refs[ledger.REF]
        root = dict(fake.git.trees[fake.git.commits[sha]["tree"]])
        change(root)
        _status, tree = fake.git.create_tree(
            {"tree": [{"path": p, "mode": m, "type": t, "sha": o} for p, (m, t, o) in root.items()]}
        )
        _status, commit = fake.git.create_commit({"tree": tree["sha"], "parents": [sha]})
        fake.git.refs[ledger.REF] = ("commit", commit["sha"])


# --- the Git database of the fake, through the gate's client ---------------------------


def test_refs_are_compare_and_swap(fake_github: FakeGitHub) -> None:
    gh = _client(fake_github)
    assert gh.get_ref(ledger.REF) is None
    blob = gh.create_blob(b"hello")
    folder = gh.create_tree([TreeEntry("a.json", "100644", "blob", blob)], base=None)
    first = gh.create_commit("one", folder, [])
    gh.swap_ref(ledger.REF, first, old=None)
    with pytest.raises(RefMoved):  # it exists now: a create is no overwrite
        gh.swap_ref(ledger.REF, first, old=None)
    second = gh.create_commit("two", folder, [first])
    gh.swap_ref(ledger.REF, second, old=first)
    stray = gh.create_commit("not on top", folder, [first])
    with pytest.raises(RefMoved):  # not a fast-forward of the ref's commit
        gh.swap_ref(ledger.REF, stray, old=second)
    target = gh.get_ref(ledger.REF)
    assert target is not None
    assert (target.kind, target.sha) == ("commit", second)
    commit = gh.get_commit(second)
    assert (commit.tree, commit.parents) == (folder, (first,))
    entries, truncated = gh.get_tree(folder)
    assert [(e.path, e.kind, e.sha) for e in entries] == [("a.json", "blob", blob)]
    assert not truncated
    assert gh.get_blob(blob, limit=100) == b"hello"


def _key(n: int) -> QuestionKey:
    return QuestionKey(f"{n:064x}", "strict", "c" * 64, "sim-model", "d" * 64)


def test_a_race_is_read_again_and_a_lost_race_is_named(fake_github: FakeGitHub) -> None:
    from gate.memory.record import Record

    gh = _client(fake_github)
    key = _key(7)
    rec = Record(
        time="2026-01-01T00:00:00+00:00", base_sha="2" * 40, head_sha="1" * 40,
        diff_sha=key.diff_sha, policy_version="strict", config_sha=key.config_sha,
        provider="openai", model="sim-model", prompt_sha=key.prompt_sha, state="fail",
        status="failure", verdict="fail", confidence=0.9, reason="model_fail", source="model",
        fresh=False, certificate_sha=None, run_url=None, answers="fail=1",
    )  # fmt: skip
    assert ledger.write(
        gh,
        _key(1),
        rec.__class__(**{**rec.__dict__, "diff_sha": _key(1).diff_sha}),
        pause=lambda _n: None,
    )
    fake_github.git.races = ledger.MAX_TRIES - 1  # every try but the last meets a writer
    assert ledger.write(gh, key, rec, pause=lambda _n: None)
    head = ledger.read_head(gh)
    found = ledger.lookup(gh, head, key)
    assert found is not None
    assert found.record == rec
    assert ledger.lookup(gh, head, _key(1)) is not None  # the other writer's entry kept
    assert not ledger.write(gh, key, rec, pause=lambda _n: None)  # what it shows: no write
    fake_github.git.races = 100
    fresh = rec.__class__(**{**rec.__dict__, "fresh": True})
    with pytest.raises(LedgerError) as lost:
        ledger.write(gh, key, fresh, pause=lambda _n: None)
    assert lost.value.reason == "ledger_conflict"
    assert sorted(_entries(fake_github)) == sorted(
        f"{shard_of(k.id)}/{k.id}.json" for k in (key, _key(1))
    )


# --- the run ---------------------------------------------------------------------------


def _rejected(
    tmp_path: Path, fake: FakeGitHub, sim_factory: Sim
) -> tuple[Author, FirstAnswerBlocks, str]:
    truth = FirstAnswerBlocks()
    author = Author(fake, tmp_path, sim_factory(truth))
    head = author.open(BAD)
    assert decided(fake, head, "status") == ["failure"]
    return author, truth, head


def test_a_decision_is_one_entry_found_by_its_key(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim
) -> None:
    fake = fake_github
    author, truth, head = _rejected(tmp_path, fake, sim_factory)
    [(path, data)] = _entries(fake).items()
    assert path.split("/")[1].startswith(path.split("/")[0])
    assert b'"state":"fail"' in data
    assert b'"answers":"fail=1"' in data
    author.delete_the_gates_comment()
    before = len(fake.requests)
    ref = _ref(fake)
    assert author.run("reopened", head) == 1
    assert list(truth.asked.values()) == [1]
    assert _ref(fake) == ref  # what the ledger already shows writes nothing
    git = [r for r in fake.requests[before:] if "/git/" in r.path and head not in r.path]
    # ref, commit, root, folder, entry; and the ref once more, as no history was found
    assert len(git) == 6, [r.path for r in git]


def _corrupt_entry(fake: FakeGitHub) -> None:
    def change(root: dict[str, tuple[str, str, str]]) -> None:
        [(shard, (mode, kind, folder))] = root.items()
        [(name, _)] = fake.git.trees[folder].items()
        _s, blob = fake.git.create_blob({"content": base64.b64encode(b"{not json").decode(),
                                         "encoding": "base64"})  # fmt: skip
        _s, tree = fake.git.create_tree(
            {"tree": [{"path": name, "mode": "100644", "type": "blob", "sha": blob["sha"]}]}
        )
        root[shard] = (mode, kind, tree["sha"])

    _replace_root(fake, change)


def _foreign_object(fake: FakeGitHub) -> None:
    with fake.lock:
        _s, blob = fake.git.create_blob({"content": "someone else's", "encoding": "utf-8"})
        fake.git.refs[ledger.REF] = ("blob", blob["sha"])


def _not_the_shape(fake: FakeGitHub) -> None:
    def change(root: dict[str, tuple[str, str, str]]) -> None:
        _s, blob = fake.git.create_blob({"content": "# notes", "encoding": "utf-8"})
        root["README.md"] = ("100644", "blob", blob["sha"])

    _replace_root(fake, change)


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (_corrupt_entry, "config_ledger_entry"),
        (_foreign_object, "config_ledger_foreign"),
        (_not_the_shape, "config_ledger_shape"),
    ],
)
@pytest.mark.parametrize("how", ["reopened", "fresh"])
def test_bad_input_is_never_trusted_nor_written_over(
    tmp_path: Path,
    fake_github: FakeGitHub,
    sim_factory: Sim,
    spoil: Callable[[FakeGitHub], None],
    reason: str,
    how: str,
) -> None:
    fake = fake_github
    author, truth, head = _rejected(tmp_path, fake, sim_factory)
    author.delete_the_gates_comment()
    spoil(fake)
    spoiled = _ref(fake)
    if how == "fresh":  # a writer's fresh review asks again, and its pass is not posted
        fake.permissions["maintainer"] = "write"
        payload_label = "review-gate:fresh"
        from tests.fakes.events import pull_request_event
        from tests.integration.action.test_run_fake_github import BASE, REPO, run_gate

        with fake.lock:
            fake.pulls[7]["labels"].append({"id": 9, "name": payload_label})
        payload = pull_request_event(
            "labeled", repository=REPO, number=7, head_sha=head, base_sha=BASE,
            label=payload_label, sender="maintainer",
        )  # fmt: skip
        run = run_gate(tmp_path, fake, author.sim, payload)
    else:
        run = author.run_outcome("reopened", head)
    assert run.code != 0
    assert "success" not in decided(fake, head, "status")
    assert _ref(fake) == spoiled, "the ledger was written over unread"
    said = run.stdout + run.summary
    assert "refs/review-gate/ledger" in said
    if how == "reopened":
        assert run.outputs["reason"] == reason, run.outputs
        assert sum(truth.asked.values()) == 1


def _fault(fake: FakeGitHub, fault: str) -> None:
    """Every ledger write meets ``fault``: a writer first each time, 502, or 403 (a token
    without ``contents: write``)."""
    with fake.lock:
        if fault == "conflict":
            fake.git.races = 100
        elif fault == "5xx":
            fake.inject(r"^(POST|PATCH) .*/git/", 502, count=100)
        else:
            message = "Resource not accessible by integration"
            fake.inject(r"^POST .*/git/blobs", 403, count=100, message=message)


def _push(author: Author, diff: bytes) -> tuple[str, Outcome]:
    before, head = author.chain[-1], author.commit(diff)
    author.chain.append(head)
    author.fake.move_head(7, head, commits=author.chain)
    return head, author.run_outcome("synchronize", head, before=before)


@pytest.mark.parametrize("fault", ["conflict", "5xx", "403"])
def test_a_pass_the_ledger_cannot_keep_is_not_posted(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, fault: str
) -> None:
    fake = fake_github
    truth = FirstAnswerBlocks()
    author = Author(fake, tmp_path, sim_factory(truth))
    author.open(GOOD)  # the ledger exists
    _fault(fake, fault)
    head, outcome = _push(author, diff_for("return a + b + 1"))
    assert outcome.code != 0
    assert "success" not in fake.states(head), fake.status_list(head)
    assert sum(truth.asked.values()) == 2  # it was reviewed: the pass itself is withheld
    reason = {"conflict": "ledger_conflict", "5xx": "ledger_unwritten"}
    assert outcome.outputs["reason"] == reason.get(fault, "config_ledger_permission")
    if fault == "403":  # told at its first run, naming the permission
        assert "contents: write" in outcome.stdout + outcome.summary
        assert "contents: write" in fake.status_list(head)[-1]["description"]


@pytest.mark.parametrize("fault", ["conflict", "5xx", "403"])
def test_a_block_the_ledger_cannot_keep_is_still_posted(
    tmp_path: Path, fake_github: FakeGitHub, sim_factory: Sim, fault: str
) -> None:
    fake = fake_github
    truth = FirstAnswerBlocks()
    author = Author(fake, tmp_path, sim_factory(truth))
    author.open(GOOD)  # the ledger exists: one entry
    _fault(fake, fault)
    head, outcome = _push(author, BAD)
    assert decided(fake, head, "status") == ["failure"]
    assert "the decision was not recorded in the question ledger" in outcome.stdout
    with fake.lock:
        fake.faults.clear()
        fake.git.races = 0
    assert len(_entries(fake)) == 1
