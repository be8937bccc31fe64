"""Writing statuses, comments and the tracking issue, as the token's own identity.

A commit status (its description cut to GitHub's 140 characters), the one sticky comment
and the tracking issue, each adopted only when the token's own identity wrote it (learned
from the creator of the first status or the app of the first check run it posts, or named
by the input ``identity``; never guessed). Pull request reviews with line comments
are :mod:`gate.action.reviews`; check runs :mod:`gate.action.checks`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TypeVar
from urllib.parse import quote

from gate.action.github import mark
from gate.action.github.http import GitHubHttp, _bad_payload, _iter
from gate.action.github.mark import Mark
from gate.action.github.records import Identity, SeenCheck, SeenStatus, ShownStatus
from gate.decide.decision import MAX_DESCRIPTION, Status
from gate.errors import GitHubError
from gate.safe.redact import redact

T = TypeVar("T")

#: statuses GitHub accepts; descriptions are cut to GitHub's 140 characters
STATUS_STATES = frozenset(str(status) for status in Status)


#: items scanned when looking for one (issues, statuses, check runs), newest first: the cap
#: is safe only where what is looked for was found within it, so a read of the gate's own
#: evidence that reaches it without finding that is an error (``github_evidence_cut``)
MAX_COMMENTS_SCANNED = 1000
#: comments read when looking for the gate's own (oldest first, every page): past this
#: many the gate cannot tell whether its comment is among the rest, and says so
MAX_COMMENTS_READ = 25_000
#: pages of the combined status read (100 contexts each) when looking for the gate's context
MAX_CONTEXT_PAGES = 10


class StatusWriter(GitHubHttp):
    """The calls that write: commit statuses, the sticky comment, the tracking issue, and
    the identity that decides which of them are the gate's own."""

    def create_status(
        self,
        sha: str,
        *,
        state: str,
        description: str,
        context: str,
        target_url: str | None,
        marked: Mark | None = None,
    ) -> None:
        """Post a commit status (retried on 5xx and transport errors, timeouts included:
        posting the same status again is harmless), ending with ``marked``
        (:mod:`gate.action.github.mark`), which the cut to GitHub's 140 characters keeps.
        A refusal is a GitHubError naming it: ``github_status_refused`` for GitHub's 422
        (it keeps at most 1,000 statuses per commit and context)."""
        if state not in STATUS_STATES:
            raise ValueError(f"unknown status state {state!r}")
        description = redact(description)  # a public text: redacted, and before the cut
        if marked is not None:
            text = mark.stamp(description, marked, limit=MAX_DESCRIPTION)
        elif len(description) > MAX_DESCRIPTION:
            text = description[: MAX_DESCRIPTION - 1] + "…"
        else:
            text = description

        body = {"state": state, "description": text, "context": context}
        if target_url:
            body["target_url"] = target_url
        # POST /repos/{owner}/{repo}/statuses/{sha}, over httpx (no PyGithub at start)
        what = f"POST {state} status on {sha[:12]}"
        path = f"/repos/{self.settings.repository}/statuses/{quote(sha, safe='')}"
        try:
            posted = self._rest("POST", what, path, body=body)
        except GitHubError as err:
            if err.reason == "github_http_422":
                raise _status_refused(sha, context, err) from err
            raise
        if not isinstance(posted, dict):
            raise _bad_payload(what, "the status GitHub answered is not a JSON object")
        self._check_identity(posted.get("creator"), what)
        self._learn_identity(posted)
        if isinstance(posted.get("id"), int):
            self._written[("status", sha, context)] = posted["id"]

    def _check_identity(self, creator: object, what: str) -> None:
        """A write's author against an identity read from what the head showed
        (:meth:`learn_identity_from_shown`): a different one is an error, so a wrong
        reading never adopts another account's records past the run's first write."""
        if self._identity is None or not self._identity_read:
            return
        if creator is not None and not self._identity.wrote(creator):
            raise GitHubError(
                f"{what}: GitHub says another account wrote it than the one that wrote the "
                f"status the head showed ({self._identity.login}): the gate cannot tell its own "
                "records; set the action input identity to the token's account",
                reason="identity_mismatch",
            )
        self._identity_read = False  # confirmed by the token's own write

    def shown_status(self, sha: str, *, context: str) -> ShownStatus | None:
        """What the head shows in ``context``: the newest status of that context from the
        commit's combined status (``GET /repos/{owner}/{repo}/commits/{ref}/status``, one
        entry per context, paged by context), or None when it shows none. Found by the
        context's key: the number of statuses on the commit does not matter."""
        what = f"GET the combined status of {sha[:12]}"
        path = f"/repos/{self.settings.repository}/commits/{quote(sha, safe='')}/status"
        for page in range(1, MAX_CONTEXT_PAGES + 1):
            combined = self._rest("GET", what, path, params={"per_page": "100", "page": str(page)})
            statuses = combined.get("statuses") if isinstance(combined, dict) else None
            if not isinstance(statuses, list):
                raise _bad_payload(what, "the combined status has no list of statuses")
            for status in statuses:
                if isinstance(status, dict) and status.get("context") == context:
                    sid = status.get("id")
                    return ShownStatus(
                        str(status.get("state")),
                        str(status.get("description") or ""),
                        sid if isinstance(sid, int) else None,
                    )
            total = combined.get("total_count")
            if not isinstance(total, int) or page * 100 >= total:
                return None
        raise GitHubError(
            f"the combined status of {sha[:12]} holds more than {MAX_CONTEXT_PAGES * 100} "
            f"contexts; the gate cannot find {context!r} among them",
            reason="github_evidence_cut",
        )

    def status_author(self, sha: str, status_id: int) -> dict[str, object] | None:
        """Who wrote the status ``status_id`` the head shows (:meth:`shown_status`; the
        combined status names no author), from the newest page of the commit's statuses:
        its ``creator``, or None when it is not on that page (no longer list is read)."""
        what = f"GET statuses of {sha[:12]}"
        path = f"/repos/{self.settings.repository}/commits/{quote(sha, safe='')}/statuses"
        page = self._rest("GET", what, path, params={"per_page": "100"})
        for status in page if isinstance(page, list) else ():
            if isinstance(status, dict) and status.get("id") == status_id:
                creator = status.get("creator")
                return creator if isinstance(creator, dict) else None
        return None

    def adopt_shown_identity(self, author: dict[str, object]) -> bool:
        """The token's identity read from the author of the status the head shows in the
        gate's context (:meth:`status_author`), when none is known: whether one is known
        now. Read, not written: the run's first write must confirm it
        (:meth:`_check_identity`)."""
        if self._identity is None:
            self._learn_identity({"creator": author})
            self._identity_read = self._identity is not None
        return self._identity is not None

    def count_in_context(self, sha: str, *, context: str) -> int | None:
        """How many statuses ``context`` holds on ``sha`` (any author: GitHub's cap counts
        them all), from the newest :data:`MAX_COMMENTS_SCANNED` of the commit; None when
        the list goes on past them. Read only when the head shows no count of the gate's
        (an older gate's status, another tool's): every status the gate writes carries it."""
        what = f"GET statuses of {sha[:12]}"
        path = f"/repos/{self.settings.repository}/commits/{quote(sha, safe='')}/statuses"
        count = 0
        for scanned, status in enumerate(self._pages(what, path, limit=MAX_COMMENTS_SCANNED + 1)):
            if scanned >= MAX_COMMENTS_SCANNED:
                return None
            if isinstance(status, dict) and status.get("context") == context:
                count += 1
        return count

    def shown_check_run(self, sha: str, *, name: str) -> tuple[SeenCheck, int, str] | None:
        """What the head shows as the check run ``name``: the newest one of that name
        (``GET .../commits/{ref}/check-runs?check_name=…&filter=latest``, one page), as
        (the run, its id, its app's slug); None when there is none."""
        what = f"GET the latest check run {name!r} of {sha[:12]}"
        path = f"/repos/{self.settings.repository}/commits/{quote(sha, safe='')}/check-runs"
        query = {"check_name": name, "filter": "latest", "per_page": "100"}
        answer = self._rest("GET", what, path, params=query)
        runs = answer.get("check_runs") if isinstance(answer, dict) else None
        if not isinstance(runs, list):
            raise _bad_payload(what, "the check runs are not a list")
        found = [r for r in runs if isinstance(r, dict) and isinstance(r.get("id"), int)]
        found = [r for r in found if r.get("name") == name]
        if not found:
            return None
        check = max(found, key=lambda r: int(r["id"]))
        app = check.get("app")
        slug = app.get("slug") if isinstance(app, dict) else None
        return SeenCheck.from_run(check), int(check["id"]), slug if isinstance(slug, str) else ""

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
        if not isinstance(check_run, dict):
            return
        app = check_run.get("app")
        slug = app.get("slug") if isinstance(app, dict) else None
        if self._identity is not None:
            if self._identity_read and isinstance(slug, str) and slug:
                self._check_identity({"login": f"{slug}[bot]", "type": "Bot"}, "a check run")
            return
        if isinstance(slug, str) and slug:
            self._identity = Identity(login=f"{slug}[bot]", kind="Bot")

    def known_identity(self) -> Identity | None:
        """The token's identity when known already (never looked up here)."""
        return self._identity

    def identity(self) -> Identity:
        """Who the token writes as, known and never guessed: the creator of the first
        status this client posted, or the app of the first check run it created; else the
        workflow's input ``identity``; else ``GET /user``. When none of them can tell
        (an installation token, which may not call ``GET /user``, before any status or
        check run, as in a replay or triage run), GitHubError ``identity_unknown``: taking
        the Actions bot for another GitHub App's bot would adopt another workflow's
        comments as the gate's own, and finding nothing would read as "no records".
        """
        if self._identity is not None:
            return self._identity
        named = self.settings.identity
        if named:
            kind = "Bot" if named.endswith("[bot]") else "User"
            self._identity = Identity(login=named, kind=kind)
            return self._identity

        what = "GET /user (the token's own identity)"
        try:
            user = self._rest("GET", what, "/user")
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
        login = user.get("login") if isinstance(user, dict) else None
        if not isinstance(login, str) or not login:
            raise _bad_payload(what, "the user has no login")
        self._identity = found = Identity(login=login, kind=str(user.get("type") or "User"))
        return found

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
        what = f"read the review-gate comment on #{number}"
        path = f"/repos/{self.settings.repository}/issues/{number}/comments"
        for scanned, comment in enumerate(self._pages(what, path, limit=MAX_COMMENTS_READ + 1)):
            if scanned >= MAX_COMMENTS_READ:
                raise _too_many_comments(number)
            if not isinstance(comment, dict):
                raise _bad_payload(what, "a comment is not a JSON object")
            body = comment.get("body") or ""
            if isinstance(body, str) and body.startswith(marker) and own.wrote(comment.get("user")):
                return body
        return None

    def own_statuses(
        self, sha: str, *, context: str, enough: Callable[[str, str], bool] | None = None
    ) -> list[tuple[str, str]]:
        """(state, description) of the statuses in ``context`` on ``sha`` that this token
        posted, newest first (statuses are append-only and GitHub records their creator),
        read with this client's own writes (:meth:`_with_own_write`).

        GitHub lists every context's and every creator's statuses together, and the gate
        reads the newest :data:`MAX_COMMENTS_SCANNED`: anything that posts statuses on the
        commit (another CI, the gate's own ``pending`` and ``error``) can push an older one
        below them. So a list that goes on past the scan is an error
        (``github_evidence_cut``) unless one of its own statuses read satisfies ``enough``
        (state, description): the newest the caller needs was read (None: none does)."""

        def read() -> list[tuple[int | None, tuple[str, str]]]:
            found: list[tuple[int | None, tuple[str, str]]] = []
            for seen in self._own_statuses(sha, context):
                if seen is None:  # the scan ended with more to read
                    if enough is None or not any(enough(*item) for _, item in found):
                        raise _evidence_cut("statuses", sha, context)
                    break
                found.append((seen.id, (seen.state, seen.description)))
            return found

        return self._with_own_write("status", sha, context, read)

    def wrote_check_run(self, sha: str, name: str, check_id: int) -> None:
        """Note the check run this client just created (:meth:`_with_own_write`)."""
        self._written[("check run", sha, name)] = check_id

    def _with_own_write(
        self, kind: str, sha: str, name: str, read: Callable[[], list[tuple[int | None, T]]]
    ) -> list[T]:
        """``read()``'s items (each with GitHub's id), read with this client's own writes:
        when this client wrote a ``kind`` named ``name`` on ``sha`` itself, the list must
        show it. GitHub promises no read-after-write consistency, and a list that lags
        behind the run's own newest write may lack a newer ``failure`` too, which would
        read as "no block". So the list is read again after the retry policy's pause, at
        most ``retries`` more times, and then the run errors (``github_stale_read``): a
        lagging list is never read as the whole evidence."""
        written = self._written.get((kind, sha, name))
        tries = self.settings.retries + 1
        for attempt in range(tries):
            self.policy.pause(attempt)
            found = read()
            if written is None or any(got == written for got, _ in found):
                return [item for _, item in found]
        raise GitHubError(
            f"GitHub's list of {kind}s on {sha[:12]} does not yet show the {name!r} {kind} "
            f"this run wrote ({tries} reads): a newer failure there cannot be ruled out from "
            "a lagging list; retry the job",
            reason="github_stale_read",
        )

    def _own_statuses(self, sha: str, context: str) -> Iterator[SeenStatus | None]:
        """The statuses in ``context`` on ``sha`` this token posted, newest first, among
        the newest :data:`MAX_COMMENTS_SCANNED` (``GET /repos/{owner}/{repo}/commits/{ref}/
        statuses``, over httpx); a last None when the list goes on past them (cut)."""
        own = self.identity()
        what = f"GET statuses of {sha[:12]}"
        path = f"/repos/{self.settings.repository}/commits/{quote(sha, safe='')}/statuses"
        statuses = self._pages(what, path, limit=MAX_COMMENTS_SCANNED + 1)
        for scanned, status in enumerate(statuses):
            if scanned >= MAX_COMMENTS_SCANNED:
                yield None
                return
            if not isinstance(status, dict):
                raise _bad_payload(what, "a status is not a JSON object")
            if status.get("context") == context and own.wrote(status.get("creator")):
                sid = status.get("id")
                yield SeenStatus(
                    str(status.get("state")),
                    str(status.get("description") or ""),
                    _when(what, status.get("created_at")),
                    sid if isinstance(sid, int) else None,
                )

    def own_check_runs(self, sha: str, *, name: str) -> list[SeenCheck]:
        """The check runs named ``name`` on ``sha`` that this token's own GitHub App wrote
        (``GET /repos/{owner}/{repo}/commits/{ref}/check-runs``, every run, over httpx),
        newest first by id, among the newest :data:`MAX_COMMENTS_SCANNED`: the commit-level
        evidence of ``report: check-run``, as :meth:`own_statuses` is of statuses. A check
        run is written by a GitHub App only, and GitHub records the app: a token that is
        no app's bot owns none."""
        own = self.identity()
        slug = own.login.removesuffix("[bot]").lower() if own.kind == "Bot" else ""
        if not slug or slug == own.login.lower():
            return []
        return self._with_own_write(
            "check run", sha, name, lambda: self._own_check_runs(sha, name, slug)
        )

    def _own_check_runs(self, sha: str, name: str, slug: str) -> list[tuple[int | None, SeenCheck]]:
        """(id, check run) of the check runs named ``name`` on ``sha`` by the app ``slug``,
        newest first by id (:meth:`own_check_runs`)."""
        what = f"GET check runs of {sha[:12]}"
        path = f"/repos/{self.settings.repository}/commits/{quote(sha, safe='')}/check-runs"
        query = {"check_name": name, "filter": "all"}
        runs = self._pages(
            what, path, limit=MAX_COMMENTS_SCANNED + 1, query=query, key="check_runs"
        )
        found: list[tuple[int, SeenCheck]] = []
        for scanned, check in enumerate(runs):
            if scanned >= MAX_COMMENTS_SCANNED:
                # GitHub documents no order for this list: a cut one may lack the newest
                raise _evidence_cut("check runs", sha, name)
            if not isinstance(check, dict) or not isinstance(check.get("id"), int):
                raise _bad_payload(what, "a check run is not a JSON object with an id")
            app = check.get("app")
            author = app.get("slug") if isinstance(app, dict) else None
            if check.get("name") != name or not isinstance(author, str):
                continue
            if author.lower() != slug:
                continue
            found.append((check["id"], SeenCheck.from_run(check)))
        return [(cid, seen) for cid, seen in sorted(found, key=lambda item: -item[0])]

    # --- triage (gate/action/triage.py): the queue's own statuses, one issue, labels ---

    def newest_own_status(self, sha: str, *, context: str) -> SeenStatus | None:
        """The newest status in ``context`` on ``sha`` that this token posted, with its time
        (None: none among the newest :data:`MAX_COMMENTS_SCANNED`)."""
        return next(self._own_statuses(sha, context), None)

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


def _when(what: str, value: object) -> datetime:
    """A status's ``created_at`` (ISO 8601; naive read as UTC; absent: now)."""
    if value is None:
        return datetime.now(UTC)
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise _bad_payload(what, f"a status's created_at {str(value)[:40]!r} is no time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _too_many_comments(number: int) -> GitHubError:
    """Past :data:`MAX_COMMENTS_READ` comments the gate's own comment is not "absent": it
    is unknown, and the run says so instead of starting an empty history."""
    return GitHubError(
        f"pull request #{number} has more than {MAX_COMMENTS_READ} comments; the gate did not "
        "find its own among them and cannot tell whether it is further on, so its records are "
        "unknown; lock the conversation or move the change to a new pull request",
        reason="github_too_many_comments",
    )


def _status_refused(sha: str, context: str, err: GitHubError) -> GitHubError:
    """GitHub refused a status on ``sha`` in ``context`` (422: it keeps at most 1,000 per
    commit and context, docs/security.md): what the head shows there can no longer change."""
    return GitHubError(
        f"GitHub refused the status on {sha[:12]} in {context!r} ({err.message}); it keeps at "
        "most 1,000 statuses per commit and context, so what this commit shows there can no "
        "longer change. The author can push a new commit (its statuses start empty); the "
        "block stands on every other channel",
        reason="github_status_refused",
    )


def _evidence_cut(kind: str, sha: str, name: str) -> GitHubError:
    """The gate's own evidence on ``sha`` lies below the newest :data:`MAX_COMMENTS_SCANNED`
    items GitHub lists there (``github_evidence_cut``)."""
    return GitHubError(
        f"the {kind} on {sha[:12]} go on past the newest {MAX_COMMENTS_SCANNED} the gate "
        f"reads, and the gate's own decision in {name!r} is not among them: a block below "
        "them cannot be ruled out, so nothing is concluded from the list. Push a new commit "
        "(its list starts empty), or a writer can override",
        reason="github_evidence_cut",
    )
