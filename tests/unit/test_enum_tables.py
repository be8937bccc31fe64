"""Class: a table keyed by an enum that misses a member.

``SKIP_FIX`` in gate/diff.py had no entry for ``SkipWhy.BINARY_ASSET``, added with the
member by issue 20; the first pull request of images alone raised ``KeyError`` (issue 34,
finding 1). A partial table is a lookup that someone believed unreachable. So every
dict literal in gate/ whose keys are members of an enum (``{Family.PASS: ...}``) must
name every member of that enum, each once: adding a member fails here until every table
says what it means for it. Found with ``ast`` (at any depth, inside functions too), the
enum resolved from the module's own namespace.
"""

from __future__ import annotations

import ast
import enum
import importlib
from pathlib import Path

import pytest

GATE = Path(__file__).resolve().parents[2] / "gate"


def _module_name(path: Path) -> str:
    parts = path.relative_to(GATE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _enum_classes() -> dict[str, list[type[enum.Enum]]]:
    """Every enum class defined in gate/, by its name (two modules may share one)."""
    found: dict[str, list[type[enum.Enum]]] = {}
    for path in sorted(GATE.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        names = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
        if not names:
            continue
        module = importlib.import_module(_module_name(path))
        for name in names:
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, enum.Enum):
                found.setdefault(name, []).append(cls)
    return found


ENUMS = _enum_classes()


def _tables() -> list[tuple[str, list[ast.Attribute]]]:
    """Each dict literal in gate/ with a key ``<Enum>.<MEMBER>``: its place and its keys."""
    out = []
    for path in sorted(GATE.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Dict):
                continue
            keys = [
                key
                for key in node.keys
                if isinstance(key, ast.Attribute)
                and isinstance(key.value, ast.Name)
                and key.value.id in ENUMS
            ]
            if keys:
                out.append((f"{_module_name(path)}:{node.lineno}", keys))
    return out


TABLES = _tables()


def _enum_of(place: str, name: str) -> type[enum.Enum]:
    """The enum ``name`` means in the module of ``place`` (its namespace, else the only one)."""
    module = importlib.import_module(place.split(":")[0])
    cls = getattr(module, name, None)
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        return cls
    (only,) = ENUMS[name]  # a name two enums share must be imported where it is used
    return only


def test_the_walk_finds_the_tables_that_failed_and_their_kin() -> None:
    places = {place.split(":")[0] for place, _ in TABLES}
    assert {"gate.diff", "gate.providers", "gate.action.next_step"} <= places
    assert "gate.action.github.records" in places
    assert len(TABLES) >= 10
    assert {"SkipWhy", "Provider", "Family", "Status"} <= set(ENUMS)


@pytest.mark.parametrize(("place", "keys"), TABLES, ids=[place for place, _ in TABLES])
def test_every_table_keyed_by_an_enum_names_every_member(
    place: str, keys: list[ast.Attribute]
) -> None:
    named = {key.value.id for key in keys if isinstance(key.value, ast.Name)}
    assert len(named) == 1, f"{place} mixes the enums {sorted(named)}"
    cls = _enum_of(place, named.pop())
    members = [key.attr for key in keys]
    assert len(members) == len(set(members)), f"{place} names a member twice"
    missing = [m.name for m in cls if m.name not in members]
    assert not missing, f"{place}: no entry for {cls.__name__}.{', '.join(missing)}"
