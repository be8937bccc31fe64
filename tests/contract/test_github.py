"""gate.action.github against the fake GitHub (real HTTP on 127.0.0.1), plus the contract itself.

Every request the adapter sends is validated by the fake against GitHub's official OpenAPI
description (npm @octokit/openapi); the ``fake`` fixture fails the test on any violation.
The contract tests at the end prove the validation rejects requests outside the description.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.action.github.pull import DIFF_MEDIA_TYPE
from gate.errors import GitHubError, UsageError
from tests.fakes.github import FakeGitHub

REPO = "octo-org/hello-world"
HEAD = "a" * 40
BASE = "b" * 40
DIFF = b"""diff --git a/src/a.py b/src/a.py
index 1..2 100644
--- a/src/a.py
+++ b/src/a.py
@@ -1 +1 @@
-x = 1
+x = 2
diff --git a/img.png b/img.png
index 1..2 100644
Binary files a/img.png and b/img.png differ
"""


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    """The shared fake GitHub (tests/conftest.py), with pull request 7."""
    assert fake_github.repository == REPO
    fake_github.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=DIFF)
    return fake_github


def client_for(fake: FakeGitHub, **kw) -> GitHubClient:
    values = {
        "repository": fake.repository,
        "api_url": fake.api_url,
        "token": fake.token,
        "throttle": False,
        "timeout": 5.0,
        "backoff": 0.0,
    }
    values.update(kw)
    return GitHubClient(GitHubSettings(**values))


def calls(fake: FakeGitHub, operation: str) -> list:
    return [r for r in fake.requests if r.operation == operation]


# --- settings -------------------------------------------------------------------------


def test_settings_from_env_honour_enterprise_urls():
    env = {
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_API_URL": "https://ghe.example/api/v3/",
        "GITHUB_SERVER_URL": "https://ghe.example",
    }
    settings = GitHubSettings.from_env(env, token="t0ken")
    assert settings.api_url == "https://ghe.example/api/v3"
    assert settings.run_url("99") == "https://ghe.example/o/r/actions/runs/99"
    assert settings.run_url("") is None
    assert "t0ken" not in repr(settings)
    default = GitHubSettings.from_env({"GITHUB_REPOSITORY": "o/r"}, token="x")
    assert default.api_url == "https://api.github.com"


def test_settings_need_repository_and_token():
    with pytest.raises(UsageError, match="GITHUB_REPOSITORY"):
        GitHubSettings.from_env({}, token="x")
    with pytest.raises(UsageError, match="no GitHub token"):
        GitHubSettings.from_env({"GITHUB_REPOSITORY": "o/r"}, token="")


# --- reads ------------------------------------------------------------------------------


def test_get_pull(fake):
    fake.add_pull(8, head_sha=HEAD, base_sha=BASE, draft=True, head_repo="stranger/fork")
    pull = client_for(fake).get_pull(8)
    assert (pull.number, pull.head_sha, pull.base_sha) == (8, HEAD, BASE)
    assert pull.draft is True
    assert pull.is_fork is True
    assert pull.base_repo == REPO


def test_read_file_at_a_ref_and_missing_file(fake):
    fake.set_file(BASE, ".github/review-gate.yml", "policy_version: '2'\n")
    client = client_for(fake)
    assert client.read_file(".github/review-gate.yml", BASE) == b"policy_version: '2'\n"
    assert client.read_file(".github/review-gate.yml", HEAD) is None
    got = calls(fake, "repos/get-content")
    assert [r.query for r in got] == [f"ref={BASE}", f"ref={HEAD}"]


def test_read_file_refuses_a_directory(fake):
    fake.set_file(BASE, "conf/a.yml", "x: 1")
    with pytest.raises(GitHubError, match="is a directory") as info:
        client_for(fake).read_file("conf", BASE)
    assert info.value.reason == "github_not_a_file"


def test_path_exists_in_the_head_tree(fake):
    client = client_for(fake)
    assert client.path_exists(".apply/incomplete", HEAD) is False
    fake.set_file(HEAD, ".apply/incomplete", "src/a.py\n")
    assert client.path_exists(".apply/incomplete", HEAD) is True
    assert client.path_exists(".apply/incomplete", BASE) is False


def test_tree_paths_lists_the_head_tree_recursively(fake):
    fake.set_file(HEAD, "README.md", "hi\n")
    fake.set_file(HEAD, "pkg/sub/.apply/incomplete", "x\n")
    listing = client_for(fake).tree_paths(HEAD)
    assert listing.truncated is False
    assert "pkg/sub/.apply/incomplete" in listing.paths
    assert {"README.md", "pkg", "pkg/sub", "pkg/sub/.apply"} <= set(listing.paths)
    (req,) = calls(fake, "git/get-tree")
    assert req.path.endswith(f"/git/trees/{HEAD}")
    assert req.query == "recursive=1"


def test_tree_paths_reports_truncation(fake):
    fake.set_file(HEAD, "a/b.txt", "x\n")
    fake.truncated_trees.add(HEAD)
    assert client_for(fake).tree_paths(HEAD).truncated is True


def test_diff_is_pinned_to_base_and_head_and_keeps_exact_bytes(fake):
    fetch = client_for(fake).compare_diff(BASE, HEAD)
    assert fetch.source == "diff"
    assert b"".join(s.data for s in fetch.sections) == DIFF
    assert [s.path for s in fetch.sections] == ["src/a.py", "img.png"]
    (req,) = calls(fake, "repos/compare-commits-with-basehead")
    assert req.path.endswith(f"/compare/{BASE}...{HEAD}")
    assert req.headers["accept"] == DIFF_MEDIA_TYPE
    # never the pull request's current diff, which follows the branch
    assert not [r for r in calls(fake, "pulls/get") if r.headers["accept"] == DIFF_MEDIA_TYPE]


def test_a_moved_head_does_not_change_the_diff_fetched_for_the_reviewed_sha(fake):
    # the branch now points elsewhere and GitHub's PR diff follows it; the compare does not
    fake.diffs[7] = b"diff --git a/other.py b/other.py\n"
    fake.move_head(7, "c" * 40)
    fetch = client_for(fake).compare_diff(BASE, HEAD)
    assert b"".join(s.data for s in fetch.sections) == DIFF


def test_diff_406_falls_back_to_the_comparisons_file_list(fake):
    files = [
        {"filename": f"f{i:03}.py", "status": "modified", "patch": f"@@ -1 +1 @@\n-{i}\n+{i + 1}"}
        for i in range(150)
    ]
    files.append({"filename": "big.bin", "status": "added"})  # no patch
    head = "d" * 40
    fake.add_pull(9, head_sha=head, base_sha=BASE, files=files, refuse_diff=True)
    fetch = client_for(fake).compare_diff(BASE, head)
    assert fetch.source == "files"
    assert "406" in fetch.note
    assert len(fetch.sections) == 151
    assert fetch.sections[-1].no_patch
    reqs = calls(fake, "repos/compare-commits-with-basehead")
    assert [r.headers["accept"] == DIFF_MEDIA_TYPE for r in reqs] == [True, False]
    assert all(r.path.endswith(f"/compare/{BASE}...{head}") for r in reqs)


def test_a_406_file_list_below_the_cap_is_not_capped(fake):
    head = "d" * 40
    fake.add_compare(BASE, head, DIFF, refuse_diff=True)
    fetch = client_for(fake).compare_diff(BASE, head)
    assert fetch.source == "files"
    assert fetch.capped_at is None


@pytest.mark.parametrize("count", [300, 301, 450])
def test_a_406_file_list_that_reaches_the_cap_says_so(fake, count):
    files = [
        {"filename": f"f{i:03}.py", "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b"}
        for i in range(count)
    ]
    head = "d" * 40
    fake.add_compare(BASE, head, b"", files, refuse_diff=True)
    fetch = client_for(fake).compare_diff(BASE, head)
    assert len(fetch.sections) == 300  # the compare API lists no more
    assert fetch.capped_at == 300
    assert "more may have changed" in fetch.note


def test_compare_diff_for_merge_groups(fake):
    group = "e" * 40
    fake.add_compare(BASE, group, DIFF)
    fetch = client_for(fake).compare_diff(BASE, group)
    assert b"".join(s.data for s in fetch.sections) == DIFF
    (req,) = calls(fake, "repos/compare-commits-with-basehead")
    assert req.path.endswith(f"/compare/{BASE}...{group}")


def test_permission(fake):
    fake.permissions.update({"admin1": "admin", "maint": "maintain", "reader": "read"})
    client = client_for(fake)
    assert client.permission("admin1") == "admin"
    assert client.permission("maint") == "write"  # GitHub's legacy field maps maintain -> write
    assert client.permission("reader") == "read"
    assert client.permission("stranger") == "none"  # 404: not a collaborator


# --- writes -----------------------------------------------------------------------------


def test_create_status_with_target_url_and_bounded_description(fake):
    client = client_for(fake)
    client.create_status(
        HEAD, state="pending", description="x" * 300, context="ctx", target_url="https://r/1"
    )
    (status,) = fake.status_list(HEAD)
    assert status["state"] == "pending"
    assert status["context"] == "ctx"
    assert status["target_url"] == "https://r/1"
    assert len(status["description"]) == 140
    with pytest.raises(ValueError, match="unknown status state"):
        client.create_status(HEAD, state="passed", description="", context="c", target_url=None)


def test_status_retried_on_5xx_then_posted(fake):
    fake.inject(r"^POST .*/statuses/", 502, count=1)
    client_for(fake, retries=2).create_status(
        HEAD, state="success", description="ok", context="c", target_url=None
    )
    assert fake.states(HEAD) == ["success"]
    assert len(calls(fake, "repos/create-commit-status")) == 2


def test_status_retries_are_bounded(fake):
    fake.inject(r"^POST .*/statuses/", 503, count=100)
    with pytest.raises(GitHubError) as info:
        client_for(fake, retries=1).create_status(
            HEAD, state="success", description="ok", context="c", target_url=None
        )
    assert info.value.reason == "github_http_503"
    assert fake.states(HEAD) == []
    # POST is not retried inside urllib3; the adapter retries a status once (retries=1)
    assert len(calls(fake, "repos/create-commit-status")) == 2


def test_forbidden_status_names_the_permission(fake):
    fake.inject(r"^POST .*/statuses/", 403, count=5, message="Resource not accessible")
    with pytest.raises(GitHubError, match="statuses: write") as info:
        client_for(fake).create_status(
            HEAD, state="pending", description="x", context="c", target_url=None
        )
    assert info.value.reason == "github_http_403"
    assert len(calls(fake, "repos/create-commit-status")) == 1  # a 403 is not retried


def test_bad_token(fake):
    with pytest.raises(GitHubError, match="token is invalid") as info:
        client_for(fake, token="wrong").get_pull(7)
    assert info.value.reason == "github_http_401"


def test_diff_fetch_retries_5xx(fake):
    fake.inject(r"^GET .*/compare/", 503, count=1)
    fetch = client_for(fake, retries=2).compare_diff(BASE, HEAD)
    assert fetch.source == "diff"
    assert len(calls(fake, "repos/compare-commits-with-basehead")) == 2


def test_diff_fetch_5xx_retries_are_bounded(fake):
    fake.inject(r"^GET .*/compare/", 502, count=100)
    with pytest.raises(
        GitHubError, match=r"HTTP 502 to GET compare b{12}\.\.\.a{12} 3 times"
    ) as info:
        client_for(fake, retries=2).compare_diff(BASE, HEAD)
    assert info.value.reason == "github_http_502"
    assert len(calls(fake, "repos/compare-commits-with-basehead")) == 3


@pytest.mark.parametrize(
    ("pattern", "call"),
    [
        (r"^GET .*/compare/", lambda c: c.compare_diff(BASE, HEAD)),  # httpx, the diff bytes
        (r"^GET .*/pulls/7$", lambda c: c.get_pull(7)),  # httpx, JSON
        (r"^GET .*/contents/", lambda c: c.read_file("x.yml", BASE)),
        (r"^GET .*/git/trees/", lambda c: c.tree_paths(HEAD)),
        (r"^GET .*/issues/7/comments", lambda c: c.own_comment(7, marker="m")),
        (r"^GET .*/statuses$", lambda c: c.own_statuses(HEAD, context="c")),
        (r"^GET .*/commits/a+/pulls", lambda c: c.pulls_for_commit(HEAD)),
        (r"^GET .*/collaborators/", lambda c: c.permission("x")),  # PyGithub, urllib3
        (r"^POST .*/statuses/", lambda c: c.create_status(HEAD, state="success",
                                                           description="ok", context="c",
                                                           target_url=None)),
    ],
)  # fmt: skip
def test_every_github_call_paces_its_retries_with_the_one_injected_policy(fake, pattern, call):
    fake.inject(pattern, 503, count=100)
    pauses: list[float] = []
    client = client_for(
        fake, retries=3, backoff=0.75, sleep=pauses.append, identity="github-actions[bot]"
    )
    with pytest.raises(GitHubError) as info:
        call(client)
    assert info.value.reason == "github_http_503"
    assert pauses == [0.75, 1.5, 3.0]  # backoff * 2**(n-1) before the n-th retry; no real sleep


def test_diff_fetch_404_is_named(fake):
    with pytest.raises(GitHubError, match="HTTP 404 to GET compare") as info:
        client_for(fake).compare_diff(BASE, "f" * 40)
    assert info.value.reason == "github_http_404"


def test_sticky_comment_created_once_then_updated_in_place(fake):
    client = client_for(fake, identity="github-actions[bot]")
    marker = "<!-- review-gate:sticky:ctx -->"
    fake.add_comment(7, "quoting it: " + marker)  # the marker not at the start: not ours
    first = client.upsert_comment(7, marker=marker, body="one")
    second = client.upsert_comment(7, marker=marker, body="two")
    assert first == second
    bodies = [c["body"] for c in fake.comments[7]]
    assert bodies == ["quoting it: " + marker, f"{marker}\ntwo"]
    assert len(calls(fake, "issues/create-comment")) == 1
    assert len(calls(fake, "issues/update-comment")) == 1
    client.upsert_comment(7, marker=marker, body="two")  # unchanged: no write
    assert len(calls(fake, "issues/update-comment")) == 1


def test_sticky_comment_found_on_a_later_page(fake):
    marker = "<!-- review-gate:sticky:ctx -->"
    for i in range(120):
        fake.add_comment(7, f"comment {i}")
    fake.add_comment(7, f"{marker}\nold", login="github-actions[bot]")
    client_for(fake, identity="github-actions[bot]").upsert_comment(7, marker=marker, body="new")
    assert fake.comments[7][-1]["body"] == f"{marker}\nnew"
    assert len(fake.comments[7]) == 121


@pytest.mark.parametrize(
    ("login", "bot"),
    [
        ("mallory", False),  # anyone can write the marker at the start of a comment
        ("github-actions", False),  # a user account named like the bot
        ("other-app[bot]", True),  # another app
        ("github-actions[bot]", False),  # the bot's login on a non-bot account
    ],
)
def test_a_marker_in_someone_elses_comment_is_never_edited(fake, login, bot):
    marker = "<!-- review-gate:sticky:ctx -->"
    fake.add_comment(7, f"{marker}\nforged: all good", login=login, bot=bot)
    client_for(fake, identity="github-actions[bot]").upsert_comment(
        7, marker=marker, body="verdict"
    )
    assert [c["body"] for c in fake.comments[7]] == [
        f"{marker}\nforged: all good",
        f"{marker}\nverdict",
    ]
    assert fake.comments[7][1]["user"]["login"] == "github-actions[bot]"
    assert calls(fake, "issues/update-comment") == []
    assert len(calls(fake, "issues/create-comment")) == 1


def test_installation_token_learns_its_identity_from_its_first_status(fake):
    marker = "<!-- review-gate:sticky:ctx -->"
    fake.add_comment(7, f"{marker}\nforged", login="mallory")
    fake.add_comment(7, f"{marker}\nold", login="github-actions[bot]")
    fake.add_pull(7, head_sha="1" * 40, base_sha="2" * 40)
    client = client_for(fake)
    client.create_status("1" * 40, state="pending", description="p", context="c", target_url=None)
    client.upsert_comment(7, marker=marker, body="new")
    assert [c["body"] for c in fake.comments[7]] == [f"{marker}\nforged", f"{marker}\nnew"]
    assert client.identity().login == "github-actions[bot]"
    assert calls(fake, "users/get-authenticated") == []  # known, not asked


@pytest.mark.parametrize("app", [None, "my-review-app[bot]"])
def test_an_unknown_identity_is_refused_never_guessed(fake, app):
    """No status or check run posted yet and GET /user refused: neither the Actions bot nor
    "no comment" is concluded; nothing is read as the gate's, nothing is written."""
    fake.token_app = app
    marker = "<!-- review-gate:sticky:ctx -->"
    fake.add_comment(7, f"{marker}\nby the actions bot", login="github-actions[bot]", bot=True)
    client = client_for(fake)
    for call in (
        lambda: client.own_comment(7, marker=marker),
        lambda: client.upsert_comment(7, marker=marker, body="new"),
        lambda: client.own_statuses("1" * 40, context="c"),
        lambda: client.own_check_runs("1" * 40, name="c"),
    ):
        with pytest.raises(GitHubError) as info:
            call()
        assert info.value.reason == "identity_unknown"
        assert "input identity" in info.value.message
    assert calls(fake, "issues/create-comment") == []
    assert calls(fake, "issues/update-comment") == []


@pytest.mark.parametrize("app", [None, "my-review-app[bot]"])
def test_own_check_runs_are_the_apps_own_newest_first_on_every_page(fake, app):
    """``GET /commits/{ref}/check-runs`` (the OpenAPI description checks the query and the
    answer): every page is read, only this app's runs of this name count, and the
    external_id says which status a run stands for and which question a failure answered."""
    from gate.action.github.mark import Mark, check_external_id

    def external(state: str, tag: str = "") -> str:
        kind = {"success": "pass", "failure": "fail", "error": "incomplete"}[state]
        return check_external_id(state, Mark(kind, tag or None))

    fake.token_app = app
    mine = app or "github-actions[bot]"
    sha = "1" * 40
    for n in range(130):
        state = ("success", "failure", "error")[n % 3]
        fake.add_check_run(
            sha, "review-gate", app=mine, conclusion="success" if state == "success" else "failure",
            external_id=external(state, f"{n:016x}" if state == "failure" else ""),
            title=f"run {n}",
        )  # fmt: skip
    fake.add_check_run(sha, "review-gate", app="other-app[bot]", conclusion="failure",
                       external_id=external("failure", "f" * 16))  # fmt: skip
    fake.add_check_run(sha, "another-check", app=mine, conclusion="failure")
    fake.add_check_run(sha, "review-gate", app=mine, conclusion=None, title="running")
    fake.add_check_run(sha, "review-gate", app=mine, conclusion="failure", external_id="x")
    client = client_for(fake, identity=mine)
    seen = client.own_check_runs(sha, name="review-gate")
    assert len(seen) == 132
    assert (seen[0].state, seen[0].tag) == ("error", None)  # an external_id not the gate's
    assert (seen[1].state, seen[1].title) == ("pending", "running")
    assert [s.title for s in seen[2:]] == [f"run {n}" for n in reversed(range(130))]
    assert {s.tag for s in seen if s.state == "failure"} == {
        f"{n:016x}" for n in range(130) if n % 3 == 1
    }
    assert {s.state for s in seen[2:]} == {"success", "failure", "error"}
    assert len(calls(fake, "checks/list-for-ref")) == 2  # two pages of 100


def test_a_user_token_owns_no_check_run(fake):
    fake.token_login = "release-bot-user"
    fake.add_check_run("1" * 40, "review-gate", app="github-actions[bot]", conclusion="failure")
    client = client_for(fake)
    assert client.own_check_runs("1" * 40, name="review-gate") == []


def test_the_identity_input_names_the_account(fake):
    fake.token_app = "my-review-app[bot]"
    client = client_for(fake, identity="my-review-app[bot]")
    assert (client.identity().login, client.identity().kind) == ("my-review-app[bot]", "Bot")
    assert calls(fake, "users/get-authenticated") == []


def test_user_token_adopts_only_its_own_comment(fake):
    fake.token_login = "release-bot-user"
    marker = "<!-- review-gate:sticky:ctx -->"
    fake.add_comment(7, f"{marker}\nby the actions bot", login="github-actions[bot]")
    fake.add_comment(7, f"{marker}\nold", login="Release-Bot-User")
    client = client_for(fake)
    first = client.upsert_comment(7, marker=marker, body="new")
    assert client.upsert_comment(7, marker=marker, body="newer") == first
    assert [c["body"] for c in fake.comments[7]] == [
        f"{marker}\nby the actions bot",
        f"{marker}\nnewer",
    ]
    assert len(calls(fake, "users/get-authenticated")) == 1  # asked once per client


def test_identity_with_a_bad_token_is_an_error_not_the_bot(fake):
    with pytest.raises(GitHubError) as info:
        client_for(fake, token="wrong").identity()
    assert info.value.reason == "github_http_401"


# --- timeouts -----------------------------------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.05)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    for conn in held:
        conn.close()
    listener.close()


#: the calls a pull_request run makes over httpx before its final status (issue 22), and
#: one that stays on PyGithub: each must time out, and name a refused connection, alike
FIRST_CALLS = {
    "pull": lambda c: c.get_pull(7),
    "contents": lambda c: c.read_file(".github/review-gate.yml", BASE),
    "tree": lambda c: c.tree_paths(HEAD),
    "identity": lambda c: GitHubClient(replace(c.settings, identity="")).identity(),
    "comments": lambda c: c.own_comment(7, marker="<!-- review-gate"),
    "statuses": lambda c: c.own_statuses(HEAD, context="c"),
    "pulls_of_commit": lambda c: c.pulls_for_commit(HEAD),
    "pygithub": lambda c: c.permission("someone"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("call", list(FIRST_CALLS.values()), ids=list(FIRST_CALLS))
def test_github_calls_time_out(silent_server, call):
    settings = GitHubSettings(
        repository=REPO,
        api_url=silent_server,
        token="t",
        timeout=0.5,
        retries=0,
        throttle=False,
        identity="github-actions[bot]",
    )
    with pytest.raises(GitHubError, match=r"no answer within 0.5s \(1 try\)") as info:
        call(GitHubClient(settings))
    assert info.value.reason == "github_unreachable"


@pytest.mark.timeout(60)
def test_diff_fetch_times_out(silent_server):
    settings = GitHubSettings(
        repository=REPO,
        api_url=silent_server,
        token="t",
        timeout=0.5,
        retries=1,
        backoff=0.0,
        throttle=False,
    )
    with pytest.raises(GitHubError, match=r"no answer within 0.5s \(2 tries\)") as info:
        GitHubClient(settings).compare_diff(BASE, HEAD)
    assert info.value.reason == "github_unreachable"


@pytest.fixture
def refusing_url() -> Iterator[str]:
    """A 127.0.0.1 port nothing listens on (bound, never listening): connections are refused."""
    with socket.socket() as probe:  # bound, never listening: refused, and kept reserved
        probe.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{probe.getsockname()[1]}"


def _refused_client(url: str) -> GitHubClient:
    return GitHubClient(
        GitHubSettings(
            repository=REPO,
            api_url=url,
            token="t",
            timeout=30.0,
            retries=2,
            backoff=0.0,
            throttle=False,
            identity="github-actions[bot]",
        )
    )


REFUSED_CALLS = {
    **FIRST_CALLS,
    "diff": lambda c: c.compare_diff(BASE, HEAD),
    "status": lambda c: c.create_status(
        HEAD, state="pending", description="d", context="x", target_url=None
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("call", list(REFUSED_CALLS.values()), ids=list(REFUSED_CALLS))
def test_a_refused_connection_is_named_as_such_not_as_a_timeout(refusing_url, call):
    with pytest.raises(GitHubError) as info:
        call(_refused_client(refusing_url))
    assert info.value.reason == "github_unreachable"
    assert "connection refused (3 tries)" in info.value.message
    assert "within" not in info.value.message
    assert "30s" not in info.value.message


# --- the contract: the fake rejects what GitHub's description does not allow ----------


def _raw(fake: FakeGitHub, method: str, path: str, **kw) -> httpx.Response:
    headers = {"Authorization": f"token {fake.token}", **kw.pop("headers", {})}
    return httpx.request(method, fake.api_url + path, headers=headers, timeout=5, **kw)


@pytest.mark.parametrize(
    ("method", "path", "kw", "expected"),
    [
        ("POST", f"/repos/{REPO}/statuses/{HEAD}", {"json": {"state": "passed"}}, "is not one of"),
        (
            "POST",
            f"/repos/{REPO}/statuses/{HEAD}",
            {"json": {"description": "x"}},
            "'state' is a required",
        ),
        ("GET", f"/repos/{REPO}/pulls/seven", {}, "expected an integer"),
        ("GET", f"/repos/{REPO}/pulls/7/files?perpage=100", {}, "'perpage' is not declared"),
        ("GET", f"/repos/{REPO}/pulls/7/diffs", {}, "no such path"),
        ("DELETE", f"/repos/{REPO}/pulls/7", {}, "not with this method"),
        (
            "GET",
            f"/repos/{REPO}/pulls/7",
            {"headers": {"Accept": "application/vnd.github.sarif"}},
            "not a media type",
        ),
        ("GET", f"/repos/{REPO}/pulls/7", {"content": b'{"x": 1}'}, "takes no request body"),
        (
            "PATCH",
            f"/repos/{REPO}/issues/comments/5",
            {"json": {"text": "x"}},
            "'body' is a required",
        ),
    ],
)
def test_requests_outside_the_description_are_refused_and_recorded(method, path, kw, expected):
    with FakeGitHub(REPO) as fake:
        fake.add_pull(7, head_sha=HEAD, base_sha=BASE, diff=DIFF)
        resp = _raw(fake, method, path, **kw)
        assert resp.status_code == 422
        assert "contract violation" in resp.json()["message"]
        assert len(fake.violations) == 1
        assert expected in fake.violations[0]
        assert fake.statuses == {}  # nothing happened


def test_requests_inside_the_description_pass(fake):
    resp = _raw(
        fake, "POST", f"/repos/{REPO}/statuses/{HEAD}", json={"state": "success", "context": "c"}
    )
    assert resp.status_code == 201
    resp = _raw(fake, "GET", f"/repos/{REPO}/pulls/7", headers={"Accept": DIFF_MEDIA_TYPE})
    assert resp.content == DIFF
    assert fake.violations == []


def test_missing_node_modules_fail_with_the_install_command(monkeypatch, tmp_path):
    from tests.fakes import events, openapi_contract

    monkeypatch.setattr(openapi_contract, "SPEC_PATH", tmp_path / "missing.json")
    with pytest.raises(openapi_contract.ContractUnavailable, match="npm ci --prefix tests/node"):
        openapi_contract.load_contract.__wrapped__()
    monkeypatch.setattr(events, "EXAMPLES", tmp_path / "missing.json")
    events._index.cache_clear()
    try:
        with pytest.raises(events.ExamplesUnavailable, match="npm ci --prefix tests/node"):
            events.examples("pull_request")
    finally:
        monkeypatch.undo()
        events._index.cache_clear()
