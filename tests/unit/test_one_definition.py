"""Class: one value defined in two places.

``REPOSITORY_URL`` (gate/__init__.py) and SARIF's ``INFORMATION_URI`` were the same URL,
``SCHEMA`` (the certificate) and the statement's ``CERTIFICATE_SCHEMA`` the same name, and
a full commit id's pattern was written in three modules (issue 34, finding 9): a change
to one copy leaves the others behind. Every module-level constant in gate/ whose value is
a string literal (or a pattern compiled from one) is read with ``ast``; no two of them,
in any modules, may hold the same string. A value needed in two places is imported from
the one module that defines it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

GATE = Path(__file__).resolve().parents[2] / "gate"
#: shorter strings are words, not values (``"pass"``, ``"utf-8"``)
MIN_CHARS = 8


def _constants() -> dict[str, list[str]]:
    """Each string a module-level name is assigned, and where (``module:line NAME``)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(GATE.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if (  # a compiled pattern is its literal: re.compile("...")
                isinstance(value, ast.Call)
                and ast.unparse(value.func) == "re.compile"
                and value.args
                and isinstance(value.args[0], ast.Constant)
            ):
                value = value.args[0]
            if not isinstance(target, ast.Name) or not isinstance(value, ast.Constant):
                continue
            if isinstance(value.value, str) and len(value.value) >= MIN_CHARS:
                where = f"{path.relative_to(GATE.parent)}:{node.lineno} {target.id}"
                found[value.value].append(where)
    return found


def test_the_walk_sees_the_constants() -> None:
    constants = _constants()
    assert "https://github.com/review-gate/review-gate" in constants
    assert "review-gate.certificate/1" in constants
    assert len(constants) > 50


def test_no_string_value_is_defined_twice() -> None:
    twice = {value: where for value, where in _constants().items() if len(where) > 1}
    assert not twice, "define each once and import it: " + "; ".join(
        f"{value!r} at {', '.join(where)}" for value, where in sorted(twice.items())
    )
