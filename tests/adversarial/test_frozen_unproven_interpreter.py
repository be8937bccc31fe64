"""The fast records only where they are proven the standard library's.

Class: ``gate.frozen`` writes a record's methods itself, to behave exactly as
:func:`dataclasses.dataclass`; ``tests/unit/test_frozen.py`` proves it against the
stdlib of the interpreter the tests run on, which CI's matrix makes 3.11 and 3.12. The
package installs on any Python from 3.11 (``requires-python``), and 3.13's dataclass
already differs: its ``__eq__`` says a record equals itself before reading a field, then
compares field by field (a NaN held by two records is unequal there, equal in the fast
path's tuples), and its definition errors are worded otherwise. Records whose equality
and ``__init__`` nobody has compared with that stdlib decided verdicts there.

Hypothesis draws interpreter versions; ``gate/frozen.py`` is loaded afresh under each.
Its ``dataclass`` must be the fast one only on a version in :data:`gate.frozen.PROVEN`,
the stdlib's own everywhere else, and ``PROVEN`` must name no version CI does not run
the differential test on.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from hypothesis import given, settings
from hypothesis import strategies as st

from gate import frozen

CI = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "ci.yml"


def load_under(version: tuple[int, int, int]) -> ModuleType:
    """``gate/frozen.py`` executed afresh while ``sys.version_info`` says ``version``."""
    spec = importlib.util.spec_from_file_location("_frozen_under_probe", frozen.__file__)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    real = sys.version_info
    sys.version_info = (*version, "final", 0)  # type: ignore[assignment]
    try:
        spec.loader.exec_module(module)
    finally:
        sys.version_info = real
    return module


def ci_versions() -> set[tuple[int, int]]:
    """The Python versions of CI's matrix (``python: ["3.11", "3.12"]``)."""
    found = re.search(r"python:\s*\[([^\]]*)\]", CI.read_text(encoding="utf-8"))
    assert found is not None, "CI's python matrix was not found"
    versions = re.findall(r"(\d+)\.(\d+)", found.group(1))
    return {(int(major), int(minor)) for major, minor in versions}


@settings(max_examples=60, deadline=None)
@given(minor=st.integers(9, 20), micro=st.integers(0, 12))
def test_the_fast_records_only_on_a_proven_interpreter(minor: int, micro: int) -> None:
    module = load_under((3, minor, micro))
    if (3, minor) in getattr(module, "PROVEN", ()):
        assert module.dataclass is module._dataclass
    else:
        assert module.dataclass is dataclasses.dataclass, (3, minor)


def test_proven_names_only_what_ci_runs_the_differential_test_on() -> None:
    proven = set(getattr(frozen, "PROVEN", ()))
    assert proven <= ci_versions()
    assert (sys.version_info[:2] in proven) == (frozen.dataclass is frozen._dataclass)
