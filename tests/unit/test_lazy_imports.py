"""Start-up imports: each command loads what it uses when it runs, and nothing else.

Structural, not timing: each case runs the command line in a fresh interpreter and
reads ``sys.modules`` as it exits. ``--version``, ``--help`` and every command's
``--help`` must load none of the heavy libraries (httpx, PyGithub, jsonschema,
PyYAML, cmark-gfm); PyGithub only on the action path, jsonschema only when a config
(a file or an option) does not conform (a valid one is checked by gate.config.check),
PyYAML only when a config file is read, httpx only when a request is made, cmark-gfm with
the verdict module (the decision imports it).

Also: every module of ``gate`` imports on its own, first, in a fresh set of ``gate``
modules. An import cycle that works only in one order (``gate.reviewers`` before
``gate.config``) once made ``review-gate --version`` itself fail with ImportError,
while every test passed because the test process had imported the other module first.
"""

from __future__ import annotations

import ast
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gate import __version__, cli
from gate.lab.selftest import builtin_envelope

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("httpx", "github", "jsonschema", "yaml", "cmarkgfm")
TIMEOUT_S = 60

#: runs ``python -m gate ARGS...`` and writes the modules loaded at exit to a file
PROBE = """
import atexit, json, runpy, sys
out = sys.argv[1]
def dump():
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(sorted(sys.modules), handle)
atexit.register(dump)
sys.argv = ["review-gate", *sys.argv[2:]]
runpy.run_module("gate", run_name="__main__", alter_sys=True)
"""


def run_gate(
    tmp_path: Path, *argv: str, env: dict[str, str] | None = None
) -> tuple[int, set[str], str]:
    """Exit code, the modules loaded, and the output of ``review-gate ARGV`` in a new process."""
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
        check=False,
    )
    modules = set(json.loads(out.read_text("utf-8")))
    return done.returncode, modules, done.stdout + done.stderr


def heavy(modules: set[str]) -> list[str]:
    return [name for name in HEAVY if name in modules]


COMMANDS = [command.NAME for command in cli._discover()]


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--version"], 0),
        (["--help"], 0),
        ([], 2),  # no command: the help, as a usage error
        *[([name, "--help"], 0) for name in COMMANDS],
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else str(value),
)
def test_version_and_help_load_nothing_heavy(tmp_path: Path, argv: list[str], code: int) -> None:
    returncode, modules, output = run_gate(tmp_path, *argv)
    assert returncode == code, output
    assert heavy(modules) == []
    if argv == ["--version"]:
        assert output == f"review-gate {__version__}\n"
        # nor any command's implementation: the command-line modules and what they report with
        own = {"gate.cli", "gate.commands", "gate.commands._io", "gate.errors", "gate.safe"}
        own |= {"gate.safe.redact", "gate.safe.untrusted"}
        beyond = {m for m in modules if m.startswith("gate.")} - own
        assert sorted(beyond) == sorted(f"gate.commands.{m}" for m in cli._module_names())


def test_python_m_gate_version_imports_nothing_heavy() -> None:
    """``python -X importtime -m gate --version`` lists every module the run imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gate", "--version"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"review-gate {__version__}\n"
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "argparse" in imported  # the listing is read correctly
    assert [m for m in imported if m.split(".")[0] in HEAVY] == []


def test_verify_loads_the_renderer_and_nothing_else_heavy(tmp_path: Path) -> None:
    raw, binding = builtin_envelope()
    (tmp_path / "answer.mc1").write_bytes(raw)
    code, modules, output = run_gate(
        tmp_path,
        "verify",
        "answer.mc1",
        "--diff-sha",
        binding.diff_sha,
        "--policy-version",
        binding.policy_version,
    )
    assert code == 0, output  # a pass: its one fence was counted by cmark-gfm
    assert heavy(modules) == ["cmarkgfm"]


def test_seal_loads_nothing_heavy(tmp_path: Path) -> None:
    (tmp_path / "content.txt").write_bytes(b"text\n")
    code, modules, output = run_gate(tmp_path, "seal", "content.txt", "-o", "out.mc1")
    assert code == 0, output
    assert heavy(modules) == []


DIFF = b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_review_without_a_request_loads_no_http_client(tmp_path: Path) -> None:
    """Every file excluded: the config is read and validated, the reviewer is not called."""
    (tmp_path / "change.diff").write_bytes(DIFF)
    (tmp_path / "config.yml").write_text(
        'reviewer:\n  provider: mc1\n  base_url: "http://127.0.0.1:9/v1"\nexclude: ["**"]\n',
        encoding="utf-8",
    )
    code, modules, output = run_gate(
        tmp_path,
        "review",
        "--diff",
        "change.diff",
        "--config",
        "config.yml",
        env={"REVIEW_GATE_API_KEY": "test-key"},
    )
    assert code == 0, output  # nothing_in_scope: pass (the default)
    assert "nothing in scope: 1 file excluded by config" in output
    assert heavy(modules) == ["yaml"]  # a valid config is checked without jsonschema


def test_review_with_a_request_loads_httpx_but_not_pygithub(tmp_path: Path) -> None:
    (tmp_path / "change.diff").write_bytes(DIFF)
    code, modules, output = run_gate(
        tmp_path,
        "review",
        "--diff",
        "change.diff",
        "--provider",
        "mc1",
        "--base-url",
        f"http://127.0.0.1:{_closed_port()}/v1",
        "--attempts",
        "1",
        env={"REVIEW_GATE_API_KEY": "test-key"},
    )
    assert code == 3, output
    assert "connect_error" in output  # the request was made
    # options are checked against the schema without jsonschema; no file, so no YAML; the
    # verdict module (imported to decide) brings cmark-gfm, 3M instructions (issue 35)
    assert heavy(modules) == ["httpx", "cmarkgfm"]


def _gate_modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "gate").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__":
            continue  # runs the command line when imported
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


#: imports each module named on the command line first, after forgetting every gate module
ALONE = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "gate" or m.startswith("gate.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc(limit=1).strip().splitlines()[-1])
print("\\n".join(failed))
"""


def test_every_module_imports_first_on_its_own() -> None:
    modules = _gate_modules()
    assert "gate.config.model" in modules
    assert "gate.reviewers" in modules
    done = subprocess.run(
        [sys.executable, "-c", ALONE, *modules],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


#: the libraries PyGithub brings, reached only through gate.action.github.sdk
PYGITHUB_STACK = ("github", "requests", "urllib3")


def _imported_roots(path: Path) -> set[str]:
    """The top-level names a module imports, anywhere in it (module level or a function)."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_pygithub_is_reached_through_one_module() -> None:
    users = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "gate").rglob("*.py")
        if _imported_roots(path) & set(PYGITHUB_STACK)
    )
    assert users == ["gate/action/github/sdk.py"]


#: builds the action's GitHub client, then makes its first PyGithub call (no request:
#: PyGithub objects are lazy), printing which of PyGithub's stack was loaded at each step
FIRST_USE = """
import sys
from gate.action.github.client import GitHubClient
from gate.action.github.http import GitHubSettings
stack = ("github", "requests", "urllib3")
def loaded():
    return ",".join(m for m in stack if m in sys.modules)
gh = GitHubClient(GitHubSettings(repository="o/r", api_url="http://127.0.0.1:9", token="t"))
print(loaded())
print(gh.repo.full_name)
print(loaded())
"""


def test_pygithub_is_imported_at_its_first_call_not_before() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FIRST_USE],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["", "o/r", "github,requests,urllib3"]
