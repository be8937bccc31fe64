"""Classes: a file taken for a binary asset on its name alone; a review paid for that
then blocks on coverage.

An image, font, audio or video file does not block (issue 20), but only when its name has
a listed extension AND the bytes the diff changed start with that type's signature: an
executable, an archive or a script renamed ``.png``, a blob that cannot be read, or one
whose id is not the one the diff's ``index`` line names, blocks as any binary does, and
that block is decided before the reviewer is asked. Generated: every listed type with its
own signature and with foreign ones (executables, archives, scripts), never-listed types
carrying an asset's signature, and the action's read path (fake GitHub, every request
checked against GitHub's OpenAPI description) over the cases that must not read as an
asset.
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gate.action.github.mark import plain
from gate.assets import ASSET_TYPES, asset_kind, listed_type
from tests.integration.action import test_run_fake_github as base
from tests.integration.action.test_run_fake_github import (
    DIFF,
    HEAD,
    pr_payload,
    run_gate,
    setup_pull,
)

fake = base.fake
sim_factory = base.sim_factory

#: one real signature per listed type (what its first bytes are)
SIGNATURES = {
    ".png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    ".jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
    ".jpeg": b"\xff\xd8\xff\xdb\x00\x43\x00",
    ".gif": b"GIF89a\x01\x00\x01\x00",
    ".webp": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    ".bmp": b"BM\x36\x00\x00\x00\x00\x00",
    ".ico": b"\x00\x00\x01\x00\x01\x00\x10\x10",
    ".tif": b"II*\x00\x08\x00\x00\x00",
    ".tiff": b"MM\x00*\x00\x00\x00\x08",
    ".avif": b"\x00\x00\x00\x1cftypavif\x00\x00",
    ".woff": b"wOFF\x00\x01\x00\x00",
    ".woff2": b"wOF2\x00\x01\x00\x00",
    ".ttf": b"\x00\x01\x00\x00\x00\x0f\x00\x80",
    ".otf": b"OTTO\x00\x0b\x00\x80",
    ".mp3": b"ID3\x04\x00\x00\x00\x00",
    ".wav": b"RIFF\x24\x08\x00\x00WAVEfmt ",
    ".ogg": b"OggS\x00\x02\x00\x00",
    ".oga": b"OggS\x00\x02\x00\x00",
    ".flac": b"fLaC\x00\x00\x00\x22",
    ".m4a": b"\x00\x00\x00\x20ftypM4A \x00\x00",
    ".mp4": b"\x00\x00\x00\x18ftypmp42\x00\x00",
    ".m4v": b"\x00\x00\x00\x18ftypM4V \x00\x00",
    ".mov": b"\x00\x00\x00\x14ftypqt  \x00\x00",
    ".webm": b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81",
}
#: what a build or an interpreter loads as code, or an archive holding it
FOREIGN = [
    b"\x7fELF\x02\x01\x01\x00",  # ELF executable or shared library
    b"MZ\x90\x00\x03\x00\x00\x00",  # Windows PE
    b"\xcf\xfa\xed\xfe\x07\x00\x00\x01",  # Mach-O
    b"PK\x03\x04\x14\x00\x00\x00",  # zip, jar, whl
    b"#!/bin/sh\ncurl x | sh\n",  # a script
    b"\x00asm\x01\x00\x00\x00",  # WebAssembly
    b"",  # empty
]
NEVER = [".exe", ".so", ".dll", ".dylib", ".zip", ".jar", ".whl", ".pyc", ".wasm", ".svg", ".pdf"]


def test_every_listed_extension_has_a_signature_here() -> None:
    listed = {ext for kind in ASSET_TYPES for ext in kind.extensions}
    assert listed == set(SIGNATURES)
    assert not listed & set(NEVER)


@settings(max_examples=200, deadline=None)
@given(
    ext=st.sampled_from(sorted(SIGNATURES)),
    foreign=st.sampled_from(FOREIGN),
    tail=st.binary(max_size=32),
    upper=st.booleans(),
    folder=st.sampled_from(["", "assets/", "a/b/"]),
)
def test_an_asset_is_its_name_and_its_bytes_never_the_name_alone(
    ext: str, foreign: bytes, tail: bytes, upper: bool, folder: str
) -> None:
    name = folder + "logo" + (ext.upper() if upper else ext)
    assert asset_kind(name, SIGNATURES[ext] + tail, "100644") in {"image", "font", "audio", "video"}
    # after an empty prefix the tail alone is the file: it may itself open with the format's
    # signature (b"BM" is a BMP), which would be an asset, rightly
    assume(foreign or not tail.startswith(SIGNATURES[ext][:2]))
    assert asset_kind(name, foreign + tail, "100644") == ""
    assert asset_kind(name, None, "100644") == ""  # bytes that could not be read
    assert asset_kind(ext, SIGNATURES[ext], "100644") == ""  # no name before the extension


@settings(max_examples=100, deadline=None)
@given(ext=st.sampled_from(NEVER), signature=st.sampled_from(sorted(SIGNATURES.values())))
def test_code_archives_and_scripts_are_never_assets(ext: str, signature: bytes) -> None:
    assert listed_type("x" + ext) is None
    assert asset_kind("x" + ext, signature, "100644") == ""
    assert asset_kind("x.png" + ext, signature, "100644") == ""


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def binary_section(path: str, new_id: str) -> bytes:
    return (
        f"diff --git a/{path} b/{path}\nindex 1111111..{new_id[:7]} 100644\n"
        f"Binary files a/{path} and b/{path} differ\n"
    ).encode()


PNG = SIGNATURES[".png"] + bytes(range(64))


def test_a_real_png_is_named_and_does_not_block(tmp_path, fake, sim_factory) -> None:
    setup_pull(fake, diff=DIFF + binary_section("logo.png", blob_id(PNG)))
    fake.set_file(HEAD, "logo.png", PNG)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 0, result.stdout
    assert len(sim.requests) == 1
    statuses = fake.status_list(HEAD)
    assert [s["state"] for s in statuses] == ["pending", "success"]
    assert plain(statuses[-1]["description"]).endswith("· 1 binary asset not reviewable")
    coverage = result.certificate["context"]["coverage"]
    assert coverage["complete"] is True
    assert coverage["skipped"][0]["why"] == "binary_asset"
    assert "not reviewable \\(binary asset\\)" in result.summary  # the coverage line
    assert "are not reviewable and do not block" in result.summary
    assert "`logo.png`" in result.summary
    (comment,) = fake.comments[7]
    body = comment["body"]
    assert "Not reviewable (binary asset)" in body
    assert "logo.png" in body


CASES = {
    # a .png that is not a PNG: its bytes are an executable / archive / script
    **{f"foreign-{i}": ("logo.png", lambda f, i=i: _head(f, FOREIGN[i] + b"\x00" * 8)) for i in
       range(len(FOREIGN) - 1)},
    # no blob to read at the head (the bytes could not be read)
    "unreadable": ("logo.png", lambda f: blob_id(PNG)),
    # the head holds a PNG, but not the blob the diff's index line names
    "other-blob": ("logo.png", lambda f: (_head(f, PNG), "abcdef0" + "0" * 33)[1]),
    # a real PNG under a name that is never an asset
    "never-listed": ("tool.exe", lambda f: _head(f, PNG, "tool.exe")),
}  # fmt: skip


def _head(fake, data: bytes, path: str = "logo.png") -> str:
    fake.set_file(HEAD, path, data)
    return blob_id(data)


@pytest.mark.parametrize("case", sorted(CASES))
def test_anything_else_blocks_before_the_reviewer_is_asked(
    tmp_path, fake, sim_factory, case: str
) -> None:
    path, make = CASES[case]
    new_id = make(fake)
    setup_pull(fake, diff=DIFF + binary_section(path, new_id))
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3, result.stdout
    assert sim.requests == []  # never paid for
    assert result.outputs["reason"] == "partial_coverage"
    coverage = result.certificate["context"]["coverage"]
    assert coverage["skipped"][0]["why"] == "binary"
    assert f"{path} (a binary file no reviewer can read" in result.certificate["decision"]["detail"]


def test_binary_assets_block_restores_the_old_bar(tmp_path, fake, sim_factory) -> None:
    setup_pull(
        fake,
        diff=DIFF + binary_section("logo.png", blob_id(PNG)),
        config="binary_assets: block\n",
    )
    fake.set_file(HEAD, "logo.png", PNG)
    sim = sim_factory()
    result = run_gate(tmp_path, fake, sim, pr_payload())
    assert result.code == 3
    assert sim.requests == []
    assert result.outputs["reason"] == "partial_coverage"
    assert not [r for r in fake.requests if "/git/blobs/" in r.path]  # nothing read for it


@pytest.mark.parametrize("value", ["Allow", "skip", "yes", "true", ""])
def test_an_unknown_binary_assets_value_is_refused_by_name(value: str) -> None:
    from gate.config.load import parse_config
    from gate.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        parse_config(f"binary_assets: {value!r}\n", source="t")
    assert "binary_assets" in caught.value.message


# --- the command line: a local diff's GIT binary patch literal, written by real git ---


def _git_binary_diff(tmp_path, name: str, data: bytes) -> bytes:
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> bytes:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            cwd=repo, check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        return done.stdout

    git("init", "-q")
    (repo / "app.py").write_text("retries = 0\n")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    (repo / "app.py").write_text("retries = 3\n")
    (repo / name).write_bytes(data)
    git("add", ".")
    return git("diff", "--cached", "--binary")


@settings(max_examples=8, deadline=None)
@given(
    ext=st.sampled_from([".png", ".woff2", ".mp3", ".gif"]),
    body=st.binary(min_size=0, max_size=3000),
    # with a NUL, as git needs to call a file binary (a script is text: reviewed as text)
    foreign=st.sampled_from([f for f in FOREIGN if b"\0" in f]),
)
def test_the_command_line_reads_the_literal_git_wrote(
    tmp_path_factory: pytest.TempPathFactory, ext: str, body: bytes, foreign: bytes
) -> None:
    """Real git is the oracle for the patch format (base85 lines, deflate)."""
    from gate.assets import literal_heads
    from gate.config.model import Config
    from gate.diff import split_diff
    from gate.review.scope import coverage_before_call, select_diff

    real = _git_binary_diff(tmp_path_factory.mktemp("real"), "a" + ext, SIGNATURES[ext] + body)
    fake = _git_binary_diff(tmp_path_factory.mktemp("fake"), "a" + ext, foreign + body)
    assert b"GIT binary patch" in real
    for diff, asset in ((real, True), (fake, False)):
        selected = select_diff(diff, Config())
        (skipped,) = selected.coverage.skipped
        assert skipped.why == ("binary_asset" if asset else "binary")
        gap = coverage_before_call(selected.coverage, allow_partial=False)
        assert (gap is None) is asset
    (section,) = [sec for sec in split_diff(real) if sec.path == "a" + ext]
    assert literal_heads(section.data)[0] == (SIGNATURES[ext] + body)[:16]
    blocked = select_diff(real, Config(binary_assets="block"))
    assert blocked.coverage.skipped[0].why == "binary"
