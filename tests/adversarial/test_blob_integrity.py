"""Class: blob bytes taken on trust when a large pull request is rebuilt from blobs.

Cause: above 300 files GitHub refuses the diff (406) and lists some files without a
``patch``; the action rebuilds those from their base and head blobs
(``GitHubClient.blob``, ``GitHubClient.blob_sha``). The bytes were taken as the answer
gave them: a blob answer holding another blob, cut or padded bytes, a ``size`` that
lies, or base64 with stray characters (decoded leniently) became "the file" the reviewer
judged, under the blob id the file list named; a content that was not base64 at all
raised ``binascii.Error`` out of the GitHub adapter (an unexpected exception, not a
typed block). And the contents API, asked for a base file that is a symlink to a file,
answers with the *target's* blob: another file's bytes stood as the base, so the lines
the two share were never shown.

Fix (``gate/action/github/pull.py``): a blob's bytes must hash to the id asked for (git's
``blob <size>\\0<bytes>``, :func:`git_blob_id`), the size must match, the base64 must be
strict; anything else is ``github_bad_payload`` (incomplete). ``blob_sha`` takes only a
regular file answered under the path asked for; otherwise the file stays ``no_patch``.

Variants: a grid of true blobs x tampered answers, Hypothesis pairs of (true, served)
bytes, and a grid of contents answers that are not the regular file asked for. The
invariant: ``blob()`` returns exactly the true bytes, None, or raises ``GitHubError``.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
from gate.errors import GitHubError

TRUE_BLOBS = [b"", b"x", b"RATE = 1\nLIMIT = 2\n", b"\x89PNG\r\n\x1a\n\0\0", bytes(range(256)) * 40]


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def b64(data: bytes) -> str:
    text = base64.b64encode(data).decode()
    return "\n".join(text[i : i + 60] for i in range(0, len(text), 60)) + "\n"


@dataclass
class Blob:
    size: Any
    content: Any
    encoding: Any = "base64"


def Contents(type: str, path: str, sha: str) -> dict[str, str]:
    """The contents API's JSON object for a file (what ``GET .../contents/{path}`` answers)."""
    return {"type": type, "path": path, "sha": sha}


class Repo:
    def __init__(self, blob: Blob | None = None, contents: Any = None) -> None:
        self._blob, self._contents = blob, contents

    def get_git_blob(self, sha: str) -> Blob:
        assert self._blob is not None
        return self._blob

    def get_contents(self, path: str, ref: str) -> Any:
        return self._contents


def client(repo: Repo) -> GitHubClient:
    gh = GitHubClient(
        GitHubSettings(repository="o/r", api_url="http://127.0.0.1:9", token="t", throttle=False)
    )
    gh._repo = repo
    gh._rest = lambda method, what, path, **kw: repo.get_contents(path, kw["params"]["ref"])
    return gh


def tampered(true: bytes) -> list[tuple[str, Blob]]:
    other = b"import os\nos.system('curl evil')\n"
    same_size = (other * (len(true) // len(other) + 1))[: len(true)]
    out = [
        ("another blob, its size", Blob(len(other), b64(other))),
        ("another blob, the true size", Blob(len(true), b64(other))),
        ("utf-8 encoding", Blob(len(true), true.decode("latin-1"), "utf-8")),
        ("no encoding", Blob(len(true), b64(true), None)),
        ("size missing", Blob(None, b64(true))),
        ("size a string", Blob(str(len(true)), b64(true))),
        ("content missing", Blob(len(true), None)),
        ("appended byte", Blob(len(true), b64(true + b"!"))),
        ("appended byte, size too", Blob(len(true) + 1, b64(true + b"!"))),
        ("not base64", Blob(len(true), "%%%%")),
        ("bad padding", Blob(len(true), "QQ")),
        ("junk in base64", Blob(len(true), "*" + b64(true) + "$")),
        ("second document after padding", Blob(len(true), b64(true) + b64(other))),
    ]
    if true and same_size != true:
        out.append(("same-size other bytes", Blob(len(true), b64(same_size))))
    if true:
        flipped = bytes([true[0] ^ 1]) + true[1:]
        out += [
            ("one byte flipped", Blob(len(true), b64(flipped))),
            ("cut by one byte", Blob(len(true), b64(true[:-1]))),
            ("cut by one byte, size too", Blob(len(true) - 1, b64(true[:-1]))),
        ]
    return out


GRID = [(i, name, blob) for i, true in enumerate(TRUE_BLOBS) for name, blob in tampered(true)]


def fetched(true: bytes, answer: Blob) -> bytes | None:
    try:
        return client(Repo(blob=answer)).blob(blob_id(true))
    except GitHubError as err:
        reason = err.reason
    assert reason == "github_bad_payload", reason
    return None


def test_the_grid_is_wide() -> None:
    assert len(GRID) >= 70


@pytest.mark.parametrize(("index", "name", "answer"), GRID, ids=[f"{i}-{n}" for i, n, _ in GRID])
def test_a_tampered_blob_is_never_the_file(index: int, name: str, answer: Blob) -> None:
    true = TRUE_BLOBS[index]
    got = fetched(true, answer)
    assert got is None or got == true, name


@pytest.mark.parametrize("true", TRUE_BLOBS)
def test_the_true_blob_is_read(true: bytes) -> None:
    assert client(Repo(blob=Blob(len(true), b64(true)))).blob(blob_id(true)) == true


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300), st.binary(max_size=300), st.booleans())
def test_served_bytes_must_be_the_blob_asked_for(true: bytes, served: bytes, lie: bool) -> None:
    answer = Blob(len(true) if lie else len(served), b64(served))
    got = fetched(true, answer)
    assert got is None or got == true


NOT_THE_FILE = [
    ("symlink followed to its target", Contents("file", "lib/target.py", blob_id(b"t"))),
    ("a symlink", Contents("symlink", "app/x.py", blob_id(b"lib/target.py"))),
    ("a submodule", Contents("submodule", "app/x.py", "a" * 40)),
    ("a folder", []),
    ("another path's file", Contents("file", "APP/X.PY", blob_id(b"t"))),
]


@pytest.mark.parametrize(("name", "answer"), NOT_THE_FILE, ids=[n for n, _ in NOT_THE_FILE])
def test_the_base_blob_is_the_regular_file_asked_for(name: str, answer: Any) -> None:
    assert client(Repo(contents=answer)).blob_sha("app/x.py", "b" * 40) is None, name


def test_the_regular_file_gives_its_blob_id() -> None:
    sha = blob_id(b"t")
    assert client(Repo(contents=Contents("file", "app/x.py", sha))).blob_sha("app/x.py", "b") == sha
