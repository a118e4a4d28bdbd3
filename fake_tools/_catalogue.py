"""Ready-made tools with realistic names, schemas and seeded payloads (faker).

``catalogue.get("charge_payment", faults=[...])`` returns a fresh ``FakeTool`` with the
given schedule. Payloads are deterministic: the same seed and arguments give the same
data in every process.

The side-effect tools write the world (``charges``, ``emails``, ``records``, ``jobs``) and
honour idempotency keys as payment APIs do; each has a read that finds what it wrote:
``get_charge(idempotency_key)``, ``list_sent_emails(to)``, ``read_record(record_id)``,
``get_job(job_id)``.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from toolchaos.errors import DefinitionError, did_you_mean
from toolchaos.fake_tools._faults import paginated
from toolchaos.fake_tools._payloads import deterministic
from toolchaos.fake_tools._tool import FakeTool, Payload, fake_tool
from toolchaos.fake_tools._world import Reads, Writes

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


def warm() -> None:
    """Draw every payload once, so that faker and the text pools exist in this process.

    An isolated run's child forks from this process: a pool it builds is lost with it, and
    every run would import faker and draw the pools again (tens of milliseconds each).
    """
    rng = random.Random(0)
    for entry in _ENTRIES.values():
        if entry.payload is not None:
            entry.payload({}, rng)


@deterministic
def _search(args: Mapping[str, Any], rng: random.Random) -> Any:
    n = int(args.get("limit", 3))
    return {"results": [{"id": f"doc_{rng.randrange(10**6):06d}", "title": _sentence(rng, 5).rstrip("."),
                         "snippet": _sentence(rng, 12),
                         # built from the seeded rng: faker.url() alone was a third of a scenario's time
                         "url": f"https://docs.example.com/{rng.randrange(16**8):08x}"} for _ in range(min(n, 10))]}


@deterministic
def _read_document(args: Mapping[str, Any], rng: random.Random) -> Any:
    paragraphs = (" ".join(_sentence(rng, 10) for _ in range(rng.randrange(3, 6))) for _ in range(2))
    return {"id": args.get("doc_id"), "title": _sentence(rng, 5).rstrip("."), "content": " ".join(paragraphs)}


_YEAR_START = datetime.date(2026, 1, 1)


@deterministic
def _invoice(args: Mapping[str, Any], rng: random.Random) -> Any:
    due = _YEAR_START + datetime.timedelta(days=rng.randrange(365))
    return {"invoice_id": args.get("invoice_id"), "customer": _company(rng),
            "total": round(rng.uniform(20, 5000), 2), "currency": "EUR", "status": "open",
            "due_date": due.isoformat()}


@deterministic
def _job(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"job_id": args.get("job_id"), "status": "done", "result": f"s3://results/{rng.randrange(10**8):08d}"}


@deterministic
def _email(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"message_id": f"msg_{rng.randrange(16**10):010x}", "status": "sent", "to": args.get("to")}


@deterministic
def _charge(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"charge_id": f"ch_{rng.randrange(16**12):012x}", "status": "succeeded",
            "amount": args.get("amount"), "currency": args.get("currency", "EUR")}


@deterministic
def _write(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"record_id": args.get("record_id"), "version": rng.randrange(2, 50), "status": "written"}


@deterministic
def _delete(args: Mapping[str, Any], rng: random.Random) -> Any:
    return {"record_id": args.get("record_id"), "deleted": True}


@deterministic
def _spawn(args: Mapping[str, Any], rng: random.Random) -> Any:
    ident = rng.randrange(16**8)
    return {"job_id": f"job_{ident:08x}", "agent_id": f"agent_{ident:08x}", "status": "started",
            "task": args.get("task")}


def _obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


_S = {"type": "string"}
_I = {"type": "integer"}
_N = {"type": "number"}

class _Entry(NamedTuple):
    description: str
    schema: dict[str, Any]
    side_effect: bool = False
    idempotency_key: str | None = None
    payload: Payload | None = None
    default: Any = None  # the default outcome
    writes: Writes | None = None
    reads: Reads | None = None


_KEY = "idempotency_key"
_ENTRIES: dict[str, _Entry] = {
    "search": _Entry("Search the knowledge base; returns matching documents.",
                     _obj(["query"], query=_S, limit={"type": "integer", "default": 3}), payload=_search),
    "read_document": _Entry("Read one document by id.", _obj(["doc_id"], doc_id=_S), payload=_read_document),
    "fetch_invoice": _Entry("Fetch an invoice and its total from the billing system.",
                            _obj(["invoice_id"], invoice_id=_S), payload=_invoice),
    "get_job_status": _Entry("Get the status of a long-running job.", _obj(["job_id"], job_id=_S), payload=_job),
    "list_records": _Entry("List records, one page per call; pass next_cursor to get the next page.",
                           _obj([], cursor={"type": ["string", "null"]}, filter=_S), default=paginated(pages=3)),
    "send_email": _Entry("Send an email.", _obj(["to", "subject", "body"], to=_S, subject=_S, body=_S,
                                                idempotency_key=_S), True, _KEY, _email, writes=Writes("emails")),
    "charge_payment": _Entry("Charge a customer's card.",
                             _obj(["customer_id", "amount"], customer_id=_S, amount=_N,
                                  currency={"type": "string", "default": "EUR"}, idempotency_key=_S),
                             True, _KEY, _charge, writes=Writes("charges")),
    "write_record": _Entry("Create or update a record.",
                           _obj(["record_id", "data"], record_id=_S, data={"type": "object"}, idempotency_key=_S),
                           True, _KEY, _write, writes=Writes("records", "record_id")),
    "delete_record": _Entry("Delete a record.", _obj(["record_id"], record_id=_S), True, None, _delete,
                            writes=Writes("records", "record_id", delete=True)),
    "spawn_subagent": _Entry("Start a sub-agent on a task.", _obj(["task"], task=_S, idempotency_key=_S),
                             True, _KEY, _spawn, writes=Writes("jobs")),
    "get_charge": _Entry("Look up the charge made with an idempotency key.", _obj([_KEY], idempotency_key=_S),
                         reads=Reads("charges", _KEY)),
    "list_sent_emails": _Entry("List the emails sent to an address.", _obj(["to"], to=_S),
                               reads=Reads("emails", "to", many=True)),
    "read_record": _Entry("Read one record by id.", _obj(["record_id"], record_id=_S),
                          reads=Reads("records", "record_id")),
    "get_job": _Entry("Get a started job (a sub-agent) by id.", _obj(["job_id"], job_id=_S),
                      reads=Reads("jobs", "job_id")),
}

NAMES = tuple(_ENTRIES)
_BASE: dict[str, FakeTool] = {}


def describe() -> dict[str, str]:
    """One line per catalogue tool."""
    return {name: entry.description for name, entry in _ENTRIES.items()}


def get(name: str, faults: Any = None, *, default: Any = None, delivery: str = "return",
        idempotency: str | None = None, honoured_after_applied: bool | None = None,
        idempotency_ttl: float | None = None) -> FakeTool:
    """A catalogue tool with the given fault schedule (and the tool's own default).

    The idempotency settings change how its API treats keys (see ``fake_tool``); by default
    they are honoured as Stripe does.
    """
    if name not in _ENTRIES:
        raise DefinitionError(name, "tool", f"not in the catalogue{did_you_mean(name, _ENTRIES)}"
                                            f" (catalogue: {', '.join(_ENTRIES)})")
    base = _BASE.get(name)
    if base is None:  # compile each entry's schema once: a suite builds its tools per scenario
        e = _ENTRIES[name]
        base = _BASE[name] = fake_tool(name, e.description, e.schema, side_effect=e.side_effect,
                                       idempotency_key=e.idempotency_key, payload=e.payload, writes=e.writes,
                                       reads=e.reads)
    tool = base.with_faults(faults, default if default is not None else _ENTRIES[name].default, delivery)
    if (idempotency, honoured_after_applied, idempotency_ttl) != (None, None, None):
        tool = tool.with_idempotency(idempotency, honoured_after_applied, idempotency_ttl)
    return tool


def payload_of(name: str) -> Callable[[Mapping[str, Any], random.Random], Any] | None:
    return _ENTRIES[name].payload
