"""Class: a module constant that tests shorten, read as a default argument.

Python binds a default argument's value when the function is defined. A test that
shortens the constant (``monkeypatch.setattr(marker, "LOCK_WAIT_S", 0.2)``) changes
nothing the function reads: ``test_a_held_lock_is_a_bounded_wait_then_busy`` waited the
real 30 seconds while it claimed 0.2, so it proved the wait is bounded by 30 s, not that
the bound is the constant. ``Heartbeat`` had the same shape for its interval.

Fix: each such function takes ``None`` and reads the constant when called.

Oracle: for every constant a test under ``tests/`` patches, no function of ``gate`` names
it as a default argument (``ast`` over both trees), so a later patch of a new constant is
checked too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _patched_constants() -> set[str]:
    """UPPER_CASE names that tests set with ``setattr(module, "NAME", value)``."""
    found = set()
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "setattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and node.args[1].value.lstrip("_").isupper()
            ):
                found.add(node.args[1].value)
    return found


def _defaults_naming(names: set[str]) -> list[str]:
    """Every ``gate`` function whose default argument is one of ``names``."""
    hits = []
    for path in sorted((ROOT / "gate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            for default in defaults:
                for name in ast.walk(default):
                    if isinstance(name, ast.Name) and name.id in names:
                        where = path.relative_to(ROOT)
                        hits.append(f"{where}:{node.lineno} {node.name}(... = {name.id})")
    return hits


def test_the_walk_finds_the_patched_constants() -> None:
    assert {"LOCK_WAIT_S", "INTERVAL", "TICK"} <= _patched_constants()


def test_no_constant_a_test_patches_is_a_default_argument() -> None:
    assert _defaults_naming(_patched_constants()) == []
