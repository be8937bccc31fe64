"""``dataclass``, as the standard library's, without compiling code for each class.

Python 3.11's and 3.12's :func:`dataclasses.dataclass` writes the source of each method
it adds (``__init__``, ``__repr__``, ``__eq__``, and for a frozen class ``__hash__``,
``__setattr__`` and ``__delattr__``) and compiles each with ``exec``: 0.2 ms a plain
class, 0.6 to 1 ms a frozen one. The gate defines about a hundred records, and the ~50 a
``review`` loads cost about 45 ms of its start, as much as everything else the gate
imports (issue 22).

:func:`dataclass` here gives the same classes with none of that compiling. The standard
library still reads the fields (``dataclasses.dataclass(init=False, repr=False,
eq=False)``: annotations, defaults, ``field()``, ``KW_ONLY``, ``ClassVar``, inherited
fields, the mutable-default check, ``__match_args__``), so :func:`dataclasses.fields`,
:func:`~dataclasses.replace`, :func:`~dataclasses.asdict` and ``match`` all work; the
methods are then shared functions closed over each class's field names, with the
standard library's exact behaviour: the same ``repr`` (fields with ``repr=False`` left
out, recursion shown as ``...``), equality over the same tuples, the same hash (frozen)
or none (mutable), the same :class:`~dataclasses.FrozenInstanceError`, and ``__init__``
with the same signature, defaults, factories, keyword-only fields, ``__post_init__`` and
``TypeError`` messages. ``tests/unit/test_frozen.py`` proves it against the standard
library over generated classes and calls (Hypothesis).

On an interpreter it is not proven on (:data:`PROVEN`: 3.11 and 3.12, CI's matrix),
:func:`dataclass` is the standard library's own. What the fast path does not cover goes
to the standard library unchanged: an option other than ``frozen`` and ``kw_only``, a
class that defines one of the six methods itself, ``__slots__``, an ``InitVar`` (an
alias of it too, read as the standard library reads it) or an ``init=False`` field, or
that inherits from a dataclass made elsewhere. ``__dataclass_params__`` says what the
standard library would record (its inheritance checks read it: a dataclass it makes may
subclass a record), and :data:`MARK` names the kind. The ``__init__`` is one function
taking ``*args, **kwargs`` under the stdlib's signature: what reads its code rather than
its ``__signature__`` (``__defaults__``, its annotations) sees that.

Type checkers see :func:`dataclasses.dataclass` itself (the ``TYPE_CHECKING`` branch),
so mypy's dataclass support applies unchanged.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import re
import reprlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, FrozenInstanceError
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

__all__ = ["dataclass"]

T = TypeVar("T")

#: the methods the fast path writes; a class that defines one itself goes to the stdlib
_OWN = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")
#: the class attribute naming a record made here: ``"frozen"`` or ``"mutable"``
MARK = "__gate_dataclass__"


def _dataclass(cls: type[T] | None = None, /, **options: Any) -> Any:
    """``@dataclass`` with the stdlib's options; ``frozen`` and ``kw_only`` alone take the
    fast path when :func:`_fast` allows."""

    def wrap(klass: type[T]) -> type[T]:
        frozen = bool(options.get("frozen", False))
        # a frozen record's params say frozen, so the stdlib refuses a mutable child of it
        # itself; the fast path asks the stdlib for frozen only under a frozen base
        # (_record), so a frozen child of a mutable record is refused here
        if frozen and any(base.__dict__.get(MARK) == "mutable" for base in klass.__mro__[1:]):
            raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
        if options.keys() <= {"frozen", "kw_only"} and _fast(klass):
            return _record(klass, frozen=frozen, kw_only=bool(options.get("kw_only", False)))
        return dataclasses.dataclass(klass, **options)

    return wrap if cls is None else wrap(cls)


def _fast(cls: type) -> bool:
    """Whether the fast path makes exactly what the stdlib would: not for a class that
    writes one of the six methods itself, has ``__slots__``, an ``InitVar`` or an
    ``init=False`` field, or a dataclass base made elsewhere."""
    if any(name in cls.__dict__ for name in (*_OWN, "__slots__")):
        return False
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in base.__dict__ and not base.__dict__.get(MARK):
            return False
    for name, kind in inspect.get_annotations(cls).items():
        value = cls.__dict__.get(name)
        if _initvar(kind, cls.__module__) or (isinstance(value, Field) and not value.init):
            return False
    return True


#: the head of a string annotation, as the stdlib reads it (``dataclasses._is_type``)
_HEAD = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")


def _initvar(kind: object, module: str) -> bool:
    """Whether the stdlib may read ``kind`` as an ``InitVar`` (a pseudo-field the fast
    ``__init__`` would not take). A string annotation is read as the stdlib reads it: its
    head name looked up in the class's module, so an alias (``IV = InitVar``, then
    ``seed: "IV[int]"`` under ``from __future__ import annotations``) is one too, not
    only a string that spells ``InitVar``."""
    if isinstance(kind, str):
        if "InitVar" in kind:
            return True
        head = _HEAD.match(kind)
        if head is None:
            return False
        kind = getattr(sys.modules.get(module), "__dict__", {}).get(head.group(2))
    return isinstance(kind, dataclasses.InitVar) or kind is dataclasses.InitVar


def _record(cls: type[T], *, frozen: bool, kw_only: bool) -> type[T]:
    had_doc = bool(cls.__dict__.get("__doc__"))
    if not had_doc:  # else the stdlib describes object's signature (parsing its text), unused
        cls.__doc__ = "-"
    # frozen for the stdlib's own check only when a base is a frozen record (whose params
    # say frozen, _as_generated): its two methods are then compiled, and replaced below
    frozen_base = frozen and any(b.__dict__.get(MARK) == "frozen" for b in cls.__mro__[1:])
    made = dataclasses.dataclass(
        cls, init=False, repr=False, eq=False, frozen=frozen_base, kw_only=kw_only
    )
    own: list[Field[Any]] = list(dataclasses.fields(made))  # type: ignore[arg-type]
    _check_defaults(own)
    names = frozenset(f.name for f in own)
    methods: dict[str, Any] = {
        "__init__": _init(made, own, frozen=frozen),
        "__repr__": _repr(tuple(f.name for f in own if f.repr)),
        "__eq__": _eq(tuple(f.name for f in own if f.compare)),
    }
    if frozen:
        methods["__hash__"] = _hash(tuple(f.name for f in own if _hashed(f)))
        methods["__setattr__"] = _setattr(made, names)
        methods["__delattr__"] = _delattr(made, names)
    for name, method in methods.items():
        method.__qualname__ = f"{made.__qualname__}.{name}"
        method.__module__ = made.__module__
        setattr(made, name, method)
    if not frozen:
        made.__hash__ = None  # type: ignore[assignment]  # eq without frozen: unhashable
    setattr(made, MARK, "frozen" if frozen else "mutable")
    _as_generated(made.__dataclass_params__, frozen=frozen)  # type: ignore[attr-defined]
    abc.update_abstractmethods(made)  # the methods may be a base's abstract ones
    if not had_doc:
        made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
    return made


def _as_generated(params: Any, *, frozen: bool) -> None:
    """Make the class's ``__dataclass_params__`` (the stdlib's own object, made for this
    class) say what ``dataclass(frozen=frozen)`` records: the stdlib's inheritance checks
    read it, and a frozen record it thought non-frozen could not be the base of a frozen
    dataclass the stdlib makes (``order=True``, say). Set field by field: the object's
    constructor is private and its parameters differ between 3.11 and 3.12."""
    for name in ("init", "repr", "eq"):
        setattr(params, name, True)
    params.frozen = frozen


def _hashed(f: Field[Any]) -> bool:
    return bool(f.compare) if f.hash is None else bool(f.hash)


def _check_defaults(own: list[Field[Any]]) -> None:
    """The stdlib's definition-time check: a positional field without a default may not
    follow one with a default."""
    seen_default = False
    for f in own:
        if f.kw_only:
            continue
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _listed(names: list[str]) -> str:
    """CPython's list of missing names: 'a', 'a' and 'b', 'a', 'b', and 'c'."""
    quoted = [repr(name) for name in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def _init(cls: type, own: list[Field[Any]], *, frozen: bool) -> Callable[..., None]:
    """``__init__``: the stdlib's parameters (positional fields in order, then keyword-only
    ones), defaults and factories, set in field order (a frozen record's with
    ``object.__setattr__``, a mutable one's as ``self.name = value``), then
    ``__post_init__``."""
    positional = [f for f in own if not f.kw_only]
    keyword = [f for f in own if f.kw_only]
    by_name = {f.name: f for f in own}
    pos_names = tuple(f.name for f in positional)
    kw_names = frozenset(f.name for f in keyword)
    names = frozenset(by_name)
    required = frozenset(f.name for f in own if _no_default(f))
    plan = tuple((f.name, f.default, f.default_factory) for f in own)
    most = len(pos_names)
    has_post_init = hasattr(cls, "__post_init__")
    set_field = object.__setattr__ if frozen else setattr
    qualname = f"{cls.__qualname__}.__init__"
    self_name = "__dataclass_self__" if "self" in by_name else "self"

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        if len(args) == most and not kwargs and not kw_names:  # every field, in order
            for name, value in zip(pos_names, args, strict=True):
                set_field(self, name, value)
            if has_post_init:
                self.__post_init__()
            return
        values: dict[str, Any] = kwargs
        if args:
            if len(args) > most or not kwargs.keys().isdisjoint(pos_names[: len(args)]):
                _bind(qualname, self_name, args, kwargs, pos_names, kw_names, by_name)
            values = dict(zip(pos_names, args, strict=False))
            values.update(kwargs)
        if not values.keys() <= names or not required <= values.keys():
            _bind(qualname, self_name, args, kwargs, pos_names, kw_names, by_name)
        for name, default, factory in plan:
            if name in values:
                set_field(self, name, values[name])
            elif factory is MISSING:
                set_field(self, name, default)
            else:
                set_field(self, name, factory())
        if has_post_init:
            self.__post_init__()

    __init__.__signature__ = _signature(  # type: ignore[attr-defined]
        self_name, [*pos_names, *(f.name for f in keyword)], by_name
    )
    return __init__


def _no_default(f: Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def _bind(
    qualname: str,
    self_name: str,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    pos_names: tuple[str, ...],
    kw_names: frozenset[str],
    by_name: Mapping[str, Field[Any]],
) -> NoReturn:
    """The ``TypeError`` CPython raises for a call that does not bind, with its own
    message, checked in its order: keywords, the positional count, what is missing."""
    values = dict(zip(pos_names, args, strict=False))
    for name, value in kwargs.items():
        if name == self_name:  # the instance, given already
            raise TypeError(f"{qualname}() got multiple values for argument {name!r}")
        if name not in by_name:
            raise TypeError(f"{qualname}() got an unexpected keyword argument {name!r}")
        if name in values:
            raise TypeError(f"{qualname}() got multiple values for argument {name!r}")
        values[name] = value
    if len(args) > len(pos_names):
        required = sum(1 for n in pos_names if _no_default(by_name[n]))
        raise TypeError(_too_many(qualname, len(args), pos_names, required, kwargs, kw_names))
    missing = [n for n in pos_names if n not in values and _no_default(by_name[n])]
    if missing:
        what = _plural(len(missing), "required positional argument")
        raise TypeError(f"{qualname}() missing {what}: {_listed(missing)}")
    missing_kw = sorted(
        (n for n in kw_names if n not in values and _no_default(by_name[n])),
        key=list(by_name).index,
    )
    if missing_kw:
        what = _plural(len(missing_kw), "required keyword-only argument")
        raise TypeError(f"{qualname}() missing {what}: {_listed(missing_kw)}")
    raise AssertionError(f"{qualname}(): a call that binds was sent to _bind")


def _too_many(
    qualname: str,
    given: int,
    pos_names: tuple[str, ...],
    required: int,
    kwargs: Mapping[str, Any],
    kw_names: frozenset[str],
) -> str:
    """CPython's message for too many positional arguments (``self`` counted)."""
    most = len(pos_names) + 1
    least = required + 1
    takes = f"from {least} to {most}" if least != most else str(most)
    plural = "" if most == 1 and least == most else "s"
    kw_given = sum(1 for name in kwargs if name in kw_names)
    if kw_given:
        kw_text = (
            f" positional argument{'s' if given + 1 != 1 else ''} "
            f"(and {_plural(kw_given, 'keyword-only argument')})"
        )
    else:
        kw_text = ""
    verb = "was" if given + 1 == 1 and not kw_given else "were"
    return (
        f"{qualname}() takes {takes} positional argument{plural} "
        f"but {given + 1}{kw_text} {verb} given"
    )


_EITHER = inspect.Parameter.POSITIONAL_OR_KEYWORD
_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def _signature(
    self_name: str, order: list[str], by_name: Mapping[str, Field[Any]]
) -> inspect.Signature:
    """The signature the stdlib's generated ``__init__`` has."""
    params = [inspect.Parameter(self_name, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name in order:
        f = by_name[name]
        kind = (
            inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        if f.default is not MISSING:
            default: Any = f.default
        elif f.default_factory is not MISSING:
            default = _FACTORY
        else:
            default = inspect.Parameter.empty
        params.append(inspect.Parameter(name, kind, default=default, annotation=f.type))
    return inspect.Signature(params, return_annotation=None, __validate_parameters__=False)


class _Factory:
    """The default a factory field shows in a signature (the stdlib's ``<factory>``)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY: Any = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", _Factory())


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of the named fields of a record (what the stdlib compares and hashes)."""
    if not names:
        return lambda obj: ()
    get = attrgetter(*names)
    if len(names) == 1:
        return lambda obj: (get(obj),)
    return get


def _eq(names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    values = _values(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(names: tuple[str, ...]) -> Callable[[Any], int]:
    values = _values(names)

    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _setattr(cls: type[Any], names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    return __setattr__


def _delattr(cls: type[Any], names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__


#: the interpreters the fast path is proven on (tests/unit/test_frozen.py, CI's matrix):
#: on any other the standard library's own ``dataclass`` is used. 3.13's compares a record
#: with itself as equal before reading a field, then field by field (a NaN held by two
#: records is unequal there, equal in a tuple), and words its errors otherwise: a
#: behaviour no test of this module has met is not "the standard library's exact one"
PROVEN = ((3, 11), (3, 12))

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
elif sys.version_info[:2] in PROVEN:
    dataclass = _dataclass
else:
    dataclass = dataclasses.dataclass
