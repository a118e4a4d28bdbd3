"""The fake tool: a deterministic tool double with a fault schedule.

A ``FakeTool`` is an immutable definition: name, description, argument schema (JSON
Schema, validated on every call the way a real API does), whether it has side effects,
which argument carries an idempotency key and how the API treats it, which arguments are
volatile (ignored by fingerprints), how faults reach the caller (returned payload or
raised exception), the world collection it writes or reads, and its fault schedule.
Per-run state (call counts, polling counters, rate-limit windows) lives in a
``ToolState`` so one definition serves any number of runs.

``ToolSet`` binds tools to a clock, a seed, an effect ledger and a world; it works on its
own, without the harness or pytest.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from toolchaos.errors import DefinitionError, UnknownTool
from toolchaos.fake_tools import _payloads as payloads
from toolchaos.fake_tools import _retry
from toolchaos.fake_tools._errors import exception_for
from toolchaos.fake_tools._faults import CallInfo, Fault, Ok, Stale, as_fault
from toolchaos.fake_tools._fingerprint import canonical, digest, normalise
from toolchaos.fake_tools._ledger import EffectLedger
from toolchaos.fake_tools._outcomes import Outcome, OutcomeClass
from toolchaos.fake_tools._schedule import FIRED, FaultSchedule, schedule
from toolchaos.fake_tools._world import (
    DEFAULT_TTL,
    HONOURED,
    IDEMPOTENCY_MODES,
    Reads,
    World,
    Writes,
    declared_idempotency,
)
from toolchaos.fake_tools._world import reads as _reads
from toolchaos.fake_tools._world import writes as _writes

Payload = Callable[[Mapping[str, Any], random.Random], Any]

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list, tuple), "null": (type(None),),
}
DELIVERIES = ("return", "raise")
DEFAULT_VOLATILE = ("request_id", "requestId", "nonce", "trace_id", "traceparent")


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    types: tuple[type, ...]
    type_name: str
    enum: tuple[Any, ...] | None


def _compile_schema(tool: str, schema: Mapping[str, Any]) -> tuple[tuple[_Param, ...], tuple[str, ...], bool,
                                                                    dict[str, Any]]:
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise DefinitionError(tool, "parameters", f"expected a JSON Schema object, got {schema!r}")
    props = schema.get("properties", {})
    if not isinstance(props, Mapping):
        raise DefinitionError(tool, "parameters.properties", f"expected a mapping, got {props!r}")
    params, defaults = [], {}
    for name, spec in props.items():
        if not isinstance(spec, Mapping):
            raise DefinitionError(tool, f"parameters.properties.{name}", f"expected a mapping, got {spec!r}")
        tname = spec.get("type", "string")
        names = tname if isinstance(tname, list) else [tname]
        types: tuple[type, ...] = ()
        for t in names:
            if t not in _TYPES:
                raise DefinitionError(tool, f"parameters.properties.{name}.type",
                                      f"unknown JSON type {t!r} (known: {', '.join(_TYPES)})")
            types += _TYPES[t]
        enum = spec.get("enum")
        params.append(_Param(str(name), types, "|".join(names), tuple(enum) if enum is not None else None))
        if "default" in spec:
            defaults[str(name)] = spec["default"]
    required = schema.get("required", [])
    if not isinstance(required, list) or any(not isinstance(r, str) or r not in props for r in required):
        raise DefinitionError(tool, "parameters.required",
                              f"expected a list of declared properties ({', '.join(props)}), got {required!r}")
    closed = schema.get("additionalProperties", True) is False
    # A tuple in declaration order, not a set: which missing field is reported first must not
    # depend on the process's hash seed (xdist workers each have their own).
    return tuple(params), tuple(dict.fromkeys(required)), closed, defaults


def _precondition(code: str, field_name: str, message: str) -> Outcome:
    return Outcome("invalid_call", OutcomeClass.PRECONDITION, code, None, retryable=False,
                   message=message, applied=False, field=field_name)


@dataclass(frozen=True)
class FakeTool:
    """A deterministic tool double. Build one with ``fake_tool(...)`` for validation."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    side_effect: bool = False
    idempotency_key: str | None = None
    volatile: tuple[str, ...] = DEFAULT_VOLATILE
    delivery: str = "return"
    schedule: FaultSchedule = field(default_factory=FaultSchedule)
    payload: Payload | None = None
    idempotency: str = HONOURED  # what the API does with a key: honoured (Stripe) or ignored (no dedupe)
    honoured_after_applied: bool = True  # False: a key is stored only once a response was delivered
    idempotency_ttl: float = DEFAULT_TTL  # virtual seconds a key is remembered
    writes: Writes | None = None
    reads: Reads | None = None
    _params: tuple[_Param, ...] = field(default=(), repr=False, compare=False)
    _required: tuple[str, ...] = field(default=(), repr=False, compare=False)
    _closed: bool = field(default=False, repr=False, compare=False)
    _defaults: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # Derived once (the per-call path reads them): each applied call creates a new record (so its
    # result carries a fresh id); the API remembers keys; one outcome per argument set can be
    # remembered (the tool neither reads the world nor creates records); an applied effect
    # concerns the world (it writes a collection, or the API remembers its key).
    creates: bool = field(default=False, init=False, repr=False, compare=False)
    honours_keys: bool = field(default=False, init=False, repr=False, compare=False)
    _cacheable: bool = field(default=True, init=False, repr=False, compare=False)
    _worldly: bool = field(default=False, init=False, repr=False, compare=False)
    # (canonical JSON, fingerprint, validation failure) by repr of the arguments, kept across runs:
    # they depend on the schema, the defaults and the volatile fields only, so the copies
    # ``with_faults`` makes (the fuzzer makes one per schedule) share this table.
    _facts: dict[str, tuple[str, str, Outcome | None]] = field(default_factory=dict, init=False, repr=False,
                                                                compare=False)

    def __post_init__(self) -> None:
        _check_stale(self.name, self.reads, self.schedule)
        w = self.writes
        set_ = object.__setattr__
        set_(self, "creates", w is not None and w.key is None and not w.delete)
        set_(self, "honours_keys", self.idempotency_key is not None and self.idempotency == HONOURED)
        set_(self, "_cacheable", self.reads is None and not self.creates)
        set_(self, "_worldly", w is not None or self.honours_keys)

    def spec(self) -> dict[str, Any]:
        """The tool as a model API declares it (OpenAI function-tool shape).

        The ``x-`` keys are the API's documented contract, for a runtime to read: side effect,
        idempotency key and what the API does with it (``x-idempotency``: ``honoured``,
        ``honoured-after-delivery`` or ``ignored``; every rule the fake applies is declared
        here, none only in an attribute), the collection written or read.
        """
        return {"name": self.name, "description": self.description, "parameters": dict(self.parameters),
                "x-side-effect": self.side_effect, "x-idempotency-key": self.idempotency_key,
                "x-idempotency": (declared_idempotency(self.idempotency, self.honoured_after_applied)
                                  if self.idempotency_key else None),
                "x-writes": self.writes.spec() if self.writes else None,
                "x-reads": self.reads.spec() if self.reads else None}

    def with_faults(self, faults: Any = None, default: Any = None, delivery: str | None = None) -> FakeTool:
        """A copy with another fault schedule (and optionally another delivery).

        The schema was checked and compiled when this tool was built; the copy shares it.
        """
        if not delivery or delivery == self.delivery:
            delivery = self.delivery  # checked when this tool was made
        else:
            _check_delivery(self.name, delivery)
        sched = schedule(faults, default, self.name)
        _check_stale(self.name, self.reads, sched)
        # A field copy, not dataclasses.replace: what __post_init__ derives depends on neither the
        # schedule nor the delivery, and the fuzzer builds a copy per distinct schedule it draws
        # (replace costs ~20 us, most of building a plan).
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        object.__setattr__(out, "schedule", sched)
        object.__setattr__(out, "delivery", delivery)
        return out

    def with_idempotency(self, idempotency: str | None = None, honoured_after_applied: bool | None = None,
                         idempotency_ttl: float | None = None) -> FakeTool:
        """A copy whose API treats idempotency keys otherwise (``None`` keeps a setting)."""
        mode = self.idempotency if idempotency is None else idempotency
        after = self.honoured_after_applied if honoured_after_applied is None else honoured_after_applied
        ttl = self.idempotency_ttl if idempotency_ttl is None else idempotency_ttl
        if self.idempotency_key is None and (mode, after, ttl) != (self.idempotency, self.honoured_after_applied,
                                                                  self.idempotency_ttl):
            field_name = ("idempotency" if idempotency is not None else
                          "honoured_after_applied" if honoured_after_applied is not None else "idempotency_ttl")
            raise DefinitionError(self.name, field_name, "the tool takes no idempotency key")
        _check_idempotency(self.name, mode, after, ttl)
        return replace(self, idempotency=mode, honoured_after_applied=after, idempotency_ttl=float(ttl))

    # -- the per-call path: keep it cheap ------------------------------------------------

    def validate(self, args: Mapping[str, Any]) -> Outcome | None:
        """A PRECONDITION outcome naming the bad field, or None when the call is valid."""
        for name in self._required:
            if name not in args:
                return _precondition("missing_argument", name, f"missing required argument {name!r}")
        for p in self._params:
            if p.name in args:
                v = args[p.name]
                if not isinstance(v, p.types) or (isinstance(v, bool) and bool not in p.types):
                    return _precondition("wrong_type", p.name,
                                         f"argument {p.name!r} must be {p.type_name}, got {type(v).__name__}")
                if p.enum is not None and v not in p.enum:
                    return _precondition("invalid_argument", p.name,
                                         f"argument {p.name!r} must be one of {list(p.enum)}")
        if self._closed:
            known = {p.name for p in self._params}
            for name in args:
                if name not in known:
                    return _precondition("unknown_argument", name, f"unknown argument {name!r}")
        return None

    def normalise(self, args: Mapping[str, Any]) -> dict[str, Any]:
        return normalise(args, self.volatile, self._defaults)

    def operation_key(self, args: Mapping[str, Any], fp: str) -> str:
        """The idempotency key when the call carries one, else the call's fingerprint."""
        if self.idempotency_key is not None:
            value = args.get(self.idempotency_key)
            if value is not None:
                return str(value)
        return fp

    def resolve(self, args: Mapping[str, Any], state: ToolState, now: float, key: str, seed: int,
                bad: Outcome | bool | None = True, world: World | None = None) -> Outcome:
        """The outcome of one execution (before it is delivered).

        ``bad``: the validation result when the caller already has it (``True``: validate here).
        ``world``: where a read tool looks (an empty world when not given).
        """
        return self.resolve_numbered(args, state, now, key, seed, bad, world)[0]

    def resolve_numbered(self, args: Mapping[str, Any], state: ToolState, now: float, key: str, seed: int,
                         bad: Outcome | bool | None = True, world: World | None = None) -> tuple[Outcome, int]:
        """``resolve`` and the call's number, exact when several workers call the tool at once."""
        state.calls = n = next(state.counter)  # atomic, unlike `calls += 1`
        if bad is True:
            bad = self.validate(args)
        if isinstance(bad, Outcome):
            return bad, n
        scratch = state.scratch
        blocked = scratch.get("blocked_until")
        if blocked is not None and now < blocked:
            wait, form = round(blocked - now, 6), scratch.get("blocked_form", _retry.SECONDS)
            return Outcome("transient", OutcomeClass.RETRYABLE, "rate_limited", None, retryable=True,
                           retry_after=wait, applied=False,
                           message="rate limited: retried before Retry-After elapsed",
                           headers=() if form == _retry.SECONDS else _retry.headers(form, wait, now)), n
        sched = self.schedule
        # the common case: one outcome per argument set
        if self._cacheable and not sched.rules and type(sched.default) is Ok:
            done = state.outcomes.get(key)
            if done is None:
                dflt = sched.default
                data = dflt.data if dflt.has_data else self._make_payload(args, key, state, seed)
                done = state.outcomes[key] = Outcome("ok", OutcomeClass.SUCCESS, "ok", data)
            return done, n
        if world is None:
            world = World()
        if self.reads is not None:  # the answer is the world's
            reads = self.reads

            def read(behind: int) -> Outcome:
                return world.read(reads, args, behind)

            call = CallInfo(self.name, args, n, key, now, scratch, lambda: read(0).data, read)
        else:
            nth = world.nth(self, key)
            call = CallInfo(self.name, args, n, key, now, scratch,
                            lambda: self._make_payload(args, key, state, seed, nth))
        return sched.pick(call, seed).resolve(call), n

    def _make_payload(self, args: Mapping[str, Any], key: str, state: ToolState, seed: int, nth: int = 1) -> Any:
        """The seeded result for these arguments; the ``nth`` record a creating tool makes gets its own."""
        ident = key if nth == 1 else f"{key}:{nth}"
        cache = state.payloads
        if ident not in cache:
            if self.payload is None:
                cache[ident] = {"ok": True}
            else:
                cache[ident] = payloads.make(self.payload, args, f"{seed}:{self.name}:{ident}")
        return cache[ident]

    def deliver(self, outcome: Outcome) -> Any:
        """Hand the outcome to the caller as a real tool would: data, error payload or exception."""
        if outcome.cls is OutcomeClass.SUCCESS or outcome.cls is OutcomeClass.PENDING:
            return outcome.data
        if self.delivery == "raise":
            raise exception_for(self.name, outcome)
        return outcome.error_payload()


@dataclass(slots=True, init=False)
class ToolState:
    calls: int  # the number of the latest call (read it right after resolve() in one thread only)
    counter: itertools.count[int] = field(repr=False)
    scratch: dict[Any, Any]
    payloads: dict[str, Any]
    outcomes: dict[str, Outcome]

    def __init__(self) -> None:  # written out: the generated one calls a factory per field, per tool, per run
        self.calls, self.counter = 0, itertools.count(1)
        self.scratch, self.payloads, self.outcomes = {}, {}, {}


def fake_tool(name: str, description: str = "", parameters: Mapping[str, Any] | None = None, *,
              side_effect: bool = False, idempotency_key: str | None = None,
              volatile: Iterable[str] | None = None, delivery: str = "return", faults: Any = None,
              default: Any = None, payload: Payload | None = None, idempotency: str = HONOURED,
              honoured_after_applied: bool = True, idempotency_ttl: float = DEFAULT_TTL,
              writes: Writes | Mapping[str, Any] | str | None = None,
              reads: Reads | Mapping[str, Any] | None = None) -> FakeTool:
    """Define a fake tool; every field is checked, errors name the tool and the field.

    ``idempotency``: ``honoured`` (a known key gets the original result, nothing applies again)
    or ``ignored`` (the API has no dedupe); ``honoured_after_applied=False`` stores a key only
    once a response was delivered; ``idempotency_ttl``: how long a key is remembered.
    ``writes`` / ``reads``: the world collection the tool changes or answers from.
    """
    if not isinstance(name, str) or not name.strip():
        raise DefinitionError(str(name), "name", "a tool needs a non-empty name")
    schema = parameters if parameters is not None else {"type": "object", "properties": {}}
    params, required, closed, defaults = _compile_schema(name, schema)
    if idempotency_key is not None and idempotency_key not in {p.name for p in params}:
        raise DefinitionError(name, "idempotency_key",
                              f"{idempotency_key!r} is not one of its parameters ({', '.join(p.name for p in params)})")
    if idempotency_key is not None and not side_effect:
        raise DefinitionError(name, "idempotency_key", "only a tool with side_effect: true carries an idempotency key")
    _check_delivery(name, delivery)
    _check_idempotency(name, idempotency, honoured_after_applied, idempotency_ttl)
    vol = tuple(DEFAULT_VOLATILE if volatile is None else volatile)
    if idempotency_key in vol:
        vol = tuple(v for v in vol if v != idempotency_key)
    names = {p.name for p in params}
    w, r = _world_access(name, _writes(writes, name), _reads(reads, name), bool(side_effect), names)
    return FakeTool(name, description, dict(schema), bool(side_effect), idempotency_key, vol, delivery,
                    schedule(faults, default, name), payload, idempotency, honoured_after_applied,
                    float(idempotency_ttl), w, r, params, required, closed, defaults)


def _check_stale(name: str, reads: Reads | None, sched: FaultSchedule) -> None:
    if reads is None and _has_stale(sched):
        raise DefinitionError(name, "faults", "a stale read needs a tool that reads the world (reads:)")


def _has_stale(sched: FaultSchedule) -> bool:
    """Is any fault of the schedule, nested ones (``pending.then``, ``slow.then``) included, a stale read?"""
    for fault in (*[r.outcome for r in sched.rules], sched.default):
        f: Any = fault
        while isinstance(f, Fault):
            if type(f) is Stale:
                return True
            f = getattr(f, "then", None)
    return False


def _check_idempotency(name: str, mode: Any, after_applied: Any, ttl: Any) -> None:
    if mode not in IDEMPOTENCY_MODES:
        raise DefinitionError(name, "idempotency", f"expected one of {', '.join(IDEMPOTENCY_MODES)}, got {mode!r}")
    if not isinstance(after_applied, bool):
        raise DefinitionError(name, "honoured_after_applied", f"expected true or false, got {after_applied!r}")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0:
        raise DefinitionError(name, "idempotency_ttl", f"expected a number of seconds > 0, got {ttl!r}")


def _world_access(name: str, w: Writes | None, r: Reads | None, side_effect: bool,
                  params: set[str]) -> tuple[Writes | None, Reads | None]:
    """A write needs a side effect and names its record by an argument; a read selects by one."""
    if w is not None and r is not None:
        raise DefinitionError(name, "reads", "a tool either writes or reads the world, not both")
    if w is not None:
        if not side_effect:
            raise DefinitionError(name, "writes", "only a tool with side_effect: true writes the world")
        if w.key is not None and w.key not in params:
            raise DefinitionError(name, "writes.key", f"{w.key!r} is not one of its parameters ({', '.join(params)})")
    if r is not None:
        if side_effect:
            raise DefinitionError(name, "reads", "a read has no side effect (side_effect: false)")
        if r.by not in params:
            raise DefinitionError(name, "reads.by", f"{r.by!r} is not one of its parameters ({', '.join(params)})")
    return w, r


def _check_delivery(name: str, delivery: str) -> None:
    if delivery not in DELIVERIES:
        raise DefinitionError(name, "delivery", f"expected one of {', '.join(DELIVERIES)}, got {delivery!r}")


class ManualClock:
    """The simplest virtual clock: seconds that move only when told to."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        if seconds > 0:
            self.t += seconds


_FACTS_KEPT = 4096  # argument sets whose facts a run (and a tool, across runs) remembers


class ToolSet:
    """Fake tools bound to a clock, a seed and an effect ledger. Usable without the harness.

    ``toolset.call("charge_payment", {...})`` executes one call: resolves its outcome
    from the schedule (a read tool answers from the world), advances the clock by its
    latency, applies the effect to the world (or replays it for a known idempotency key),
    records it in the ledger and delivers the result (data, error payload, or exception).
    """

    def __init__(self, tools: Iterable[FakeTool], *, seed: int = 0, clock: Any = None,
                 ledger: EffectLedger | None = None, world: World | None = None) -> None:
        self.tools: dict[str, FakeTool] = {}
        for t in tools:
            if not isinstance(t, FakeTool):
                raise TypeError(f"expected a FakeTool, got {t!r}")
            if t.name in self.tools:
                raise DefinitionError(t.name, "name", "two tools share this name")
            self.tools[t.name] = t
        self.seed = seed
        self.clock = clock if clock is not None else ManualClock()
        self.ledger = ledger if ledger is not None else EffectLedger()
        self.world = world if world is not None else World()
        self.states: dict[str, ToolState] = {n: ToolState() for n in self.tools}
        self.seq = 0
        self._seqs = itertools.count(1)
        self._known: dict[tuple[str, str], tuple[dict[str, Any], str, str, Outcome | None]] = {}

    def execute(self, name: str, args: Mapping[str, Any],
                seq: int | None = None) -> tuple[FakeTool, Outcome, dict[str, Any], str, int]:
        """Resolve and record one execution: (tool, outcome, normalised args, fingerprint, ledger count)."""
        tool, outcome, norm, fp, count, _ = self.run_call(name, args, seq)
        return tool, outcome, norm, fp, count

    def run_call(self, name: str, args: Mapping[str, Any], seq: int | None = None, advance: bool = True
                 ) -> tuple[FakeTool, Outcome, dict[str, Any], str, int, int]:
        """``execute`` plus the tool's call number; ``advance=False`` leaves the latency to the caller.

        The call number is returned, not read back from the tool state afterwards, so it is
        exact when several workers call the same tool at once.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise UnknownTool(name, self.tools)
        norm, text, fp, bad = self._facts(tool, args)
        clock = self.clock
        state = self.states[name]
        now = clock.now()
        outcome, call_no = tool.resolve_numbered(args, state, now, text, self.seed, bad, self.world)
        if outcome.latency and advance:
            clock.advance(outcome.latency)
        count = 0
        if seq is None:
            self.seq = seq = next(self._seqs)
        if tool.side_effect:
            replayed = False
            if outcome.applied and tool._worldly:
                # the result the API keeps: the response's, or what a lost response would have carried
                data = outcome.data if outcome.kind == "ok" else tool._make_payload(
                    args, text, state, self.seed, self.world.nth(tool, text))
                outcome, replayed = self.world.apply(tool, args, norm, fp, text, outcome, now, data)
            count = self.ledger.record(name, tool.operation_key(args, fp), outcome.applied, outcome.status, seq,
                                       replayed)
        return tool, outcome, norm, fp, count, call_no

    def _facts(self, tool: FakeTool, args: Mapping[str, Any]) -> tuple[dict[str, Any], str, str, Outcome | None]:
        """(normalised args, canonical JSON, fingerprint, validation failure) of one call.

        They depend only on the arguments, and agents that loop send the same arguments again
        and again (and the model's request is fingerprinted before its execution): remember them.
        """
        shown = repr(args)
        ck = (tool.name, shown)
        known = self._known.get(ck)
        if known is None:
            norm = tool.normalise(args)  # a fresh dict each run: the run's trace holds it
            facts = tool._facts.get(shown)
            if facts is None:
                text = canonical(norm)
                facts = (text, digest(tool.name + "\x00" + text), tool.validate(args))
                if len(tool._facts) < _FACTS_KEPT:
                    tool._facts[shown] = facts
            known = (norm, *facts)
            if len(self._known) < _FACTS_KEPT:
                self._known[ck] = known
        return known

    def fired(self) -> tuple[dict[str, tuple[int, ...]], dict[str, dict[int, int]]]:
        """``rules_fired()`` and ``rule_hits()`` from one pass over the tools (the engine's end of a run)."""
        fired: dict[str, tuple[int, ...]] = {}
        hits: dict[str, dict[int, int]] = {}
        for name, st in self.states.items():
            counts = st.scratch.get(FIRED)
            if counts:
                ordered = sorted(counts.items())
                fired[name], hits[name] = tuple(i for i, _ in ordered), dict(ordered)
            else:
                fired[name], hits[name] = (), {}
        return fired, hits

    def rules_fired(self) -> dict[str, tuple[int, ...]]:
        """Per tool, the fault rules (indexes into its schedule) that answered at least one call."""
        return self.fired()[0]

    def rule_hits(self) -> dict[str, dict[int, int]]:
        """Per tool, how many calls each fault rule (by index into its schedule) answered."""
        return self.fired()[1]

    def fingerprint(self, name: str, args: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """(normalised args, fingerprint) of a call, for a tool that may not be registered."""
        tool = self.tools.get(name)
        if tool is None:
            norm = normalise(args)
            return norm, digest(name + "\x00" + canonical(norm))
        norm, _, fp, _ = self._facts(tool, args)
        return norm, fp

    def call(self, name: str, args: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        tool, outcome, _, _, _ = self.execute(name, {**(args or {}), **kwargs})
        return tool.deliver(outcome)

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self.tools.values()]


__all__ = ["FakeTool", "ManualClock", "ToolSet", "ToolState", "UnknownTool", "as_fault", "fake_tool"]
