"""The question ledger in the action: what stands is found by its key.

Every decided question (a standing block, or a clean pass) is one entry of a git tree the
gate owns, at :data:`REF` (``refs/review-gate/ledger``), sharded by the key's first two
hex digits (:mod:`gate.memory.ledger`). A lookup is five reads whatever the number of
comments, statuses, commits, pull requests, pushes or reopens: the ref, its commit, the
root tree, the key's folder, the key's entry (:func:`lookup`). A pull request's author
cannot write it: a fork's token is read-only, and ``pull_request_target`` runs the base's
workflow; writing it needs ``contents: write`` (docs/security.md, "The state machine").

:func:`consult` (the memory guard) adds the entry's record to the run's history as its
newest row, so the rules of :mod:`gate.memory` decide with it exactly as with a record of
the sticky comment, which is now a view for humans: a standing block stands whichever pull
request, base or head asks the same question. :func:`record` (before the final status is
posted) writes the decision's record when it :func:`~gate.memory.ledger.supersedes` the
entry: a decision the ledger already shows writes nothing.

The write is a compare-and-swap: blob, folder tree, root tree, commit on the ref's commit,
then a ref update that is no force (:meth:`GitData.swap_ref`). When another writer moved
the ref first (GitHub's 422), the entry is read again and the decision made again on what
is there, at most :data:`MAX_TRIES` times (pausing as the retry policy does); then
``ledger_conflict``. Bad input is never trusted and never written over: an entry that does
not parse, a ref that names no commit, a tree not of the gate's shape is a
:class:`~gate.errors.LedgerError`: the lookup blocks (``config_ledger_*``), and the write,
which reads the same state first, refuses. A token that may not write (no
``contents: write``) gets ``config_ledger_permission``, naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gate.action import report
from gate.action.github.client import GitHubClient
from gate.action.github.gitdata import RefMoved, TreeEntry
from gate.action.state import RunState
from gate.decide.decision import Decision, State, Status, blocked, describe
from gate.errors import GateError, GitHubError, LedgerError
from gate.memory.ledger import (
    BLOB_MODE,
    MAX_ENTRY_BYTES,
    TREE_MODE,
    Entry,
    check_root,
    check_shard,
    entry_for,
    name_of,
    parse,
    shard_of,
    supersedes,
    worth_keeping,
)
from gate.memory.question import QuestionKey
from gate.memory.record import Record, check

REF = "refs/review-gate/ledger"
#: compare-and-swap tries of one write (the first included)
MAX_TRIES = 4
#: the permission a job needs to write the ledger
PERMISSION = "contents: write"
#: what to do about a ledger that cannot be trusted (every such block says it)
FIX = (
    f"a writer can repair {REF} or delete it (git push origin :{REF}: a fresh start for "
    "every question, as deleting the comment was), or ask for a fresh review"
)


@dataclass(frozen=True)
class Head:
    """The ledger as the ref shows it now: its commit (None: there is no ledger yet), the
    root tree and each folder's tree."""

    commit: str | None
    root: str | None = None
    shards: dict[str, str] = field(default_factory=dict)


def read_head(gh: GitHubClient) -> Head:
    """The ledger's commit and root (three reads); :class:`LedgerError` when the ref names
    something else than a commit, or its root is not the gate's shape."""
    target = gh.get_ref(REF)
    if target is None:
        return Head(None)
    if target.kind != "commit":
        raise LedgerError(
            f"{REF} points at a {target.kind}, not a commit of the gate's ledger",
            reason="config_ledger_foreign",
        )
    commit = gh.get_commit(target.sha)
    entries, truncated = gh.get_tree(commit.tree)
    try:
        check_root([(e.path, e.mode, e.kind) for e in entries], truncated=truncated)
    except LedgerError as err:
        raise LedgerError(err.message, reason="config_ledger_shape") from None
    return Head(target.sha, commit.tree, {e.path: e.sha for e in entries})


def lookup(gh: GitHubClient, head: Head, key: QuestionKey) -> Entry | None:
    """The entry of ``key`` in ``head`` (two reads more: its folder and its file), or None."""
    shard = shard_of(key.id)
    folder = head.shards.get(shard)
    if folder is None:
        return None
    entries, truncated = gh.get_tree(folder)
    try:
        check_shard(shard, [(e.path, e.mode, e.kind) for e in entries], truncated=truncated)
    except LedgerError as err:
        raise LedgerError(err.message, reason="config_ledger_shape") from None
    found = next((e for e in entries if e.path == name_of(key.id)), None)
    if found is None:
        return None
    try:
        return parse(gh.get_blob(found.sha, limit=MAX_ENTRY_BYTES), key)
    except LedgerError as err:
        raise LedgerError(err.message, reason="config_ledger_entry") from None


def write(gh: GitHubClient, key: QuestionKey, rec: Record, *, pause: Callable[[int], None]) -> bool:
    """Record ``rec`` as the entry of ``key`` when it supersedes what is there (module
    docstring); whether it wrote. :class:`LedgerError` when the ledger cannot be trusted,
    the token may not write, or the swap lost :data:`MAX_TRIES` times."""
    for attempt in range(MAX_TRIES):
        pause(attempt)
        head = read_head(gh)
        if not supersedes(rec, lookup(gh, head, key)):
            return False
        try:
            commit = _commit(gh, head, key, rec)
            gh.swap_ref(REF, commit, old=head.commit)
        except RefMoved:
            continue  # another writer was first: read what it wrote, decide again
        except GitHubError as err:
            if err.reason in ("github_http_403", "github_http_404"):
                raise LedgerError(
                    f"the token may not write {REF} ({err.message}); give the job that runs "
                    f"the gate `permissions: {PERMISSION}` (docs/security.md)",
                    reason="config_ledger_permission",
                ) from err
            raise
        return True
    raise LedgerError(
        f"{REF} moved under each of {MAX_TRIES} writes (another run wrote it each time); "
        "the decision is not recorded; re-run the job",
        reason="ledger_conflict",
    )


def _commit(gh: GitHubClient, head: Head, key: QuestionKey, rec: Record) -> str:
    """The ledger's next commit: ``head``'s tree with the entry of ``key`` set to ``rec``."""
    shard = shard_of(key.id)
    blob = gh.create_blob(entry_for(key, rec).encode())
    folder = gh.create_tree(
        [TreeEntry(name_of(key.id), BLOB_MODE, "blob", blob)], base=head.shards.get(shard)
    )
    root = gh.create_tree([TreeEntry(shard, TREE_MODE, "tree", folder)], base=head.root)
    message = f"review-gate: {rec.state} for question {key.id[:16]} on {rec.head_sha[:12]}"
    return gh.create_commit(message, root, [head.commit] if head.commit else [])


# --- the run's two calls ------------------------------------------------------------


def present(run: RunState, gh: GitHubClient) -> bool:
    """Whether there is a ledger to consult (anything at :data:`REF`; what it is, the
    memory guard checks): read once a run. While there is none (a deployment's first
    runs, or a writer deleted it), the gate's statuses on earlier heads are read as
    before (:mod:`gate.action.earlier`)."""
    if run.ledger_present is None:
        run.ledger_present = gh.get_ref(REF) is not None
    return run.ledger_present


def consult(run: RunState, gh: GitHubClient, key: QuestionKey) -> Decision | None:
    """The memory guard's lookup: the entry of ``key`` becomes the run's newest history
    row (None goes on), or the block of a ledger that cannot be trusted."""
    try:
        head = read_head(gh)
        entry = lookup(gh, head, key)
    except LedgerError as err:
        run.ledger_present = True
        run.notes.append(f"the question ledger {REF} was not trusted: {err.message}")
        return blocked(
            State.NEEDS_HUMAN,
            err.reason,
            f"the question ledger {REF} cannot be trusted ({err.message}), so an earlier "
            f"block of this question cannot be ruled out; it is kept as it is. {FIX}",
        )
    run.ledger_present = head.commit is not None
    run.ledger_consulted, run.ledger_entry = True, entry
    if entry is not None:
        found = entry.record
        run.history = [*run.history, found]
        run.notes.append(
            f"the question ledger holds this question ({key.id[:12]}): {found.state} "
            f"({found.reason}) on {found.head_sha[:12]} at {found.time}"
        )
    return None


def record(run: RunState, rec: Record, decision: Decision) -> Decision | None:
    """Write the run's decision to the ledger before its status is posted (module
    docstring). A pass the ledger could not record is not posted: the block returned
    says why and who can clear it. A block is posted whatever happens here (its status
    stands on the head, the comment holds its record); a warning says the ledger lacks it."""
    gh, key = run.gh, run.question
    if gh is None or key is None or run.pull is None or not worth_keeping(rec):
        return None
    if run.ledger_consulted and not supersedes(rec, run.ledger_entry):
        return None  # what the ledger already shows (a write re-reads before it swaps)
    try:
        write(gh, key, check(rec), pause=gh.policy.pause)  # a write is news to no one
    except GateError as err:  # the ledger's, GitHub's, or a record that would not read back
        why = f"the decision was not recorded in the question ledger {REF}: {err.message}"
        run.notes.append(why)
        report.emit([f"::warning::{report.escape_data(why)}"], run.out)
        if decision.status is not Status.SUCCESS:
            return None
        permission = err.reason == "config_ledger_permission"
        reason = err.reason if isinstance(err, LedgerError) else "ledger_unwritten"
        # the deployment's or the ledger's state (config), or GitHub's refusal (re-run)
        state = State.NEEDS_HUMAN if reason.startswith("config_") else State.INCOMPLETE
        blocked_pass = blocked(
            state,
            reason,
            f"{why}. The pass is not posted: without its entry the ledger cannot keep "
            "what this question was answered"
            + (f"; give the job `permissions: {PERMISSION}`" if permission else f"; {FIX}"),
        )
        lead = f"no ledger: needs {PERMISSION}" if permission else "ledger not written"
        return replace(blocked_pass, description=describe(lead, "the pass is not posted (docs)"))
    return None
