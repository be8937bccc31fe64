"""Class: an import cycle that crashes an entry point depending on which module comes first.

Cause: ``gate.config`` imported ``gate.providers`` at its top. Importing any
submodule of ``gate.reviewers`` first runs ``gate/reviewers/__init__.py``, which imports
``gate.reviewers.settings``, whose ``ReviewerSettings`` subclasses
``gate.config.ReviewerConfig``. When ``gate.config`` was the first gate module imported (as
``python -m gate`` does through ``gate.commands.demo`` -> ``gate.lab.demo``), the cycle
reached ``from gate.config import ReviewerConfig`` before the class existed: every CLI
command, the GitHub Action included, died with an ImportError traceback and exit code 1,
the code that means "fail". The test suite did not see it because its first imports went
through ``gate.reviewers``.

Fix (on main, b48e198): ``gate.reviewers`` imports only the light provider table
eagerly and loads its transport (which imports ``gate.config``) on first use, so no
cycle is left. (This branch had first moved ``gate.config``'s provider import to its end;
that was dropped for main's fix.) This module keeps the class from coming back.

Variants: every module of the package imported first in a clean module table (one
parametrized case per module), and the entry points run as processes.
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import gate

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(
    ["gate"]
    + [
        info.name
        for info in pkgutil.walk_packages(gate.__path__, "gate.")
        if not info.name.endswith("__main__")  # runs the CLI on import; tested below
    ]
)

_PROBE = """
import importlib, json, sys
results = {}
for name in json.loads(sys.argv[1]):
    for key in [k for k in sys.modules if k == "gate" or k.startswith("gate.")]:
        del sys.modules[key]
    try:
        importlib.import_module(name)
    except Exception as err:
        results[name] = f"{type(err).__name__}: {err}"
    else:
        results[name] = ""
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def first_imports() -> dict[str, str]:
    """Each module imported first, with every gate module forgotten before it."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(MODULES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    results: dict[str, str] = json.loads(done.stdout)
    return results


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_first(module: str, first_imports: dict[str, str]) -> None:
    assert first_imports[module] == "", f"import {module} first: {first_imports[module]}"


def _gate(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--version",), 0),
        (("review", "--help"), 0),
        (("action",), 2),  # outside a workflow: a usage error, never a traceback
    ],
)
def test_entry_points_start(args: tuple[str, ...], code: int) -> None:
    done = _gate(*args)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == code, (done.returncode, done.stderr[-2000:])
