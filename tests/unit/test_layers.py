"""The core never imports the lab (simulator, fault proxy, selftest, demo scenarios).

Every module of ``gate`` outside ``gate/lab`` and ``gate/commands`` is read with
``ast`` and each ``import``/``from ... import`` (at any depth, including the ones
inside functions and ``TYPE_CHECKING`` blocks) is resolved, relative ones too;
none may name ``gate.lab`` or a module under it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GATE = Path(__file__).resolve().parents[2] / "gate"
OUTSIDE_CORE = ("lab", "commands")


def _module_name(path: Path) -> str:
    parts = path.relative_to(GATE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _core_modules() -> list[Path]:
    return sorted(
        path for path in GATE.rglob("*.py") if path.relative_to(GATE).parts[0] not in OUTSIDE_CORE
    )


def test_the_walk_sees_the_core_and_resolves_imports() -> None:
    core = {_module_name(p) for p in _core_modules()}
    assert {"gate.review.pipeline", "gate.action.run", "gate.apply", "gate.reviewers.base"} <= core
    assert not any(name.startswith(("gate.lab", "gate.commands")) for name in core)
    # the resolver itself: the command that runs the demo does import the lab
    assert "gate.lab.demo" in _imports(GATE / "commands" / "demo.py")


@pytest.mark.parametrize("path", _core_modules(), ids=lambda p: str(p.relative_to(GATE)))
def test_core_module_does_not_import_the_lab(path: Path) -> None:
    lab = sorted(
        name for name in _imports(path) if name == "gate.lab" or name.startswith("gate.lab.")
    )
    assert lab == [], f"{path.relative_to(GATE.parent)} imports {lab}: the core must not"
