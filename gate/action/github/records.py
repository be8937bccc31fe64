"""What GitHub's answers become: the typed records that cross into the rest of the action.

:class:`PullInfo` (a pull request), :class:`DiffFetch` (the bytes of ``base...head`` and
what was rebuilt), :class:`TreeListing` (a commit's tree) and :class:`Identity` (who the
token is; what it wrote is adopted, nothing else).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gate.action.blobfetch import FetchCount, Side
from gate.action.github import mark
from gate.decide.decision import Status
from gate.diff import FileSection
from gate.errors import GitHubError


@dataclass(frozen=True)
class PullInfo:
    number: int
    head_sha: str
    base_sha: str
    head_ref: str
    base_ref: str
    head_repo: str | None  # None when the fork was deleted
    base_repo: str
    draft: bool
    state: str
    author: str
    labels: tuple[str, ...] = ()
    changed_files: int | None = None  # GitHub's count, to check the diff lists every file

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> PullInfo:
        try:
            head, base = data["head"], data["base"]
            head_repo = head.get("repo") or None
            return PullInfo(
                number=int(data["number"]),
                head_sha=str(head["sha"]),
                base_sha=str(base["sha"]),
                head_ref=str(head.get("ref", "")),
                base_ref=str(base.get("ref", "")),
                head_repo=str(head_repo["full_name"]) if head_repo else None,
                base_repo=str(base["repo"]["full_name"]),
                draft=bool(data.get("draft", False)),
                state=str(data.get("state", "open")),
                author=str((data.get("user") or {}).get("login", "")),
                labels=tuple(str(lb["name"]) for lb in data.get("labels") or ()),
                changed_files=(
                    int(data["changed_files"]) if data.get("changed_files") is not None else None
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise GitHubError(
                f"the pull request object lacks a field the gate needs ({err!r})",
                reason="github_bad_payload",
            ) from err


@dataclass(frozen=True)
class DiffFetch:
    """The change as per-file sections, and where it came from."""

    sections: tuple[FileSection, ...]
    source: str  # "diff" (diff media type) | "files" (the comparison's file list after 406)
    raw_bytes: int
    note: str = ""
    #: the cap the file list reached (it may hold only the first ``capped_at`` files), or None
    capped_at: int | None = None
    #: what rebuilding files without a patch from their blobs did, when any was needed
    rebuild: FetchCount | None = None


@dataclass(frozen=True)
class TreeListing:
    """Every path in a commit's tree; ``truncated`` when GitHub did not list them all.

    ``objects`` maps each file's path (blob, symlink or submodule) to its git object id,
    ``modes`` to its git mode (a mode-only change keeps the object id)."""

    paths: tuple[str, ...]
    truncated: bool
    objects: Mapping[str, str] = field(default_factory=dict)
    modes: Mapping[str, str] = field(default_factory=dict)
    sizes: Mapping[str, int] = field(default_factory=dict)

    def sides(self) -> dict[str, Side] | None:
        """Each file's object id, mode and size (a submodule's size is 0); None when the
        listing is truncated (absence cannot be read from it)."""
        if self.truncated:
            return None
        return {
            path: Side(oid, self.modes.get(path, ""), self.sizes.get(path, 0))
            for path, oid in self.objects.items()
        }

    def changed_from(self, old: TreeListing) -> set[str]:
        """The file paths whose object id or mode differ between ``old`` and this tree
        (added, removed or changed): what a diff of the two commits lists."""
        return {
            path
            for path in {*self.objects, *old.objects}
            if (self.objects.get(path), self.modes.get(path))
            != (old.objects.get(path), old.modes.get(path))
        }


@dataclass(frozen=True)
class Identity:
    """The account a token writes as: ``login`` and ``kind`` (GitHub's ``User``/``Bot``)."""

    login: str
    kind: str

    def wrote(self, user: Any) -> bool:
        """Whether ``user`` (an author: GitHub's JSON object, or PyGithub's ``NamedUser``)
        is this account."""
        if user is None:
            return False
        if isinstance(user, Mapping):
            login, kind = str(user.get("login") or ""), str(user.get("type") or "")
        else:
            login = str(getattr(user, "login", "") or "")
            kind = str(getattr(user, "type", "") or "")
        return login.lower() == self.login.lower() and kind == self.kind


@dataclass(frozen=True)
class OpenPull:
    """An open pull request as triage lists it."""

    number: int
    title: str
    head_sha: str
    url: str
    labels: tuple[str, ...]
    draft: bool


@dataclass(frozen=True)
class SeenStatus:
    """A commit status the gate posted: its state, description and time."""

    state: str
    description: str
    created_at: datetime
    #: GitHub's id of the status (None when the answer had none)
    id: int | None = None


@dataclass(frozen=True)
class ShownStatus:
    """The newest status of one context on a commit, as its combined status shows it (no
    author: GitHub's combined status names none)."""

    state: str
    description: str
    id: int | None


@dataclass(frozen=True)
class SeenCheck:
    """A check run of the gate's own app: the status it stands for (``pending`` while not
    completed; ``error`` for a completed run whose ``external_id`` the gate did not write,
    which decides nothing; ``neutral`` for a ``mode: shadow`` run's, which decides nothing
    either), its title, its question tag (16 hex, or None) and its kind
    (:mod:`gate.action.github.mark`: None when its ``external_id`` names none)."""

    state: str
    title: str
    tag: str | None
    kind: str | None = None

    @classmethod
    def of(cls, status: str, conclusion: str | None, external_id: str, title: str) -> SeenCheck:
        if status != "completed":
            return cls("pending", title, None, "pending")
        found = mark.of_check(external_id)
        if found is not None and found[0] == "neutral":  # a shadow run's: decides nothing
            kept = conclusion == "neutral"
            return cls(
                "neutral", title, found[1].tag if kept else None, found[1].kind if kept else None
            )
        wanted = "success" if conclusion == "success" else "failure"
        if found is None or CONCLUSION[Status(found[0])] != wanted:
            return cls("error", title, None)
        stood, marked = found
        return cls(stood, title, marked.tag, marked.kind)

    @classmethod
    def from_run(cls, run: Mapping[str, Any]) -> SeenCheck:
        """:meth:`of` a check run as GitHub's API gives it (``status``, ``conclusion``,
        ``external_id``, ``output.title``); a field of another type counts as absent."""
        output = run.get("output")
        title = output.get("title") if isinstance(output, dict) else None
        conclusion, external = run.get("conclusion"), run.get("external_id")
        return cls.of(
            str(run.get("status")),
            conclusion if isinstance(conclusion, str) else None,
            external if isinstance(external, str) else "",
            title if isinstance(title, str) else "",
        )


#: a completed check run's conclusion for each final status (a pending one has none): what
#: the gate posts (gate.action.checks) and what it reads back here
CONCLUSION: dict[Status, str | None] = {
    Status.SUCCESS: "success",
    Status.FAILURE: "failure",
    Status.ERROR: "failure",
    Status.PENDING: None,
}
