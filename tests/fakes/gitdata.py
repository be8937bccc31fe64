"""The Git data API of the fake GitHub: blobs, trees, commits and refs, with compare-and-swap.

GitHub's Git database API (``/repos/{owner}/{repo}/git/...``) as the gate's question ledger
uses it (gate/action/ledger.py): objects are created by ``POST`` and read back by their id;
a ref is created by ``POST /git/refs`` (422 when it exists) and moved by
``PATCH /git/refs/{ref}``, which without ``force`` is accepted only when the new commit
descends from the ref's current one (422 "Update is not a fast forward" otherwise: the
compare-and-swap a writer retries on). ``DELETE /git/refs/{ref}`` removes a ref (204).

Object ids: a blob's is git's own (``sha1("blob <len>\\0" + bytes)``), so the blobs of
``set_file`` and of this store are one namespace; a tree's and a commit's are a SHA-1 of
their canonical JSON (the fake needs them stable, not git's bytes).

:attr:`GitStore.races`: the next that many non-forced ref updates meet a concurrent writer
first: the store itself moves the ref to a new commit (same tree, the old one as parent),
so the update is no fast-forward and is answered 422, as a real race would be.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

Answer = tuple[int, dict[str, Any]]
_TREE_MODES = {"100644": "blob", "100755": "blob", "040000": "tree", "160000": "commit",
               "120000": "blob"}  # fmt: skip


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _object_id(kind: str, value: Any) -> str:
    text = json.dumps([kind, value], sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


@dataclass
class GitStore:
    """The objects and refs of the fake's Git database (module docstring)."""

    api_url: str
    blobs: dict[str, bytes] = field(default_factory=dict)
    #: tree id -> its entries ``{path: (mode, type, sha)}``
    trees: dict[str, dict[str, tuple[str, str, str]]] = field(default_factory=dict)
    #: commit id -> {"tree", "parents", "message"}
    commits: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: full ref name (``refs/...``) -> (object type, sha)
    refs: dict[str, tuple[str, str]] = field(default_factory=dict)
    races: int = 0

    def clear(self) -> None:
        self.blobs.clear()
        self.trees.clear()
        self.commits.clear()
        self.refs.clear()
        self.races = 0

    # -- JSON answers --------------------------------------------------------------------

    def _url(self, kind: str, sha: str) -> str:
        return f"{self.api_url}/git/{kind}/{sha}"

    def ref_json(self, name: str) -> dict[str, Any]:
        kind, sha = self.refs[name]
        return {
            "ref": name, "node_id": f"REF_{sha[:8]}", "url": f"{self.api_url}/git/{name}",
            "object": {"type": kind, "sha": sha, "url": self._url(f"{kind}s", sha)},
        }  # fmt: skip

    def tree_json(self, sha: str) -> dict[str, Any]:
        listed = []
        for path, (mode, kind, oid) in sorted(self.trees[sha].items()):
            entry: dict[str, Any] = {"path": path, "mode": mode, "type": kind, "sha": oid,
                     "url": self._url(f"{kind}s", oid)}  # fmt: skip
            if kind == "blob":
                entry["size"] = len(self.blobs.get(oid, b""))
            listed.append(entry)
        return {"sha": sha, "url": self._url("trees", sha), "tree": listed, "truncated": False}

    def commit_json(self, sha: str) -> dict[str, Any]:
        commit = self.commits[sha]
        person = {"name": "review-gate", "email": "gate@example", "date": "2026-01-01T00:00:00Z"}
        return {
            "sha": sha, "node_id": f"C_{sha[:8]}", "url": self._url("commits", sha),
            "html_url": self._url("commits", sha), "author": person, "committer": person,
            "message": commit["message"],
            "tree": {"sha": commit["tree"], "url": self._url("trees", commit["tree"])},
            "parents": [{"sha": p, "url": self._url("commits", p),
                         "html_url": self._url("commits", p)} for p in commit["parents"]],
            "verification": {"verified": False, "reason": "unsigned", "signature": None,
                             "payload": None, "verified_at": None},
        }  # fmt: skip

    # -- writes --------------------------------------------------------------------------

    def create_blob(self, body: dict[str, Any]) -> Answer:
        content, encoding = body.get("content"), body.get("encoding", "utf-8")
        if not isinstance(content, str):
            return 422, {"message": "content is not a string"}
        if encoding == "base64":
            try:
                data = base64.b64decode(content, validate=True)
            except (binascii.Error, ValueError):
                return 422, {"message": "content is not valid Base64"}
        else:
            data = content.encode()
        sha = blob_id(data)
        self.blobs[sha] = data
        return 201, {"sha": sha, "url": self._url("blobs", sha)}

    def create_tree(self, body: dict[str, Any]) -> Answer:
        base = body.get("base_tree")
        if base is not None and base not in self.trees:
            return 422, {"message": "base_tree is not a valid tree"}
        entries = dict(self.trees[base]) if base else {}
        for item in body.get("tree") or []:
            path, mode, kind, sha = item.get("path"), item.get("mode"), item.get("type"), None
            if not isinstance(path, str) or not path or "/" in path:
                return 422, {"message": f"the fake takes flat tree paths only: {path!r}"}
            if "content" in item:
                _status, made = self.create_blob({"content": item["content"]})
                sha = made["sha"]
            else:
                sha = item.get("sha")
            if sha is None:
                entries.pop(path, None)
                continue
            if _TREE_MODES.get(str(mode)) != kind:
                return 422, {"message": f"mode {mode} does not fit type {kind}"}
            known = self.blobs if kind == "blob" else self.trees if kind == "tree" else None
            if known is not None and sha not in known:
                return 422, {"message": f"tree.sha {sha} wasn't found"}
            entries[path] = (str(mode), str(kind), str(sha))
        sha = _object_id("tree", sorted(entries.items()))
        self.trees[sha] = entries
        return 201, self.tree_json(sha)

    def create_commit(self, body: dict[str, Any]) -> Answer:
        tree, parents = body.get("tree"), body.get("parents") or []
        if tree not in self.trees:
            return 422, {"message": "Tree SHA does not exist"}
        if any(p not in self.commits for p in parents):
            return 422, {"message": "Parent SHA does not exist or is not a commit object"}
        value = {"tree": tree, "parents": list(parents), "message": str(body.get("message", ""))}
        sha = _object_id("commit", value)
        self.commits[sha] = value
        return 201, self.commit_json(sha)

    def create_ref(self, body: dict[str, Any]) -> Answer:
        name, sha = str(body.get("ref", "")), body.get("sha")
        if not name.startswith("refs/") or name.count("/") < 2:
            return 422, {"message": "Reference name must start with 'refs/' and have two slashes"}
        if name in self.refs:
            return 422, {"message": "Reference already exists"}
        kind = self._kind(sha)
        if kind is None:
            return 422, {"message": "Object does not exist"}
        self.refs[name] = (kind, str(sha))
        return 201, self.ref_json(name)

    def update_ref(self, short: str, body: dict[str, Any]) -> Answer:
        name = f"refs/{short}"
        if name not in self.refs:
            return 422, {"message": "Reference does not exist"}
        sha = body.get("sha")
        kind = self._kind(sha)
        if kind is None:
            return 422, {"message": "Object does not exist"}
        if not body.get("force"):
            if self.races > 0:
                self.races -= 1
                self._race(name)
            current = self.refs[name][1]
            if kind != "commit" or not self.descends(str(sha), current):
                return 422, {"message": "Update is not a fast forward"}
        self.refs[name] = (kind, str(sha))
        return 200, self.ref_json(name)

    def delete_ref(self, short: str) -> Answer:
        if self.refs.pop(f"refs/{short}", None) is None:
            return 422, {"message": "Reference does not exist"}
        return 204, {}

    def _race(self, name: str) -> None:
        """A concurrent writer moves ``name`` first (a commit of the same tree on top)."""
        kind, current = self.refs[name]
        if kind != "commit":
            return
        value = {"tree": self.commits[current]["tree"], "parents": [current],
                 "message": f"a concurrent write {len(self.commits)}"}  # fmt: skip
        sha = _object_id("commit", value)
        self.commits[sha] = value
        self.refs[name] = ("commit", sha)

    def _kind(self, sha: Any) -> str | None:
        if not isinstance(sha, str):
            return None
        if sha in self.commits:
            return "commit"
        if sha in self.trees:
            return "tree"
        if sha in self.blobs:
            return "blob"
        return None

    def descends(self, sha: str, ancestor: str) -> bool:
        """Whether ``ancestor`` is ``sha`` or one of its ancestors (bounded walk)."""
        todo, seen = [sha], set[str]()
        while todo and len(seen) < 100_000:
            here = todo.pop()
            if here == ancestor:
                return True
            if here in seen or here not in self.commits:
                continue
            seen.add(here)
            todo.extend(self.commits[here]["parents"])
        return False
