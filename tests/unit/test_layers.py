"""The core never imports the lab (simulator, fault proxy, selftest, demo scenarios), and
every module keeps the dependency order docs/design.md states.

Every module of ``gate`` outside ``gate/lab`` and ``gate/commands`` is read with
``ast`` and each ``import``/``from ... import`` (at any depth, including the ones
inside functions and ``TYPE_CHECKING`` blocks) is resolved, relative ones too;
none may name ``gate.lab`` or a module under it.
"""

from __future__ import annotations

import ast
import re
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


# --- the dependency order docs/design.md states ------------------------------------------

DESIGN = GATE.parent / "docs" / "design.md"
#: the package's face (its version and user agent, which every layer may read) and the
#: ``python -m gate`` shim, which the order leaves unnamed
FIRST, LAST = ("gate",), ("gate.__main__",)


def _steps(chain: str, package: str) -> list[list[str]]:
    """``a`` → ``b``, ``c`` → ... as lists of module names under ``package``."""
    return [
        [f"{package}.{name.rstrip('/')}" for name in re.findall(r"`([^`]+)`", step)]
        for step in chain.split("→")
    ]


def design_order() -> dict[str, list[list[str]]]:
    """The orders the design's "Dependencies point one way" paragraph states: the whole
    package's (key ``gate``) and each folder's own (``Inside `review/`: ...``)."""
    text = DESIGN.read_text("utf-8")
    para = text[text.index("Dependencies point one way") :]
    para = para[para.index("):") + 2 : para.index("Nothing outside")]
    whole, *inside = para.split("Inside")
    orders = {"gate": [list(FIRST), *_steps(whole.rstrip(" .\n"), "gate"), list(LAST)]}
    for part in inside:
        folder, _, chain = part.partition(":")
        package = "gate." + re.findall(r"`([^`]+)/`", folder)[0]
        orders[package] = _steps(chain.strip().rstrip("."), package)
    return orders


def _step(name: str, order: list[list[str]]) -> int | None:
    """The step of ``order`` that ``name`` (a module, or a name inside one) stands in."""
    found = [
        (len(prefix), index)
        for index, step in enumerate(order)
        for prefix in step
        if name == prefix or name.startswith(prefix + ".")
    ]
    return max(found)[1] if found else None


def test_the_design_states_an_order_for_every_module() -> None:
    orders = design_order()
    assert set(orders) == {"gate", "gate.review", "gate.config"}, orders
    assert orders["gate"][1] == ["gate.errors", "gate.memo"]
    unplaced = [
        _module_name(p)
        for p in GATE.rglob("*.py")
        if _step(_module_name(p), orders["gate"]) is None
    ]
    assert unplaced == [], f"docs/design.md's dependency order does not name {unplaced}"


@pytest.mark.parametrize("path", sorted(GATE.rglob("*.py")), ids=lambda p: str(p.relative_to(GATE)))
def test_a_module_imports_nothing_later_in_the_design_order(path: Path) -> None:
    """Every import, at any depth, points to the module's own step of the order or an earlier
    one (a lazy import is an import: it does not turn a dependency around)."""
    me = _module_name(path)
    later = []
    for order in design_order().values():
        mine = _step(me, order)
        if mine is None:
            continue
        for name in sorted(_imports(path)):
            theirs = _step(name, order)
            if theirs is not None and theirs > mine:
                later.append(name)
    assert later == [], f"{me} imports {sorted(set(later))}, later in docs/design.md's order"
