"""Registries of kinds: one entry per fault, policy, invariant or model-API fault kind.

A kind is declared once, next to its definition, by registering its constructor (the
one validating path from parameters to an object)::

    @FAULTS.register(Throttled, help="429 until N seconds passed", fuzz=({"seconds": 5.0},))
    def throttled(seconds: float = 5.0) -> Throttled:
        ...

The entry (a ``Kind``) holds the name (the constructor's, unless given), the
parameters (read from the constructor's signature: names, annotated types, defaults),
a one-line help (given, or the first line of a docstring), and the plain-data spelling
(``data``: object -> what a YAML scenario writes, by default the class's ``to_data``
method; building that data again gives an equal object). Whatever lists, validates,
documents or writes kinds (the scenario loader, the JSON Schema, ``toolchaos list``,
the strategies, the fuzzer's YAML) reads the registry, so adding a kind touches the
module that defines it and no other.

What a registry's consumers need of each kind besides (how the fuzzer draws a fault or a
policy, what a broken invariant counts as in a regression scenario) is declared by the
registry (``Declared``) and given as keywords of each registration, kept in ``Kind.extra``.
A registration that leaves out a declared keyword with no default is an error naming it:
a new kind never gets a consumer's silent default.

The module is generic: ``toolchaos.fake_tools`` keeps its fault registry here, the
harness its policies, invariants and model-API faults.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

REQUIRED: Any = inspect.Parameter.empty  # the default of a parameter that has none


@dataclass(frozen=True)
class Check:
    """A rule a parameter's plain-data value must follow, for constructors that trust their types.

    ``at_value``: an error points at the value; False points at the whole kind (where
    a list may stand for the mapping of parameters).
    """

    expects: str  # what an error says was expected: "an integer >= 0"
    accepts: Callable[[Any], bool]
    at_value: bool = True


@dataclass(frozen=True)
class Param:
    """One parameter of a kind, as its constructor declares it."""

    name: str
    type: str = ""  # the annotation as written: "float | None", "Policy" ("" when there is none)
    default: Any = REQUIRED
    positional: bool = True  # may be given without its name (a shorthand value is the first one)
    variadic: bool = False  # ``*states``: any number of values
    schema: Mapping[str, Any] = field(default_factory=dict)  # its JSON Schema; {} = any value
    check: Check | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and not self.variadic

    def names(self, word: str) -> bool:
        """Does the declared type name ``word`` (``"Path"`` in ``"str | Path | None"``)?"""
        return word in _words(self.type)


@functools.lru_cache(maxsize=256)
def _words(annotation: str) -> frozenset[str]:
    # Building a policy asks this of each parameter; the fuzzer builds sixty policies a call.
    return frozenset(re.findall(r"\w+", annotation))


def signature_params(fn: Callable[..., Any], hide: Sequence[str] = ()) -> tuple[Param, ...]:
    """The parameters of ``fn`` (without ``self``, ``**kwargs`` and the ``hide``-den ones)."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self" or p.kind is p.VAR_KEYWORD or p.name in hide:
            continue
        annotation = "" if p.annotation is p.empty else (
            p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation))
        out.append(Param(p.name, annotation, p.default,
                         positional=p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD),
                         variadic=p.kind is p.VAR_POSITIONAL))
    return tuple(out)


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One registered kind: how to build it, what it takes, what it is for, how it is written."""

    name: str
    build: Callable[..., T]
    builds: type  # the class of what ``build`` returns: an object finds its kind by it
    help: str
    params: tuple[Param, ...]
    data: Callable[[Any], Any]  # object -> plain data; ``build`` of that data gives an equal object
    aliases: tuple[str, ...] = ()  # other names a file may use ("429" for rate_limited)
    extra: Mapping[str, Any] = field(default_factory=dict)  # what one registry's consumers need besides

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def first(self) -> Param | None:
        """The parameter a shorthand value stands for (``{timeout: 30}`` is ``after: 30``)."""
        return next((p for p in self.params if p.positional or p.variadic), None)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class Declared:
    """A keyword every registration in one registry gives: metadata its consumers read from ``Kind.extra``.

    ``expects``: what the keyword holds, as an error about a registration without it says.
    ``default``: its value when a registration leaves it out; ``REQUIRED``: leaving it out is an error.
    ``check``: raises ``ValueError`` or ``TypeError`` (saying what it expected) when the kind cannot use the value;
    it runs when the kind is added, so a mistake shows at import, not when a consumer first reads it.
    """

    name: str
    expects: str
    check: Callable[[Kind[Any], Any], None] | None = None
    default: Any = REQUIRED


class Registry(Mapping[str, Kind[T]]):
    """The kinds of one family, by name, in the order they were registered.

    ``key`` is the attribute every built object carries its kind's name in (``kind``
    for faults, ``name`` for policies and invariants). ``declares``: the keywords each
    registration gives besides (see ``Declared``).
    """

    def __init__(self, what: str, *, key: str, declares: Sequence[Declared] = ()) -> None:
        self.what, self.key = what, key
        self.declares = tuple(declares)
        self._kinds: dict[str, Kind[T]] = {}
        self._aliases: dict[str, str] = {}

    def register(self, builds: type, *, name: str | None = None, help: str | None = None,
                 data: Callable[[Any], Any] | None = None, params: Sequence[Param] | None = None,
                 hide: Sequence[str] = (), schemas: Mapping[str, Mapping[str, Any]] | None = None,
                 checks: Mapping[str, Check] | None = None, aliases: Sequence[str] = (),
                 **extra: Any) -> Callable[[F], F]:
        """Register the decorated constructor as the kind that builds ``builds`` objects.

        ``params`` replaces the constructor's own (a class whose constructor takes
        ``**kwargs`` lists them); ``schemas`` and ``checks`` add to named parameters.
        """

        def add(build: F) -> F:
            declared = tuple(params) if params is not None else signature_params(build, hide)
            self.add(Kind(
                name=name or build.__name__, build=build, builds=builds,
                help=help if help is not None else _first_line(build.__doc__ or builds.__doc__),
                params=tuple(_detailed(p, schemas or {}, checks or {}) for p in declared),
                data=data if data is not None else _own_spelling(builds), aliases=tuple(aliases), extra=dict(extra)))
            return build

        return add

    def add(self, kind: Kind[T]) -> Kind[T]:
        for word in (kind.name, *kind.aliases):
            if word in self._kinds or word in self._aliases:
                raise ValueError(f"{self.what} {word!r} is registered already")
        kind = self._declared(kind)
        self._kinds[kind.name] = kind
        self._aliases.update(dict.fromkeys(kind.aliases, kind.name))
        return kind

    def _declared(self, kind: Kind[T]) -> Kind[T]:
        """``kind`` with every declared keyword: given and checked, or its default."""
        extra = dict(kind.extra)
        for d in self.declares:
            if d.name not in extra:
                if d.default is REQUIRED:
                    raise TypeError(f"{self.what} {kind.name!r} is registered without {d.name}=: "
                                    f"give {d.name}= {d.expects}")
                extra[d.name] = d.default
            if d.check is not None:
                try:
                    d.check(kind, extra[d.name])
                except (TypeError, ValueError) as exc:  # TypeError: a constructor given a parameter it has not
                    raise ValueError(f"{self.what} {kind.name!r}: {d.name}={extra[d.name]!r}: {exc}") from None
        return replace(kind, extra=extra)

    def remove(self, name: str) -> Kind[T]:
        """Unregister a kind (and its aliases); returns its entry."""
        kind = self._kinds.pop(name)
        for alias in kind.aliases:
            del self._aliases[alias]
        return kind

    def __getitem__(self, name: str) -> Kind[T]:
        return self._kinds[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def resolve(self, word: str) -> str:
        """The kind's name for a name or an alias (unknown words come back unchanged)."""
        return self._aliases.get(word, word)

    def of(self, obj: Any) -> Kind[T] | None:
        """The kind that built ``obj``, or None for an object no registered kind builds."""
        name = getattr(obj, self.key, None)
        kind = self._kinds.get(name) if isinstance(name, str) else None
        return kind if kind is not None and isinstance(obj, kind.builds) else None

    def to_data(self, obj: Any) -> Any:
        """The plain-data (YAML) spelling of ``obj``; ``TypeError`` when no registered kind built it."""
        kind = self.of(obj)
        if kind is None:
            raise TypeError(f"no plain-data spelling for {self.what} {obj!r}")
        return kind.data(obj)

    def help(self) -> dict[str, str]:
        """Name -> one-line help, in registration order."""
        return {name: kind.help for name, kind in self._kinds.items()}


def _detailed(param: Param, schemas: Mapping[str, Mapping[str, Any]], checks: Mapping[str, Check]) -> Param:
    if param.name in schemas:
        param = replace(param, schema=dict(schemas[param.name]))
    if param.name in checks:
        param = replace(param, check=checks[param.name])
    return param


def _own_spelling(builds: type) -> Callable[[Any], Any]:
    spell: Callable[[Any], Any] | None = getattr(builds, "to_data", None)
    if not callable(spell):
        raise TypeError(f"{builds.__name__} has no to_data method: give its plain-data spelling as data=")
    return spell


def _first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0] if lines else ""


__all__ = ["REQUIRED", "Check", "Declared", "Kind", "Param", "Registry", "signature_params"]
