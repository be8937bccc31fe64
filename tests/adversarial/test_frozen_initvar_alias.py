"""A record's ``__init__`` must take exactly what the standard library's would.

Class: ``gate.frozen``'s fast path writes ``__init__`` from the fields the stdlib found,
so a pseudo-field the stdlib reads as an ``InitVar`` (an argument of ``__init__`` and
``__post_init__``, never a field) must go to the stdlib instead. The fast path told one
apart only by the text ``InitVar`` in a string annotation, while the stdlib reads a
string annotation by looking its head name up in the class's module
(``dataclasses._is_type``): under ``from __future__ import annotations`` an alias
(``IV = InitVar``; ``seed: "IV[int]"``) was a pseudo-field to the stdlib and nothing to
the fast path, whose ``__init__`` then refused the argument and called ``__post_init__``
without it.

Hypothesis draws the alias's name, how the annotation spells it, the pseudo-field's
place and default, and the record's kind; a module holding the alias is made for each
class. Both makers must agree on the signature, the fields and every call's outcome,
and an annotation that names no ``InitVar`` still takes the fast path.
"""

from __future__ import annotations

import dataclasses
import inspect
import keyword
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import frozen

#: the fast path is used, and proven, only on the interpreters CI runs this on
pytestmark = pytest.mark.skipif(
    sys.version_info[:2] not in frozen.PROVEN,
    reason="gate.frozen.dataclass is the standard library's own on this interpreter",
)

ALIASES = st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,7}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name) and "InitVar" not in name
)
SPELLINGS = st.sampled_from(["{}[int]", " {}[int]", "{}", "{}[list[int]]", "{} [str]"])


@contextmanager
def module_with(alias: str, value: object) -> Iterator[str]:
    """A module, registered while in use, whose namespace binds ``alias`` to ``value``."""
    name = f"_frozen_alias_{abs(hash((alias, id(value))))}"
    module = types.ModuleType(name)
    module.__dict__[alias] = value
    sys.modules[name] = module
    try:
        yield name
    finally:
        del sys.modules[name]


def make(maker: Any, module: str, annotation: str, *, before: bool, frozen_kind: bool) -> Any:
    annotations = {"a": "int", "seed": annotation} if not before else {"seed": annotation}
    if before:
        annotations["a"] = "int"
    ns: dict[str, Any] = {
        "__annotations__": annotations,
        "__module__": module,
        "__qualname__": "Rec",
        "__doc__": "A record.",
        "a": 0,
        "seed": 7,
    }

    def __post_init__(self: Any, *args: Any) -> None:
        object.__setattr__(self, "_given", args)

    ns["__post_init__"] = __post_init__
    try:
        return maker(frozen=frozen_kind)(type("Rec", (), ns))
    except (TypeError, ValueError) as err:
        return err


def outcome(cls: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        made = cls(*args, **kwargs)
    except TypeError as err:
        return ("TypeError", str(err))
    return ("ok", (repr(made), made.__dict__.get("_given")))


@settings(max_examples=200, deadline=None)
@given(
    alias=ALIASES,
    spelling=SPELLINGS,
    before=st.booleans(),
    frozen_kind=st.booleans(),
)
def test_an_aliased_initvar_is_a_pseudo_field_as_the_stdlib_reads_it(
    alias: str, spelling: str, before: bool, frozen_kind: bool
) -> None:
    annotation = spelling.format(alias)
    with module_with(alias, dataclasses.InitVar) as module:
        std = make(
            dataclasses.dataclass, module, annotation, before=before, frozen_kind=frozen_kind
        )
        fast = make(frozen.dataclass, module, annotation, before=before, frozen_kind=frozen_kind)
    assert not isinstance(std, Exception), std
    assert not isinstance(fast, Exception), fast
    assert str(inspect.signature(fast)) == str(inspect.signature(std))
    assert [f.name for f in dataclasses.fields(fast)] == [f.name for f in dataclasses.fields(std)]
    for args, kwargs in [((), {}), ((1,), {}), ((1, 5), {}), ((), {"a": 1, "seed": 5})]:
        assert outcome(fast, *args, **kwargs) == outcome(std, *args, **kwargs)


@settings(max_examples=50, deadline=None)
@given(alias=ALIASES, spelling=SPELLINGS)
def test_an_annotation_that_names_no_initvar_keeps_the_fast_path(alias: str, spelling: str) -> None:
    with module_with(alias, int) as module:
        fast = make(
            frozen.dataclass, module, spelling.format(alias), before=False, frozen_kind=True
        )
    assert fast.__dict__.get(frozen.MARK) == "frozen"
    assert [f.name for f in dataclasses.fields(fast)] == ["a", "seed"]
