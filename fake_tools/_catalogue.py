"""Ready-made tools with realistic names, schemas and seeded payloads (faker).

``catalogue.get("charge_payment", faults=[...])`` returns a fresh ``FakeTool`` with the
given schedule. Payloads are deterministic: the same seed and arguments give the same
data in every process.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from ._errors import DefinitionError
from ._faults import did_you_mean, paginated
from ._tool import FakeTool, Payload, fake_tool

_faker: Any = None


def _fake(rng: random.Random) -> Any:
    """One process-wide Faker, reseeded per payload: building a Faker costs milliseconds."""
    global _faker
    if _faker is None:
        from faker import Faker

        _faker = Faker("en_US")
    _faker.seed_instance(rng.getrandbits(32))
    return _faker


_sentences: dict[int, tuple[str, ...]] = {}


def _sentence(rng: random.Random, nb_words: int) -> str:
    """A lorem sentence of about ``nb_words`` words, from faker's English word list.

    Reseeding Faker and calling ``sentence()`` cost ~35 us a sentence, most of a search scenario.
    Instead 1,024 sentences per length are drawn once from a fixed seed, and a payload picks one
    with its own seeded rng: one random number a sentence, and just as deterministic.
    """
    pool = _sentences.get(nb_words)
    if pool is None:
        from faker.providers.lorem.en_US import Provider

        words, gen = tuple(Provider.word_list), random.Random(f"toolchaos-lorem-{nb_words}")
        texts = (" ".join(gen.choices(words, k=max(1, round(nb_words * gen.uniform(0.6, 1.4)))))  # faker's +/-40%
                 for _ in range(1024))
        pool = _sentences[nb_words] = tuple(t[:1].upper() + t[1:] + "." for t in texts)
    return pool[rng.randrange(1024)]


def _search(args: Mapping[str, Any], rng: random.Random) -> Any:
    n = int(args.get("limit", 3))
    return {"results": [{"id": f"doc_{rng.randrange(10**6):06d}", "title": _sentence(rng, 5).rstrip("."),
                         "snippet": _sentence(rng, 12),
                         # built from the seeded rng: faker.url() alone was a third of a scenario's time
                         "url": f"https://docs.example.com/{rng.randrange(16**8):08x}"} for _ in range(min(n, 10))]}


def _read_document(args: Mapping[str, Any], rng: random.Random) -> Any:
    f = _fake(rng)
    return {"id": args.get("doc_id"), "title": f.sentence(nb_words=5).rstrip("."),
            "content": " ".join(f.paragraphs(nb=2))}


def _invoice(args: Mapping[str, Any], rng: random.Random) -> Any:
    f = _fake(rng)
    return {"invoice_id": args.get("invoice_id"), "customer": f.company(),
            "total": round(rng.uniform(20, 5000), 2), "currency": "EUR", "status": "open",
            "due_date": f.date_between_dates(date_start=_d(2026, 1, 1), date_end=_d(2026, 12, 31)).isoformat()}


def _d(y: int, m: int, day: int) -> Any:
    import datetime

    return datetime.date(y, m, day)


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
