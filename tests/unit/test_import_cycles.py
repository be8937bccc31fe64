"""No import cycles in ``gate/``: every dependency points one way.

Each module is read with ``ast``; every ``import`` and ``from ... import`` at any depth
(module level, inside functions, under ``TYPE_CHECKING``) is resolved, relative ones
too, to the module of ``gate`` it names (``from gate.reviewers import sigv4`` names the
module ``gate.reviewers.sigv4``; ``from gate.reviewers.settings import validate`` names
``gate.reviewers.settings``). The graph must have no strongly connected component of
more than one module: a lazy import inside a function does not break a cycle, it only
hides it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

GATE = Path(__file__).resolve().parents[2] / "gate"


def _module_name(path: Path) -> str:
    parts = path.relative_to(GATE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(GATE.rglob("*.py"))}


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of ``gate``, or None."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, source: str, modules: Mapping[str, Path]) -> set[str]:
    """The modules of ``gate`` that the module ``name`` (text ``source``) imports."""
    tree = ast.parse(source)
    package = name.split(".") if modules[name].name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            targets = [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(r for r in (_resolve(t, modules) for t in targets) if r is not None)
    found.discard(name)
    return found


def graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    return {
        name: imports_of(name, path.read_text("utf-8"), modules) for name, path in modules.items()
    }


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_resolves_every_kind_of_import() -> None:
    edges = graph(MODULES)
    assert "gate.errors" in edges["gate.cli"] or any("gate.errors" in v for v in edges.values())
    # a function-level import counts: the pipeline loads the chunked review lazily
    assert "gate.review.chunked" in edges["gate.review.pipeline"]
    # a name imported from a package resolves to the submodule when it is one
    fake = {"gate": Path("__init__.py"), "gate.a": Path("a.py"), "gate.b": Path("b.py")}
    assert imports_of("gate.a", "from gate import b\n", fake) == {"gate.b"}
    assert imports_of("gate.a", "def f():\n    from . import b\n", fake) == {"gate.b"}
    assert imports_of("gate.a", "from gate.b import x\nimport gate\n", fake) == {"gate.b", "gate"}


def test_cycles_are_found_in_a_made_up_graph() -> None:
    """The detector itself: a lazy back edge still closes a cycle."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    fake = {"gate": Path("__init__.py"), "gate.a": Path("a.py"), "gate.b": Path("b.py")}
    lazy = {
        "gate": set(),
        "gate.a": imports_of("gate.a", "import gate.b\n", fake),
        "gate.b": imports_of("gate.b", "def later():\n    from gate.a import x\n", fake),
    }
    assert cycles(lazy) == [["gate.a", "gate.b"]]


def test_gate_has_no_import_cycle() -> None:
    found = cycles(graph(MODULES))
    assert found == [], f"import cycles in gate/ (make each dependency point one way): {found}"
