"""Every function of ``gate/`` reads in one screen: at most 90 lines, its docstring included.

Read with ``ast``: a function (or method, or nested function) runs from its ``def`` line
to its last line. A longer one is split where its steps part (see ``run_chunks``, which
hands one chunk's decision to ``_decide_chunk`` and the table to ``_chunk_table``).
"""

from __future__ import annotations

import ast
from pathlib import Path

GATE = Path(__file__).resolve().parents[2] / "gate"
MAX_LINES = 90


def long_functions(source: str, *, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """(name, lines) of every function in ``source`` longer than ``limit`` lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((node.name, lines))
    return found


def test_the_count_sees_functions_methods_and_nested_ones() -> None:
    source = (
        "def f():\n    a = 1\n    b = 2\n    c = 3\n\n"  # 4 lines
        "class C:\n"
        "    async def m(self):\n"  # 5 lines, holding a nested function of 3
        "        def inner():\n            a = 1\n            b = 2\n"
        "        return inner\n"
    )
    assert long_functions(source, limit=2) == [("f", 4), ("m", 5), ("inner", 3)]
    assert long_functions(source, limit=4) == [("m", 5)]
    assert long_functions(source, limit=5) == []


def test_every_function_is_at_most_90_lines() -> None:
    paths = sorted(GATE.rglob("*.py"))
    assert len(paths) > 50
    long = [
        f"{path.relative_to(GATE.parent)}:{name} ({lines} lines)"
        for path in paths
        for name, lines in long_functions(path.read_text("utf-8"))
    ]
    assert long == [], f"split these where their steps part: {long}"
