"""The GitHub adapter: the only module that talks to GitHub.

It owns every REST call the gate makes: the pull request, the config file at the
*base* commit (contents API), the diff of exactly ``base_sha...head_sha``
(compare API, diff media type, with the comparison's file list as the fallback
when GitHub answers 406, and past its 300 files the pull request's file list bound to
the head tree), the head tree's paths (git trees API, recursive) for the
``.apply/incomplete`` check, collaborator
permission for the override, commit statuses and the one sticky comment
(adopted only when the token's own identity wrote it).

It uses PyGithub with ``base_url`` from ``GITHUB_API_URL`` (so GitHub
Enterprise Server works) and an explicit timeout on every call. One
:class:`RetryPolicy` (5xx and connection errors only, exponential backoff with a
cap, no ``Retry-After`` sleeps, an injectable ``sleep``) paces every retry: the
ones urllib3 makes under PyGithub, the status post and the diff download. The
diff is fetched with httpx (same token, same timeouts, same policy) because
PyGithub decodes bodies as text and the gate needs the exact bytes. Every
failure becomes a :class:`~gate.errors.GitHubError` whose ``reason`` is a
stable code and whose message names the call, the HTTP status and the fix.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import requests
from github import Auth, Github, GithubException
from github.CommitStatus import CommitStatus
from github.PaginatedList import PaginatedList
from github.PullRequest import PullRequest
from urllib3.util.retry import Retry

from gate import USER_AGENT
from gate.action.blobfetch import MAX_BLOB_BYTES, FetchBudget, FetchCount, Side, rebuild
from gate.decide.decision import MAX_DESCRIPTION
from gate.diff import FileSection, git_quote, sections_from_files, split_diff
from gate.errors import GitHubError, UsageError
from gate.safe import strictjson
from gate.safe.redact import redact

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
API_VERSION = "2022-11-28"
DIFF_MEDIA_TYPE = "application/vnd.github.diff"
#: largest diff body the gate downloads before falling back to the file list
MAX_FETCH_BYTES = 64 * 1024 * 1024
#: GitHub's file lists stop at 3000 files (the compare API's at 300); a bound regardless
MAX_FILES = 3000
#: the compare API's file list stops at 300 files and gives no total file count
COMPARE_FILES_CAP = 300
#: statuses GitHub accepts; descriptions are cut to GitHub's 140 characters
STATUS_STATES = frozenset({"pending", "success", "failure", "error"})
#: permissions that may apply the override label
OVERRIDE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
#: items scanned when looking for one (issues, statuses): newest first, so the cap is safe
MAX_COMMENTS_SCANNED = 1000
#: comments read when looking for the gate's own (oldest first, every page): past this
#: many the gate cannot tell whether its comment is among the rest, and says so
MAX_COMMENTS_READ = 25_000
#: pull requests of one commit read, at most (commits/{sha}/pulls)
MAX_PULLS_OF_COMMIT = 100
#: the answers worth asking again (GitHub's transient server errors)
RETRY_STATUSES = frozenset({500, 502, 503, 504})
#: the longest pause between two tries, seconds
MAX_BACKOFF = 10.0

T = TypeVar("T")


# --- settings and typed records ------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """The one retry policy for GitHub: ``retries`` more tries after the first, pausing
    ``backoff * 2**(n-1)`` seconds (at most :data:`MAX_BACKOFF`) before the n-th retry,
    with ``sleep`` (injectable: tests and the demo pass one that does not wait)."""

    retries: int = 2
    backoff: float = 0.5
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    def pause(self, retry: int) -> None:
        """Wait before retry number ``retry`` (1 for the first retry)."""
        delay = min(MAX_BACKOFF, self.backoff * 2 ** (retry - 1))
        if retry > 0 and delay > 0:
            self.sleep(delay)

    def run(self, once: Callable[[], T], *, transient: Callable[[Exception], bool]) -> T:
        """``once()``, tried again (after a pause) while it raises a transient error."""
        for retry in range(self.retries + 1):
            self.pause(retry)
            try:
                return once()
            except Exception as err:
                if retry == self.retries or not transient(err):
                    raise
        raise AssertionError("unreachable: the last try returns or raises")  # pragma: no cover

    def for_urllib3(self) -> Retry:
        """The same policy for the requests PyGithub makes (through urllib3)."""
        return _PolicyRetry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            status_forcelist=tuple(sorted(RETRY_STATUSES)),
            respect_retry_after_header=False,
            raise_on_status=False,
            policy=self,
        )


class _PolicyRetry(Retry):
    """urllib3's retry bookkeeping, with the pauses taken from a :class:`RetryPolicy`."""

    def __init__(self, *args: Any, policy: RetryPolicy | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.policy = policy or RetryPolicy()

    def new(self, **kw: Any) -> _PolicyRetry:
        renewed = super().new(**kw)
        renewed.policy = self.policy
        return renewed

    def _sleep_backoff(self) -> None:
        self.policy.pause(len(self.history))


@dataclass(frozen=True)
class GitHubSettings:
    """How to reach GitHub. ``token`` is never printed (``repr=False``)."""

    repository: str  # owner/name
    api_url: str = DEFAULT_API_URL
    server_url: str = DEFAULT_SERVER_URL
    token: str = field(default="", repr=False)
    timeout: float = 30.0
    retries: int = 2
    backoff: float = 0.5
    throttle: bool = True  # PyGithub's pause between requests (GitHub's guidance); off in tests
    #: the token's account, when the workflow names it (the input ``identity``), else learned
    identity: str = ""
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(retries=self.retries, backoff=self.backoff, sleep=self.sleep)

    @staticmethod
    def from_env(env: Mapping[str, str], *, token: str) -> GitHubSettings:
        repository = env.get("GITHUB_REPOSITORY", "")
        if "/" not in repository:
            raise UsageError(
                "GITHUB_REPOSITORY is not set (expected owner/name); "
                "run review-gate action inside a GitHub Actions job"
            )
        if not token:
            raise UsageError(
                "no GitHub token: set the action input 'token' (default ${{ github.token }})"
            )
        return GitHubSettings(
            repository=repository,
            api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            server_url=(env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/"),
            token=token,
            identity=(env.get("INPUT_IDENTITY") or "").strip(),
        )

    def run_url(self, run_id: str) -> str | None:
        """The workflow run's page (the status ``target_url``), when the run id is known."""
        if not run_id:
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{run_id}"


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
        """Whether ``user`` (a comment's author, PyGithub ``NamedUser``) is this account."""
        if user is None:
            return False
        login = str(getattr(user, "login", "") or "")
        kind = str(getattr(user, "type", "") or "")
        return login.lower() == self.login.lower() and kind == self.kind


# --- the client ------------------------------------------------------------------


def _http_status(err: GithubException) -> int:
    return int(getattr(err, "status", 0) or 0)


def _github_message(err: GithubException) -> str:
    data = getattr(err, "data", None)
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"])
    return str(err)


_FIXES = {
    401: "the token is invalid or expired; check the action input 'token'",
    403: "the token lacks a permission (statuses: write, contents: read, pull-requests: "
    "read/write); a pull_request run from a fork gets a read-only token",
    404: "check the repository, the number/SHA, and that the token can read the repository",
}


class GitHubClient:
    """A small, typed facade over PyGithub for the calls the gate makes."""

    def __init__(self, settings: GitHubSettings) -> None:
        self.settings = settings
        self.policy = settings.retry
        pause = None if not settings.throttle else 0.25
        self._gh = Github(
            auth=Auth.Token(settings.token),
            base_url=settings.api_url,
            timeout=max(1, round(settings.timeout)),
            user_agent=USER_AGENT,
            per_page=100,
            retry=self.policy.for_urllib3(),
            seconds_between_requests=pause,
            seconds_between_writes=None if not settings.throttle else 1.0,
            lazy=True,
        )
        self._repo = self._gh.get_repo(settings.repository)
        self._identity: Identity | None = None
        self._trees: dict[str, TreeListing] = {}  # a commit's tree never changes
        #: what the last rebuild from blobs did (requests, bytes, files left and why)
        self.last_fetch: FetchCount | None = None

    # -- plumbing ------------------------------------------------------------------

    @property
    def repo(self) -> Any:
        """The PyGithub repository (lazy), for the modules that add calls of their own
        (:mod:`gate.action.reviews`); each such call goes through :meth:`call`."""
        return self._repo

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` with GitHub's errors turned into a :class:`GitHubError` naming ``what``."""
        return self._call(what, fn)

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except GithubException as err:
            status = _http_status(err)
            fix = _FIXES.get(status, "see the GitHub API message above; retry the job if transient")
            raise GitHubError(
                f"GitHub answered HTTP {status} to {what}: {_github_message(err)}; {fix}",
                reason=f"github_http_{status}",
            ) from err
        except requests.RequestException as err:
            tries = self.settings.retries + 1
            raise GitHubError(
                f"GitHub at {self.settings.api_url} did not answer {what}: "
                f"{_network_cause(err, self.settings.timeout)} ({_tries(tries)}); "
                "check GITHUB_API_URL and the network",
                reason="github_unreachable",
            ) from err

    def _headers(self, accept: str) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.settings.token}",
            "Accept": accept,
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        }

    def _get_bytes(self, what: str, path: str, accept: str) -> tuple[int, bytes]:
        """GET raw bytes (diff media type). Returns (status, body); 406/size cap -> (406, b"")."""
        url = f"{self.settings.api_url}{path}"
        timeout = httpx.Timeout(self.settings.timeout)

        def once() -> tuple[int, bytes]:
            with (
                httpx.Client(timeout=timeout, follow_redirects=False) as client,
                client.stream("GET", url, headers=self._headers(accept)) as resp,
            ):
                if resp.status_code in RETRY_STATUSES:
                    raise _ServerError(resp.status_code)
                if resp.status_code == 406:
                    return 406, b""
                chunks: list[bytes] = []
                size = 0
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > MAX_FETCH_BYTES:
                        return 406, b""
                    chunks.append(chunk)
                body = b"".join(chunks)
                if resp.status_code != 200:
                    message = _error_message(body)
                    fix = _FIXES.get(
                        resp.status_code,
                        "a redirect means the repository moved; check GITHUB_REPOSITORY"
                        if 300 <= resp.status_code < 400
                        else "retry the job if transient",
                    )
                    raise GitHubError(
                        f"GitHub answered HTTP {resp.status_code} to {what}: {message}; {fix}",
                        reason=f"github_http_{resp.status_code}",
                    )
                return resp.status_code, body

        tries = self.policy.retries + 1
        try:
            return self.policy.run(
                once, transient=lambda err: isinstance(err, _ServerError | httpx.HTTPError)
            )
        except _ServerError as err:
            raise GitHubError(
                f"GitHub answered HTTP {err.status} to {what} {tries} times; retry the job",
                reason=f"github_http_{err.status}",
            ) from None
        except httpx.HTTPError as err:
            raise GitHubError(
                f"GitHub at {self.settings.api_url} did not answer {what}: "
                f"{_network_cause(err, self.settings.timeout)} ({_tries(tries)}); check "
                "GITHUB_API_URL and the network, or retry the job",
                reason="github_unreachable",
            ) from err

    # -- reads -----------------------------------------------------------------------

    def get_pull(self, number: int) -> PullInfo:
        def load() -> dict[str, Any]:
            data: dict[str, Any] = self._repo.get_pull(number).raw_data
            return data

        return PullInfo.from_json(self._call(f"GET pull request #{number}", load))

    def read_file(self, path: str, ref: str) -> bytes | None:
        """A file's bytes at ``ref`` (contents API); None when it does not exist there."""

        def load() -> bytes | None:
            try:
                content = self._repo.get_contents(path, ref=ref)
            except GithubException as err:
                if _http_status(err) == 404:
                    return None
                raise
            if isinstance(content, list):
                raise GitHubError(
                    f"{path} at {ref[:12]} is a directory, not a file; point the action "
                    "input 'config' at a YAML file",
                    reason="github_not_a_file",
                )
            data: bytes = content.decoded_content
            return data

        return self._call(f"GET contents {path} at {ref[:12]}", load)

    def path_exists(self, path: str, ref: str) -> bool:
        """Whether ``path`` exists in the tree at ``ref`` (file or directory)."""

        def probe() -> bool:
            try:
                self._repo.get_contents(path, ref=ref)
            except GithubException as err:
                if _http_status(err) == 404:
                    return False
                raise
            return True

        return self._call(f"GET contents {path} at {ref[:12]}", probe)

    def tree_paths(self, ref: str) -> TreeListing:
        """Every path (files and folders, at any depth) in the tree of commit ``ref``.

        One call to the git trees API with ``recursive=1`` (once per commit: a commit's
        tree never changes). GitHub stops listing at its limit and says
        ``truncated: true``; the caller must not read absence from that.
        """
        if (known := self._trees.get(ref)) is not None:
            return known

        def load() -> TreeListing:
            data = self._repo.get_git_tree(ref, recursive=True).raw_data
            entries = data.get("tree")
            truncated = data.get("truncated")
            if not isinstance(entries, list) or not isinstance(truncated, bool):
                raise GitHubError(
                    f"the tree of {ref[:12]} lacks 'tree' or 'truncated'; retry the job",
                    reason="github_bad_payload",
                )
            paths = tuple(str(e["path"]) for e in entries if isinstance(e, dict) and "path" in e)
            files = [
                e
                for e in entries
                if isinstance(e, dict) and e.get("type") != "tree" and "path" in e and "sha" in e
            ]
            objects = {str(e["path"]): str(e["sha"]) for e in files}
            modes = {str(e["path"]): str(e.get("mode")) for e in files}
            sizes = {str(e["path"]): e["size"] for e in files if isinstance(e.get("size"), int)}
            return TreeListing(
                paths=paths, truncated=truncated, objects=objects, modes=modes, sizes=sizes
            )

        listing = self._call(f"GET tree of {ref[:12]} (recursive)", load)
        self._trees[ref] = listing
        return listing

    def compare_diff(
        self,
        base: str,
        head: str,
        *,
        pr_number: int | None = None,
        budget: FetchBudget | None = None,
    ) -> DiffFetch:
        """The change ``base...head``, pinned to these two SHAs (pull requests and merge groups).

        Never the pull request's *current* diff (``GET /pulls/N`` with the diff media type):
        a push between that fetch and the head re-check could put one head's review on
        another. The compare API names both commits, so the bytes belong to ``head``
        whatever happens to the branch meanwhile. On HTTP 406 (too large) the files are
        rebuilt from the same comparison's file list (GitHub lists at most 300 there; the
        caller marks the rest as not reviewed), and a listed file without a ``patch`` is
        rebuilt from its merge base's and head's blobs within ``budget``
        (:meth:`_with_blobs`, :mod:`gate.action.blobfetch`).
        """
        basehead = quote(f"{base}...{head}", safe=".")
        path = f"/repos/{self.settings.repository}/compare/{basehead}"
        what = f"GET compare {base[:12]}...{head[:12]}"
        status, body = self._get_bytes(what, path, DIFF_MEDIA_TYPE)
        if status != 406:
            return DiffFetch(tuple(split_diff(body)), "diff", len(body))

        def files() -> tuple[list[dict[str, Any]], str]:
            comparison = self._repo.compare(base, head)
            listed = [f.raw_data for f in comparison.files][:MAX_FILES]
            return listed, str(comparison.merge_base_commit.sha)

        entries, merge_base = self._call(f"{what} files", files)
        # the comparison gives no total file count: a list that reached the cap may be cut
        capped = len(entries) >= COMPARE_FILES_CAP
        if capped and pr_number is not None:
            bound = self._pull_files(pr_number, head, merge_base)
            if bound is not None:
                sections = self._with_blobs(bound, merge_base, head, budget)
                return DiffFetch(
                    tuple(sections),
                    "files",
                    0,
                    note="GitHub refused the diff (406: too large); rebuilt from the pull "
                    f"request's file list ({len(bound)} files, each bound to the head tree)"
                    + _rebuild_note(self.last_fetch),
                    rebuild=self.last_fetch,
                )
        sections = self._with_blobs(entries, merge_base, head, budget)
        return DiffFetch(
            tuple(sections),
            "files",
            0,
            note="GitHub refused the diff (406: too large); rebuilt from the compare API's "
            f"file list (at most {COMPARE_FILES_CAP} files)"
            + (
                f"; it holds {len(entries)} files, so more may have changed unreviewed"
                if capped
                else ""
            )
            + _rebuild_note(self.last_fetch),
            capped_at=COMPARE_FILES_CAP if capped else None,
            rebuild=self.last_fetch,
        )

    def _pull_files(self, number: int, head: str, merge_base: str) -> list[dict[str, Any]] | None:
        """The pull request's file list (up to GitHub's 3000 files, where the compare API
        stops at 300), bound to ``head``; None when the head or merge-base tree is truncated
        (nothing to bind to: the caller keeps the capped comparison and its partial
        coverage).

        The list is the pull request's *current* one, read over many pages; a push (or
        two, back to ``head``) while it is read could mix another commit's files in, or
        shift the pages so that one entry is read twice and another never. So the list is
        checked against the trees of ``merge_base`` and ``head`` (the two ends of the
        comparison ``base...head``): a listed file's object id is the one ``head`` has at
        that path, a removed file (or a rename's old name) is absent from it, no path is
        listed twice, and the paths listed are exactly those that differ between the two
        trees (all of them, unless the list stopped at GitHub's 3000: then the run's count
        marks the rest unreviewed). Any difference is a :class:`GitHubError`: the run
        errors, asking for a retry.
        """
        tree = self.tree_paths(head)
        if tree.truncated:
            return None
        old = self.tree_paths(merge_base)
        if old.truncated:
            return None

        def load() -> list[dict[str, Any]]:
            return [f.raw_data for f in self._repo.get_pull(number).get_files()][:MAX_FILES]

        def unbound(path: object, why: str) -> GitHubError:
            return GitHubError(
                f"the file list of pull request #{number} does not match its head commit "
                f"{head[:12]} at {git_quote(str(path))} ({why}): the pull request changed "
                "while it was read; retry the job",
                reason="github_files_unbound",
            )

        entries = self._call(f"GET files of pull request #{number}", load)
        listed: set[str] = set()
        for entry in entries:
            path, status, sha = entry.get("filename"), entry.get("status"), entry.get("sha")
            present = tree.objects.get(str(path))
            bound = present is None if status == "removed" else (present == sha and bool(sha))
            if not bound:
                raise unbound(path, "another object there")
            names = [str(path)]
            if status == "renamed":
                previous = entry.get("previous_filename")
                if not isinstance(previous, str) or previous in tree.objects:
                    raise unbound(previous, "a rename's old name the head still has")
                names.append(previous)
            for name in names:
                if name in listed:
                    raise unbound(name, "listed twice")
                listed.add(name)
        changed = tree.changed_from(old)
        if extra := sorted(listed - changed):
            raise unbound(extra[0], "listed, but not changed")
        if len(entries) < MAX_FILES and (missing := sorted(changed - listed)):
            raise unbound(missing[0], "changed, but not listed")
        return entries

    def blob(self, sha: str, *, limit: int = MAX_BLOB_BYTES) -> bytes | None:
        """A git blob's bytes (git blobs API); None when it is larger than ``limit``.

        The bytes are checked against their name: a blob's id is the SHA-1 of
        ``blob <size>\\0<bytes>`` (:func:`git_blob_id`), so an answer holding another
        blob, a cut or padded one, or base64 that does not decode to exactly the bytes
        asked for is refused (``github_bad_payload``), never shown to the reviewer as
        the file's content.
        """

        def load() -> bytes | None:
            found = self._repo.get_git_blob(sha)
            size, encoding, content = found.size, found.encoding, found.content
            if not isinstance(size, int) or size > limit:
                return None
            if encoding != "base64" or not isinstance(content, str):
                raise _bad_blob(sha, f"its encoding is {encoding!r}, not base64")
            try:
                # GitHub wraps base64 at 60 columns; nothing else may be in it
                data = base64.b64decode("".join(content.split("\n")), validate=True)
            except ValueError as err:
                raise _bad_blob(sha, f"its content is not base64 ({err})") from err
            if len(data) != size or git_blob_id(data, sha256=len(sha) == 64) != sha.lower():
                raise _bad_blob(sha, f"its {len(data)} bytes are not the blob {sha[:12]} names")
            return data

        return self._call(f"GET blob {sha[:12]}", load)

    def blob_sha(self, path: str, ref: str) -> str | None:
        """The blob id of the regular file ``path`` at ``ref`` (contents API metadata); None
        if absent, or not a regular file there (a folder, a submodule, or a symlink: the
        contents API answers a symlink to a file with the *target's* blob, which would
        show the reviewer another file's bytes as this one's base)."""

        def load() -> str | None:
            try:
                content = self._repo.get_contents(path, ref=ref)
            except GithubException as err:
                if _http_status(err) == 404:
                    return None
                raise
            if isinstance(content, list) or content.type != "file" or content.path != path:
                return None
            return str(content.sha)

        return self._call(f"GET contents {path} at {ref[:12]}", load)

    def _with_blobs(
        self,
        entries: list[dict[str, Any]],
        merge_base: str,
        head: str,
        budget: FetchBudget | None,
    ) -> list[FileSection]:
        """The files' sections; a file GitHub gave no patch for is rebuilt from its
        merge base's and head's blobs within ``budget`` (:func:`gate.action.blobfetch.rebuild`:
        modes and sizes from the two trees, fetched only what the budget can hold)."""
        sections = sections_from_files(entries)

        def trees() -> tuple[dict[str, Side] | None, dict[str, Side] | None]:
            return self.tree_paths(merge_base).sides(), self.tree_paths(head).sides()

        self.last_fetch = rebuild(
            entries, sections, trees=trees, blob=lambda oid: self.blob(oid), budget=budget
        )
        return sections

    def permission(self, login: str) -> str:
        """The user's permission on the repository: admin, maintain, write, triage, read, none."""

        def load() -> str:
            # "maintain" is reported as "write" in this field (GitHub's legacy mapping)
            return str(self._repo.get_collaborator_permission(login) or "none")

        try:
            return self._call(f"GET permission of @{login}", load)
        except GitHubError as err:
            if err.reason == "github_http_404":  # not a collaborator
                return "none"
            raise

    # -- writes ----------------------------------------------------------------------

    def create_status(
        self, sha: str, *, state: str, description: str, context: str, target_url: str | None
    ) -> None:
        """Post a commit status (retried on 5xx and connection errors: repeating is harmless)."""
        if state not in STATUS_STATES:
            raise ValueError(f"unknown status state {state!r}")
        description = redact(description)  # a public text: redacted, and before the cut
        text = description
        if len(text) > MAX_DESCRIPTION:
            text = text[: MAX_DESCRIPTION - 1] + "…"

        def post() -> None:
            commit = self._repo.get_commit(sha)
            if target_url:
                posted = commit.create_status(
                    state, target_url=target_url, description=text, context=context
                )
            else:
                posted = commit.create_status(state, description=text, context=context)
            self._learn_identity(getattr(posted, "raw_data", None))

        def transient(err: Exception) -> bool:
            # a refused connection was already retried by urllib3 (connect retries apply
            # to POST too); a timeout or a 5xx on a POST was not
            if not isinstance(err, GitHubError):
                return False
            refused = "connection refused" in err.message
            return (err.reason == "github_unreachable" and not refused) or err.reason in {
                f"github_http_{c}" for c in RETRY_STATUSES
            }

        self.policy.run(
            lambda: self._call(f"POST {state} status on {sha[:12]}", post), transient=transient
        )

    def _learn_identity(self, status: object) -> None:
        """The token's identity from a status it just wrote (its ``creator``): whoever the
        token is (a user, the Actions bot, any GitHub App's bot), that is who it writes as."""
        if self._identity is not None or not isinstance(status, dict):
            return
        creator = status.get("creator")
        if isinstance(creator, dict):
            login, kind = creator.get("login"), creator.get("type")
            if isinstance(login, str) and login and isinstance(kind, str) and kind:
                self._identity = Identity(login=login, kind=kind)

    def learn_identity_from_check(self, check_run: object) -> None:
        """The token's identity from a check run it just created: a check run is written by
        a GitHub App only, and the app writes as ``<slug>[bot]``."""
        if self._identity is not None or not isinstance(check_run, dict):
            return
        app = check_run.get("app")
        slug = app.get("slug") if isinstance(app, dict) else None
        if isinstance(slug, str) and slug:
            self._identity = Identity(login=f"{slug}[bot]", kind="Bot")

    def identity(self) -> Identity:
        """Who the token writes as, known and never guessed: the creator of the first
        status this client posted, or the app of the first check run it created; else the
        workflow's input ``identity``; else ``GET /user``. When none of them can tell
        (an installation token, which may not call ``GET /user``, before any status or
        check run, as in a replay run), GitHubError ``identity_unknown``: taking the
        Actions bot for another GitHub App's bot would adopt another workflow's comments as
        the gate's own, and finding nothing would read as "no records".
        """
        if self._identity is not None:
            return self._identity
        named = self.settings.identity
        if named:
            kind = "Bot" if named.endswith("[bot]") else "User"
            self._identity = Identity(login=named, kind=kind)
            return self._identity

        def load() -> Identity:
            user = self._gh.get_user()
            return Identity(login=str(user.login), kind=str(user.type or "User"))

        try:
            found = self._call("GET /user (the token's own identity)", load)
        except GitHubError as err:
            if err.reason not in ("github_http_403", "github_http_404"):
                raise
            raise GitHubError(
                "the token's own identity is unknown: GET /user is refused to this token and "
                "it has posted no status or check run yet, so the gate cannot tell its own "
                "comments from anyone else's; set the action input identity to the token's "
                "account (github-actions[bot] for the workflow's GITHUB_TOKEN, <app-slug>[bot] "
                "for a GitHub App's token)",
                reason="identity_unknown",
            ) from err
        self._identity = found
        return found

    def recent_pulls(self, since: datetime, *, limit: int) -> list[int]:
        """Numbers of the pull requests (any state) updated at or after ``since``, newest
        first, at most ``limit`` (merging, a review or a comment updates a pull request)."""

        def run() -> list[int]:
            found: list[int] = []
            pulls = self._repo.get_pulls(state="all", sort="updated", direction="desc")
            for pull in _iter(pulls):
                updated = pull.updated_at
                if updated is not None and updated.tzinfo is None:
                    updated = updated.replace(tzinfo=UTC)
                if len(found) >= limit or updated is None or updated < since:
                    break
                found.append(int(pull.number))
            return found

        return self._call("GET pull requests updated recently", run)

    def upsert_issue(self, title: str, body: str) -> int:
        """Create or update the one open issue titled ``title`` that this token opened;
        return its number (anyone else's issue of that title is left alone)."""
        body = redact(body)
        own = self.identity()

        def run() -> int:
            for scanned, issue in enumerate(_iter(self._repo.get_issues(state="open"))):
                if scanned >= MAX_COMMENTS_SCANNED:
                    break
                if issue.title != title or not own.wrote(issue.user):
                    continue
                if issue.pull_request is None:  # the list holds pull requests too
                    if issue.body != body:
                        issue.edit(body=body)
                    return int(issue.number)
            return int(self._repo.create_issue(title=title, body=body).number)

        return self._call(f"update the issue {title!r}", run)

    def own_comment(self, number: int, *, marker: str) -> str | None:
        """The body of the comment starting with ``marker`` that this token wrote, or None
        (the adoption rule of :meth:`upsert_comment`: anyone else's is never read)."""
        own = self.identity()

        def run() -> str | None:
            issue = self._repo.get_issue(number)
            for scanned, comment in enumerate(_iter(issue.get_comments())):
                if scanned >= MAX_COMMENTS_READ:
                    raise _too_many_comments(number)
                if (comment.body or "").startswith(marker) and own.wrote(comment.user):
                    return str(comment.body)
            return None

        return self._call(f"read the review-gate comment on #{number}", run)

    def own_statuses(self, sha: str, *, context: str) -> list[tuple[str, str]]:
        """(state, description) of the statuses in ``context`` on ``sha`` that this token
        posted, newest first (statuses are append-only and GitHub records their creator)."""
        own = self.identity()

        def run() -> list[tuple[str, str]]:
            found = []
            # GET /repos/{owner}/{repo}/commits/{ref}/statuses (newest first)
            url = f"{self._repo.url}/commits/{sha}/statuses"
            statuses = PaginatedList(CommitStatus, self._repo._requester, url, None)
            for scanned, status in enumerate(_iter(statuses)):
                if scanned >= MAX_COMMENTS_SCANNED:
                    break
                if status.context == context and own.wrote(status.creator):
                    found.append((str(status.state), str(status.description or "")))
            return found

        return self._call(f"GET statuses of {sha[:12]}", run)

    def pulls_for_commit(self, sha: str) -> list[PullInfo]:
        """The open pull requests whose head is ``sha`` (``GET /repos/{owner}/{repo}/commits/
        {sha}/pulls``): every one of them is satisfied by a status on that commit. More than
        :data:`MAX_PULLS_OF_COMMIT` is an error, never a partial list."""

        def run() -> list[PullInfo]:
            url = f"{self._repo.url}/commits/{sha}/pulls"
            found: list[PullInfo] = []
            for scanned, pull in enumerate(
                _iter(PaginatedList(PullRequest, self._repo._requester, url, None))
            ):
                if scanned >= MAX_PULLS_OF_COMMIT:
                    raise GitHubError(
                        f"more than {MAX_PULLS_OF_COMMIT} pull requests have the head "
                        f"{sha[:12]}; the gate cannot check them all",
                        reason="github_too_many_pulls",
                    )
                info = PullInfo.from_json(pull.raw_data)
                if info.state == "open" and info.head_sha == sha:
                    found.append(info)
            return found

        return self._call(f"GET pull requests of {sha[:12]}", run)

    # --- triage (gate/action/triage.py): read the queue, keep one issue, label --------

    def open_pulls(self, *, limit: int) -> list[OpenPull]:
        """The open pull requests, newest first, at most ``limit``."""

        def run() -> list[OpenPull]:
            found: list[OpenPull] = []
            for pull in _iter(self._repo.get_pulls(state="open", sort="created", direction="desc")):
                if len(found) >= limit:
                    break
                if str(pull.state) != "open":
                    continue
                found.append(
                    OpenPull(
                        number=int(pull.number),
                        title=str(pull.title or ""),
                        head_sha=str(pull.head.sha),
                        url=str(pull.html_url or ""),
                        labels=tuple(str(label.name) for label in pull.labels),
                        draft=bool(pull.draft),
                    )
                )
            return found

        return self._call("GET the open pull requests", run)

    def newest_own_status(self, sha: str, *, context: str) -> SeenStatus | None:
        """The newest status in ``context`` on ``sha`` that this token posted, with its time."""
        own = self.identity()

        def run() -> SeenStatus | None:
            url = f"{self._repo.url}/commits/{sha}/statuses"
            statuses = PaginatedList(CommitStatus, self._repo._requester, url, None)
            for scanned, status in enumerate(_iter(statuses)):
                if scanned >= MAX_COMMENTS_SCANNED:
                    break
                if status.context == context and own.wrote(status.creator):
                    when = status.created_at
                    if when is not None and when.tzinfo is None:
                        when = when.replace(tzinfo=UTC)
                    return SeenStatus(
                        str(status.state), str(status.description or ""), when or datetime.now(UTC)
                    )
            return None

        return self._call(f"GET statuses of {sha[:12]}", run)

    def own_issue(self, title: str) -> tuple[int, str] | None:
        """(number, body) of the open issue titled ``title`` this token opened, or None."""
        own = self.identity()

        def run() -> tuple[int, str] | None:
            for scanned, issue in enumerate(_iter(self._repo.get_issues(state="open"))):
                if scanned >= MAX_COMMENTS_SCANNED:
                    break
                if issue.title == title and own.wrote(issue.user) and issue.pull_request is None:
                    return int(issue.number), str(issue.body or "")
            return None

        return self._call(f"find the issue {title!r}", run)

    def close_issue(self, number: int) -> None:
        self._call(
            f"close issue #{number}", lambda: self._repo.get_issue(number).edit(state="closed")
        )

    def comment_on_issue(self, number: int, body: str) -> None:
        body = redact(body)
        self._call(
            f"comment on issue #{number}", lambda: self._repo.get_issue(number).create_comment(body)
        )

    def add_label(self, number: int, label: str) -> None:
        """POST /repos/{owner}/{repo}/issues/{number}/labels (a pull request is an issue)."""
        url = f"{self._repo.url}/issues/{number}/labels"
        self._call(
            f"label #{number} {label!r}",
            lambda: self._repo._requester.requestJsonAndCheck(
                "POST", url, input={"labels": [label]}
            ),
        )

    def remove_label(self, number: int, label: str) -> None:
        """DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}."""
        url = f"{self._repo.url}/issues/{number}/labels/{quote(label, safe='')}"
        self._call(
            f"unlabel #{number} {label!r}",
            lambda: self._repo._requester.requestJsonAndCheck("DELETE", url),
        )

    def upsert_comment(self, number: int, *, marker: str, body: str) -> int:
        """Create or update the one comment that starts with ``marker``; return its id.

        Only a comment this token wrote is adopted (same login, same account type);
        a marker in anyone else's comment is ignored, never edited: a new one is created.
        """
        body = redact(body)
        text = body if body.startswith(marker) else f"{marker}\n{body}"
        own = self.identity()

        def run() -> int:
            issue = self._repo.get_issue(number)
            found = None
            for scanned, comment in enumerate(_iter(issue.get_comments())):
                if scanned >= MAX_COMMENTS_READ:
                    raise _too_many_comments(number)
                if (comment.body or "").startswith(marker) and own.wrote(comment.user):
                    found = comment
                    break
            if found is not None:
                if found.body != text:
                    found.edit(text)
                return int(found.id)
            created = issue.create_comment(text)
            return int(created.id)

        return self._call(f"update the review-gate comment on #{number}", run)


def _too_many_comments(number: int) -> GitHubError:
    """Past :data:`MAX_COMMENTS_READ` comments the gate's own comment is not "absent": it
    is unknown, and the run says so instead of starting an empty history."""
    return GitHubError(
        f"pull request #{number} has more than {MAX_COMMENTS_READ} comments; the gate did not "
        "find its own among them and cannot tell whether it is further on, so its records are "
        "unknown; lock the conversation or move the change to a new pull request",
        reason="github_too_many_comments",
    )


def _rebuild_note(count: FetchCount | None) -> str:
    """``; 3 files without a patch rebuilt from their blobs (8 GitHub requests, ...)``."""
    if count is None or (count.rebuilt == 0 and not count.left):
        return ""
    left = ", ".join(f"{n} {why}" for why, n in sorted(count.left.items()))
    return (
        f"; {count.rebuilt} files without a patch rebuilt from their blobs ({count.requests} "
        f"GitHub requests at most, {count.bytes} blob bytes)"
        + (f", the others left unreviewed ({left})" if left else "")
    )


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


def git_blob_id(data: bytes, *, sha256: bool = False) -> str:
    """The git object id of a blob holding ``data`` (SHA-1, or SHA-256 for a repository in
    git's SHA-256 object format)."""
    framed = b"blob %d\0" % len(data) + data
    if sha256:
        return hashlib.sha256(framed).hexdigest()
    return hashlib.sha1(framed, usedforsecurity=False).hexdigest()


def _bad_blob(sha: str, why: str) -> GitHubError:
    return GitHubError(
        f"GitHub's answer for blob {sha[:12]} is not that blob: {why}; retry the job",
        reason="github_bad_payload",
    )


class _ServerError(Exception):
    """A transient server error (5xx) on the diff download: worth another try."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def _tries(count: int) -> str:
    return "1 try" if count == 1 else f"{count} tries"


def _chain(err: BaseException) -> Iterator[BaseException]:
    """``err``, its causes and contexts, and exceptions carried in ``args`` (urllib3 wraps
    the socket error in ``MaxRetryError.reason``), each once, bounded."""
    todo: list[BaseException] = [err]
    seen: set[int] = set()
    while todo and len(seen) < 32:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        nested = [item.__cause__, item.__context__, getattr(item, "reason", None), *item.args]
        todo.extend(x for x in nested if isinstance(x, BaseException))


def _network_cause(err: BaseException, timeout: float) -> str:
    """The real reason a request got no answer, in words (never a guess at a timeout)."""
    chain = list(_chain(err))
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return "connection refused"
    if any(isinstance(e, ConnectionResetError) for e in chain) or "reset by peer" in text:
        return "connection reset"
    if any(isinstance(e, httpx.TimeoutException | requests.Timeout | TimeoutError) for e in chain):
        return f"no answer within {timeout:g}s"
    if "timed out" in text:
        return f"no answer within {timeout:g}s"
    if any(isinstance(e, socket.gaierror) for e in chain) or "name resolution" in text:
        return "the host name does not resolve"
    return f"{type(err).__name__}: {err}"


def _iter(items: Any) -> Iterator[Any]:
    yield from items


def _error_message(body: bytes) -> str:
    """GitHub's message from an error body, else its start (redacted before the cut)."""
    try:
        data = strictjson.loads(body, what="the error body", error=GitHubError)
    except GitHubError:
        data = None
    if isinstance(data, dict) and "message" in data:
        return redact(str(data["message"]))
    return redact(body.decode("utf-8", "replace"))[:200]
