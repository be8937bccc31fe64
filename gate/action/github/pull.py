"""Reading a pull request: which bytes get reviewed.

The pull request, the config file at the *base* commit (contents API), the diff of
exactly ``base_sha...head_sha`` (compare API, diff media type, with the comparison's file
list as the fallback when GitHub answers 406, and past its 300 files the pull request's
file list bound to the head tree), files without a patch rebuilt from their blobs within
the fetch budget, the head tree's paths (git trees API, recursive) for the
``.apply/incomplete`` check, and collaborator permission for the override. This is the
security choice of which bytes the reviewer sees; the plumbing is in
:mod:`gate.action.github.http`.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from gate.action.blobfetch import MAX_BLOB_BYTES, FetchBudget, FetchCount, Side, rebuild
from gate.action.github.http import GitHubHttp, _bad_payload, _iter
from gate.action.github.records import DiffFetch, OpenPull, PullInfo, TreeListing
from gate.diff import (
    COMMIT_ID,
    FileSection,
    git_blob_id,
    git_quote,
    sections_from_files,
    split_diff,
)
from gate.errors import GitHubError

DIFF_MEDIA_TYPE = "application/vnd.github.diff"


#: GitHub's file lists stop at 3000 files (the compare API's at 300); a bound regardless
MAX_FILES = 3000


#: the compare API's file list stops at 300 files and gives no total file count
COMPARE_FILES_CAP = 300


#: permissions that may apply the override label
OVERRIDE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


#: pull requests of one commit read, at most (commits/{sha}/pulls)
MAX_PULLS_OF_COMMIT = 100


#: a pull request's commits listed, at most (GitHub's own listing stops at 250)
MAX_PULL_COMMITS = 250


class PullReader(GitHubHttp):
    """The calls that read: the pull request, files at a commit, trees, the diff, blobs,
    permissions and recent pull requests."""

    def get_pull(self, number: int) -> PullInfo:
        """``GET /repos/{owner}/{repo}/pulls/{number}`` (over httpx: the run's first call)."""
        what = f"GET pull request #{number}"
        data = self._rest("GET", what, f"/repos/{self.settings.repository}/pulls/{number}")
        if not isinstance(data, dict):
            raise _bad_payload(what, "the pull request is not a JSON object")
        return PullInfo.from_json(data)

    def _contents(self, path: str, ref: str) -> Any:
        """The contents API's answer for ``path`` at ``ref`` (a file's object or a folder's
        list; ``GET /repos/{owner}/{repo}/contents/{path}?ref=``); None on 404."""
        what = f"GET contents {path} at {ref[:12]}"
        found = self._rest(
            "GET",
            what,
            f"/repos/{self.settings.repository}/contents/{quote('' if path == '/' else path)}",
            params={"ref": ref},
            missing=True,
        )
        if found is not None and not isinstance(found, dict | list):
            raise _bad_payload(what, "the contents are neither an object nor a list")
        return found

    def read_file(self, path: str, ref: str) -> bytes | None:
        """A file's bytes at ``ref`` (contents API); None when it does not exist there."""
        content = self._contents(path, ref)
        if content is None:
            return None
        if isinstance(content, list):
            raise GitHubError(
                f"{path} at {ref[:12]} is a directory, not a file; point the action "
                "input 'config' at a YAML file",
                reason="github_not_a_file",
            )
        encoding, text = content.get("encoding"), content.get("content")
        what = f"GET contents {path} at {ref[:12]}"
        if encoding != "base64" or not isinstance(text, str):
            raise _bad_payload(
                what,
                f"its encoding is {encoding!r}, not base64 (the contents API sends no "
                "content for a file over 1 MB, or for what is not a file)",
            )
        try:
            # GitHub wraps base64 at 60 columns; nothing else may be in it
            return base64.b64decode("".join(text.split("\n")), validate=True)
        except ValueError as err:
            raise _bad_payload(what, f"its content is not base64 ({err})") from err

    def path_exists(self, path: str, ref: str) -> bool:
        """Whether ``path`` exists in the tree at ``ref`` (file or directory)."""
        return self._contents(path, ref) is not None

    def tree_paths(self, ref: str) -> TreeListing:
        """Every path (files and folders, at any depth) in the tree of commit ``ref``.

        One call to the git trees API with ``recursive=1`` (once per commit: a commit's
        tree never changes). GitHub stops listing at its limit and says
        ``truncated: true``; the caller must not read absence from that.
        """
        if (known := self._trees.get(ref)) is not None:
            return known

        what = f"GET tree of {ref[:12]} (recursive)"

        def load() -> TreeListing:
            data = self._rest(
                "GET",
                what,
                f"/repos/{self.settings.repository}/git/trees/{quote(ref, safe='')}",
                params={"recursive": "1"},
            )
            entries = data.get("tree") if isinstance(data, dict) else None
            truncated = data.get("truncated") if isinstance(data, dict) else None
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

        listing = load()
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

        content = self._contents(path, ref)
        if content is None or isinstance(content, list):
            return None
        if content.get("type") != "file" or content.get("path") != path:
            return None
        sha = content.get("sha")
        if not isinstance(sha, str) or not sha:
            raise _bad_payload(f"GET contents {path} at {ref[:12]}", "the file has no sha")
        return sha

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

    def pulls_for_commit(self, sha: str) -> list[PullInfo]:
        """The open pull requests whose head is ``sha`` (``GET /repos/{owner}/{repo}/commits/
        {sha}/pulls``): every one of them is satisfied by a status on that commit. More than
        :data:`MAX_PULLS_OF_COMMIT` is an error, never a partial list."""

        what = f"GET pull requests of {sha[:12]}"
        path = f"/repos/{self.settings.repository}/commits/{quote(sha, safe='')}/pulls"
        found: list[PullInfo] = []
        pulls = self._pages(what, path, limit=MAX_PULLS_OF_COMMIT + 1)
        for scanned, pull in enumerate(pulls):
            if scanned >= MAX_PULLS_OF_COMMIT:
                raise GitHubError(
                    f"more than {MAX_PULLS_OF_COMMIT} pull requests have the head "
                    f"{sha[:12]}; the gate cannot check them all",
                    reason="github_too_many_pulls",
                )
            if not isinstance(pull, dict):
                raise _bad_payload(what, "a pull request is not a JSON object")
            info = PullInfo.from_json(pull)
            if info.state == "open" and info.head_sha == sha:
                found.append(info)
        return found

    def pull_commits(self, number: int) -> list[str]:
        """The SHAs of the pull request's commits, oldest first, as GitHub lists them
        (``GET /repos/{owner}/{repo}/pulls/{number}/commits``, GitHub lists no more than
        250; at most :data:`MAX_PULL_COMMITS` are read). The caller reads the newest of
        them (:mod:`gate.action.earlier`)."""
        what = f"GET commits of pull request #{number}"
        path = f"/repos/{self.settings.repository}/pulls/{number}/commits"
        found: list[str] = []
        for commit in self._pages(what, path, limit=MAX_PULL_COMMITS):
            sha = commit.get("sha") if isinstance(commit, dict) else None
            if not isinstance(sha, str) or not COMMIT_ID.fullmatch(sha):
                raise _bad_payload(what, "a commit has no 40 or 64 hex sha")
            found.append(sha)
        return found

    def commit_parents(self, sha: str) -> list[str]:
        """The parents of commit ``sha``, its first parent first (``GET /repos/{owner}/
        {repo}/git/commits/{commit_sha}``): the chain the newest heads of a pull request
        longer than GitHub lists are found on (:mod:`gate.action.earlier`)."""
        what = f"GET commit {sha[:12]}"
        path = f"/repos/{self.settings.repository}/git/commits/{quote(sha, safe='')}"
        data = self._rest("GET", what, path)
        parents = data.get("parents") if isinstance(data, dict) else None
        if not isinstance(data, dict) or data.get("sha") != sha or not isinstance(parents, list):
            raise _bad_payload(what, "the answer is not that commit with its parents")
        found: list[str] = []
        for parent in parents:
            parent_sha = parent.get("sha") if isinstance(parent, dict) else None
            if not isinstance(parent_sha, str) or not COMMIT_ID.fullmatch(parent_sha):
                raise _bad_payload(what, "a parent has no 40 or 64 hex sha")
            found.append(parent_sha)
        return found

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


def _bad_blob(sha: str, why: str) -> GitHubError:
    return GitHubError(
        f"GitHub's answer for blob {sha[:12]} is not that blob: {why}; retry the job",
        reason="github_bad_payload",
    )
