"""Hypothesis strategies for chaos tests: outcomes, fault schedules and policies.

Use them with ``@given`` in your own tests::

    from hypothesis import given
    from toolchaos.fake_tools import catalogue
    from toolchaos import run, invariants
    from toolchaos.strategies import fault_schedules, policies

    TOOLS = [catalogue.get("charge_payment"), catalogue.get("fetch_invoice")]

    @given(plan=fault_schedules(TOOLS), policy=policies(TOOLS))
    def test_never_charges_twice(plan, policy):
        result = run("my_agent:agent", task="Pay invoice inv_1", tools=plan, policy=policy)
        result.check(invariants.idempotent(), invariants.terminated())

Every strategy shrinks toward "nothing went wrong": an outcome toward ``ok``, a
schedule toward no faulty call, a policy toward a plain ``stubborn`` call. So a
failing example shrinks to the few faults that matter.

- ``outcomes(kinds=None)``: one ``Fault`` (``toolchaos.fake_tools.faults``).
- ``fault_schedules(tools, ...)``: a ``FaultPlan``: the tools with drawn schedules
  (iterate it, or pass it as ``tools=``), readable in a falsifying example, and
  convertible to the ``tools:`` section of a YAML scenario (``plan.as_data()``).
- ``policies(tools, ...)``: a ``SpecPolicy``: a built-in policy built from plain data
  (``policy.spec``, the ``policy:`` section of a YAML scenario).

What is drawn of each kind is declared where the kind is registered: a fault's ``fuzz=``
parameters (``toolchaos.fake_tools.faults.FAULTS``) and whether it is drawn by default
(``fuzz_by_default=``), a policy's ``fuzz=`` function (``toolchaos.policies.POLICIES``).
Kinds are drawn in registration order, simplest first; ``fuzz=None`` is never drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import strategies as st
from toolchaos._internal.model import Decision, ModelView
from toolchaos.errors import PolicyError, did_you_mean
from toolchaos.fake_tools import FakeTool, FaultSchedule, Rule, catalogue
from toolchaos.fake_tools import faults as F
from toolchaos.fake_tools.faults import FAULTS, Fault
from toolchaos.policies import POLICIES, Policy, example_args

# --- the kinds drawn, from the registries -------------------------------------------------


def _fault_kinds(default: bool = False) -> tuple[str, ...]:
    """The fault kinds drawn (registered with ``fuzz=`` faults), simplest first; ``default``: drawn unless named."""
    return tuple(name for name, kind in FAULTS.items()
                 if kind.extra["fuzz"] is not None and (kind.extra["fuzz_by_default"] or not default))


def _policy_kinds() -> tuple[str, ...]:
    """The policy kinds drawn (registered with a ``fuzz=`` function), simplest first."""
    return tuple(name for name, kind in POLICIES.items() if kind.extra["fuzz"] is not None)


_KIND_LISTS: dict[str, Callable[[], tuple[str, ...]]] = {
    "DEFAULT_KINDS": lambda: _fault_kinds(default=True),  # every drawn kind but paginated
    "ALL_KINDS": _fault_kinds,
    "DEFAULT_POLICY_KINDS": _policy_kinds,
}


def __getattr__(name: str) -> tuple[str, ...]:
    # The public lists of kinds are read from the registries when asked, not when this module is
    # imported: a kind registered later (a plugin's, a test's) is among them.
    if name in _KIND_LISTS:
        return _KIND_LISTS[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check_kinds(kinds: Iterable[str] | None, known: Sequence[str], what: str,
                 registry: Mapping[str, Any]) -> tuple[str, ...]:
    chosen = tuple(known if kinds is None else kinds)
    for k in chosen:
        if k in registry and k not in known:
            raise ValueError(f"{what} {k!r} is not drawn by the fuzzer (it is registered with fuzz=None); "
                             f"drawn: {', '.join(known)}")
        if k not in known:
            raise ValueError(f"unknown {what} {k!r}{did_you_mean(k, known)}; known: {', '.join(known)}")
    return chosen


# --- outcomes --------------------------------------------------------------------------


def fault_table(kinds: Iterable[str] | None = None) -> tuple[Fault, ...]:
    """Every concrete fault the strategies draw for ``kinds``, simplest first (``ok`` excluded).

    Each kind's faults are its registration's ``fuzz=`` parameters, built by its constructor.
    """
    chosen = _check_kinds(_fault_kinds(default=True) if kinds is None else kinds, _fault_kinds(), "fault kind", FAULTS)
    return tuple(FAULTS[k].build(**params) for k in chosen for params in FAULTS[k].extra["fuzz"])


def outcomes(kinds: Iterable[str] | None = None, *, ok: bool = True) -> st.SearchStrategy[Fault]:
    """One fault (``toolchaos.fake_tools.faults``) of the given kinds; shrinks toward ``ok`` when ``ok`` is allowed.

    ``kinds``: fault kind names (default ``DEFAULT_KINDS``: the kinds registered to be drawn by default,
    every drawn kind except ``paginated``).
    """
    table = list(fault_table(kinds))
    if ok:
        table.insert(0, F.ok())
    if not table:
        raise ValueError("outcomes: no kinds to draw from")
    return st.sampled_from(table)


# --- faults as plain data (the YAML spelling) -----------------------------------------


def fault_data(fault: Fault) -> Any:
    """The plain-data (YAML) spelling of a fault, as its kind writes it; ``as_fault(fault_data(f)) == f``."""
    return FAULTS.to_data(fault)


def describe_fault(fault: Fault) -> str:
    """``timeout(after=30, applied=True)``: a fault as a readable call."""
    data = fault_data(fault)
    if isinstance(data, str):
        return data
    ((kind, params),) = data.items()
    inner = ", ".join(f"{k}={describe_fault(F.as_fault(v)) if k == 'then' else v!r}" for k, v in params.items())
    return f"{kind}({inner})"


# --- fault schedules ---------------------------------------------------------------------


_PLAIN_OK = F.ok()


def _is_ok(fault: Fault) -> bool:
    """A plain ``ok`` (the tool's own payload): no fault at all."""
    return isinstance(fault, type(_PLAIN_OK)) and not fault.has_data


@dataclass(frozen=True)
class FaultPlan:
    """The tools of a run with drawn fault schedules: call N of a tool gets ``faults[tool][N-1]``.

    Iterating yields the ``FakeTool``s, so a plan is passed as ``tools=`` directly.
    """

    tools: tuple[FakeTool, ...]
    faults: Mapping[str, tuple[Fault, ...]]
    defaults: Mapping[str, Fault]

    def __iter__(self) -> Iterator[FakeTool]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    @property
    def faulty_calls(self) -> int:
        """Calls that get something other than a plain ``ok`` (each non-ok default counts once)."""
        n = sum(1 for fs in self.faults.values() for f in fs if not _is_ok(f))
        return n + sum(1 for f in self.defaults.values() if not _is_ok(f))

    def rules(self, tool: str) -> list[tuple[int, Fault]]:
        """(call number, fault) for the calls of ``tool`` that get a fault."""
        return [(i, f) for i, f in enumerate(self.faults.get(tool, ()), 1) if not _is_ok(f)]

    def as_data(self) -> dict[str, dict[str, Any]]:
        """The ``tools:`` section of a YAML scenario (tool name -> its entry)."""
        return {t.name: tool_data(t) for t in self.tools}

    def __repr__(self) -> str:
        parts = []
        for t in self.tools:
            rules = [f"call {n} {describe_fault(f)}" for n, f in self.rules(t.name)]
            default = self.defaults.get(t.name)
            if default is not None and not _is_ok(default):
                rules.append(f"then always {describe_fault(default)}")
            parts.append(f"{t.name}: {', '.join(rules) or 'no faults'}")
        return f"FaultPlan({'; '.join(parts)})"


def rule_data(rule: Rule) -> dict[str, Any]:
    """The plain-data spelling of one schedule rule."""
    out: dict[str, Any] = {}
    if rule.call is not None:
        out["call"] = rule.call
    if rule.calls is not None:
        out["calls"] = list(rule.calls)
    if rule.match is not None:
        out["match"] = dict(rule.match)
    if rule.probability is not None:
        out["probability"] = rule.probability
    out["outcome"] = fault_data(rule.outcome)
    return out


def tool_data(tool: FakeTool) -> dict[str, Any]:
    """A tool as the value of its entry in a scenario's ``tools:`` mapping (keyed by its name).

    A catalogue tool is named only (its schedule follows); any other tool is written out
    in full (description, parameters, side effect, idempotency key, volatile arguments, the
    world collection it writes or reads). How its API treats keys is written when it is
    not the default.
    """
    entry: dict[str, Any] = {}
    if not _is_catalogue(tool):
        entry.update({"description": tool.description, "parameters": dict(tool.parameters),
                      "side_effect": tool.side_effect})
        if tool.idempotency_key is not None:
            entry["idempotency_key"] = tool.idempotency_key
        entry["volatile"] = list(tool.volatile)
        if tool.writes is not None:
            entry["writes"] = {k: v for k, v in tool.writes.spec().items() if v not in (None, False)}
        if tool.reads is not None:
            r = tool.reads
            entry["reads"] = {"collection": r.collection, "by": r.by, **({"field": r.field} if r.field else {}),
                              **({"many": True} if r.many else {})}
    if tool.idempotency_key is not None:
        defaults = FakeTool(tool.name, "", {})
        for name in ("idempotency", "honoured_after_applied", "idempotency_ttl"):
            if getattr(tool, name) != getattr(defaults, name):
                entry[name] = getattr(tool, name)
    if tool.delivery != "return":
        entry["delivery"] = tool.delivery
    if tool.schedule.rules:
        entry["faults"] = [rule_data(r) for r in tool.schedule.rules]
    entry["default"] = fault_data(tool.schedule.default)
    return entry


def _is_catalogue(tool: FakeTool) -> bool:
    if tool.name not in catalogue.NAMES:
        return False
    ref = catalogue.get(tool.name)
    return (ref.parameters == tool.parameters and ref.side_effect == tool.side_effect
            and ref.idempotency_key == tool.idempotency_key and ref.volatile == tool.volatile)


def _as_tool(tool: FakeTool | str) -> FakeTool:
    return tool if isinstance(tool, FakeTool) else catalogue.get(tool)


def plan(tools: Iterable[FakeTool | str], faults: Mapping[str, Sequence[Fault]] | None = None,
         defaults: Mapping[str, Fault] | None = None) -> FaultPlan:
    """Build a ``FaultPlan`` by hand (what ``fault_schedules`` draws)."""
    base = [_as_tool(t) for t in tools]
    calls = {k: tuple(v) for k, v in (faults or {}).items()}
    dflts = dict(defaults or {})
    built = []
    for t in base:
        if t.name in calls or t.name in dflts:
            rules = [{"call": n, "outcome": f} for n, f in enumerate(calls.get(t.name, ()), 1) if not _is_ok(f)]
            built.append(t.with_faults(rules or None, default=dflts.get(t.name, t.schedule.default)))
        else:
            built.append(t)
    return FaultPlan(tuple(built), calls, dflts)


def fault_schedules(tools: Iterable[FakeTool | str], *, vary: Iterable[str] | None = None,
                    kinds: Iterable[str] | None = None, max_calls: int = 6, default_kinds: Iterable[str] = (),
                    max_faults: int | None = None) -> st.SearchStrategy[FaultPlan]:
    """Fault schedules for ``tools`` (``FakeTool``s or catalogue names), as a ``FaultPlan``.

    - ``vary``: names of the tools whose schedules vary (default: all); the others keep theirs.
    - ``kinds``: fault kinds drawn for scheduled calls (default ``DEFAULT_KINDS``), in registration order.
    - ``max_calls``: scheduled calls per tool (calls 1..max_calls); later calls get the default.
    - ``default_kinds``: kinds the default (every later call) may take; empty = always ``ok``,
      so the tool eventually works and a run can end.
    - ``max_faults``: at most this many faulty calls over all tools.

    Each tool's schedule is one hypothesis choice (a byte string, one byte per call):
    drawing stays cheap, and shrinking the bytes (shorter, smaller) removes faulty calls
    and simplifies the faults that remain.
    """
    codec = ScheduleCodec(tools, vary=vary, kinds=kinds, max_calls=max_calls, default_kinds=default_kinds,
                          max_faults=max_faults)
    if not codec.parts:
        return st.just(codec.decode(()))
    return _Flat(codec.parts).map(codec.decode)


_PART_LABEL = int.from_bytes(b"toolchs", "big") << 8  # any int unlike hypothesis's own labels (64-bit hashes)


@dataclass(frozen=True)
class _Bytes:
    """One bytes choice of ``min_size`` to ``max_size`` bytes: what ``st.binary`` draws."""

    min_size: int
    max_size: int


@dataclass(frozen=True)
class _Pick:
    """One integer choice, an index into ``options``: what ``st.sampled_from(options)`` draws."""

    options: tuple[Any, ...]


_Part = _Bytes | _Pick | st.SearchStrategy[Any]


class _Flat(st.SearchStrategy[tuple[Any, ...]]):
    """A flat tuple of parts, each a single choice of its own where it is one.

    ``st.binary`` and ``st.sampled_from`` make exactly one choice each (a bytes choice, an
    integer choice); here those choices are asked of hypothesis directly, with no span
    around each. A span per part cost ~11 us, ~45 us of each fuzz example's draw (a third of
    what its four choices cost hypothesis); the choices, their distribution and shrinking are the same
    (``tests/test_strategies.py`` draws both ways from one seed), so saved examples and
    reproduction blobs replay as before. Any other part is a strategy, drawn under a span
    label of its own: hypothesis's generator takes two values drawn under one label and
    tries the example again with one copied over the other, so parts of one kind under a
    shared label (tools' schedules) were copies of each other in ~60% of the examples.
    Bare choices make no span, so nothing is copied between them either.
    """

    def __init__(self, parts: Sequence[_Part]) -> None:
        super().__init__()
        self.parts = tuple(parts)
        self._plan = tuple(_step(i, p) for i, p in enumerate(self.parts))

    def do_draw(self, data: Any) -> tuple[Any, ...]:
        out = []
        for how, a, b in self._plan:
            if how == 0:
                out.append(data.draw_bytes(a, b))
            elif how == 1:
                out.append(a[data.draw_integer(0, b)])
            else:
                out.append(data.draw(a, label=b))
        return tuple(out)

    def __repr__(self) -> str:
        return f"_Flat({list(self.parts)!r})"


def _step(i: int, part: _Part) -> tuple[int, Any, Any]:
    """How ``_Flat`` draws part ``i``: (0, min, max) bytes, (1, options, last index), (2, strategy, label)."""
    if isinstance(part, _Bytes):
        return 0, part.min_size, part.max_size
    if isinstance(part, _Pick):
        return 1, part.options, len(part.options) - 1
    return 2, part, _PART_LABEL + i


def _pick(byte: int, options: tuple[Fault, ...]) -> int:
    # Half of the byte values mean "ok" (0 among them), the other half name a fault:
    # shrinking a byte toward 0 first drops the fault, then simplifies it.
    k = len(options)
    if not k:
        return -1
    i = byte % (2 * k)
    return -1 if i < k else i - k


_T = TypeVar("_T")


class _ByTools:
    """What was built for a list of tools and options, found again by the tools' identity.

    ``fuzz()`` is called with the same tool objects again and again (each test, each block of
    examples); building its policies (~1 ms) and a fresh codec, whose plans every example then
    rebuilt, was work done again on every call. Entries keep their tools alive, so an ``id``
    in a key is never another object's. Tools are immutable (``with_faults`` makes copies).
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[tuple[Any, ...], tuple[list[FakeTool], Any]] = {}

    def get(self, tools: Sequence[FakeTool], options: tuple[Any, ...], build: Callable[[], _T]) -> _T:
        key = (*map(id, tools), options)
        hit = self._entries.get(key)
        if hit is not None:
            value: _T = hit[1]
            return value
        value = build()
        if len(self._entries) >= self._size:  # the oldest goes
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = (list(tools), value)
        return value


_POLICIES = _ByTools(32)  # the policies drawn for a list of tools: sixty small objects an entry
# Codecs hold the plans and tool copies they decoded (a few MB after thousands of examples): fewer.
_CODECS = _ByTools(8)


class ScheduleCodec:
    """What ``fault_schedules`` draws (``parts``) and how it becomes a ``FaultPlan`` (``decode``).

    ``parts``: a byte string per varied tool (byte ``i`` is its call ``i + 1``) and, with
    ``default_kinds``, one of a byte per varied tool for the defaults; half of a byte's
    values mean ``ok``. One string per tool, not one for all: deleting a byte then moves
    that tool's later faults one call earlier and leaves the other tools alone, which is
    how a schedule shrinks to its first calls. The fuzzer draws ``parts`` beside its other
    choices in one flat tuple: each argument and each level of nested strategies costs
    hypothesis per example.

    Decoding is cached twice: by the bytes drawn (a repeated draw costs one lookup) and
    per tool by its decoded schedule, so a ``FakeTool`` copy is built once per distinct
    schedule of that tool, not once per example.
    """

    _LIMIT = 4096  # cached entries of each kind before a cache starts over

    def __init__(self, tools: Iterable[FakeTool | str], *, vary: Iterable[str] | None = None,
                 kinds: Iterable[str] | None = None, max_calls: int = 6, default_kinds: Iterable[str] = (),
                 max_faults: int | None = None) -> None:
        self.base = [_as_tool(t) for t in tools]
        if not self.base:
            raise ValueError("fault_schedules: no tools")
        names = [t.name for t in self.base]
        self.varied = list(names if vary is None else vary)
        for v in self.varied:
            if v not in names:
                raise ValueError(f"fault_schedules: vary names {v!r}, not one of the tools{did_you_mean(v, names)} "
                                 f"({', '.join(names)})")
        if max_calls < 0:
            raise ValueError(f"fault_schedules: max_calls must be >= 0, got {max_calls}")
        self.table = fault_table(kinds)
        self.dtable = fault_table(default_kinds) if list(default_kinds) else ()
        self.max_faults = max_faults
        self._slot = [names.index(n) for n in self.varied]
        n = len(self.varied)
        parts = [_Bytes(0, max_calls)] * n
        if n and self.dtable:
            parts.append(_Bytes(n, n))
        self.parts: tuple[_Bytes, ...] = tuple(parts)
        self._plans: dict[tuple[bytes, ...], FaultPlan] = {}
        self._tools: dict[tuple[int, tuple[int, ...], int], tuple[FakeTool, tuple[Fault, ...]]] = {}
        # Decoding a fresh draw was ~20 us of an example: a call per byte, a Rule built per faulty call.
        # Each byte value's pick is worked out once, and each (fault, call number) rule built once.
        self._picks = tuple(_pick(b, self.table) for b in range(256))
        self._dpicks = tuple(_pick(b, self.dtable) for b in range(256))
        self._rules: dict[tuple[int, int], Rule] = {}

    @classmethod
    def shared(cls, tools: Sequence[FakeTool], *, vary: Iterable[str] | None = None,
               kinds: Iterable[str] | None = None, max_calls: int = 6, default_kinds: Iterable[str] = (),
               max_faults: int | None = None) -> ScheduleCodec:
        """The codec of these very tools and options, built once: its caches of plans live on across calls."""
        # the default kinds by name: a kind registered since gets a codec of its own
        vary, kinds, default_kinds = (None if vary is None else tuple(vary),
                                      _fault_kinds(default=True) if kinds is None else tuple(kinds), tuple(default_kinds))
        return _CODECS.get(tools, (vary, kinds, max_calls, default_kinds, max_faults), lambda: cls(
            tools, vary=vary, kinds=kinds, max_calls=max_calls, default_kinds=default_kinds, max_faults=max_faults))

    def decode(self, blobs: Sequence[bytes]) -> FaultPlan:
        """The plan of one draw of ``parts``."""
        key = tuple(blobs)
        hit = self._plans.get(key)
        if hit is not None:
            return hit
        if not self.varied:
            out = plan(self.base)
        else:
            out = self._build(key)
        if len(self._plans) >= self._LIMIT:
            self._plans.clear()
        self._plans[key] = out
        return out

    def _build(self, blobs: tuple[bytes, ...]) -> FaultPlan:
        n = len(self.varied)
        picks = self._picks
        picked = [[picks[b] for b in blob] for blob in blobs[:n]]
        if self.max_faults is not None:  # the first tools' faulty calls keep their faults
            budget = self.max_faults
            for row in picked:
                for j, i in enumerate(row):
                    if i >= 0:
                        if budget <= 0:
                            row[j] = -1
                        budget -= 1
        dpicked = [self._dpicks[b] for b in blobs[n]] if len(blobs) > n else [-1] * n
        tools = list(self.base)
        faults: dict[str, tuple[Fault, ...]] = {}
        defaults: dict[str, Fault] = {}
        for name, slot, row, d in zip(self.varied, self._slot, picked, dpicked):
            while row and row[-1] < 0:  # trailing oks schedule nothing
                row.pop()
            tools[slot], faults[name] = self._tool(slot, tuple(row), d)
            if d >= 0:
                defaults[name] = self.dtable[d]
        return FaultPlan(tuple(tools), faults, defaults)

    def _tool(self, slot: int, row: tuple[int, ...], d: int) -> tuple[FakeTool, tuple[Fault, ...]]:
        base = self.base[slot]
        key = (slot, row, d)
        hit = self._tools.get(key)
        if hit is None:
            table, built = self.table, self._rules
            calls = tuple([_PLAIN_OK if i < 0 else table[i] for i in row])
            # the faults come from the fault table (which holds no plain ok), already built: no parsing
            rules = []
            for n, i in enumerate(row, 1):
                if i >= 0:
                    rule = built.get((i, n))
                    if rule is None:
                        rule = built[(i, n)] = Rule(table[i], call=n)
                    rules.append(rule)
            default = self.dtable[d] if d >= 0 else base.schedule.default
            if len(self._tools) >= self._LIMIT:
                self._tools.clear()
            hit = self._tools[key] = (base.with_faults(FaultSchedule(tuple(rules), default)), calls)
        return hit


# --- policies ----------------------------------------------------------------------------


class SpecPolicy:
    """A built-in policy built from plain data, ``{"stubborn": {"tool": ..., "args": {...}}}``.

    ``spec`` is the ``policy:`` section of a YAML scenario; wrappers (``ignores_refusals``,
    ``obedient``) take the wrapped policy's spec as ``inner``.
    """

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = dict(spec)
        self.policy = build_policy(self.spec)
        self.name = self.policy.name

    def decide(self, view: ModelView) -> Decision:
        return self.policy.decide(view)

    def tools(self) -> set[str]:
        fn = getattr(self.policy, "tools", None)
        return set(fn()) if callable(fn) else set()

    def __repr__(self) -> str:
        return f"policy({self.spec!r})"


def build_policy(spec: Mapping[str, Any]) -> Policy:
    """A policy from ``{name: {params}}``; a parameter that takes a policy (a wrapper's ``inner``) is itself a spec."""
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise PolicyError(f"a policy spec is a one-key mapping {{name: {{params}}}}, got {spec!r}")
    ((name, params),) = spec.items()
    kind = POLICIES.get(name)
    if kind is None:
        raise PolicyError(f"unknown policy {name!r}{did_you_mean(str(name), POLICIES)}")
    kw = dict(params or {})
    for p in kind.params:
        if p.names("Policy") and isinstance(kw.get(p.name), Mapping):
            kw[p.name] = build_policy(kw[p.name])
    return kind.build(**kw)


def policy_specs(tools: Iterable[FakeTool | str], kinds: Iterable[str] | None = None,
                 ignores_refusals: bool = True) -> list[dict[str, Any]]:
    """Every policy spec ``policies`` draws from, simplest first: each kind's registered ``fuzz=`` specs."""
    base = [_as_tool(t) for t in tools]
    chosen = _check_kinds(kinds, _policy_kinds(), "policy kind", POLICIES)
    out = [spec for kind in chosen for spec in POLICIES[kind].extra["fuzz"](kind, base)]
    if ignores_refusals:
        out += [{"ignores_refusals": {"inner": spec}} for spec in list(out)]
    return out


def policies(tools: Iterable[FakeTool | str], *, kinds: Iterable[str] | None = None,
             ignores_refusals: bool = True) -> st.SearchStrategy[SpecPolicy]:
    """Model behaviours over ``tools``: stubborn repeats, jitter, A-B-A-B, paraphrase, polling, exploration.

    Arguments come from each tool's schema (``example_args``). With ``ignores_refusals``
    half the draws keep asking after the runtime refuses, as some models do. Shrinks
    toward a plain ``stubborn`` call of the first tool. Policies keep no state between
    runs, so each drawn policy is built once.
    """
    return _drawn_policies(tools, kinds, ignores_refusals)[1]


def _policy_pick(tools: Iterable[FakeTool | str], kinds: Iterable[str] | None = None,
                 ignores_refusals: bool = True) -> _Pick:
    """What ``policies`` draws, as the one choice it makes (for ``_Flat``)."""
    return _drawn_policies(tools, kinds, ignores_refusals)[0]


def _drawn_policies(tools: Iterable[FakeTool | str], kinds: Iterable[str] | None, ignores_refusals: bool
                    ) -> tuple[_Pick, st.SearchStrategy[SpecPolicy]]:
    base = [_as_tool(t) for t in tools]
    if not base:
        raise ValueError("policies: no tools")
    kinds = _policy_kinds() if kinds is None else tuple(kinds)  # by name: a kind registered since is drawn too
    return _POLICIES.get(base, (kinds, ignores_refusals), lambda: _build_policies(base, kinds, ignores_refusals))


def _build_policies(base: list[FakeTool], kinds: Iterable[str] | None, ignores_refusals: bool
                    ) -> tuple[_Pick, st.SearchStrategy[SpecPolicy]]:
    specs = policy_specs(base, kinds, ignores_refusals)
    if not specs:
        raise ValueError("policies: no policy fits these tools and kinds")
    built = tuple(SpecPolicy(s) for s in specs)
    return _Pick(built), st.sampled_from(built)


# The lists of kinds come from ``__getattr__`` (read from the registries when asked).
__all__ = ["ALL_KINDS", "DEFAULT_KINDS", "DEFAULT_POLICY_KINDS", "FaultPlan", "SpecPolicy", "build_policy",  # noqa: F822
           "describe_fault", "example_args", "fault_data", "fault_schedules", "fault_table", "outcomes", "plan", "policies",
           "policy_specs",
           "rule_data", "tool_data"]
