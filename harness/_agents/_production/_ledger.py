"""Operation keys, the ledger of side effects, and lookups of prior state before a resend.

Every call has a fingerprint: the tool name and its arguments with meaningless differences
removed (key order, whitespace, the schema's defaults, the tool's volatile arguments, and for a
write the idempotency-key argument, which names the operation rather than saying what it does).
A side effect's operation key is derived from that fingerprint, so the same operation asked for
twice, with a fresh request id or reordered keys, has one key, across restarts too.

The ledger (kept in ``tools.store``, which survives a restart) records each operation's state:

- ``applied``: the API answered with success; the result is kept and handed back instead of
  executing again;
- ``unknown``: the request went out and no answer came back (a timeout, a reset): it may have
  been applied. Before any resend its state is looked up through a read of the collection the
  write writes (the tools' specs name it); with no such read, a resend is safe only when the API
  honours idempotency keys even after a lost response, otherwise a person must check.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

STORE_KEY = "production.operations"
APPLIED, UNKNOWN = "applied", "unknown"


def _normalised(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _normalised(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalised(v) for v in value]
    return " ".join(value.split()) if isinstance(value, str) else value


def meaningful_args(spec: Any, args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments that say what the call does: defaults filled in, volatile ones and the idempotency key dropped."""
    props = (getattr(spec, "parameters", None) or {}).get("properties", {})
    defaults = {k: p["default"] for k, p in props.items() if isinstance(p, Mapping) and "default" in p}
    ignored = set(getattr(spec, "volatile", ()) or ()) | {getattr(spec, "idempotency_key", None)}
    return {**defaults, **{k: v for k, v in args.items() if k not in ignored}}


def fingerprint(spec: Any, name: str, args: Mapping[str, Any]) -> str:
    """Tool name + normalised meaningful arguments, as one canonical text."""
    return name + json.dumps(_normalised(meaningful_args(spec, args)), sort_keys=True, default=str,
                             separators=(",", ":"))


def operation_key(fp: str) -> str:
    """A stable operation key for a side effect: the same operation gets the same key in every run."""
    return "op-" + hashlib.sha256(fp.encode()).hexdigest()[:20]


@dataclass
class Ledger:
    """The operations this runtime sent, by operation key, persisted in ``tools.store``."""

    entries: MutableMapping[str, Any]

    @classmethod
    def of(cls, store: MutableMapping[str, Any]) -> Ledger:
        if STORE_KEY not in store:
            store[STORE_KEY] = {}
        return cls(store[STORE_KEY])

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self.entries.get(key)
        return dict(entry) if entry is not None else None

    def sent(self, key: str, idem_key: str | None, call: str) -> None:
        """Record an operation before it goes out: if no answer comes back, its state is unknown."""
        self.entries[key] = {"state": UNKNOWN, "idempotency_key": idem_key, "call": call, "result": None}

    def applied(self, key: str, result: Any) -> None:
        entry = dict(self.entries[key])
        entry.update(state=APPLIED, result=result)
        self.entries[key] = entry

    def forget(self, key: str) -> None:
        """The API said the operation was not applied (a 429, a 503, a rejected argument)."""
        self.entries.pop(key, None)

    def applied_calls(self) -> list[str]:
        return [str(e["call"]) for e in self.entries.values() if e.get("state") == APPLIED]


@dataclass(frozen=True)
class Lookup:
    """A read that tells whether a write happened: the tool, its arguments, and what the record must hold."""

    tool: str
    args: dict[str, Any]
    expect: dict[str, Any]  # fields a record of this write holds


def find_lookup(tools: Any, spec: Any, args: Mapping[str, Any], idem_key: str | None) -> Lookup | None:
    """The read of the collection a write writes that can find this write's record, if the tools have one."""
    writes = getattr(spec, "writes", None)
    if writes is None or getattr(writes, "delete", False):
        return None
    sent = {**args, **({spec.idempotency_key: idem_key} if idem_key and spec.idempotency_key else {})}
    for name in tools.names:
        reads = getattr(tools.spec(name), "reads", None)
        if reads is None or reads.collection != writes.collection:
            continue
        record_field = reads.field or reads.by
        if sent.get(record_field) is not None:
            expect = {k: v for k, v in meaningful_args(spec, sent).items() if v is not None}
            return Lookup(name, {reads.by: sent[record_field]}, expect)
    return None


def holds_record(found: Any, expect: Mapping[str, Any], depth: int = 0) -> bool:
    """Does a read's answer hold a record with every expected field (nested mappings as subsets)?"""
    if isinstance(found, Mapping):
        if all(_subset(found.get(k), v) for k, v in expect.items()):
            return True
        values: Any = found.values()
    elif isinstance(found, (list, tuple)):
        values = found
    else:
        return False
    return depth < 4 and any(holds_record(v, expect, depth + 1) for v in values)


def _subset(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and all(_subset(have.get(k), v) for k, v in want.items())
    if isinstance(want, str) and isinstance(have, str):
        return " ".join(want.split()) == " ".join(have.split())
    return bool(have == want)
