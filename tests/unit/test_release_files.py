"""The release: its workflow, scripts/release.sh, the pins and the hygiene files.

scripts/release.sh is run for real (bash, git) on copies of the repository's files:
``version`` against generated tags, ``pin-action`` against generated image references
(the pinned action.yml must still be a valid action by GitHub's JSON Schema), and
``release-commit`` in a scratch git repository. The image steps (``publish``) run in
tests/e2e/test_release.py.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "release.sh"
# sha256 of the Apache License 2.0 text as the ASF publishes it (LICENSE-2.0.txt)
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
DIGEST = "sha256:" + "ab" * 32
# spelled in two parts, so this file does not contain them
PLACEHOLDERS = ("OWN" + "ER/", "review-gate" + ".invalid")
WORKFLOW_FILES = sorted(
    [
        *(ROOT / ".github" / "workflows").glob("*.yml"),
        ROOT / "examples" / "review-gate.yml",
        ROOT / "examples" / "review-gate-minimal.yml",
        ROOT / "examples" / "review-gate-replay.yml",
        ROOT / "examples" / "review-gate-triage.yml",
        ROOT / "examples" / "review-gate-shadow.yml",
        *(ROOT / "tests" / "e2e" / "workflow").glob("*.yml"),
    ]
)


def _yaml(path: Path) -> dict[Any, Any]:
    loaded = yaml.safe_load(path.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _repository() -> str:
    with (ROOT / "pyproject.toml").open("rb") as f:
        source = tomllib.load(f)["project"]["urls"]["Source"]
    found = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+)", source)
    assert found, source
    return found.group(1)


def _bash(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/release.sh", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _scratch(tmp_path: Path, version: str = "1.2.3") -> Path:
    """A repository copy with what the script reads: action.yml, CHANGELOG.md, the
    version in gate/__init__.py."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(SCRIPT, tmp_path / "scripts" / "release.sh")
    shutil.copy2(ROOT / "action.yml", tmp_path / "action.yml")
    (tmp_path / "gate").mkdir()
    (tmp_path / "gate" / "__init__.py").write_text(f'__version__ = "{version}"\n', "utf-8")
    (tmp_path / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [Unreleased]\n\n## [1.2.3] - 2026-12-01\n\n### Added\n\n- it\n\n"
        "## [1.2.2] - 2026-11-01\n\n- older\n",
        "utf-8",
    )
    return tmp_path


# --- the repository, named once ------------------------------------------------------


def test_every_mention_of_the_repository_names_the_one_in_pyproject() -> None:
    repository = _repository()
    assert repository == "review-gate/review-gate"
    action = _yaml(ROOT / "action.yml")
    assert f"https://github.com/{repository}" in action["author"]
    raw = f"https://raw.githubusercontent.com/{repository}/main/gate/schemas/"
    for schema in sorted((ROOT / "gate" / "schemas").glob("*.schema.json")):
        text = schema.read_text("utf-8")
        assert f'"$id": "{raw}{schema.name}"' in text, schema.name
    uses = [
        str(step.get("uses", ""))
        for job in _yaml(ROOT / "examples" / "review-gate.yml")["jobs"].values()
        for step in job["steps"]
    ]
    assert f"{repository}@v1" in uses
    for name in ("SECURITY.md", "CHANGELOG.md"):
        assert f"https://github.com/{repository}/" in (ROOT / name).read_text("utf-8"), name
    # nothing names another owner of review-gate, or a placeholder
    _no_placeholders(name for name in _tracked() if name != "README.md")


def test_the_readme_names_the_repository_too() -> None:
    _no_placeholders(["README.md"])


def _tracked() -> list[str]:
    return subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()


def _no_placeholders(tracked: Iterable[str]) -> None:
    pattern = re.compile(r"(?:github\.com/|ghcr\.io/|uses: )([\w.-]+)/review-gate\b")
    for name in tracked:
        path = ROOT / name
        if path.suffix not in {".md", ".yml", ".yaml", ".json", ".toml", ".py", ".sh"}:
            continue
        if not path.is_file():
            continue
        text = path.read_text("utf-8", errors="replace")
        for placeholder in PLACEHOLDERS:
            assert placeholder not in text, (name, placeholder)
        owners = {owner.lower() for owner in pattern.findall(text)} - {"review-gate"}
        assert not owners, (name, owners)


# --- pins ----------------------------------------------------------------------------


def _uses(path: Path) -> list[tuple[str, str]]:
    """(uses value, the rest of its line) for every uses: in the file."""
    found = []
    for line in path.read_text("utf-8").splitlines():
        match = re.match(r"\s*(?:- )?uses:\s*(\S+)(.*)$", line)
        if match:
            found.append((match.group(1), match.group(2)))
    return found


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_uses_is_pinned_by_sha_with_its_version(path: Path) -> None:
    uses = _uses(path)
    assert uses
    for value, rest in uses:
        if value == "./":
            continue  # the action in this checkout (the e2e workflow)
        if value == f"{_repository()}@v1":
            # the examples: no release SHA exists yet
            assert path.name in (
                "review-gate.yml",
                "review-gate-minimal.yml",
                "review-gate-replay.yml",
                "review-gate-triage.yml",
                "review-gate-shadow.yml",
            )
            continue
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", value), value
        assert re.fullmatch(r" # v\d+\.\d+\.\d+", rest), (value, rest)


def test_one_sha_per_action_and_version_across_files() -> None:
    seen: dict[str, set[str]] = {}
    for path in WORKFLOW_FILES:
        for value, rest in _uses(path):
            if "@" in value and re.search(r"@[0-9a-f]{40}$", value):
                seen.setdefault(value.split("@")[0], set()).add(value + rest)
    assert seen
    assert all(len(pins) == 1 for pins in seen.values()), seen


# --- hygiene files -------------------------------------------------------------------


def test_license_is_the_apache_2_text() -> None:
    text = (ROOT / "LICENSE").read_bytes()
    assert hashlib.sha256(text).hexdigest() == APACHE_2_SHA256
    with (ROOT / "pyproject.toml").open("rb") as f:
        assert tomllib.load(f)["project"]["license"] == {"text": "Apache-2.0"}


def test_changelog_keeps_a_changelog() -> None:
    text = (ROOT / "CHANGELOG.md").read_text("utf-8")
    assert "https://keepachangelog.com/en/1.1.0/" in text
    headings = re.findall(r"^## \[([^\]]+)\]", text, flags=re.MULTILINE)
    assert headings[0] == "Unreleased"
    for heading in headings[1:]:
        assert re.fullmatch(r"\d+\.\d+\.\d+", heading), heading
    for section in re.findall(r"^### (.+)$", text, flags=re.MULTILINE):
        assert section in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_security_policy_says_how_to_report_and_what_is_in_scope() -> None:
    text = (ROOT / "SECURITY.md").read_text("utf-8")
    assert f"https://github.com/{_repository()}/security/advisories/new" in text
    for heading in ("## Reporting", "## In scope", "## Out of scope"):
        assert heading in text
    for topic in ("no-false-pass", "Secret sinks", "apply guard", "judgement"):
        assert topic in text, topic


# --- the release workflow ------------------------------------------------------------


def test_release_workflow_runs_on_version_tags_with_least_privilege() -> None:
    workflow = _yaml(ROOT / ".github" / "workflows" / "release.yml")
    on = workflow.get("on", workflow.get(True))
    assert on == {"push": {"tags": ["v*.*.*"]}}
    assert workflow["permissions"] == {}
    assert workflow["concurrency"]["cancel-in-progress"] is False
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {
        "contents": "write",
        "packages": "write",
        "id-token": "write",
        "attestations": "write",
    }
    steps = job["steps"]
    checkout = steps[0]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["persist-credentials"] is False
    runs = "\n".join(str(step.get("run", "")) for step in steps)
    # the shared steps: the same script the local e2e proof runs
    for command in ("version", "publish", "release-commit", "notes"):
        assert f"scripts/release.sh {command} " in runs, command
    assert "git merge-base --is-ancestor" in runs
    assert "${{" not in runs  # expressions reach scripts through env only
    by_uses = {str(s.get("uses", "")).split("@")[0]: s for s in steps if "uses" in s}
    publish = next(s for s in steps if s.get("id") == "publish")
    assert publish["env"]["PLATFORMS"] == "linux/amd64,linux/arm64"
    for attest in ("actions/attest-build-provenance", "actions/attest-sbom"):
        assert by_uses[attest]["with"]["subject-digest"] == "${{ steps.publish.outputs.digest }}"
        assert by_uses[attest]["with"]["push-to-registry"] is True
    assert "anchore/sbom-action" in by_uses
    assert "gh attestation verify" in runs


# --- scripts/release.sh ----------------------------------------------------------------


def test_version_reads_a_tag_that_matches_the_project(tmp_path: Path) -> None:
    done = _bash("version", "v1.2.3", cwd=_scratch(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1.2.3 1\n"


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.sampled_from(
            ["1.2.3", "v1.2", "v1.2.3.4", "v01.2.3", "v1.2.3-rc1", "v1.2.3 ", "V1.2.3", "v1.2.4"]
        ),
        st.from_regex(r"v[0-9a-z.\-+]{0,12}", fullmatch=True).filter(lambda t: t != "v1.2.3"),
    )
)
def test_version_refuses_any_other_tag(tag: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        done = _bash("version", tag, cwd=_scratch(Path(directory)))
    assert done.returncode != 0, (tag, done.stdout)
    assert done.stdout == ""
    assert done.stderr.startswith("release: ")


def test_pin_action_writes_a_valid_action_that_differs_only_in_the_image(tmp_path: Path) -> None:
    ws = _scratch(tmp_path)
    ref = f"ghcr.io/{_repository()}@{DIGEST}"
    done = _bash("pin-action", ref, cwd=ws)
    assert done.returncode == 0, done.stderr
    before, after = _yaml(ROOT / "action.yml"), _yaml(ws / "action.yml")
    assert after["runs"] == {"using": "docker", "image": f"docker://{ref}"}
    assert {k: v for k, v in after.items() if k != "runs"} == {
        k: v for k, v in before.items() if k != "runs"
    }
    schema = subprocess.run(
        [
            str(Path(__import__("sys").executable).parent / "check-jsonschema"),
            "--builtin-schema",
            "vendor.github-actions",
            str(ws / "action.yml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr
    # a release commit's action.yml is never pinned again
    again = _bash("pin-action", ref, cwd=ws)
    assert again.returncode != 0
    assert "already a release commit" in again.stderr


BAD_REFS = [
    "ghcr.io/review-gate/review-gate:v1",
    "ghcr.io/review-gate/review-gate@sha256:" + "ab" * 31,
    "ghcr.io/review-gate/review-gate@sha256:" + "AB" * 32,
    "ghcr.io/review-gate/review-gate@sha512:" + "ab" * 64,
    "docker://ghcr.io/review-gate/review-gate@" + DIGEST,
    "review-gate@" + DIGEST,
    "ghcr.io/Review-Gate/review-gate@" + DIGEST,
    "ghcr.io/review-gate/review-gate@" + DIGEST + "\n  using: node20",
    "ghcr.io/review-gate/review-gate@" + DIGEST + " ",
    "ghcr.io/review gate/review-gate@" + DIGEST,
    "ghcr.io/review-gate/review-gate|x@" + DIGEST,
    "",
]


@pytest.mark.parametrize("ref", BAD_REFS)
def test_pin_action_refuses_anything_but_a_digest_reference(tmp_path: Path, ref: str) -> None:
    ws = _scratch(tmp_path)
    done = _bash("pin-action", ref, cwd=ws)
    assert done.returncode != 0
    assert (ws / "action.yml").read_bytes() == (ROOT / "action.yml").read_bytes()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()


def test_release_commit_moves_both_tags_onto_a_child_changing_only_action_yml(
    tmp_path: Path,
) -> None:
    ws = _scratch(tmp_path)
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, "commit", "-q", "-m", "older")
    older = _git(ws, "rev-parse", "HEAD")
    _git(ws, "tag", "v1", older)  # the previous release's major tag
    (ws / "CHANGELOG.md").write_text("changed\n", "utf-8")
    _git(ws, "commit", "-q", "-am", "source")
    source = _git(ws, "rev-parse", "HEAD")
    _git(ws, "tag", "v1.2.3", source)  # what the maintainer pushed
    ref = f"ghcr.io/{_repository()}@{DIGEST}"
    done = _bash("release-commit", "1.2.3", ref, cwd=ws)
    assert done.returncode == 0, done.stderr
    release = done.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{40}", release)
    assert _git(ws, "rev-parse", "v1.2.3^{commit}") == release
    assert _git(ws, "rev-parse", "v1^{commit}") == release
    assert _git(ws, "rev-parse", f"{release}^") == source
    assert _git(ws, "diff", "--name-only", source, release) == "action.yml"
    assert f"image: docker://{ref}" in _git(ws, "show", "v1:action.yml")
    # the release commit is on no branch: main stays at the source
    assert _git(ws, "branch", "--show-current") == ""
    assert _git(ws, "rev-parse", "main") == source


def test_release_commit_refuses_a_dirty_checkout(tmp_path: Path) -> None:
    ws = _scratch(tmp_path)
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, "commit", "-q", "-m", "source")
    (ws / "CHANGELOG.md").write_text("edited\n", "utf-8")
    done = _bash("release-commit", "1.2.3", f"ghcr.io/{_repository()}@{DIGEST}", cwd=ws)
    assert done.returncode != 0
    assert "the checkout has changes" in done.stderr
    assert _git(ws, "tag") == ""


def test_notes_print_the_versions_changelog_section(tmp_path: Path) -> None:
    ws = _scratch(tmp_path)
    done = _bash("notes", "1.2.3", cwd=ws)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "### Added\n\n- it"
    missing = _bash("notes", "9.9.9", cwd=ws)
    assert missing.returncode != 0
    assert "no section ## [9.9.9]" in missing.stderr
