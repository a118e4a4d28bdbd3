"""Side effects deduplicated by idempotency key, and the lookup of a write whose answer was lost.

A side effect goes out under one idempotency key: the model's, when it sent one, else a key
derived from the request's fingerprint (so the model asking again, with a fresh request id or
its keys reordered, asks under the same key). The ledger, kept in ``tools.store`` so a restarted
run reads it, records each key before the request goes out (``sent``: no answer yet) and when
the API answers with success (``applied``, with the result). A key already applied is not sent
again: the model gets the recorded result.

When a write got no answer (a timeout, a reset) and the transport could not resend it safely
(the API's spec does not declare ``x-idempotency: honoured``), its state is looked up through a
read of the collection it writes (``x-writes`` / ``x-reads`` in the tools' specs), by a field
the write sent. With no such read a person must check before anything is resent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

STORE_KEY = "sdk-retries.ledger"
SENT, APPLIED = "sent", "applied"


def idempotency_key(spec: Mapping[str, Any], args: Mapping[str, Any], fp: str) -> str:
    """The key the operation goes under: the model's own, else one derived from its fingerprint."""
    arg = spec.get("x-idempotency-key")
    given = args.get(arg) if arg else None
    return str(given) if given else "op-" + hashlib.sha256(fp.encode()).hexdigest()[:20]


def replay_safe(spec: Mapping[str, Any]) -> bool:
    """May a request whose answer was lost be resent? A read yes; a write only to an API that honours its key."""
    if not spec.get("x-side-effect"):
        return True
    return bool(spec.get("x-idempotency-key")) and spec.get("x-idempotency") == "honoured"


@dataclass
class Ledger:
    """Idempotency key -> what became of the operation, persisted in ``tools.store``."""

    entries: MutableMapping[str, Any]

    @classmethod
    def of(cls, store: MutableMapping[str, Any]) -> Ledger:
        if STORE_KEY not in store:
            store[STORE_KEY] = {}
        return cls(store[STORE_KEY])  # read back: a persistent store hands out a mapping that writes through

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self.entries.get(key)
        return dict(entry) if entry is not None else None

    def sent(self, key: str, call: str) -> None:
        self.entries[key] = {"state": SENT, "call": call, "result": None}

    def applied(self, key: str, result: Any) -> None:
        entry = dict(self.entries.get(key) or {"call": key})
        entry.update(state=APPLIED, result=result)
        self.entries[key] = entry

    def forget(self, key: str) -> None:
        """The API answered that nothing was applied (an error it answered, not a lost answer)."""
        self.entries.pop(key, None)

    def applied_calls(self) -> list[str]:
        return [str(e["call"]) for e in self.entries.values() if e.get("state") == APPLIED]


@dataclass(frozen=True)
class Lookup:
    """A read that finds the record a write made: the tool, its arguments, the fields the record must hold."""

    tool: str
    args: dict[str, Any]
    expect: dict[str, Any]


def find_lookup(specs: Mapping[str, Mapping[str, Any]], spec: Mapping[str, Any],
                sent: Mapping[str, Any]) -> Lookup | None:
    """The read of the collection ``spec`` writes that finds this write's record by a field it sent."""
    writes = spec.get("x-writes")
    if not isinstance(writes, Mapping) or writes.get("delete"):
        return None
    for name, other in specs.items():
        reads = other.get("x-reads")
        if not isinstance(reads, Mapping) or reads.get("collection") != writes.get("collection"):
            continue
        value = sent.get(str(reads.get("field") or reads.get("by")))
        if value is not None:
            expect = {k: v for k, v in sent.items() if v is not None}
            return Lookup(name, {str(reads["by"]): value}, expect)
    return None


def holds(found: Any, expect: Mapping[str, Any], depth: int = 0) -> bool:
    """Does a read's answer hold a record with every field the write sent (at any depth up to 4)?"""
    if isinstance(found, Mapping):
        if all(found.get(k) == v for k, v in expect.items()):
            return True
        values: Any = found.values()
    elif isinstance(found, (list, tuple)):
        values = found
    else:
        return False
    return depth < 4 and any(holds(v, expect, depth + 1) for v in values)
