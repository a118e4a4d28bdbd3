"""The world behind the fake tools: the state a real backend keeps between calls.

A ``World`` holds named collections of records and the idempotency keys the APIs
remember. A side-effect tool that ``writes`` a collection leaves a record there whenever
its effect applies, also when the response is lost, and a tool that ``reads`` a collection
answers from it, so a lookup finds an earlier write the way it would against a real API.
Every write is logged, so a ``stale`` fault can answer a read as the world was some writes
ago (a lagging replica). Together with the effect ledger (``ToolSet.ledger``) it is the
ground truth a scenario asserts on.

Idempotency works the way payment APIs do it (Stripe): a key seen before with the same
arguments gets the original result back and applies nothing (a *replay*); the same key with
other arguments is a PRECONDITION error (``idempotency_key_reused``); a key is forgotten
``idempotency_ttl`` virtual seconds after it was stored. A tool can ignore keys (the API has
no dedupe) or store them only once a response was delivered (``honoured_after_applied=False``:
a retry after a lost response applies again).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol

from toolchaos.errors import DefinitionError
from toolchaos.fake_tools._outcomes import Outcome, OutcomeClass

HONOURED = "honoured"
IGNORED = "ignored"
IDEMPOTENCY_MODES = (HONOURED, IGNORED)
# What a tool's spec declares (``x-idempotency``), so a runtime can see the whole rule: a key
# honoured only once a response was delivered is its own value, not an attribute beside ``honoured``.
HONOURED_AFTER_DELIVERY = "honoured-after-delivery"
DECLARED_IDEMPOTENCY = (HONOURED, HONOURED_AFTER_DELIVERY, IGNORED)


def declared_idempotency(mode: str, honoured_after_applied: bool) -> str:
    """The ``x-idempotency`` a tool's spec declares for its API's mode and ``honoured_after_applied``."""
    return HONOURED_AFTER_DELIVERY if mode == HONOURED and not honoured_after_applied else mode
DEFAULT_TTL = 86_400.0  # Stripe keeps a key for 24 hours


@dataclass(frozen=True, slots=True)
class Writes:
    """What a side-effect tool does to a collection when its effect applies.

    ``key``: the argument naming the record: each applied call replaces that record (an
    upsert), or removes it with ``delete``. Without a key every applied call creates a new
    record (a charge, a sent e-mail, a started job).
    """

    collection: str
    key: str | None = None
    delete: bool = False

    def spec(self) -> dict[str, Any]:
        return {"collection": self.collection, "key": self.key, "delete": self.delete}


@dataclass(frozen=True, slots=True)
class Reads:
    """How a read tool answers from a collection: the records whose ``field`` equals argument ``by``.

    ``many``: a list endpoint, every match (maybe none) as ``{collection: [...]}``; otherwise
    the one record (the latest match), or a ``not_found`` error when there is none.
    """

    collection: str
    by: str
    field: str | None = None
    many: bool = False

    @property
    def match(self) -> str:
        return self.field or self.by

    def spec(self) -> dict[str, Any]:
        return {"collection": self.collection, "by": self.by, "field": self.match, "many": self.many}


def writes(spec: Any, tool: str) -> Writes | None:
    """A ``Writes`` from plain data: ``"charges"`` or ``{"collection": ..., "key": ..., "delete": ...}``."""
    if spec is None or isinstance(spec, Writes):
        return spec
    if isinstance(spec, str):
        spec = {"collection": spec}
    fields = _fields(spec, tool, "writes", ("collection", "key", "delete"))
    delete = fields.get("delete", False)
    if not isinstance(delete, bool):
        raise DefinitionError(tool, "writes.delete", f"expected true or false, got {delete!r}")
    key = _name(fields, "key", tool, "writes", required=delete)
    return Writes(str(_name(fields, "collection", tool, "writes", required=True)), key, delete)


def reads(spec: Any, tool: str) -> Reads | None:
    """A ``Reads`` from plain data: ``{"collection": ..., "by": ..., "field": ..., "many": ...}``."""
    if spec is None or isinstance(spec, Reads):
        return spec
    fields = _fields(spec, tool, "reads", ("collection", "by", "field", "many"))
    many = fields.get("many", False)
    if not isinstance(many, bool):
        raise DefinitionError(tool, "reads.many", f"expected true or false, got {many!r}")
    return Reads(str(_name(fields, "collection", tool, "reads", required=True)),
                 str(_name(fields, "by", tool, "reads", required=True)), _name(fields, "field", tool, "reads"), many)


def _fields(spec: Any, tool: str, where: str, known: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(spec, Mapping):
        raise DefinitionError(tool, where, f"expected a mapping ({', '.join(known)}), got {spec!r}")
    for k in spec:
        if k not in known:
            raise DefinitionError(tool, f"{where}.{k}", f"unknown key (known: {', '.join(known)})")
    return spec


def _name(fields: Mapping[str, Any], key: str, tool: str, where: str, required: bool = False) -> str | None:
    value = fields.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise DefinitionError(tool, f"{where}.{key}", f"expected a name, got {value!r}")
    return value


class Effecting(Protocol):
    """What the world needs to know of a tool whose effect applies (a ``FakeTool``)."""

    @property
    def name(self) -> str: ...
    @property
    def idempotency_key(self) -> str | None: ...
    @property
    def idempotency(self) -> str: ...
    @property
    def honoured_after_applied(self) -> bool: ...
    @property
    def idempotency_ttl(self) -> float: ...
    @property
    def writes(self) -> Writes | None: ...
    @property
    def creates(self) -> bool: ...
    @property
    def honours_keys(self) -> bool: ...


class StoredKey(NamedTuple):
    """An idempotency key's stored call: what a later call with the same key is answered."""

    fp: str  # the fingerprint of the call that stored it: same key, other arguments -> reused
    data: Any  # the original result, answered again to every replay
    at: float  # world time it was stored, for expiry


class Collection:
    """Records by key, in the order they were first written, and the log of every write.

    A write only appends to the log (the per-call path stays one append); ``rows`` applies
    what the log gained since it was last read, so a record is built when someone reads it.
    """

    __slots__ = ("_applied", "_rows", "initial", "log", "numbered")

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        self.initial: dict[str, Any] = dict(initial or {})
        self.log: list[tuple[str, Any, Any]] = []  # (key, arguments, result); no arguments: a deletion
        self.numbered = len(self.initial)  # keyless writes number their records after the initial ones
        self._rows: dict[str, Any] = dict(self.initial)
        self._applied = 0  # log entries already in _rows

    @property
    def rows(self) -> dict[str, Any]:
        """The records now, by key."""
        if self._applied < len(self.log):
            end = len(self.log)
            _replay_log(self._rows, self.log[self._applied:end])
            self._applied = end
        return self._rows

    def view(self, behind: int = 0) -> dict[str, Any]:
        """The records as they were ``behind`` writes ago (0: now)."""
        if behind <= 0 or not self.log:
            return self.rows
        rows = dict(self.initial)
        _replay_log(rows, self.log[: max(0, len(self.log) - behind)])
        return rows

    def created(self) -> list[Any]:
        """Records that calls created (not there at the start), as they are now."""
        return [r for k, r in self.rows.items() if k not in self.initial]


def _replay_log(rows: dict[str, Any], writes: list[tuple[str, Any, Any]]) -> None:
    for key, norm, data in writes:
        if norm is None:
            rows.pop(key, None)
        else:  # a record is the call's arguments and the result the API kept
            rows[key] = {**norm, **data} if isinstance(data, dict) else dict(norm)


class World:
    """Named collections and remembered idempotency keys, shared by the tools of a run.

    ``World({"records": {"rec_1": {...}}, "emails": [{...}]})`` starts with records (a
    mapping by key, or a list). ``offset``: virtual seconds that passed before the current
    run (a run restarted on the same world continues its time, so keys still expire).
    """

    def __init__(self, collections: Mapping[str, Any] | None = None) -> None:
        self.collections: dict[str, Collection] = {}
        self.keys: dict[tuple[str, str], StoredKey] = {}
        self.applications: dict[tuple[str, str], int] = {}  # records a creating call made: the next gets a fresh id
        self.offset = 0.0
        self._lock = threading.Lock()
        for name, records in (collections or {}).items():
            self.collections[str(name)] = Collection(_keyed(str(name), records))

    def collection(self, name: str) -> Collection:
        """The collection of that name, created (empty) when a write first needs it."""
        found = self.collections.get(name)
        if found is None:
            found = self.collections[name] = Collection()
        return found

    def get(self, name: str) -> Collection:
        """The collection of that name to read (an empty one, not kept, when nothing wrote it)."""
        return self.collections.get(name) or Collection()

    def records(self, name: str) -> list[Any]:
        """The records of a collection now, in the order they were first written."""
        found = self.collections.get(name)
        return list(found.rows.values()) if found is not None else []

    # -- a side effect applying ----------------------------------------------------------

    def nth(self, tool: Effecting, text: str) -> int:
        """Which record a creating call with these arguments (``text``) would make: 1 for the first."""
        return self.applications.get((tool.name, text), 0) + 1 if tool.creates else 1

    def apply(self, tool: Effecting, args: Mapping[str, Any], norm: Mapping[str, Any], fp: str, text: str,
              outcome: Outcome, now: float, data: Any) -> tuple[Outcome, bool]:
        """(the outcome to deliver, replayed) for an execution whose effect would apply.

        ``data``: the result the API keeps for it (a lost response's too): what a replay
        answers, and what a written record holds besides the arguments.
        """
        arg = tool.idempotency_key
        key = args.get(arg) if arg is not None and tool.honours_keys else None
        if key is None:  # nothing the API remembers: the effect applies
            if tool.writes is not None:
                self._write(tool, text, norm, data)
            return outcome, False
        at = now + self.offset
        with self._lock:  # two workers with one key: the second must see the first's key
            known = self.keys.get((tool.name, str(key)))
            if known is not None and at - known.at < tool.idempotency_ttl:
                if known.fp != fp:
                    return _reused(tool, str(key)), False
                return _replay(outcome, known.data), True
            if outcome.cls is OutcomeClass.SUCCESS or tool.honoured_after_applied:
                self.keys[(tool.name, str(key))] = StoredKey(fp, data, at)
        if tool.writes is not None:
            self._write(tool, text, norm, data)
        return outcome, False

    def _write(self, tool: Effecting, text: str, norm: Mapping[str, Any], data: Any) -> None:
        w = tool.writes
        assert w is not None
        coll = self.collections.get(w.collection) or self.collection(w.collection)
        if w.key is not None:
            coll.log.append((str(norm.get(w.key)), None if w.delete else norm, data))
            return
        with self._lock:  # a new record: its number, and how many this call made, must not race
            coll.numbered += 1
            ident = (tool.name, text)
            self.applications[ident] = self.applications.get(ident, 0) + 1
            coll.log.append((f"{w.collection}#{coll.numbered}", norm, data))

    # -- a read --------------------------------------------------------------------------

    def read(self, r: Reads, args: Mapping[str, Any], behind: int = 0) -> Outcome:
        """What a read tool answers now (or as the world was ``behind`` writes ago)."""
        found = self.collections.get(r.collection)
        rows = found.view(behind) if found is not None else {}
        want, field = args.get(r.by), r.match
        hits = [rec for rec in rows.values() if rec.get(field) == want]
        if r.many:
            return Outcome("ok", OutcomeClass.SUCCESS, "ok", {r.collection: [dict(h) for h in hits]})
        if not hits:
            return Outcome("fatal", OutcomeClass.FATAL, "not_found", None, applied=False,
                           message=f"no record in {r.collection} with {field} {want!r}")
        return Outcome("ok", OutcomeClass.SUCCESS, "ok", dict(hits[-1]))


def _keyed(name: str, records: Any) -> dict[str, Any]:
    if isinstance(records, Mapping):
        out = {str(k): v for k, v in records.items()}
    elif isinstance(records, (list, tuple)):
        out = {f"{name}#{i}": v for i, v in enumerate(records, 1)}
    else:
        raise DefinitionError("world", name, f"expected records as a mapping by key or a list, got {records!r}")
    for k, v in out.items():
        if not isinstance(v, Mapping):
            raise DefinitionError("world", f"{name}.{k}", f"a record is a mapping of fields, got {v!r}")
    return {k: dict(v) for k, v in out.items()}


def _replay(outcome: Outcome, data: Any) -> Outcome:
    """The API's answer to a known key: the original result (unless this response is lost too)."""
    if outcome.cls is not OutcomeClass.SUCCESS:
        return replace(outcome, applied=False)
    return Outcome("replay", OutcomeClass.SUCCESS, "replayed", data, latency=outcome.latency, applied=False)


def _reused(tool: Effecting, key: str) -> Outcome:
    return Outcome("invalid_call", OutcomeClass.PRECONDITION, "idempotency_key_reused", None, applied=False,
                   field=tool.idempotency_key,
                   message=f"idempotency key {key!r} was already used with other arguments")


__all__ = ["DEFAULT_TTL", "HONOURED", "IDEMPOTENCY_MODES", "IGNORED", "Collection", "Reads", "World", "Writes"]
