"""End to end: the release path, proven against an image registry on 127.0.0.1.

The same steps as .github/workflows/release.yml, through the same script
(scripts/release.sh), on a copy of the repository:

1. the base image is pinned by digest: the local base (the stand-in for
   python:3.12-slim here) is pushed to the registry and its repository digest is passed
   as the BASE_IMAGE build argument, as the Dockerfile's default pins the real one;
2. ``release.sh version`` checks the tag against the project's version;
3. ``release.sh publish`` builds the image (linux/amd64 here: the stand-in base has no
   other platform), pushes it and a manifest list of it as ``:VERSION`` and ``:vMAJOR``,
   and prints ``127.0.0.1:PORT/review-gate@sha256:...``;
4. ``release.sh release-commit`` commits action.yml with
   ``image: docker://127.0.0.1:PORT/review-gate@sha256:...`` on top of the source
   commit and points ``vVERSION`` and ``vMAJOR`` at it.

The test removes every local copy of the published image, then act runs the e2e
workflow at the release commit (``uses: ./``, so the pinned action.yml): act must pull
the image by digest from the registry, and the review must end in ``success`` against
the fake GitHub (checked against GitHub's OpenAPI description) and the reviewer
simulator, with the same checks as tests/e2e/test_act.py.

The registry is the one .ci/run started (REVIEW_GATE_REGISTRY=127.0.0.1:PORT), else one
this module starts with scripts/local_registry.sh. Without Docker, act or the registry
these tests skip, unless REVIEW_GATE_E2E=1 or CI=true: then they fail.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import gate
from gate.lab.sim import ReviewerSimulator
from tests.e2e import test_act as act

# the same fixtures as tests/e2e/test_act.py: Docker and act, and the fake GitHub
tools = act.tools
world = act.world

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
# what the release workflow's checkout holds that the release steps read
RELEASE_FILES = (
    "action.yml",
    "Dockerfile",
    ".dockerignore",
    "pyproject.toml",
    "README.md",
    "CHANGELOG.md",
    "requirements.lock",
    "requirements-build.lock",
)
DIGEST_REF = re.compile(r"127\.0\.0\.1:\d+/review-gate@sha256:[0-9a-f]{64}")
STEP_TIMEOUT_S = 1200


def _run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"{argv[:3]} failed ({done.returncode}):\n{done.stderr[-4000:]}"
    return done.stdout


def _git(cwd: Path, *args: str) -> str:
    return _run(
        ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", *args], cwd=cwd
    ).strip()


@pytest.fixture(scope="module")
def registry(tools: dict[str, str]) -> Iterator[str]:
    address = os.environ.get("REVIEW_GATE_REGISTRY", "")
    if address:
        yield address
        return
    with tempfile.TemporaryDirectory(prefix="rg-registry-") as directory:
        start = subprocess.run(
            ["bash", str(SCRIPTS / "local_registry.sh"), "start", directory],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if start.returncode != 0:
            act._unavailable(f"no local registry could be started: {start.stderr.strip()[-500:]}")
        try:
            yield start.stdout.strip().splitlines()[-1]
        finally:
            subprocess.run(
                ["bash", str(SCRIPTS / "local_registry.sh"), "stop", directory],
                capture_output=True,
                timeout=60,
                check=False,
            )


def _registry_get(address: str, path: str) -> tuple[dict[str, str], bytes]:
    request = urllib.request.Request(
        f"http://{address}{path}",
        headers={
            "Accept": "application/vnd.docker.distribution.manifest.list.v2+json, "
            "application/vnd.oci.image.index.v1+json"
        },
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return {k.lower(): v for k, v in reply.headers.items()}, reply.read()


@dataclass
class Released:
    workspace: Path
    ref: str
    version: str
    major: str
    source: str
    release: str
    docker_env: dict[str, str]


def _pin_base(docker: str, address: str, env: dict[str, str]) -> str:
    """The base image as a digest reference: BASE_IMAGE itself when it already is one,
    else pushed to the local registry and named by the digest the registry gave it."""
    if "@sha256:" in act.BASE_IMAGE:
        return act.BASE_IMAGE
    tag = f"{address}/review-gate-base:{secrets.token_hex(4)}"
    _run([docker, "tag", act.BASE_IMAGE, tag], cwd=ROOT, env=env)
    _run([docker, "push", tag], cwd=ROOT, env=env)
    digests = _run(
        [docker, "image", "inspect", "--format", "{{json .RepoDigests}}", tag], cwd=ROOT, env=env
    )
    _run([docker, "rmi", tag], cwd=ROOT, env=env)
    pinned = [d for d in json.loads(digests) if d.startswith(f"{address}/review-gate-base@")]
    assert len(pinned) == 1, digests
    return str(pinned[0])


def _remove_local_copies(docker: str, repository: str, env: dict[str, str]) -> None:
    listing = _run(
        [docker, "image", "ls", "--digests", "--format", "{{.Repository}} {{.Tag}} {{.Digest}}"],
        cwd=ROOT,
        env=env,
    )
    names = []
    for line in listing.splitlines():
        repo, tag, digest = line.split(" ")
        if repo != repository:
            continue
        if tag != "<none>":
            names.append(f"{repo}:{tag}")
        if digest != "<none>":
            names.append(f"{repo}@{digest}")
    if names:
        subprocess.run(
            [docker, "rmi", "--force", *names], capture_output=True, timeout=120, check=False
        )


@pytest.fixture(scope="module")
def released(
    tools: dict[str, str], registry: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Released]:
    docker = tools["docker"]
    home = tmp_path_factory.mktemp("docker-config")
    # the manifest lists docker manifest create keeps locally go to a config dir of our own
    env = {**os.environ, "DOCKER_CONFIG": str(home)}
    base = _pin_base(docker, registry, env)

    ws = tmp_path_factory.mktemp("release") / "ws"
    ws.mkdir()
    for name in RELEASE_FILES:
        shutil.copy2(ROOT / name, ws / name)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "gate", ws / "gate", ignore=ignore)
    shutil.copytree(ROOT / "scripts", ws / "scripts", ignore=ignore)
    (ws / ".github" / "workflows").mkdir(parents=True)
    text = act.WORKFLOW.read_text("utf-8")
    assert "\nname: review-gate-e2e\n" in text
    text = text.replace("\nname: review-gate-e2e\n", f"\nname: rg-rel-{secrets.token_hex(4)}\n")
    (ws / ".github" / "workflows" / act.WORKFLOW.name).write_text(text, encoding="utf-8")
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, "commit", "-q", "-m", "source of the release")
    _git(ws, "remote", "add", "origin", f"https://github.com/{act.REPOSITORY}.git")
    source = _git(ws, "rev-parse", "HEAD")
    tag = f"v{gate.__version__}"
    _git(ws, "tag", tag)  # what a maintainer pushes; the release moves it

    script = ["bash", str(ws / "scripts" / "release.sh")]
    version, major = _run([*script, "version", tag], cwd=ws).split()
    image = f"{registry}/review-gate"
    publish_env = {
        **env,
        "PLATFORMS": "linux/amd64",
        "BUILD_NETWORK": "host",
        "BASE_IMAGE": base,
    }
    ref = _run([*script, "publish", image, version], cwd=ws, env=publish_env).splitlines()[-1]
    assert DIGEST_REF.fullmatch(ref), ref
    release = _run([*script, "release-commit", version, ref], cwd=ws).strip()
    # act must fetch the image from the registry, not find it here
    _remove_local_copies(docker, image, env)
    gone = subprocess.run(
        [docker, "image", "inspect", ref], capture_output=True, timeout=60, check=False
    )
    assert gone.returncode != 0, f"{ref} is still present locally"
    try:
        yield Released(ws, ref, version, major, source, release, env)
    finally:
        _remove_local_copies(docker, image, env)
        if base != act.BASE_IMAGE:  # the digest name this module gave the base image
            subprocess.run([docker, "rmi", base], capture_output=True, timeout=60, check=False)


def test_release_commit_pins_the_pushed_digest(released: Released, registry: str) -> None:
    ws = released.workspace
    # both tags name the release commit, a child of the source touching only action.yml
    assert _git(ws, "rev-parse", f"v{released.version}^{{commit}}") == released.release
    assert _git(ws, "rev-parse", f"v{released.major}^{{commit}}") == released.release
    assert _git(ws, "rev-parse", f"{released.release}^") == released.source
    changed = _git(ws, "diff", "--name-only", released.source, released.release)
    assert changed.splitlines() == ["action.yml"]
    before = yaml.safe_load(_git(ws, "show", f"{released.source}:action.yml"))
    after = yaml.safe_load(_git(ws, "show", f"v{released.version}:action.yml"))
    assert before["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert after["runs"] == {"using": "docker", "image": f"docker://{released.ref}"}
    assert {k: v for k, v in after.items() if k != "runs"} == {
        k: v for k, v in before.items() if k != "runs"
    }
    # the registry serves the same manifest list under both tags and by digest
    digest = released.ref.split("@", 1)[1]
    for reference in (released.version, f"v{released.major}", digest):
        headers, body = _registry_get(registry, f"/v2/review-gate/manifests/{reference}")
        assert headers["docker-content-digest"] == digest, reference
        manifest: dict[str, Any] = json.loads(body)
        platforms = [m["platform"] for m in manifest["manifests"]]
        assert platforms == [{"architecture": "amd64", "os": "linux"}], platforms
    # a second release from the release commit is refused (action.yml is already pinned)
    again = subprocess.run(
        ["bash", str(ws / "scripts" / "release.sh"), "pin-action", released.ref],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert again.returncode != 0
    assert "already a release commit" in again.stderr


def test_released_action_runs_the_pulled_image_to_success(
    tools: dict[str, str], released: Released, world: act.World
) -> None:
    ws = released.workspace
    assert _git(ws, "rev-parse", "HEAD") == released.release
    with ReviewerSimulator("openai", act._verdict("pass")) as sim:
        run = act.run_act(
            tools,
            ws,
            act._event(world.head_sha, world.base_sha),
            api_url=world.github.api_url,
            reviewer_url=sim.base_url,
            reviewer_key=world.key,
        )
        assert sim.count == 1, run.explain()
        act._reviewer_requests(sim, world)
    statuses = act._check_common(run, world)
    assert [s["state"] for s in statuses] == ["pending", "success"], run.explain()
    assert run.outputs["state"] == "pass"
    assert run.exit_code == 0
    assert run.gate_result() == "success"
    assert run.job_result == "success"
    assert run.returncode == 0, run.explain()
    comments = world.github.comments.get(act.PR_NUMBER, [])
    assert len(comments) == 1
    # act ran the published bytes: it pulled the image by digest from the registry
    pulled = subprocess.run(
        [tools["docker"], "image", "inspect", "--format", "{{json .RepoDigests}}", released.ref],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert pulled.returncode == 0, f"{released.ref} was not pulled: {pulled.stderr}"
    assert released.ref in json.loads(pulled.stdout)
