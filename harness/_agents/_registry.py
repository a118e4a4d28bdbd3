"""The registry of agent kinds: how an agent of each kind is recognised, how it is run, what it can do.

A kind is one module (``toolchaos.kinds.<name>``) that registers one ``AgentKind``: its name,
what an agent of that kind is, how to recognise one from the object alone (importing nothing),
how to run one ``RunSpec`` with it, and its capabilities. Every way in (``toolchaos.run``, a
scenario's ``agent:``, ``--chaos-agent``, ``toolchaos certify --agent``, ``certify()``,
``fuzz()``) resolves an agent here, so a kind registered once is accepted everywhere.

The built-in kinds register when the registry is first read; their modules sit above the
engine, the wire and the framework adapters they run through, so they are named here as
module names, imported then, not imported by this module. A user's kind registers itself
when its module is imported (``toolchaos.kinds.register_kind``); a reference that names an
unknown kind (``mykind:pkg.mod:attr``) imports ``pkg.mod`` first, where the kind may be.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolchaos.errors import AgentRefError, did_you_mean

__all__ = ["AgentKind", "AgentUnderTest", "Capabilities", "kinds", "register_kind", "resolve"]

IN_PROCESS, SDK = "in-process", "sdk"

# The built-in kinds, in the order they are tried on an object: the frameworks by their types,
# a process agent by its class, an SDK loop by its signature, and the in-process contract last.
_BUILTIN_MODULES = ("openai_agents", "pydantic_ai", "langgraph", "process", "sdk", "in_process")


@dataclass(frozen=True)
class Capabilities:
    """What an agent of a kind can do, which decides what a scenario may ask of it.

    A scenario's ``needs`` name the capabilities it cannot be judged without
    (``toolchaos._agents._needs.NEEDS``): a scenario needing one its kind lacks is not
    applicable (N/A) to that kind, decided before anything runs.
    """

    reports_stop: bool = True  # ends with a terminal state and a stop report of its own (not only by returning)
    isolatable: bool = False  # the engine can run it in a contained child (process isolation)
    out_of_process: bool = False  # a program of its own, reached over HTTP and MCP
    # its own clock (sleeps, deadlines, timeouts) is the run's virtual clock, so a budget of virtual
    # seconds is one it can see and a long wait costs no real time
    virtual_time: bool = True
    budgets: bool = True  # it is handed the run's budgets (tools.budgets, env.budgets), so it can keep them
    restart: bool = True  # it can be run a second time resuming from the store it kept (tools.store)
    concurrent_workers: bool = True  # two calls of one turn run at once against its own ledger (two workers)


@dataclass(frozen=True)
class AgentUnderTest:
    """An agent of any kind, resolved, with the run of its kind (``runner(spec) -> RunResult``)."""

    label: str  # how messages and reports name it: the reference as given
    kind: str
    runner: Callable[[Any], Any]

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class AgentKind:
    """One kind of agent.

    - ``name``: what a reference names (``KIND:pkg.mod:attr``); ``help``: what such an agent is;
      ``form``: how it is called, for the message of an agent the harness could not call.
    - ``runner(agent, label)``: the run of one ``RunSpec`` for that agent object.
    - ``recognise(obj)``: whether ``obj`` is of this kind, from the object alone (a type's name, a
      signature): it must import nothing. ``None``: only named, or the last resort (in-process).
    - ``prefixes`` and ``load``: references of a form of its own (``cmd:...``, ``preset:...``)
      and the object each stands for.
    """

    name: str
    help: str
    form: str
    runner: Callable[[Any, str], Callable[[Any], Any]]
    recognise: Callable[[Any], bool] | None = None
    capabilities: Capabilities = field(default_factory=Capabilities)
    prefixes: tuple[str, ...] = ()
    load: Callable[[str], Any] | None = None
    by_type: bool = False  # recognised by its type: an object named as this kind must be one


class _Kinds(Mapping[str, AgentKind]):
    """Name -> kind, in the order kinds are tried on an object; the built-in ones load on first read."""

    def __init__(self) -> None:
        self._kinds: dict[str, AgentKind] = {}
        self._loaded = self._loading = False
        # Re-entrant: a kind module registers (and so reads the registry) while it loads. Two runs
        # started at once in two threads both wait for the built-in kinds, never read half of them.
        self._lock = threading.RLock()

    def _load(self) -> dict[str, AgentKind]:
        if self._loaded:
            return self._kinds
        with self._lock:
            if not self._loading and not self._loaded:
                self._loading = True
                try:
                    for module in _BUILTIN_MODULES:
                        importlib.import_module(f"toolchaos.kinds.{module}")
                finally:
                    self._loading = False
                    self._loaded = True
        return self._kinds

    def __getitem__(self, name: str) -> AgentKind:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        """In the order lists and messages show them: in-process and sdk first, then as registered."""
        kinds = self._load()
        first = [k for k in (IN_PROCESS, SDK) if k in kinds]
        return iter([*first, *(k for k in kinds if k not in first)])

    def tried(self) -> Iterator[AgentKind]:
        """In the order they are tried on an object: the catch-alls (sdk, in-process) last."""
        return iter(self._load().values())

    def __len__(self) -> int:
        return len(self._load())

    def add(self, kind: AgentKind) -> AgentKind:
        known = self._load().get(kind.name)
        if known is not None and known != kind:
            raise AgentRefError(f"agent kind {kind.name!r} is registered already ({known.help})")
        _recognised.clear()  # a new kind may claim objects recognised before it
        if self._loading or known is not None:  # a built-in one: in the order they load
            self._kinds[kind.name] = kind
            return kind
        # a user's kind is tried before the built-in catch-alls (the SDK signature, in-process)
        items = list(self._kinds.items())
        at = next((i for i, (n, _) in enumerate(items) if n in (SDK, IN_PROCESS)), len(items))
        items.insert(at, (kind.name, kind))
        self._kinds = dict(items)
        return kind

    def remove(self, name: str) -> None:
        """Forget a user's kind (tests register kinds of their own)."""
        self._kinds.pop(name, None)
        _recognised.clear()


_KINDS = _Kinds()


def kinds() -> Mapping[str, AgentKind]:
    """Every registered kind, by name: in-process and sdk first, then as registered."""
    return _KINDS


def register_kind(kind: AgentKind) -> AgentKind:
    """Register ``kind`` (once; registering the same kind again is harmless); returns it."""
    return _KINDS.add(kind)


def recognise(obj: Any) -> AgentKind:
    """The kind of an agent object: the first kind that recognises it, else in-process.

    Remembered per object (a signature's inspection is half the cost of a short run, and the
    engine resolves its agent on every run): by id, the object kept beside its answer, so an entry
    is only read back for that very object; forgotten when a kind is registered.
    """
    known = _recognised.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1]  # type: ignore[no-any-return]
    found = next((k for k in _KINDS.tried() if k.recognise is not None and k.recognise(obj)), None)
    found = found or _KINDS[IN_PROCESS]
    remember(_recognised, id(obj), (obj, found))
    return found


# --- references ----------------------------------------------------------------------------


def split(ref: str) -> tuple[str | None, str]:
    """``(kind, "package.module:attr")`` of a reference; the kind is None when it is not named."""
    parts = ref.split(":")
    if len(parts) == 3:
        name = parts[0]
        if name not in _KINDS:
            _import_for_kind(parts[1])  # a user's kind registers when its module is imported
        kind = _KINDS.get(name)
        if kind is None:
            raise AgentRefError(f"agent reference {ref!r}: unknown agent kind {name!r}{did_you_mean(name, _KINDS)}; "
                                f"kinds: {', '.join(_KINDS)}")
        if kind.prefixes:
            raise AgentRefError(f"agent reference {ref!r}: a {name} agent is named {kind.form}")
        return name, f"{parts[1]}:{parts[2]}"
    if len(parts) != 2 or not all(parts):
        raise AgentRefError(f"agent reference {ref!r}: expected 'builtin:NAME', 'package.module:attr' "
                            f"or 'KIND:package.module:attr' (kinds: {', '.join(_KINDS)})")
    return None, ref


def _import_for_kind(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError:
        pass  # the reference's own import reports it, if it comes to that


def own_form(ref: str) -> AgentKind | None:
    """The kind whose reference form ``ref`` has (``cmd:...``, ``preset:...``), if any."""
    for kind in _KINDS.values():
        if kind.prefixes and ref.startswith(kind.prefixes):
            return kind
    return None


def accepted() -> str:
    """What the harness can call: every kind's call form, for "could not call" messages."""
    return ("an agent is " + ", ".join(f"{k.form} ({k.name})" for k in _KINDS.values() if not k.prefixes)
            + "; a reference may name the kind: KIND:package.module:attr")


def resolve(agent: Any, kind: str | None = None, *, load: Callable[[str], Any]) -> AgentUnderTest:
    """``agent`` (a reference, an object, or already an ``AgentUnderTest``) with the run of its kind.

    ``kind`` names the kind when the reference does not; by default it is recognised from the
    object. ``load(ref)``: the object a ``builtin:NAME`` or ``package.module:attr`` reference names.
    """
    if isinstance(agent, AgentUnderTest):
        return agent
    if kind is not None and kind not in _KINDS:
        raise AgentRefError(f"unknown agent kind {kind!r}{did_you_mean(kind, _KINDS)}; kinds: {', '.join(_KINDS)}",
                            field="agent")
    obj, named = _target(agent, load)
    if kind is not None and named is not None and kind != named:
        raise AgentRefError(f"agent {agent!r} names the kind {named}, not {kind}", field="agent")
    wanted = kind or named
    chosen = _KINDS[wanted] if wanted is not None else recognise(obj)
    name = label(agent)
    if chosen.by_type and chosen.recognise is not None and not chosen.recognise(obj):
        raise AgentRefError(f"agent {name} is named as {chosen.name} ({chosen.help}), but it is a "
                            f"{type(obj).__module__}.{type(obj).__qualname__} (recognised: {recognise(obj).name})",
                            field="agent")
    return AgentUnderTest(name, chosen.name, chosen.runner(obj, name))


def _target(agent: Any, load: Callable[[str], Any]) -> tuple[Any, str | None]:
    """The agent object and the kind its reference names (None when it names none)."""
    if not isinstance(agent, str):
        return agent, None
    own = own_form(agent)
    if own is not None and own.load is not None:
        return own.load(agent), own.name
    named, target = split(agent)
    return load(target), named


# Per agent object, how it is named: the engine asks on every run (a fuzzer makes thousands).
# Keyed by id with the object kept beside its answer, so an entry is only ever read back for that
# very object, and no agent type's __hash__ or __eq__ runs.
_KNOWN_LIMIT = 256
_labels: dict[int, tuple[Any, str]] = {}
_recognised: dict[int, tuple[Any, Any]] = {}


def remember(table: dict[int, Any], key: int, entry: Any) -> None:
    if len(table) >= _KNOWN_LIMIT:
        table.clear()
    table[key] = entry


def label(agent: Any) -> str:
    """How messages and reports name an agent: its reference as given, else ``module:qualname``."""
    if isinstance(agent, str):
        return agent
    known = _labels.get(id(agent))
    if known is not None and known[0] is agent:
        return known[1]
    cls = agent if inspect.isroutine(agent) or inspect.isclass(agent) else type(agent)
    text = f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', type(agent).__name__)}"
    remember(_labels, id(agent), (agent, text))
    return text


_types: dict[tuple[int, str, str], tuple[type, bool]] = {}


def of_type(obj: Any, package: str, qualname: str) -> bool:
    """Whether ``obj``'s type has, anywhere in its hierarchy, class ``qualname`` of top-level package
    ``package``: read from the type, so recognising a framework's agent imports no framework."""
    t = type(obj)
    key = (id(t), package, qualname)
    known = _types.get(key)
    if known is not None and known[0] is t:
        return known[1]
    found = any(cls.__module__.partition(".")[0] == package and cls.__qualname__ == qualname for cls in t.__mro__)
    remember(_types, key, (t, found))  # type: ignore[arg-type]
    return found


def binds(fn: Any, n: int) -> bool:
    """Whether ``fn`` can be called with ``n`` positional arguments (False for no signature)."""
    try:
        inspect.signature(fn).bind(*range(n))
    except (TypeError, ValueError):
        return False
    return True
