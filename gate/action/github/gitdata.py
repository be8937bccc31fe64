"""GitHub's Git database API: the blobs, trees, commits and ref of the question ledger.

The calls :mod:`gate.action.ledger` makes, each one request over httpx under the one HTTP
policy (:class:`~gate.action.github.http.GitHubHttp`: timeout, deadline, retries on 5xx
and transport errors, strict JSON, every failure a :class:`~gate.errors.GitHubError`):

* ``GET /repos/{owner}/{repo}/git/ref/{ref}``: what a ref points at (None when absent);
* ``GET .../git/commits/{sha}``, ``GET .../git/trees/{sha}``, ``GET .../git/blobs/{sha}``;
* ``POST .../git/blobs``, ``POST .../git/trees`` (on a ``base_tree``),
  ``POST .../git/commits``;
* ``POST .../git/refs`` (create) and ``PATCH .../git/refs/{ref}`` without ``force``: the
  compare-and-swap. GitHub answers 422 when the ref exists already (create) or the new
  commit does not descend from the ref's current one (update): :class:`RefMoved`, which
  the ledger answers by reading again, never by forcing.

What the answers mean is the ledger's business; this module checks only that each is the
object asked for (types, 40-hex ids), else ``github_bad_payload``.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gate.action.github.http import GitHubHttp, _bad_payload
from gate.errors import GitHubError

_OID = r"[0-9a-f]{40}"  # compiled on first use (re's cache)


class RefMoved(GitHubError):
    """A non-forced ref write GitHub refused: another writer moved (or made) the ref."""

    reason = "github_ref_moved"


@dataclass(frozen=True)
class RefTarget:
    """What a ref points at: the object's type (``commit``, ``tag``, ``tree``, ``blob``)
    and id."""

    kind: str
    sha: str


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a tree as GitHub lists it."""

    path: str
    mode: str
    kind: str
    sha: str


@dataclass(frozen=True)
class GitCommit:
    """A commit's tree and parents."""

    sha: str
    tree: str
    parents: tuple[str, ...]


def _oid(what: str, value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(_OID, value):
        raise _bad_payload(what, f"{str(value)[:60]!r} is not a git object id")
    return value


class GitData(GitHubHttp):
    """The Git database calls (module docstring)."""

    def _git(self, tail: str) -> str:
        return f"/repos/{self.settings.repository}/git/{tail}"

    def get_ref(self, ref: str) -> RefTarget | None:
        """What ``ref`` (``refs/...``) points at, or None when there is no such ref."""
        what = f"GET the ref {ref}"
        short = ref.removeprefix("refs/")
        found = self._rest("GET", what, self._git(f"ref/{quote(short, safe='/')}"), missing=True)
        if found is None:
            return None
        obj = found.get("object") if isinstance(found, dict) else None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise _bad_payload(what, "the ref names no object")
        if found.get("ref") != ref:  # GitHub answers a list for a prefix of several refs
            raise _bad_payload(what, f"the answer is not the ref {ref}")
        return RefTarget(str(obj["type"]), _oid(what, obj.get("sha")))

    def get_commit(self, sha: str) -> GitCommit:
        what = f"GET the commit {sha[:12]}"
        found = self._rest("GET", what, self._git(f"commits/{quote(sha, safe='')}"))
        tree = found.get("tree") if isinstance(found, dict) else None
        parents = found.get("parents") if isinstance(found, dict) else None
        if not isinstance(tree, dict) or not isinstance(parents, list):
            raise _bad_payload(what, "the commit has no tree or no parents list")
        return GitCommit(
            sha,
            _oid(what, tree.get("sha")),
            tuple(_oid(what, p.get("sha") if isinstance(p, dict) else None) for p in parents),
        )

    def get_tree(self, sha: str) -> tuple[list[TreeEntry], bool]:
        """The entries of a tree (not recursive) and whether GitHub cut the list."""
        what = f"GET the tree {sha[:12]}"
        found = self._rest("GET", what, self._git(f"trees/{quote(sha, safe='')}"))
        items = found.get("tree") if isinstance(found, dict) else None
        if not isinstance(items, list):
            raise _bad_payload(what, "the tree has no entries list")
        entries = []
        for item in items:
            if not isinstance(item, dict):
                raise _bad_payload(what, "a tree entry is not an object")
            path, mode, kind = item.get("path"), item.get("mode"), item.get("type")
            if not (isinstance(path, str) and isinstance(mode, str) and isinstance(kind, str)):
                raise _bad_payload(what, "a tree entry lacks its path, mode or type")
            entries.append(TreeEntry(path, mode, kind, _oid(what, item.get("sha"))))
        return entries, found.get("truncated") is True

    def get_blob(self, sha: str, *, limit: int) -> bytes:
        """A blob's bytes, at most ``limit`` of them (a larger one is refused unread)."""
        what = f"GET the blob {sha[:12]}"
        found = self._rest("GET", what, self._git(f"blobs/{quote(sha, safe='')}"))
        if not isinstance(found, dict) or found.get("encoding") != "base64":
            raise _bad_payload(what, "the blob is not base64")
        size, content = found.get("size"), found.get("content")
        if not isinstance(size, int) or size > limit or not isinstance(content, str):
            raise _bad_payload(what, f"the blob is larger than {limit} bytes, or has no content")
        try:
            data = base64.b64decode("".join(content.split()), validate=True)
        except (binascii.Error, ValueError):
            raise _bad_payload(what, "the blob's content is not valid base64") from None
        if len(data) != size:
            raise _bad_payload(what, "the blob's content is not its size")
        return data

    def create_blob(self, data: bytes) -> str:
        what = "POST a ledger blob"
        body = {"content": base64.b64encode(data).decode("ascii"), "encoding": "base64"}
        made = self._rest("POST", what, self._git("blobs"), body=body)
        return _oid(what, made.get("sha") if isinstance(made, dict) else None)

    def create_tree(self, entries: list[TreeEntry], *, base: str | None) -> str:
        what = "POST a ledger tree"
        rows = [{"path": e.path, "mode": e.mode, "type": e.kind, "sha": e.sha} for e in entries]
        body: dict[str, Any] = {"tree": rows}
        if base is not None:
            body["base_tree"] = base
        made = self._rest("POST", what, self._git("trees"), body=body)
        return _oid(what, made.get("sha") if isinstance(made, dict) else None)

    def create_commit(self, message: str, tree: str, parents: list[str]) -> str:
        what = "POST a ledger commit"
        body = {"message": message, "tree": tree, "parents": parents}
        made = self._rest("POST", what, self._git("commits"), body=body)
        return _oid(what, made.get("sha") if isinstance(made, dict) else None)

    def swap_ref(self, ref: str, sha: str, *, old: str | None) -> None:
        """Point ``ref`` at ``sha`` if it still points at ``old`` (None: if it does not
        exist): a create, or an update that is no force; :class:`RefMoved` otherwise."""
        if old is None:
            what, method, path = f"POST the ref {ref}", "POST", self._git("refs")
            body: dict[str, Any] = {"ref": ref, "sha": sha}
        else:
            short = quote(ref.removeprefix("refs/"), safe="/")
            what, method, path = f"PATCH the ref {ref}", "PATCH", self._git(f"refs/{short}")
            body = {"sha": sha, "force": False}
        try:
            self._rest(method, what, path, body=body)
        except GitHubError as err:
            if err.reason == "github_http_422":
                raise RefMoved(err.message) from err
            raise
