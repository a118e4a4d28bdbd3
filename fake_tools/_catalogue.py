"""Ready-made tools with realistic names, schemas and seeded payloads (faker).

``catalogue.get("charge_payment", faults=[...])`` returns a fresh ``FakeTool`` with the
given schedule. Payloads are deterministic: the same seed and arguments give the same
data in every process.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable, Mapping
from typing import Any

from toolchaos.errors import DefinitionError, did_you_mean
from toolchaos.fake_tools._faults import paginated
from toolchaos.fake_tools._tool import FakeTool, Payload, fake_tool

POOL = 1024  # drawn once per kind of text; a payload picks with one number from its own rng
_pools: dict[str, tuple[str, ...]] = {}


def _pool(kind: str, make: Callable[[random.Random], str]) -> tuple[str, ...]:
    """``POOL`` texts of one kind, drawn once per process with a fixed seed.

    Reseeding Faker and asking it for a sentence or a company per payload cost ~35 us a text,
    most of a scenario's time; picking from a pool with the payload's seeded rng costs one random
    number, and payloads stay the same in every process.
    """
    pool = _pools.get(kind)
    if pool is None:
        gen = random.Random(f"toolchaos-{kind}")
        pool = _pools[kind] = tuple(make(gen) for _ in range(POOL))
    return pool


def _sentence(rng: random.Random, nb_words: int) -> str:
    """A lorem sentence of about ``nb_words`` words, from faker's English word list (+/-40%, as faker)."""
    def make(gen: random.Random) -> str:  # once per pool: faker is imported only when a pool is drawn
        from faker.providers.lorem.en_US import Provider

        text = " ".join(gen.choices(Provider.word_list, k=max(1, round(nb_words * gen.uniform(0.6, 1.4)))))
        return text[:1].upper() + text[1:] + "."

    return _pool(f"sentence-{nb_words}", make)[rng.randrange(POOL)]


def _company(rng: random.Random) -> str:
    """A company name from faker (one Faker, seeded from the pool's generator: building one costs ms)."""
    def make(gen: random.Random) -> str:
        global _faker
        if _faker is None:
            from faker import Faker

            _faker = Faker("en_US")
        _faker.seed_instance(gen.getrandbits(32))
        return str(_faker.company())

    return _pool("company", make)[rng.randrange(POOL)]


_faker: Any = None


def _search(args: Mapping[str, Any], rng: random.Random) -> Any:
    n = int(args.get("limit", 3))
    return {"results": [{"id": f"doc_{rng.randrange(10**6):06d}", "title": _sentence(rng, 5).rstrip("."),
                         "snippet": _sentence(rng, 12),
                         # built from the seeded rng: faker.url() alone was a third of a scenario's time
                         "url": f"https://docs.example.com/{rng.randrange(16**8):08x}"} for _ in range(min(n, 10))]}


def _read_document(args: Mapping[str, Any], rng: random.Random) -> Any:
    paragraphs = (" ".join(_sentence(rng, 10) for _ in range(rng.randrange(3, 6))) for _ in range(2))
    return {"id": args.get("doc_id"), "title": _sentence(rng, 5).rstrip("."), "content": " ".join(paragraphs)}


_YEAR_START = datetime.date(2026, 1, 1)


def _invoice(args: Mapping[str, Any], rng: random.Random) -> Any:
    due = _YEAR_START + datetime.timedelta(days=rng.randrange(365))
    return {"invoice_id": args.get("invoice_id"), "customer": _company(rng),
            "total": round(rng.uniform(20, 5000), 2), "currency": "EUR", "status": "open",
            "due_date": due.isoformat()}


def _job(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"job_id": args.get("job_id"), "status": "done", "result": f"s3://results/{rng.randrange(10**8):08d}"}


def _email(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"message_id": f"msg_{rng.randrange(16**10):010x}", "status": "sent", "to": args.get("to")}


def _charge(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"charge_id": f"ch_{rng.randrange(16**12):012x}", "status": "succeeded",
            "amount": args.get("amount"), "currency": args.get("currency", "EUR")}


def _write(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"record_id": args.get("record_id"), "version": rng.randrange(2, 50), "status": "written"}


def _delete(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"record_id": args.get("record_id"), "deleted": True}


def _spawn(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"agent_id": f"agent_{rng.randrange(16**8):08x}", "status": "started", "task": args.get("task")}


def _obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


_S = {"type": "string"}
_I = {"type": "integer"}
_N = {"type": "number"}

# name -> (description, schema, side_effect, idempotency_key, payload, default schedule)
_ENTRIES: dict[str, tuple[str, dict[str, Any], bool, str | None, Payload | None, Any]] = {
    "search": ("Search the knowledge base; returns matching documents.",
               _obj(["query"], query=_S, limit={"type": "integer", "default": 3}), False, None, _search, None),
    "read_document": ("Read one document by id.", _obj(["doc_id"], doc_id=_S), False, None, _read_document, None),
    "fetch_invoice": ("Fetch an invoice and its total from the billing system.",
                      _obj(["invoice_id"], invoice_id=_S), False, None, _invoice, None),
    "get_job_status": ("Get the status of a long-running job.", _obj(["job_id"], job_id=_S), False, None, _job, None),
    "list_records": ("List records, one page per call; pass next_cursor to get the next page.",
                     _obj([], cursor={"type": ["string", "null"]}, filter=_S), False, None, None,
                     paginated(pages=3)),
    "send_email": ("Send an email.", _obj(["to", "subject", "body"], to=_S, subject=_S, body=_S,
                                          idempotency_key=_S), True, "idempotency_key", _email, None),
    "charge_payment": ("Charge a customer's card.",
                       _obj(["customer_id", "amount"], customer_id=_S, amount=_N,
                            currency={"type": "string", "default": "EUR"}, idempotency_key=_S),
                       True, "idempotency_key", _charge, None),
    "write_record": ("Create or update a record.", _obj(["record_id", "data"], record_id=_S, data={"type": "object"},
                                                        idempotency_key=_S), True, "idempotency_key", _write, None),
    "delete_record": ("Delete a record.", _obj(["record_id"], record_id=_S), True, None, _delete, None),
    "spawn_subagent": ("Start a sub-agent on a task.", _obj(["task"], task=_S, idempotency_key=_S),
                       True, "idempotency_key", _spawn, None),
}

NAMES = tuple(_ENTRIES)
_BASE: dict[str, FakeTool] = {}


def describe() -> dict[str, str]:
    """One line per catalogue tool."""
    return {name: entry[0] for name, entry in _ENTRIES.items()}


def get(name: str, faults: Any = None, *, default: Any = None, delivery: str = "return") -> FakeTool:
    """A catalogue tool with the given fault schedule (and the tool's own default)."""
    if name not in _ENTRIES:
        raise DefinitionError(name, "tool", f"not in the catalogue{did_you_mean(name, _ENTRIES)}"
                                            f" (catalogue: {', '.join(_ENTRIES)})")
    base = _BASE.get(name)
    if base is None:  # compile each entry's schema once: a suite builds its tools per scenario
        desc, schema, side, key, payload, _ = _ENTRIES[name]
        base = _BASE[name] = fake_tool(name, desc, schema, side_effect=side, idempotency_key=key, payload=payload)
    return base.with_faults(faults, default if default is not None else _ENTRIES[name][5], delivery)


def payload_of(name: str) -> Callable[[Mapping[str, Any], random.Random], Any] | None:
    return _ENTRIES[name][4]
