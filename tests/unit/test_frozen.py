"""gate.frozen.dataclass against the standard library's, as the oracle.

Hypothesis draws class shapes (fields with and without defaults, factories, ``repr``,
``compare``, ``hash`` and ``kw_only`` flags, a frozen base, ``__post_init__``, a
docstring or none) and calls; each shape is built twice, once by
:func:`dataclasses.dataclass` and once by :func:`gate.frozen.dataclass`, and everything
observable must match: the definition's own error, the signature and docstring,
``fields()``, ``__match_args__``, each call's result or ``TypeError`` message, ``repr``,
equality, hash, ``replace()``, ``asdict()``, and the ``FrozenInstanceError`` of a write.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import inspect
import itertools
import pickle
import sys
from dataclasses import KW_ONLY, InitVar, field
from functools import partial
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

NAMES = ["a", "b", "c", "d", "e", "self"]  # "self": the stdlib's __init__ renames its own
VALUES = st.one_of(
    st.integers(-3, 3),
    st.text(max_size=3),
    st.none(),
    st.lists(st.integers(0, 2), max_size=2),  # unhashable: hash() must fail alike
    st.just(float("nan")),
)
FACTORIES = [list, dict, tuple, lambda: 7]


@st.composite
def field_specs(draw: st.DrawFn, names: list[str]) -> list[dict[str, Any]]:
    out = []
    for name in names:
        out.append(
            {
                "name": name,
                "default": draw(st.sampled_from(["none", "value", "factory"])),
                "value": draw(st.one_of(st.integers(-2, 2), st.text(max_size=2), st.none())),
                "factory": draw(st.integers(0, len(FACTORIES) - 1)),
                "repr": draw(st.booleans()),
                "compare": draw(st.booleans()),
                "hash": draw(st.sampled_from([None, True, False])),
                "kw_only": draw(st.sampled_from([None, None, True])),
                "plain": draw(st.booleans()),  # a bare default instead of field()
            }
        )
    return out


@st.composite
def shapes(draw: st.DrawFn) -> dict[str, Any]:
    pool = draw(st.permutations(NAMES))
    base_n = draw(st.integers(0, 2))
    redefined = draw(st.integers(0, base_n))  # own fields that redefine a base's (its flags)
    own_n = draw(st.integers(0, 4))
    return {
        "base": draw(field_specs(pool[:base_n])) if draw(st.booleans()) else None,
        "fields": draw(field_specs(pool[base_n - redefined : base_n - redefined + own_n])),
        "kw_only": draw(st.booleans()),
        "sentinel": draw(st.integers(-1, own_n)),  # where a KW_ONLY marker goes (-1: none)
        "doc": draw(st.booleans()),
        "post_init": draw(st.booleans()),
        "frozen": draw(st.booleans()),
        "base_frozen": draw(st.sampled_from([True, True, False])),  # mostly alike
    }


def namespace(specs: list[dict[str, Any]], *, sentinel: int, doc: bool, post: bool) -> dict:
    annotations: dict[str, Any] = {}
    ns: dict[str, Any] = {"__qualname__": "Rec", "__module__": __name__}
    for i, spec in enumerate(specs):
        if i == sentinel:
            annotations["_"] = KW_ONLY
        annotations[spec["name"]] = "object"
        kwargs: dict[str, Any] = {
            "repr": spec["repr"],
            "compare": spec["compare"],
            "hash": spec["hash"],
        }
        if spec["kw_only"] is not None:
            kwargs["kw_only"] = spec["kw_only"]
        if spec["default"] == "value":
            if spec["plain"]:
                ns[spec["name"]] = spec["value"]
                continue
            kwargs["default"] = spec["value"]
        elif spec["default"] == "factory":
            kwargs["default_factory"] = FACTORIES[spec["factory"]]
        ns[spec["name"]] = field(**kwargs)
    ns["__annotations__"] = annotations
    if doc:
        ns["__doc__"] = "A record."
    if post:

        def __post_init__(self: Any) -> None:
            object.__setattr__(self, "_seen", [getattr(self, n) for n in annotations if n != "_"])

        ns["__post_init__"] = __post_init__
    return ns


def build(maker: Any, shape: dict[str, Any]) -> Any:
    """The shape's class made by ``maker``, or the exception its definition raised."""
    try:
        bases: tuple[type, ...] = ()
        if shape["base"] is not None:
            ns = namespace(shape["base"], sentinel=-1, doc=True, post=False)
            ns["__qualname__"] = "Base"
            bases = (maker(frozen=shape["base_frozen"])(type("Base", (), ns)),)
        ns = namespace(
            shape["fields"], sentinel=shape["sentinel"], doc=shape["doc"], post=shape["post_init"]
        )
        return maker(frozen=shape["frozen"], kw_only=shape["kw_only"])(type("Rec", bases, ns))
    except (TypeError, ValueError) as err:
        return err


def subclassed(cls: type, frozen: bool) -> tuple[str, Any]:
    """A dataclass the standard library makes of a subclass (an option the fast path
    leaves to it): the outcome of its definition, and its params."""

    def make() -> str:
        ns = {"__annotations__": {"z": "object"}, "z": 0, "__qualname__": "Sub"}
        sub = dataclasses.dataclass(frozen=frozen, order=True)(type("Sub", (cls,), ns))
        return repr(sub.__dataclass_params__)

    return outcome(make)


def outcome(fn: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn())
    except Exception as err:  # the comparison is the point: type and message
        return (type(err).__name__, str(err))


def observe(obj: Any) -> dict[str, Any]:
    return {
        "repr": outcome(lambda: repr(obj)),
        "vars": outcome(lambda: repr(sorted(vars(obj).items()))),
        "hash": outcome(lambda: hash(obj)),
        "eq_self": outcome(lambda: obj == obj),
        "asdict": outcome(lambda: repr(dataclasses.asdict(obj))),
    }


calls = st.tuples(
    st.lists(VALUES, max_size=7),
    st.dictionaries(st.sampled_from([*NAMES, "zz"]), VALUES, max_size=4),
)


@settings(max_examples=400, deadline=None)
@given(shapes(), st.lists(calls, min_size=1, max_size=4))
def test_same_as_the_standard_library(shape: dict[str, Any], tries: list[Any]) -> None:
    std, fast = build(dataclasses.dataclass, shape), build(frozen.dataclass, shape)
    if isinstance(std, Exception):
        assert type(fast) is type(std)
        assert str(fast) == str(std)
        return
    assert not isinstance(fast, Exception), fast
    assert fast.__dict__.get(frozen.MARK) == ("frozen" if shape["frozen"] else "mutable")
    assert str(inspect.signature(fast)) == str(inspect.signature(std))
    assert fast.__doc__ == std.__doc__
    assert fast.__match_args__ == std.__match_args__
    # what the stdlib records and reads back when it makes a dataclass of a subclass
    assert repr(fast.__dataclass_params__) == repr(std.__dataclass_params__)
    assert subclassed(fast, shape["frozen"]) == subclassed(std, shape["frozen"])
    assert [
        (f.name, f.default, f.default_factory, f.repr, f.compare, f.hash, f.kw_only)
        for f in dataclasses.fields(fast)
    ] == [
        (f.name, f.default, f.default_factory, f.repr, f.compare, f.hash, f.kw_only)
        for f in dataclasses.fields(std)
    ]
    made = []
    for args, kwargs in tries:
        a, b = outcome(partial(std, *args, **kwargs)), outcome(partial(fast, *args, **kwargs))
        if a[0] != "ok":
            assert b == a
            continue
        assert b[0] == "ok", b
        s, f = a[1], b[1]
        assert observe(f) == observe(s)
        for name in [*(x.name for x in dataclasses.fields(s)), "other"]:
            fc, sc = copy.copy(f), copy.copy(s)
            assert outcome(partial(setattr, fc, name, 1)) == outcome(partial(setattr, sc, name, 1))
            assert observe(fc) == observe(sc)
            assert outcome(partial(delattr, fc, name)) == outcome(partial(delattr, sc, name))
            assert observe(fc) == observe(sc)
        changed = {x.name: 5 for x in dataclasses.fields(s)[:1]}
        assert observe(dataclasses.replace(f, **changed)) == observe(
            dataclasses.replace(s, **changed)
        )
        made.append((s, f))
    for (s1, f1), (s2, f2) in itertools.pairwise(made):
        assert (f1 == f2) == (s1 == s2)
        assert (f1 != f2) == (s1 != s2)


def test_a_subclass_that_is_no_dataclass_stays_writable_alike() -> None:
    for maker in (dataclasses.dataclass, frozen.dataclass):

        @maker(frozen=True)
        class Rec:
            """A record."""

            a: int

        class Sub(Rec):
            pass

        sub = Sub(1)
        sub.extra = 2  # type: ignore[attr-defined]  # not a field, not the record's own class
        assert sub.extra == 2  # type: ignore[attr-defined]
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
            sub.a = 3  # type: ignore[misc]


def test_recursion_is_shown_as_dots_and_pickling_round_trips() -> None:
    @frozen.dataclass(frozen=True)
    class Node:
        """A node."""

        items: list[Any]

    node = Node([])
    node.items.append(node)
    assert (
        repr(node)
        == "test_recursion_is_shown_as_dots_and_pickling_round_trips.<locals>.Node(items=[...])"
    )
    assert pickle.loads(pickle.dumps(Pair(1, "x"))) == Pair(1, "x")


@frozen.dataclass(frozen=True)
class Pair:
    """A module-level record, for pickle."""

    x: int
    y: str = "y"


@pytest.mark.parametrize(
    "body",
    [
        {"__repr__": lambda self: "own"},
        {"__eq__": lambda self, other: True},
        {"__hash__": lambda self: 1},
        {"__slots__": ()},
        {"__annotations__": {"a": "int", "b": "InitVar[int]"}, "b": 0},
        {"__annotations__": {"a": "int", "b": InitVar[int]}, "b": 0},
        {"__annotations__": {"a": "int", "b": "int"}, "b": field(default=0, init=False)},
    ],
)
def test_what_the_fast_path_leaves_to_the_standard_library(body: dict[str, Any]) -> None:
    ns = {"__annotations__": {"a": "int"}, "__qualname__": "Rec", **body}
    made = frozen.dataclass(frozen=True)(type("Rec", (), dict(ns)))
    assert frozen.MARK not in made.__dict__
    std = dataclasses.dataclass(frozen=True)(type("Rec", (), dict(ns)))
    assert str(inspect.signature(made)) == str(inspect.signature(std))


def test_other_options_go_to_the_standard_library_and_plain_ones_stay_mutable() -> None:
    made = frozen.dataclass(frozen=True, order=True)(
        type("R", (), {"__annotations__": {"a": "int"}})
    )
    assert frozen.MARK not in made.__dict__
    assert made(1) < made(2)
    plain = frozen.dataclass(type("P", (), {"__annotations__": {"a": "int"}}))
    assert plain.__dict__[frozen.MARK] == "mutable"
    record = plain(1)
    record.a = 2
    assert record == plain(2)
    with pytest.raises(TypeError, match="unhashable"):
        hash(record)


def test_a_non_frozen_dataclass_may_not_inherit_from_a_frozen_record() -> None:
    for maker in (dataclasses.dataclass, frozen.dataclass):
        base = maker(frozen=True)(type("B", (), {"__annotations__": {"a": "int"}}))
        with pytest.raises(
            TypeError, match="cannot inherit non-frozen dataclass from a frozen one"
        ):
            maker(type("C", (base,), {"__annotations__": {"b": "int"}}))


def test_a_frozen_record_may_not_inherit_from_a_non_frozen_dataclass() -> None:
    for maker in (dataclasses.dataclass, frozen.dataclass):
        base = maker(type("B", (), {"__annotations__": {"a": "int"}}))
        with pytest.raises(
            TypeError, match="cannot inherit frozen dataclass from a non-frozen one"
        ):
            maker(frozen=True)(type("C", (base,), {"__annotations__": {"b": "int"}}))


def test_a_base_s_abstract_method_the_record_writes_is_no_longer_abstract() -> None:
    """The stdlib recomputes the abstract methods after writing its own; so does the
    fast path, else a record whose ABC base declares ``__repr__`` could not be made."""

    class Shown(abc.ABC):
        @abc.abstractmethod
        def __repr__(self) -> str: ...

    for maker in (dataclasses.dataclass, frozen.dataclass):
        for kind in (True, False):
            ns = {"__annotations__": {"a": "int"}}
            rec = maker(frozen=kind)(type("Rec", (Shown,), ns))
            assert not rec.__abstractmethods__
            assert repr(rec(1)) == "Rec(a=1)"
