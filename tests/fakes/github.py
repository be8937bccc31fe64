"""A stateful fake GitHub REST server on 127.0.0.1, checked against GitHub's OpenAPI description.

It serves the calls review-gate makes: pull requests (JSON and the diff media type, 406 on
demand), the files API (paginated with ``Link`` headers), contents at a ref, compare,
collaborator permission, commit statuses, issue comments and labels. It records every request.
Every request is validated against the official description (``tests/fakes/openapi_contract.py``);
a request outside the spec is answered ``422 {"message": "contract violation ..."}`` and recorded
in :attr:`FakeGitHub.violations`, which tests assert is empty. The fake's own JSON answers are
validated against the documented response schemas too (:attr:`FakeGitHub.response_violations`).

In-process::

    with FakeGitHub() as gh:
        gh.add_pull(7, head_sha=..., base_sha=..., diff=b"...")
        ...  # GITHUB_API_URL=gh.api_url
        assert gh.violations == []

Standalone (for the act end-to-end test)::

    python -m tests.fakes.github --port 8765 --state state.json [--out received.json]

``--state`` is a JSON file with the same shape as :meth:`FakeGitHub.load_state` accepts;
``--out`` is rewritten atomically after every request with what the fake received
(requests, statuses, comments, violations). ``GET /_fake/received`` returns the same JSON.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import os
import re
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from tests.fakes.gitdata import GitStore
from tests.fakes.openapi_contract import Contract, load_contract

DIFF_TYPE = "application/vnd.github.diff"
TOO_LARGE = {
    "message": "Sorry, the diff exceeded the maximum number of files (300).",
    "errors": [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
}
EPOCH = "2026-01-01T00:00:00Z"
#: GitHub keeps at most this many statuses per commit and context (POST /statuses/{sha})
MAX_STATUSES = 1000
STATUS_CAP = {
    "message": "Validation Failed",
    "errors": [{"resource": "Status", "code": "custom",
                "message": "This SHA and context has reached the maximum number of statuses."}],
    "documentation_url": "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
}  # fmt: skip


def _user(login: str, *, bot: bool = False, uid: int = 1) -> dict[str, Any]:
    return {
        "login": login,
        "id": uid,
        "node_id": f"U_{uid}",
        "avatar_url": "https://avatars.example/u",
        "gravatar_id": "",
        "url": f"https://api.example/users/{login}",
        "html_url": f"https://example/{login}",
        "followers_url": "", "following_url": "", "gists_url": "", "starred_url": "",
        "subscriptions_url": "", "organizations_url": "", "repos_url": "", "events_url": "",
        "received_events_url": "",
        "type": "Bot" if bot else "User",
        "site_admin": False,
    }  # fmt: skip


@dataclass
class Recorded:
    method: str
    path: str  # without the API prefix
    query: str
    headers: dict[str, str]
    body: bytes
    status: int = 0
    operation: str | None = None
    violations: list[str] = field(default_factory=list)

    def json_body(self) -> Any:
        return json.loads(self.body) if self.body else None

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "accept": self.headers.get("accept", ""),
            "body": self.body.decode("utf-8", "replace"),
            "status": self.status,
            "operation": self.operation,
            "violations": self.violations,
        }


@dataclass
class Fault:
    """Answer ``status`` to the next ``count`` requests whose ``METHOD path`` matches
    (and whose body matches ``body``, a regular expression, when it is set)."""

    pattern: str
    status: int
    count: int = 1
    message: str = "fault injected by the fake"
    body: str = ""


class FakeGitHub:
    """The fake's state and its HTTP server (see the module docstring)."""

    def __init__(
        self,
        repository: str = "octo-org/hello-world",
        *,
        token: str = "ghs_fake_token",
        prefix: str = "",
        port: int = 0,
        host: str = "127.0.0.1",
        validate: bool = True,
    ) -> None:
        self.repository = repository
        self.token = token
        self.prefix = prefix.rstrip("/")
        self.contract: Contract | None = load_contract() if validate else None
        self.lock = threading.RLock()
        self.pulls: dict[int, dict[str, Any]] = {}
        self.diffs: dict[int, bytes] = {}
        self.files: dict[int, list[dict[str, Any]]] = {}
        self.refuse_diff: set[int] = set()
        self.refuse_compare: set[str] = set()  # "base...head" answered 406 (diff too large)
        self.contents: dict[str, dict[str, bytes]] = {}  # ref -> path -> bytes
        self.compares: dict[str, tuple[bytes, list[dict[str, Any]]]] = {}
        #: a commit's parents, first parent first, where a test names them (a merge)
        self.parents: dict[str, list[str]] = {}
        self.truncated_trees: set[str] = set()  # refs whose git tree is answered truncated
        #: ref -> path -> git mode (default 100644); a 160000 file's bytes are a commit id
        self.modes: dict[str, dict[str, str]] = {}
        #: "base...head" -> the comparison's merge base (default: base)
        self.merge_bases: dict[str, str] = {}
        self.permissions: dict[str, str] = {}
        self.statuses: dict[str, list[dict[str, Any]]] = {}
        #: pull number -> its commits, oldest first (``GET /pulls/{n}/commits``)
        self.commits: dict[int, list[str]] = {}
        #: a lagging read replica: the next ``status_lag_reads`` status lists leave out
        #: each commit's newest ``status_lag`` statuses (written, answered 201, not yet
        #: listed)
        self.status_lag = 0
        self.status_lag_reads = 0
        #: the same for check runs: the next ``check_lag_reads`` check-run lists leave out
        #: each commit's newest ``check_lag`` check runs (by id)
        self.check_lag = 0
        self.check_lag_reads = 0
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.reviews: dict[int, list[dict[str, Any]]] = {}  # pull number -> reviews
        self.reactions: list[tuple[int, str]] = []  # (comment id, content)
        #: called after each page of a pull request's file list is served (with its number)
        self.on_list_files: Callable[[int], None] | None = None
        self.check_runs: dict[int, dict[str, Any]] = {}  # id -> check run (+ "annotations")
        self.issues: dict[int, dict[str, Any]] = {}
        #: the Git database (blobs, trees, commits, refs) the ledger is written to
        self.git = GitStore(api_url="")
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self.violations: list[str] = []
        self.response_violations: list[str] = []
        self.on_request: Callable[[Recorded], None] | None = None
        # None: the token is an installation token (GITHUB_TOKEN): GET /user answers 403 and
        # comments are written by github-actions[bot]; a login: a user token (PAT)
        self.token_login: str | None = None
        #: a GitHub App's installation token other than the workflow's: it writes as this
        #: bot, and (like every installation token) may not call GET /user
        self.token_app: str | None = None
        self.out_path: Path | None = None
        self._next_id = 1000
        self.host = host
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def api_url(self) -> str:
        return f"http://{self.origin}{self.prefix}"

    @property
    def origin(self) -> str:
        host = "127.0.0.1" if self.host in ("127.0.0.1", "0.0.0.0", "") else self.host
        return f"{host}:{self.port}"

    def start(self) -> FakeGitHub:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- building state -------------------------------------------------------------

    def _id(self) -> int:
        with self.lock:
            self._next_id += 1
            return self._next_id

    def repo_json(self, full_name: str | None = None) -> dict[str, Any]:
        name = full_name or self.repository
        owner = name.split("/")[0]
        return {
            "id": int(hashlib.sha256(name.encode()).hexdigest()[:6], 16),
            "node_id": "R_1",
            "name": name.split("/")[1],
            "full_name": name,
            "owner": _user(owner),
            "private": False,
            "html_url": f"https://example/{name}",
            "url": f"{self.api_url}/repos/{name}",
            "fork": name != self.repository,
        }

    def add_pull(
        self,
        number: int,
        *,
        head_sha: str,
        base_sha: str,
        diff: bytes = b"",
        files: list[dict[str, Any]] | None = None,
        draft: bool = False,
        author: str = "octocat",
        head_repo: str | None = None,
        labels: tuple[str, ...] = (),
        refuse_diff: bool = False,
        base_ref: str = "main",
    ) -> dict[str, Any]:
        """Add (or replace) a pull request; ``head_repo`` other than the repository = a fork."""
        head_name = head_repo or self.repository
        pull = {
            "url": f"{self.api_url}/repos/{self.repository}/pulls/{number}",
            "id": number * 10,
            "node_id": f"PR_{number}",
            "number": number,
            "state": "open",
            "locked": False,
            "title": f"PR {number}",
            "user": _user(author),
            "body": None,
            "draft": draft,
            "labels": [{"id": i + 1, "name": n} for i, n in enumerate(labels)],
            "head": {"label": f"{head_name.split('/')[0]}:topic", "ref": "topic", "sha": head_sha,
                     "user": _user(head_name.split("/")[0]), "repo": self.repo_json(head_name)},
            "base": {"label": base_ref, "ref": base_ref, "sha": base_sha,
                     "user": _user(self.repository.split("/")[0]),
                     "repo": self.repo_json(self.repository)},
            "created_at": EPOCH,
            "updated_at": EPOCH,
        }  # fmt: skip
        listed = files if files is not None else files_from_diff(diff)
        pull["changed_files"] = len(listed)
        with self.lock:
            self.pulls[number] = pull
            self._head_commits(number, head_sha)
            self.diffs[number] = diff
            self.files[number] = listed
            # the same change through the compare API (base_sha...head_sha), as GitHub has it
            self.compares[f"{base_sha}...{head_sha}"] = (diff, listed)
            if refuse_diff:
                self.refuse_diff.add(number)
                self.refuse_compare.add(f"{base_sha}...{head_sha}")
        return pull

    def move_head(self, number: int, new_sha: str, *, commits: list[str] | None = None) -> None:
        """A push arrives: the pull request's head moves. Its commit list becomes
        ``commits`` (oldest first, ending with ``new_sha``: a rebase or a force-push names
        its own chain), else the new head is pushed on top, or the list is cut back to it
        when it is already there (a force-push to an earlier head)."""
        with self.lock:
            self.pulls[number]["head"]["sha"] = new_sha
            if commits is not None:
                self.commits[number] = list(commits)
            else:
                self._head_commits(number, new_sha)

    def _head_commits(self, number: int, head: str) -> None:
        listed = self.commits.setdefault(number, [])
        if head in listed:
            del listed[listed.index(head) + 1 :]
        else:
            listed.append(head)

    def move_base(self, number: int, new_sha: str, new_ref: str | None = None) -> None:
        """The pull request is retargeted (``new_ref``) or its base branch moves."""
        with self.lock:
            base = self.pulls[number]["base"]
            base["sha"] = new_sha
            if new_ref is not None:
                base["ref"] = base["label"] = new_ref

    def set_file(self, ref: str, path: str, data: bytes | str, *, mode: str = "100644") -> None:
        """A file of ``ref``'s tree: a blob's bytes, a symlink's target (``120000``), or a
        submodule's commit id (``160000``, listed as a commit, never served as a blob)."""
        raw = data.encode() if isinstance(data, str) else data
        with self.lock:
            self.contents.setdefault(ref, {})[path] = raw
            self.modes.setdefault(ref, {})[path] = mode

    def add_compare(
        self,
        base: str,
        head: str,
        diff: bytes,
        files: list[dict[str, Any]] | None = None,
        *,
        refuse_diff: bool = False,
    ) -> None:
        with self.lock:
            self.compares[f"{base}...{head}"] = (
                diff,
                files if files is not None else files_from_diff(diff),
            )
            if refuse_diff:
                self.refuse_compare.add(f"{base}...{head}")

    def inject(
        self,
        pattern: str,
        status: int,
        count: int = 1,
        message: str = "fault injected",
        *,
        body: str = "",
    ) -> None:
        with self.lock:
            self.faults.append(Fault(pattern, status, count, message, body))

    def status_list(self, sha: str) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(s) for s in self.statuses.get(sha, [])]

    def states(self, sha: str) -> list[str]:
        return [s["state"] for s in self.status_list(sha)]

    def decided_states(self, sha: str) -> list[str]:
        """:meth:`states` without the chunk progress updates of the ``pending`` status.

        A review in chunks updates its pending description ("reviewing: 12/40 chunks") at
        most every 10 s, so how many updates a run posts depends on how fast the machine
        is; each update must still be ``pending``.
        """
        kept = []
        for status in self.status_list(sha):
            if "reviewing: " in (status.get("description") or ""):
                assert status["state"] == "pending", status
                continue
            kept.append(status["state"])
        return kept

    def received(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": [r.to_json() for r in self.requests],
                "statuses": self.statuses,
                "comments": {str(k): v for k, v in self.comments.items()},
                "violations": self.violations,
                "response_violations": self.response_violations,
            }

    def load_state(self, state: dict[str, Any]) -> None:
        """Load JSON state: {"repository", "token", "pulls": [{number, head_sha, base_sha, diff,
        draft, author, head_repo, labels, refuse_diff, files}], "contents": {ref: {path: text}},
        "compares": [{base, head, diff}], "permissions": {login: perm},
        "faults": [{pattern, status, count, message, body}]}."""
        if "repository" in state:
            self.repository = str(state["repository"])
        if "token" in state:
            self.token = str(state["token"])
        for pull in state.get("pulls", []):
            self.add_pull(
                int(pull["number"]),
                head_sha=pull["head_sha"],
                base_sha=pull["base_sha"],
                diff=str(pull.get("diff", "")).encode(),
                files=pull.get("files"),
                draft=bool(pull.get("draft", False)),
                author=str(pull.get("author", "octocat")),
                head_repo=pull.get("head_repo"),
                labels=tuple(pull.get("labels", ())),
                refuse_diff=bool(pull.get("refuse_diff", False)),
            )
        for ref, entries in state.get("contents", {}).items():
            for path, text in entries.items():
                self.set_file(ref, path, text)
        for cmp in state.get("compares", []):
            self.add_compare(cmp["base"], cmp["head"], str(cmp.get("diff", "")).encode())
        self.permissions.update(state.get("permissions", {}))
        for fault in state.get("faults", []):
            self.inject(
                str(fault["pattern"]),
                int(fault["status"]),
                int(fault.get("count", 1)),
                str(fault.get("message", "fault injected")),
                body=str(fault.get("body", "")),
            )

    # -- request handling -----------------------------------------------------------

    def handle(self, rec: Recorded) -> tuple[int, dict[str, str], bytes]:
        if rec.path.startswith("/_fake/"):
            if rec.path == "/_fake/received":
                return _json(200, self.received())
            return _json(404, {"message": "Not Found"})
        if self.contract is not None:
            rec.operation, problems = self.contract.check_request(
                rec.method, rec.path, rec.query, rec.headers, rec.body
            )
            if problems:
                rec.violations = problems
                with self.lock:
                    self.violations.extend(problems)
                return _json(422, {"message": "contract violation: " + "; ".join(problems)})
        auth = rec.headers.get("authorization", "")
        if auth not in (f"token {self.token}", f"Bearer {self.token}"):
            return _json(401, {"message": "Bad credentials"})
        with self.lock:
            for fault in self.faults:
                if (
                    fault.count > 0
                    and re.search(fault.pattern, f"{rec.method} {rec.path}")
                    and (
                        not fault.body or re.search(fault.body, rec.body.decode("utf-8", "replace"))
                    )
                ):
                    fault.count -= 1
                    return _json(fault.status, {"message": fault.message})
        if rec.path == "/user" and rec.method == "GET":
            return self._get_authenticated_user(rec)
        repo = f"/repos/{self.repository}"
        if not rec.path.startswith(repo + "/"):
            return _json(404, {"message": "Not Found"})
        tail = rec.path[len(repo) :]
        query = dict(parse_qsl(rec.query))
        accept = rec.headers.get("accept", "")
        for pattern, method, fn in self._routes():
            found = re.fullmatch(pattern, tail)
            if found and method == rec.method:
                status, headers, body = fn(found, query, accept, rec)
                body = self._complete(rec, status, headers, body)
                self._check_own_response(rec, status, headers, body)
                return status, headers, body
        return _json(404, {"message": "Not Found"})

    def _complete(self, rec: Recorded, status: int, headers: dict[str, str], body: bytes) -> bytes:
        """Fill every field the description requires that the fake did not set."""
        if self.contract is None or status >= 300:
            return body
        if not headers.get("Content-Type", "").startswith("application/json"):
            return body
        template, _params, _ = self.contract.match(rec.path, rec.method)
        if template is None:
            return body
        return self.contract.filled(template, rec.method, status, body)

    def _check_own_response(
        self, rec: Recorded, status: int, headers: dict[str, str], body: bytes
    ) -> None:
        if self.contract is None or not headers.get("Content-Type", "").startswith(
            "application/json"
        ):
            return
        template, _params, _ = self.contract.match(rec.path, rec.method)
        if template is None or status >= 400:
            return
        problems = self.contract.check_response(template, rec.method, status, json.loads(body))
        if problems:
            with self.lock:
                self.response_violations.extend(problems[:5])

    def _routes(self) -> list[tuple[str, str, Callable[..., tuple[int, dict[str, str], bytes]]]]:
        return [
            (r"/pulls/(\d+)", "GET", self._get_pull),
            (r"/pulls/(\d+)/files", "GET", self._get_files),
            (r"/pulls/(\d+)/commits", "GET", self._get_commits),
            (r"/contents/(.+)", "GET", self._get_contents),
            (r"/compare/([^/]+)", "GET", self._get_compare),
            (r"/git/trees/([^/]+)", "GET", self._get_tree),
            (r"/git/blobs/([^/]+)", "GET", self._get_blob),
            (r"/git/commits/([0-9a-fA-F]+)", "GET", self._get_git_commit),
            (r"/git/ref/(.+)", "GET", self._git_get_ref),
            (r"/git/refs", "POST", self._git_write),
            (r"/git/refs/(.+)", "PATCH", self._git_write),
            (r"/git/refs/(.+)", "DELETE", self._git_write),
            (r"/git/blobs", "POST", self._git_write),
            (r"/git/trees", "POST", self._git_write),
            (r"/git/commits", "POST", self._git_write),
            (r"/collaborators/([^/]+)/permission", "GET", self._get_permission),
            (r"/statuses/([0-9a-fA-F]+)", "POST", self._post_status),
            (r"/commits/([0-9a-fA-F]+)/statuses", "GET", self._get_statuses),
            (r"/commits/([0-9a-fA-F]+)/status", "GET", self._combined_status),
            (r"/commits/([0-9a-fA-F]+)/pulls", "GET", self._commit_pulls),
            (r"/commits/([0-9a-fA-F]+)/check-runs", "GET", self._list_check_runs),
            (r"/issues/(\d+)/comments", "GET", self._get_comments),
            (r"/issues/(\d+)/comments", "POST", self._post_comment),
            (r"/issues/comments/(\d+)", "PATCH", self._patch_comment),
            (r"/issues/comments/(\d+)/reactions", "POST", self._post_reaction),
            (r"/check-runs", "POST", self._post_check_run),
            (r"/check-runs/(\d+)", "PATCH", self._patch_check_run),
            (r"/pulls/(\d+)/reviews", "GET", self._get_reviews),
            (r"/pulls/(\d+)/reviews", "POST", self._post_review),
            (r"/pulls/(\d+)/reviews/(\d+)", "PUT", self._put_review),
            (r"/pulls/(\d+)/reviews/(\d+)/dismissals", "PUT", self._dismiss_review),
            (r"/pulls", "GET", self._list_pulls),
            (r"/issues", "GET", self._list_issues),
            (r"/issues", "POST", self._post_issue),
            (r"/issues/(\d+)/labels", "POST", self._post_labels),
            (r"/issues/(\d+)/labels/([^/]+)", "DELETE", self._delete_label),
            (r"/issues/(\d+)", "PATCH", self._patch_issue),
            (r"/issues/(\d+)", "GET", self._get_issue),
        ]

    def _get_pull(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        number = int(m.group(1))
        with self.lock:
            pull = self.pulls.get(number)
            if pull is None:
                return _json(404, {"message": "Not Found"})
            if DIFF_TYPE in accept:
                if number in self.refuse_diff:
                    return _json(406, TOO_LARGE)
                return 200, {"Content-Type": f"{DIFF_TYPE}; charset=utf-8"}, self.diffs[number]
            return _json(200, pull)

    def _get_files(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        number = int(m.group(1))
        with self.lock:
            if number not in self.pulls:
                return _json(404, {"message": "Not Found"})
            items = self.files[number]
        answer = self._page(items, query, f"/repos/{self.repository}/pulls/{number}/files")
        if self.on_list_files is not None:  # a test's hook: a push between two pages
            self.on_list_files(number)
        return answer

    def _get_commits(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """The pull request's commits, oldest first; GitHub lists the oldest 250 and no
        more (its docs send a caller to the List commits endpoint for the rest)."""
        number = int(m.group(1))
        with self.lock:
            if number not in self.pulls:
                return _json(404, {"message": "Not Found"})
            shas = self.commits.get(number, [])[:250]
        items = [
            {"sha": sha, "url": f"{self.api_url}/repos/{self.repository}/commits/{sha}"}
            for sha in shas
        ]
        return self._page(items, query, f"/repos/{self.repository}/pulls/{number}/commits")

    def _get_git_commit(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """A commit with its parents: as :attr:`parents` names them (a merge), else the one
        before it in a pull request's chain (none for the first)."""
        sha = m.group(1)
        with self.lock:
            self._git_url()
            if sha in self.git.commits:
                return _json(200, self.git.commit_json(sha))
            chain = next((c for c in self.commits.values() if sha in c), None)
            parents = self.parents.get(sha)
        if parents is None and chain is None:
            return _json(404, {"message": "Not Found"})
        if parents is None:
            assert chain is not None  # both None answered 404 above
            at = chain.index(sha)
            parents = [chain[at - 1]] if at > 0 else []
        url = f"{self.api_url}/repos/{self.repository}/git/commits"
        return _json(
            200,
            {
                "sha": sha,
                "url": f"{url}/{sha}",
                "parents": [
                    {"sha": p, "url": f"{url}/{p}", "html_url": f"{self.api_url}/commit/{p}"}
                    for p in parents
                ],
            },
        )

    def _page(
        self, items: list[dict[str, Any]], query: dict[str, str], path: str
    ) -> tuple[int, dict[str, str], bytes]:
        per_page = min(100, int(query.get("per_page", "30")))
        page = max(1, int(query.get("page", "1")))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            headers["Link"] = (
                f'<{self.api_url}{path}?per_page={per_page}&page={page + 1}>; rel="next"'
            )
        status, base, body = _json(200, chunk)
        return status, {**base, **headers}, body

    def _get_contents(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        path = m.group(1)
        ref = query.get("ref", "main")
        with self.lock:
            data = self.contents.get(ref, {}).get(path)
            is_dir = any(p.startswith(path.rstrip("/") + "/") for p in self.contents.get(ref, {}))
        if data is None and is_dir:
            return _json(200, [])
        if data is None:
            return _json(
                404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            )
        sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git blob id
        url = f"{self.api_url}/repos/{self.repository}/contents/{path}?ref={ref}"
        return _json(200, {
            "type": "file", "encoding": "base64", "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path, "content": base64.b64encode(data).decode(), "sha": sha, "url": url,
            "git_url": None, "html_url": None, "download_url": None,
            "_links": {"self": url, "git": None, "html": None},
        })  # fmt: skip

    def _get_blob(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """A blob by its git id, from the files set on any ref (``set_file``)."""
        sha = m.group(1)
        with self.lock:
            stored = self.git.blobs.get(sha)
            found = [] if stored is None else [stored]
            found += [
                data
                for files in self.contents.values()
                for data in files.values()
                if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == sha
            ]
        if not found:
            return _json(
                404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            )
        data = found[0]
        return _json(200, {
            "sha": sha, "node_id": f"B_{sha[:12]}", "size": len(data),
            "url": f"{self.api_url}/repos/{self.repository}/git/blobs/{sha}",
            "content": base64.b64encode(data).decode(), "encoding": "base64",
        })  # fmt: skip

    def _get_tree(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """The tree of a ref from the files set on it (``set_file``); folders are derived.
        Without ``recursive`` only top-level entries are listed, as GitHub does."""
        ref = m.group(1)
        with self.lock:
            self._git_url()
            if ref in self.git.trees:
                return _json(200, self.git.tree_json(ref))
            files = dict(self.contents.get(ref, {}))
            truncated = ref in self.truncated_trees
        entries: dict[str, dict[str, Any]] = {}
        for path, data in sorted(files.items()):
            parts = path.split("/")
            for depth in range(1, len(parts)):
                folder = "/".join(parts[:depth])
                tree_sha = hashlib.sha1(folder.encode()).hexdigest()
                entries.setdefault(
                    folder, {"path": folder, "mode": "040000", "type": "tree", "sha": tree_sha}
                )
            mode = self.modes.get(ref, {}).get(path, "100644")
            if mode == "160000":
                entries[path] = {"path": path, "mode": mode, "type": "commit",
                                 "sha": data.decode()}  # fmt: skip
                continue
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            entries[path] = {
                "path": path, "mode": mode, "type": "blob", "sha": blob, "size": len(data)
            }  # fmt: skip
        listed = [e for p, e in sorted(entries.items()) if query.get("recursive") or "/" not in p]
        if truncated:
            listed = listed[: len(listed) // 2]
        url = f"{self.api_url}/repos/{self.repository}/git/trees/{ref}"
        return _json(200, {"sha": ref, "url": url, "tree": listed, "truncated": truncated})

    def _git_url(self) -> None:
        self.git.api_url = f"{self.api_url}/repos/{self.repository}"

    def _git_get_ref(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """``GET /git/ref/{ref}`` (``ref`` without ``refs/``): the ref, or 404."""
        name = f"refs/{m.group(1)}"
        with self.lock:
            self._git_url()
            if name not in self.git.refs:
                return _json(404, {"message": "Not Found"})
            return _json(200, self.git.ref_json(name))

    def _git_write(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """The Git database's writes (tests/fakes/gitdata.py), under the fake's lock."""
        body = rec.json_body() or {}
        kind = rec.path.split("/git/", 1)[1].split("/", 1)[0]
        with self.lock:
            self._git_url()
            if rec.method == "DELETE":
                status, value = self.git.delete_ref(m.group(1))
            elif rec.method == "PATCH":
                status, value = self.git.update_ref(m.group(1), body)
            else:
                make = {
                    "refs": self.git.create_ref,
                    "blobs": self.git.create_blob,
                    "trees": self.git.create_tree,
                    "commits": self.git.create_commit,
                }[kind]
                status, value = make(body)
        if status == 204:
            return 204, {}, b""
        return _json(status, value)

    def _get_compare(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        basehead = m.group(1)
        with self.lock:
            found = self.compares.get(basehead)
        if found is None:
            return _json(404, {"message": "Not Found"})
        diff, files = found
        if DIFF_TYPE in accept:
            if basehead in self.refuse_compare:
                return _json(406, TOO_LARGE)
            return 200, {"Content-Type": f"{DIFF_TYPE}; charset=utf-8"}, diff
        base, head = basehead.split("...")
        commit: dict[str, Any]
        commit = {"sha": head, "node_id": "C_1", "url": "", "html_url": "", "comments_url": "",
                  "commit": {"url": "", "author": None, "committer": None, "message": "merge",
                             "comment_count": 0, "tree": {"sha": head, "url": ""}},
                  "author": {}, "committer": {}, "parents": []}  # fmt: skip
        return _json(200, {
            "url": f"{self.api_url}/repos/{self.repository}/compare/{basehead}",
            "html_url": "", "permalink_url": "", "diff_url": "", "patch_url": "",
            "base_commit": {**commit, "sha": base},
            "merge_base_commit": {**commit, "sha": self.merge_bases.get(basehead, base)},
            "status": "ahead", "ahead_by": 1, "behind_by": 0, "total_commits": 1,
            "commits": [commit], "files": files[:300],  # GitHub lists at most 300 here
        })  # fmt: skip

    def _get_permission(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        login = m.group(1)
        with self.lock:
            perm = self.permissions.get(login)
        if perm is None:
            return _json(404, {"message": f"{login} is not a user"})
        legacy = "write" if perm == "maintain" else ("read" if perm == "triage" else perm)
        flags = {
            "admin": perm == "admin",
            "maintain": perm in ("admin", "maintain"),
            "push": perm in ("admin", "maintain", "write"),
            "triage": perm != "read",
            "pull": True,
        }
        user = {**_user(login), "permissions": flags}
        return _json(200, {"permission": legacy, "role_name": perm, "user": user})

    def _post_status(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        sha = m.group(1)
        body = rec.json_body() or {}
        entry = {
            "url": f"{self.api_url}/repos/{self.repository}/statuses/{sha}",
            "avatar_url": None,
            "id": self._id(),
            "node_id": "S_1",
            "state": body.get("state"),
            "description": body.get("description"),
            "target_url": body.get("target_url"),
            "context": body.get("context", "default"),
            "created_at": EPOCH,
            "updated_at": EPOCH,
            "creator": self._author(),
        }
        with self.lock:
            stored = self.statuses.setdefault(sha, [])
            if sum(1 for s in stored if s["context"] == entry["context"]) >= MAX_STATUSES:
                # GitHub: "a limit of 1000 statuses per sha and context within a repository.
                # Attempts to create more than 1000 statuses will result in a validation error"
                return _json(422, STATUS_CAP)
            stored.append(entry)
        return _json(201, entry)

    def _combined_status(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """``GET /repos/{owner}/{repo}/commits/{ref}/status``: the newest status of each
        context (GitHub's ``simple-commit-status``: no creator), paged by context."""
        sha = m.group(1)
        with self.lock:
            newest: dict[str, dict[str, Any]] = {}
            for status in reversed(self.statuses.get(sha, [])):
                newest.setdefault(status["context"], status)
        items = [{k: v for k, v in s.items() if k != "creator"} for s in newest.values()]
        per_page = min(100, int(query.get("per_page", "30")))
        page = max(1, int(query.get("page", "1")))
        chunk = items[(page - 1) * per_page : page * per_page]
        states = {s["state"] for s in items}
        state = next((x for x in ("failure", "error", "pending") if x in states), "success")
        if not items:
            state = "pending"
        headers: dict[str, str] = {}
        if page * per_page < len(items):
            path = f"/repos/{self.repository}/commits/{sha}/status"
            headers["Link"] = (
                f'<{self.api_url}{path}?per_page={per_page}&page={page + 1}>; rel="next"'
            )
        body = {
            "state": "failure" if state == "error" else state, "sha": sha,
            "total_count": len(items), "statuses": chunk,
            "commit_url": f"{self.api_url}/repos/{self.repository}/commits/{sha}",
            "url": f"{self.api_url}/repos/{self.repository}/commits/{sha}/status",
            "repository": self.repo_json(),
        }  # fmt: skip
        status, base, data = _json(200, body)
        return status, {**base, **headers}, data

    def _get_statuses(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        sha = m.group(1)
        with self.lock:
            stored = self.statuses.get(sha, [])
            if self.status_lag_reads > 0:
                self.status_lag_reads -= 1
                stored = stored[: max(0, len(stored) - self.status_lag)]
            items = list(reversed(stored))  # newest first, as GitHub
        return self._page(items, query, f"/repos/{self.repository}/commits/{sha}/statuses")

    def _list_pulls(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        wanted = query.get("state", "open")
        # GitHub's order: sort=created (the default) or updated; direction desc by default
        # for created (or no sort), asc otherwise; numbers grow with creation
        order = query.get("sort", "created")
        field = "updated_at" if order == "updated" else "created_at"
        default = "desc" if order == "created" else "asc"
        newest_first = query.get("direction", default) == "desc"
        with self.lock:
            items = sorted(
                self.pulls.values(), key=lambda p: (p[field], p["number"]), reverse=newest_first
            )
        items = [p for p in items if wanted == "all" or p["state"] == wanted]
        return self._page(items, query, f"/repos/{self.repository}/pulls")

    def _commit_pulls(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """The pull requests whose head is the commit (any state), as GitHub lists them."""
        sha = m.group(1)
        with self.lock:
            items = [p for p in self.pulls.values() if p["head"]["sha"] == sha]
        return self._page(items, query, f"/repos/{self.repository}/commits/{sha}/pulls")

    def _issue_json(self, number: int, title: str, body: str) -> dict[str, Any]:
        return {
            "id": number * 10,
            "node_id": f"I_{number}",
            "url": f"{self.api_url}/repos/{self.repository}/issues/{number}",
            "number": number,
            "state": "open",
            "title": title,
            "body": body,
            "user": self._author(),
            "labels": [],
            "created_at": EPOCH,
            "updated_at": EPOCH,
        }

    def _list_issues(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            items = [i for i in self.issues.values() if i["state"] == query.get("state", "open")]
        return self._page(items, query, f"/repos/{self.repository}/issues")

    def _post_issue(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        body = rec.json_body() or {}
        with self.lock:
            number = 1000 + len(self.issues) + 1
            entry = self._issue_json(number, str(body.get("title")), str(body.get("body") or ""))
            self.issues[number] = entry
        return _json(201, entry)

    def _get_issue(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            entry = self.issues.get(int(m.group(1)))
        return _json(404, {"message": "Not Found"}) if entry is None else _json(200, entry)

    def _patch_issue(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        number = int(m.group(1))
        body = rec.json_body() or {}
        with self.lock:
            entry = self.issues.get(number)
            if entry is None:
                return _json(404, {"message": "Not Found"})
            for key in ("title", "body", "state"):
                if key in body:
                    entry[key] = body[key]
        return _json(200, entry)

    def add_status(
        self,
        sha: str,
        *,
        state: str,
        description: str,
        context: str = "review-gate",
        created_at: str = EPOCH,
        login: str | None = None,
    ) -> None:
        """A status posted earlier (by the token's identity unless ``login`` says who)."""
        entry = {
            "url": f"{self.api_url}/repos/{self.repository}/statuses/{sha}",
            "avatar_url": None, "id": self._id(), "node_id": "S_1", "state": state,
            "description": description, "target_url": None, "context": context,
            "created_at": created_at, "updated_at": created_at,
            "creator": self._author() if login is None else _user(login),
        }  # fmt: skip
        with self.lock:
            stored = self.statuses.setdefault(sha, [])
            if sum(1 for s in stored if s["context"] == context) >= MAX_STATUSES:
                raise ValueError(f"GitHub keeps at most {MAX_STATUSES} statuses per context")
            stored.append(entry)

    def _label_json(self, name: str) -> dict[str, Any]:
        return {"id": abs(hash(name)) % 10_000 + 1, "node_id": "L_1", "url": f"{self.api_url}/x",
                "name": name, "description": None, "color": "ededed", "default": False}  # fmt: skip

    def _post_labels(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        number = int(m.group(1))
        names = (rec.json_body() or {}).get("labels") or []
        with self.lock:
            pull = self.pulls.get(number)
            if pull is None:
                return _json(404, {"message": "Not Found"})
            have = [label["name"] for label in pull["labels"]]
            for name in names:
                if name not in have:
                    pull["labels"].append({"id": len(have) + 1, "name": name})
                    have.append(name)
            return _json(200, [self._label_json(n) for n in have])

    def _delete_label(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        from urllib.parse import unquote

        number, name = int(m.group(1)), unquote(m.group(2))
        with self.lock:
            pull = self.pulls.get(number)
            if pull is None or name not in [label["name"] for label in pull["labels"]]:
                return _json(404, {"message": "Label does not exist"})
            pull["labels"] = [label for label in pull["labels"] if label["name"] != name]
            return _json(200, [self._label_json(label["name"]) for label in pull["labels"]])

    def _get_authenticated_user(self, rec: Recorded) -> tuple[int, dict[str, str], bytes]:
        if self.token_login is None or self.token_app is not None:
            return _json(403, {"message": "Resource not accessible by integration"})
        status, headers, body = _json(200, _user(self.token_login, uid=583231))
        body = self._complete(rec, status, headers, body)
        self._check_own_response(rec, status, headers, body)
        return status, headers, body

    def _author(self) -> dict[str, Any]:
        """Who writes with the fake's token."""
        if self.token_app is not None:
            return _user(self.token_app, bot=True, uid=90210)
        if self.token_login is None:
            return _user("github-actions[bot]", bot=True, uid=41898282)
        return _user(self.token_login, uid=583231)

    def _comment_json(self, number: int, cid: int, body: str) -> dict[str, Any]:
        return {
            "id": cid,
            "node_id": f"IC_{cid}",
            "url": f"{self.api_url}/repos/{self.repository}/issues/comments/{cid}",
            "html_url": f"https://example/{self.repository}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self.api_url}/repos/{self.repository}/issues/{number}",
            "body": body,
            "user": self._author(),
            "created_at": EPOCH,
            "updated_at": EPOCH,
            "author_association": "NONE",
        }

    def _get_comments(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        number = int(m.group(1))
        with self.lock:
            items = list(self.comments.get(number, []))
        return self._page(items, query, f"/repos/{self.repository}/issues/{number}/comments")

    def _post_comment(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        number = int(m.group(1))
        if number not in self.pulls and number not in self.issues:
            return _json(404, {"message": "Not Found"})
        entry = self._comment_json(number, self._id(), str((rec.json_body() or {}).get("body", "")))
        with self.lock:
            self.comments.setdefault(number, []).append(entry)
        return _json(201, entry)

    def _patch_comment(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        cid = int(m.group(1))
        with self.lock:
            for entries in self.comments.values():
                for entry in entries:
                    if entry["id"] == cid:
                        entry["body"] = str((rec.json_body() or {}).get("body", ""))
                        return _json(200, entry)
        return _json(404, {"message": "Not Found"})

    def add_comment(
        self, number: int, body: str, *, login: str = "someone", bot: bool | None = None
    ) -> None:
        """A comment by ``login`` (a ``Bot`` account when the login ends in ``[bot]``)."""
        entry = self._comment_json(number, self._id(), body)
        entry["user"] = _user(login, bot=login.endswith("[bot]") if bot is None else bot)
        with self.lock:
            self.comments.setdefault(number, []).append(entry)

    def _post_reaction(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        content = str((rec.json_body() or {}).get("content", ""))
        with self.lock:
            self.reactions.append((int(m.group(1)), content))
        return _json(
            201,
            {"id": self._id(), "node_id": "REA_1", "user": self._author(), "content": content,
             "created_at": EPOCH},
        )  # fmt: skip

    # -- check runs (GitHub's rules: at most 50 annotations per request, appended across
    # updates; a conclusion needs status completed) -------------------------------------

    def _check_run_json(self, run: dict[str, Any]) -> dict[str, Any]:
        output = run.get("output") or {}
        url = f"{self.api_url}/repos/{self.repository}/check-runs/{run['id']}"
        return {
            "id": run["id"], "node_id": f"CR_{run['id']}", "head_sha": run["head_sha"],
            "name": run["name"], "status": run["status"], "conclusion": run.get("conclusion"),
            "details_url": run.get("details_url"), "url": url, "html_url": url,
            "external_id": run.get("external_id", ""), "started_at": EPOCH,
            "completed_at": EPOCH if run["status"] == "completed" else None,
            "output": {
                "title": output.get("title"), "summary": output.get("summary"), "text": None,
                "annotations_count": len(run["annotations"]),
                "annotations_url": url + "/annotations",
            },
            "check_suite": {"id": 1}, "app": run["app"], "pull_requests": [],
        }  # fmt: skip

    def _app(self, bot: str | None = None) -> dict[str, Any] | None:
        """The GitHub App a check run was written by: ``bot``'s, else the token's (None for
        a user token)."""
        if bot is None and self.token_login is not None and self.token_app is None:
            return None
        slug = (bot or self.token_app or "github-actions[bot]").removesuffix("[bot]")
        return {
            "id": 15368 if slug == "github-actions" else 90210, "slug": slug,
            "node_id": f"APP_{slug}", "client_id": f"Iv1.{slug}", "owner": _user("octo-org"),
            "name": slug, "description": None, "external_url": f"https://example.com/{slug}",
            "html_url": f"https://github.com/apps/{slug}", "created_at": EPOCH,
            "updated_at": EPOCH, "permissions": {"checks": "write"}, "events": [],
        }  # fmt: skip

    def _apply_check(self, run: dict[str, Any], data: dict[str, Any]) -> str:
        output = data.get("output")
        if isinstance(output, dict):
            notes = output.get("annotations") or []
            if len(notes) > 50:
                return "Only 50 annotations can be sent per request"
            run["annotations"].extend(notes)
            run["output"] = {k: v for k, v in output.items() if k != "annotations"}
        for key in ("name", "status", "conclusion", "details_url", "external_id"):
            if key in data:
                run[key] = data[key]
        if run.get("conclusion") and run["status"] != "completed":
            run["status"] = "completed"  # GitHub: a conclusion completes the run
        return ""

    def _post_check_run(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        data = rec.json_body() or {}
        run: dict[str, Any] = {"id": self._id(), "head_sha": str(data.get("head_sha", "")),
                               "name": str(data.get("name", "")), "status": "queued",
                               "annotations": [], "app": self._app()}  # fmt: skip
        problem = self._apply_check(run, data)
        if problem:
            return _json(422, {"message": problem})
        with self.lock:
            self.check_runs[run["id"]] = run
        return _json(201, self._check_run_json(run))

    def add_check_run(
        self,
        sha: str,
        name: str,
        *,
        app: str,
        conclusion: str | None,
        external_id: str = "",
        title: str = "",
    ) -> int:
        """A check run on ``sha`` written by another app's bot (``app``: ``<slug>[bot]``),
        e.g. a workflow that copies the gate's check name."""
        run: dict[str, Any] = {
            "id": self._id(), "head_sha": sha, "name": name,
            "status": "completed" if conclusion else "in_progress", "conclusion": conclusion,
            "external_id": external_id, "output": {"title": title, "summary": title},
            "annotations": [], "app": self._app(app),
        }  # fmt: skip
        with self.lock:
            self.check_runs[run["id"]] = run
        return int(run["id"])

    def _list_check_runs(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        """``GET /repos/{owner}/{repo}/commits/{ref}/check-runs``: ``check_name`` and
        ``filter`` (``latest``, the default: the newest run of each name; ``all``), newest
        first, paged, in GitHub's ``{total_count, check_runs}`` envelope."""
        sha, name = m.group(1), query.get("check_name")
        with self.lock:
            items = [r for r in self.check_runs.values() if r["head_sha"] == sha]
            items = sorted(items, key=lambda r: -int(r["id"]))
            if self.check_lag_reads > 0:
                self.check_lag_reads -= 1
                items = items[self.check_lag :]
        if name is not None:
            items = [r for r in items if r["name"] == name]
        if query.get("filter", "latest") == "latest":
            newest: dict[str, dict[str, Any]] = {}
            for r in items:
                newest.setdefault(r["name"], r)
            items = list(newest.values())
        per_page = min(100, int(query.get("per_page", "30")))
        page = max(1, int(query.get("page", "1")))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        if page * per_page < len(items):
            kept = {k: v for k, v in query.items() if k in ("check_name", "filter")}
            more = urlencode({**kept, "per_page": per_page, "page": page + 1})
            path = f"/repos/{self.repository}/commits/{sha}/check-runs"
            headers["Link"] = f'<{self.api_url}{path}?{more}>; rel="next"'
        body = {"total_count": len(items), "check_runs": [self._check_run_json(r) for r in chunk]}
        status, base, data = _json(200, body)
        return status, {**base, **headers}, data

    def _patch_check_run(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            run = self.check_runs.get(int(m.group(1)))
            if run is None:
                return _json(404, {"message": "Not Found"})
            problem = self._apply_check(run, rec.json_body() or {})
            if problem:
                return _json(422, {"message": problem})
            return _json(200, self._check_run_json(run))

    # -- pull request reviews (GitHub's rules: a COMMENT review cannot be dismissed,
    # APPROVE/REQUEST_CHANGES need a body, a line must be given for each comment) --------

    def _review_json(
        self, number: int, rid: int, body: str, state: str, commit_id: str, user: dict[str, Any]
    ) -> dict[str, Any]:
        pull_url = f"{self.api_url}/repos/{self.repository}/pulls/{number}"
        html = f"https://example/{self.repository}/pull/{number}#pullrequestreview-{rid}"
        return {
            "id": rid, "node_id": f"PRR_{rid}", "user": user, "body": body, "state": state,
            "html_url": html, "pull_request_url": pull_url, "commit_id": commit_id,
            "submitted_at": EPOCH, "author_association": "MEMBER",
            "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
            "comments": [],  # the fake's own record (not part of GitHub's answer)
        }  # fmt: skip

    def add_review(
        self, number: int, body: str, *, login: str, commit_id: str, state: str = "COMMENTED"
    ) -> int:
        """A review by ``login`` (a ``Bot`` account when the login ends in ``[bot]``)."""
        user = _user(login, bot=login.endswith("[bot]"))
        entry = self._review_json(number, self._id(), body, state, commit_id, user)
        with self.lock:
            self.reviews.setdefault(number, []).append(entry)
        return int(entry["id"])

    def review_list(self, number: int) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(r) for r in self.reviews.get(number, [])]

    @staticmethod
    def _public(review: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in review.items() if k != "comments"}

    def _get_reviews(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        number = int(m.group(1))
        with self.lock:
            if number not in self.pulls:
                return _json(404, {"message": "Not Found"})
            items = [self._public(r) for r in self.reviews.get(number, [])]
        return self._page(items, query, f"/repos/{self.repository}/pulls/{number}/reviews")

    def _post_review(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        number = int(m.group(1))
        data = rec.json_body() or {}
        event = data.get("event", "PENDING")
        body = str(data.get("body") or "")
        if number not in self.pulls:
            return _json(404, {"message": "Not Found"})
        if event in ("REQUEST_CHANGES", "APPROVE") and not body:
            return _json(422, {"message": f"Review Can not {event.lower()} without a body"})
        comments = data.get("comments") or []
        if any("line" not in c and "position" not in c for c in comments):
            return _json(422, {"message": "Unprocessable Entity: line is required"})
        state = {"COMMENT": "COMMENTED", "REQUEST_CHANGES": "CHANGES_REQUESTED",
                 "APPROVE": "APPROVED"}.get(event, "PENDING")  # fmt: skip
        with self.lock:
            commit_id = str(data.get("commit_id") or self.pulls[number]["head"]["sha"])
        entry = self._review_json(number, self._id(), body, state, commit_id, self._author())
        entry["comments"] = comments
        with self.lock:
            self.reviews.setdefault(number, []).append(entry)
        return _json(200, self._public(entry))

    def _find_review(self, number: int, rid: int) -> dict[str, Any] | None:
        return next((r for r in self.reviews.get(number, []) if r["id"] == rid), None)

    def _put_review(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            review = self._find_review(int(m.group(1)), int(m.group(2)))
            if review is None:
                return _json(404, {"message": "Not Found"})
            if review["user"]["login"] != self._author()["login"]:
                return _json(403, {"message": "Only the author can edit a review"})
            review["body"] = str((rec.json_body() or {}).get("body", ""))
            return _json(200, self._public(review))

    def _dismiss_review(
        self, m: re.Match[str], query: dict[str, str], accept: str, rec: Recorded
    ) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            review = self._find_review(int(m.group(1)), int(m.group(2)))
            if review is None:
                return _json(404, {"message": "Not Found"})
            if review["state"] not in ("CHANGES_REQUESTED", "APPROVED"):
                return _json(422, {"message": "Can not dismiss a commented pull request review"})
            review["state"] = "DISMISSED"
            review["dismissal_message"] = str((rec.json_body() or {}).get("message", ""))
            return _json(200, self._public(review))

    def write_out(self) -> None:
        if self.out_path is None:
            return
        data = json.dumps(self.received(), indent=1).encode()
        fd, tmp = tempfile.mkstemp(dir=self.out_path.parent, prefix=".fake-github.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, self.out_path)


def _json(status: int, value: Any) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(value).encode()


def files_from_diff(diff: bytes) -> list[dict[str, Any]]:
    """GitHub diff entries for a git diff (what the files API would list)."""
    from gate.diff import split_diff

    out = []
    for sec in split_diff(diff):
        text = sec.data.decode("utf-8", "replace")
        hunk = text.find("\n@@")
        lines = text.splitlines()
        status = "modified"
        if "\nnew file mode" in text:
            status = "added"
        elif "\ndeleted file mode" in text:
            status = "removed"
        entry: dict[str, Any] = {
            "sha": hashlib.sha1(sec.data).hexdigest(),
            "filename": sec.path,
            "status": status,
            "additions": sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++")),
            "deletions": sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---")),
            "changes": 0,
            "blob_url": "", "raw_url": "", "contents_url": "",
        }  # fmt: skip
        entry["changes"] = entry["additions"] + entry["deletions"]
        if hunk >= 0 and not sec.binary:
            entry["patch"] = text[hunk + 1 :]
        out.append(entry)
    return out


def _handler_for(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # the head and the body leave in two writes: with Nagle's algorithm the body waits
        # for the client's delayed ACK of the head (~40 ms on every request over loopback)
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = parts.path
            headers = {k.lower(): v for k, v in self.headers.items()}
            if fake.prefix and path.startswith(fake.prefix + "/"):
                path = path[len(fake.prefix) :]
            elif fake.prefix and not path.startswith("/_fake/"):
                rec = Recorded(self.command, path, parts.query, headers, body, 404)
                rec.violations = [f"{self.command} {path}: outside the API prefix {fake.prefix}"]
                with fake.lock:
                    fake.requests.append(rec)
                    fake.violations.extend(rec.violations)
                self._send(404, {"Content-Type": "application/json"}, b'{"message":"Not Found"}')
                return
            rec = Recorded(self.command, path, parts.query, headers, body)
            try:
                status, out_headers, out = fake.handle(rec)
                seen = headers.get("host", fake.origin)
                if seen != fake.origin:  # answer with URLs the client can reach (containers)
                    out = out.replace(f"//{fake.origin}".encode(), f"//{seen}".encode())
            except Exception as err:  # a bug in the fake must be visible, not a hang
                status, out_headers, out = _json(500, {"message": f"fake crashed: {err!r}"})
                with fake.lock:
                    fake.violations.append(f"fake crashed on {rec.method} {rec.path}: {err!r}")
            rec.status = status
            if not path.startswith("/_fake/"):
                with fake.lock:
                    fake.requests.append(rec)
                if fake.on_request is not None:
                    fake.on_request(rec)
                with contextlib.suppress(OSError):
                    fake.write_out()
            self._send(status, out_headers, out)

        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-GitHub-Request-Id", "FAKE:0001")
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    return Handler


@contextlib.contextmanager
def running(**kwargs: Any) -> Iterator[FakeGitHub]:
    fake = FakeGitHub(**kwargs).start()
    try:
        yield fake
    finally:
        fake.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.github", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--port", type=int, default=0, help="port (0 = ephemeral)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--state", help="JSON state file (see FakeGitHub.load_state)")
    parser.add_argument(
        "--out", help="rewrite this JSON file with what was received after each request"
    )
    parser.add_argument(
        "--prefix", default="", help="API prefix, e.g. /api/v3 for GitHub Enterprise Server"
    )
    parser.add_argument("--no-validate", action="store_true", help="skip OpenAPI validation")
    args = parser.parse_args(argv)
    fake = FakeGitHub(
        port=args.port, host=args.host, prefix=args.prefix, validate=not args.no_validate
    )
    if args.state:
        fake.load_state(json.loads(Path(args.state).read_text()))
    if args.out:
        fake.out_path = Path(args.out).resolve()
        fake.write_out()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    fake.start()
    print(f"fake GitHub listening on {fake.api_url}", flush=True)
    while not stop.wait(0.5):
        pass
    fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
