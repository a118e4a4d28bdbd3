"""The fault taxonomy: what one call of a fake tool answers.

Each fault kind is a small immutable object whose ``resolve`` turns one call into an
``Outcome`` and whose ``to_data`` writes it as plain data. Faults are built in Python
(``toolchaos.fake_tools.faults.timeout(after=30)``) or parsed from plain data
(``{"timeout": {"after": 30}}``, as YAML scenarios write them); both paths end in the
same constructors, so there is one validation path. Each constructor is registered in
``FAULTS`` (``toolchaos.fake_tools.registry``), which is where every list of fault
kinds comes from, with how the fuzzer draws the kind (``fuzz=``, ``fuzz_by_default=``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from toolchaos.errors import DefinitionError, did_you_mean
from toolchaos.fake_tools import _retry
from toolchaos.fake_tools._outcomes import Outcome, OutcomeClass
from toolchaos.fake_tools.registry import Declared, Kind, Param, Registry

S = OutcomeClass.SUCCESS


@dataclass(slots=True)
class CallInfo:
    """What a fault may look at when it resolves one call."""

    tool: str
    args: Mapping[str, Any]
    call_no: int  # 1-based, per tool, per run
    key: str  # canonical form of the arguments (the call's fingerprint text)
    now: float  # virtual seconds since the run began
    state: dict[Any, Any]  # per-run, per-tool scratch space for stateful faults
    payload: Callable[[], Any]  # the tool's deterministic success payload for these args
    # a read tool's answer from the world, as it is now (0) or some writes ago (a stale replica)
    read: Callable[[int], Outcome] | None = None


class Fault:
    """Base of all fault kinds."""

    kind: str = ""
    __slots__ = ()

    def resolve(self, call: CallInfo) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return self.kind

    def to_data(self) -> Any:  # pragma: no cover - abstract
        """The plain-data (YAML) spelling: ``as_fault(fault.to_data()) == fault``."""
        raise NotImplementedError


def _check_draws(kind: Kind[Any], draws: Any) -> None:
    if draws is None:
        return
    if not isinstance(draws, tuple) or not draws or not all(isinstance(p, Mapping) for p in draws):
        raise ValueError("expected a non-empty tuple of parameter mappings, or None")
    for params in draws:  # built now: a bad one fails at import, not in the middle of a fuzz run
        kind.build(**params)


def _check_flag(kind: Kind[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError("expected True or False")


# The strategies (``toolchaos.strategies``) draw the faults of ``fuzz=`` (each the constructor's
# parameters, simplest first) and kinds in the order they are registered here, simplest first:
# a failing case shrinks toward the earlier ones. The codec numbers the faults drawn by that
# order, so moving a fuzzed kind changes what a saved example or a seed replays.
FAULTS: Registry[Fault] = Registry("fault", key="kind", declares=(
    Declared("fuzz", "the faults the fuzzer draws of this kind: a tuple of the constructor's parameters, one "
                     "mapping per fault, simplest first (({},) draws its defaults); or None: never drawn",
             _check_draws),
    Declared("fuzz_by_default", "True or False: drawn when no kinds are named", _check_flag, default=True),
))


_EPS = 1e-9  # a job due at t finishes for a poll at t, whatever the float sum that reached t
_DEFAULT_POLLS = 3


def _num(x: float) -> float | int:
    """A whole number of seconds is written without its ``.0``."""
    return int(x) if float(x).is_integer() else x


@dataclass(frozen=True, slots=True)
class Ok(Fault):
    """Success: the given data, or the tool's seeded realistic payload."""

    data: Any = None
    has_data: bool = False
    kind = "ok"

    def resolve(self, call: CallInfo) -> Outcome:
        if call.read is not None and not self.has_data:  # a read answers from the world
            return call.read(0)
        return Outcome("ok", S, "ok", self.data if self.has_data else call.payload())

    def to_data(self) -> Any:
        return {"ok": {"data": self.data}} if self.has_data else "ok"


@dataclass(frozen=True, slots=True)
class Empty(Fault):
    """Success with nothing in it: the classic trigger of "try again"."""

    data: Any = field(default_factory=list)
    kind = "empty"

    def resolve(self, call: CallInfo) -> Outcome:
        return Outcome("empty", S, "empty", self.data)

    def to_data(self) -> Any:
        return "empty" if self.data == [] else {"empty": {"data": self.data}}


MALFORMED_VARIANTS = ("invalid_json", "schema_violation", "truncated", "wrong_type")


@dataclass(frozen=True, slots=True)
class Malformed(Fault):
    """A response that arrived but cannot be used."""

    variant: str = "invalid_json"
    kind = "malformed"

    def resolve(self, call: CallInfo) -> Outcome:
        good = call.payload()
        if self.variant == "invalid_json":
            data: Any = "{'result': [" + json.dumps(good, sort_keys=True)[:40] + ",,]"
        elif self.variant == "truncated":
            text = json.dumps(good, sort_keys=True)
            data = text[: max(1, len(text) // 2)]
        elif self.variant == "schema_violation":
            data = {"unexpected": True, "schema_version": "0"}
        else:  # wrong_type: the right content, the wrong JSON type
            data = json.dumps(good, sort_keys=True)
            data = [data] if isinstance(good, str) else str(data)
        return Outcome("malformed", S, f"malformed_{self.variant}", data)

    def to_data(self) -> Any:
        return {"malformed": {"variant": self.variant}}


@dataclass(frozen=True, slots=True)
class Timeout(Fault):
    """No answer after ``after`` virtual seconds. ``applied``: the effect still happened."""

    after: float = 30.0
    applied: bool = False
    kind = "timeout"

    def resolve(self, call: CallInfo) -> Outcome:
        return Outcome(
            "timeout", OutcomeClass.RETRYABLE, "timeout", None, retryable=True,
            message=f"no response after {self.after:g}s", latency=self.after,
            applied=self.applied,
        )

    def to_data(self) -> Any:
        return {"timeout": {"after": _num(self.after), "applied": self.applied}}


TRANSIENT_CODES = {
    "503": "unavailable", "unavailable": "unavailable",
    "429": "rate_limited", "rate_limited": "rate_limited",
    "reset": "connection_reset", "connection_reset": "connection_reset",
    "500": "internal_error", "internal_error": "internal_error",
}
# How plain data writes each code: the status number where there is one.
_TRANSIENT_SPELLING: dict[str, str | int] = {"unavailable": 503, "rate_limited": 429, "internal_error": 500,
                                             "connection_reset": "reset"}


@dataclass(frozen=True, slots=True)
class Transient(Fault):
    """503, 429 with Retry-After, connection reset: retrying later may help.

    A 429 with ``retry_after`` is enforced: the tool answers 429 again to any call that
    comes sooner than the server asked, as real rate limiters do. ``retry_form``: how the
    wait is written (``seconds``, ``http_date``, ``ms``, an OpenAI or Anthropic rate-limit
    reset header; see ``toolchaos.fake_tools.retry``).
    """

    code: str = "unavailable"
    retry_after: float | None = None
    retry_form: str = _retry.SECONDS
    kind = "transient"

    def resolve(self, call: CallInfo) -> Outcome:
        if self.code == "rate_limited" and self.retry_after:
            call.state["blocked_until"] = call.now + self.retry_after
            call.state["blocked_form"] = self.retry_form
        headers = () if self.retry_after is None or self.retry_form == _retry.SECONDS else _retry.headers(
            self.retry_form, self.retry_after, call.now)
        return Outcome(
            "transient", OutcomeClass.RETRYABLE, self.code, None, retryable=True,
            retry_after=self.retry_after, applied=False, headers=headers,
        )

    def to_data(self) -> Any:
        params: dict[str, Any] = {"code": _TRANSIENT_SPELLING.get(self.code, self.code)}
        if self.retry_after is not None:
            params["retry_after"] = _num(self.retry_after)
        if self.retry_form != _retry.SECONDS:
            params["retry_form"] = self.retry_form
        return {"transient": params}


FATAL_CODES = ("permission_denied", "not_found", "invalid_argument", "policy_blocked")


@dataclass(frozen=True, slots=True)
class Fatal(Fault):
    """Retrying cannot help. ``invalid_argument`` is a PRECONDITION naming the field."""

    code: str = "permission_denied"
    field_name: str | None = None
    kind = "fatal"

    def resolve(self, call: CallInfo) -> Outcome:
        cls = OutcomeClass.PRECONDITION if self.code == "invalid_argument" else OutcomeClass.FATAL
        name = self.field_name
        if cls is OutcomeClass.PRECONDITION and name is None and call.args:
            name = sorted(call.args)[0]
        message = f"invalid value for argument {name!r}" if name else ""
        return Outcome("fatal", cls, self.code, None, message=message, applied=False, field=name)

    def to_data(self) -> Any:
        params: dict[str, Any] = {"code": self.code}
        if self.field_name is not None:
            params["field"] = self.field_name
        return {"fatal": params}


@dataclass(frozen=True, slots=True)
class Pending(Fault):
    """Legit polling: "still processing" (asking to be polled every ``interval`` seconds), then ``then``.

    Each distinct argument set is one job. With ``after``, a job finishes ``after`` virtual
    seconds after its first poll, however often it is polled: a runtime that polls faster than
    the interval only asks more often (``poll_interval_honoured`` judges that). Without it, the
    poll-count form: the job finishes at the poll after ``polls`` "processing" answers, whenever
    they come. ``polls=None`` never finishes: only a deadline ends that.
    """

    polls: int | None = 3
    then: Fault = field(default_factory=lambda: Ok({"status": "done"}, True))
    interval: float = 5.0
    after: float | None = None
    kind = "pending"

    def resolve(self, call: CallInfo) -> Outcome:
        seen = call.state.setdefault(("pending", id(self)), {})
        n, first = seen.get(call.key, (0, call.now))
        n += 1
        seen[call.key] = (n, first)
        if self.after is not None:
            running = call.now - first < self.after - _EPS  # the job's own clock, from its first poll
        else:
            running = self.polls is None or n <= self.polls
        if running:
            return Outcome(
                "pending", OutcomeClass.PENDING, "processing",
                {"status": "processing", "poll": n, "retry_after": self.interval}, retryable=True,
                retry_after=self.interval, applied=False,
            )
        return self.then.resolve(call)

    def to_data(self) -> Any:
        counted: dict[str, Any] = {"polls": self.polls} if self.after is None else {"after": _num(self.after)}
        return {"pending": {**counted, "then": FAULTS.to_data(self.then), "interval": _num(self.interval)}}


@dataclass(frozen=True, slots=True)
class Contradictory(Fault):
    """Each call answers the next of ``values``, so later answers disagree with earlier."""

    values: tuple[Any, ...] = (
        {"status": "shipped", "version": 1},
        {"status": "not_shipped", "version": 2},
    )
    kind = "contradictory"

    def resolve(self, call: CallInfo) -> Outcome:
        counter = call.state.setdefault(("contradictory", id(self)), [0])
        value = self.values[counter[0] % len(self.values)]
        counter[0] += 1
        return Outcome("contradictory", S, "contradictory", value)

    def to_data(self) -> Any:
        return {"contradictory": {"values": list(self.values)}}


@dataclass(frozen=True, slots=True)
class Paginated(Fault):
    """Pages behind a cursor: legit repetition of one tool with a new cursor each time."""

    pages: int = 3
    page_size: int = 5
    cursor_arg: str = "cursor"
    kind = "paginated"

    def resolve(self, call: CallInfo) -> Outcome:
        cursor = call.args.get(self.cursor_arg)
        page = 1
        if cursor not in (None, ""):
            text = str(cursor)
            if not (text.startswith("p") and text[1:].isdigit() and 1 < int(text[1:]) <= self.pages):
                return Outcome(
                    "paginated", OutcomeClass.PRECONDITION, "invalid_argument", None,
                    message=f"unknown cursor {text!r}", applied=False, field=self.cursor_arg,
                )
            page = int(text[1:])
        start = (page - 1) * self.page_size
        items = [{"id": f"rec_{start + i + 1:04d}", "page": page} for i in range(self.page_size)]
        nxt = f"p{page + 1}" if page < self.pages else None
        data = {"items": items, "page": page, "pages": self.pages, "next_cursor": nxt}
        return Outcome("paginated", S, "ok", data)

    def to_data(self) -> Any:
        return {"paginated": {"pages": self.pages, "page_size": self.page_size, "cursor_arg": self.cursor_arg}}


@dataclass(frozen=True, slots=True)
class Slow(Fault):
    """Answers after ``latency`` virtual seconds with the inner outcome."""

    latency: float = 10.0
    then: Fault = field(default_factory=Ok)
    kind = "slow"

    def resolve(self, call: CallInfo) -> Outcome:
        inner = self.then.resolve(call)
        return replace(inner, latency=inner.latency + self.latency)

    def to_data(self) -> Any:
        return {"slow": {"latency": _num(self.latency), "then": FAULTS.to_data(self.then)}}


@dataclass(frozen=True, slots=True)
class Stale(Fault):
    """A read answered from a lagging replica: the world as it was ``behind`` writes ago.

    Only for read tools (``reads:``). A record written since is missing or shows its old
    values, so a read-after-write does not see the write; rules choose which reads lag
    (``call: 1``, a ``probability`` for reads that contradict each other).
    """

    behind: int = 1
    kind = "stale"

    def resolve(self, call: CallInfo) -> Outcome:
        assert call.read is not None  # FakeTool allows the fault on read tools only
        return call.read(self.behind)

    def to_data(self) -> Any:
        return {"stale": {"behind": self.behind}}


_FILLER = "The quick brown fox jumps over the lazy dog. "


@dataclass(frozen=True, slots=True)
class Oversized(Fault):
    """A result of ``size`` bytes: more than a context window can usefully hold."""

    size: int = 1_000_000
    kind = "oversized"

    def resolve(self, call: CallInfo) -> Outcome:
        reps = math.ceil(self.size / len(_FILLER))
        return Outcome("oversized", S, "oversized", {"content": (_FILLER * reps)[: self.size]})

    def to_data(self) -> Any:
        return {"oversized": {"size": self.size}}


class _FieldError(ValueError):
    """Raised by constructors; ``as_fault`` re-raises it with the tool's name."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise _FieldError(name, f"expected one of {', '.join(choices)}; got {value!r}")


def _check_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise _FieldError(name, f"expected true or false, got {value!r}")


def _check_number(name: str, value: Any, minimum: float, integer: bool = False) -> None:
    ok_type = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, ok_type) or value < minimum:
        what = "an integer" if integer else "a number"
        raise _FieldError(name, f"expected {what} >= {minimum:g}, got {value!r}")


# --- constructors: the public Python spelling, and the single validation path ----------


# A plain ok is what the strategies draw for "no fault", not a kind among the others.
@FAULTS.register(Ok, help="success with given data or seeded realistic data", fuzz=None)
def ok(data: Any = None) -> Ok:
    return Ok(data, data is not None)


@FAULTS.register(Empty, help="success with an empty result", fuzz=({},))
def empty(data: Any = None) -> Empty:
    return Empty([] if data is None else data)


@FAULTS.register(Timeout, help="no answer after N seconds; applied: true = the side effect still happened",
                 fuzz=({"after": 30.0}, {"after": 30.0, "applied": True}))
def timeout(after: float = 30.0, applied: bool = False) -> Timeout:
    _check_number("after", after, minimum=0)
    _check_bool("applied", applied)
    return Timeout(float(after), applied)


@FAULTS.register(Transient, help="503, 429 with retry_after (enforced; retry_form: seconds, http_date, ms, "
                            "rate-limit reset headers), connection reset",
                 schemas={"retry_form": {"enum": list(_retry.FORMS)}},
                 fuzz=({"code": 503}, {"code": 429, "retry_after": 10.0}, {"code": "reset"}, {"code": 500}))
def transient(code: str | int = 503, retry_after: float | None = None,
              retry_form: str = _retry.SECONDS) -> Transient:
    key = str(code)
    _check_choice("code", key, tuple(TRANSIENT_CODES))
    if retry_after is not None:
        _check_number("retry_after", retry_after, minimum=0)
        retry_after = float(retry_after)
    _check_choice("retry_form", retry_form, _retry.FORMS)
    if retry_form != _retry.SECONDS and retry_after is None:
        raise _FieldError("retry_form", f"{retry_form} writes a wait: give retry_after too")
    return Transient(TRANSIENT_CODES[key], retry_after, retry_form)


@FAULTS.register(Fatal, help="permission_denied | not_found | invalid_argument | policy_blocked",
                 fuzz=({"code": "permission_denied"}, {"code": "invalid_argument"}, {"code": "not_found"}))
def fatal(code: str = "permission_denied", field: str | None = None) -> Fatal:
    _check_choice("code", code, FATAL_CODES)
    return Fatal(code, field)


@FAULTS.register(Malformed, help="invalid_json | schema_violation | truncated | wrong_type",
                 fuzz=({"variant": "invalid_json"}, {"variant": "truncated"}))
def malformed(variant: str = "invalid_json") -> Malformed:
    _check_choice("variant", variant, MALFORMED_VARIANTS)
    return Malformed(variant)


@FAULTS.register(Pending, help="'still processing' for N polls or, with after, N virtual seconds; then an inner "
                               "outcome", fuzz=({"polls": 3},))
def pending(polls: int | None = 3, then: Fault | Any = None, interval: float = 5.0,
            after: float | None = None) -> Pending:
    if polls is not None:
        _check_number("polls", polls, minimum=0, integer=True)
    _check_number("interval", interval, minimum=0)
    if after is not None:
        _check_number("after", after, minimum=0)
        if polls != _DEFAULT_POLLS:  # the two forms say when the job finishes: one of them must
            raise _FieldError("after", f"give polls (a poll count) or after (virtual seconds from the first poll), "
                                       f"not both: got polls={polls!r} and after={after!r}")
    inner = Ok({"status": "done"}, True) if then is None else as_fault(then, "then")
    return Pending(polls, inner, float(interval), None if after is None else float(after))


@FAULTS.register(Slow, help="answers after N seconds with an inner outcome", fuzz=({"latency": 90.0},))
def slow(latency: float = 10.0, then: Fault | Any = None) -> Slow:
    _check_number("latency", latency, minimum=0)
    return Slow(float(latency), Ok() if then is None else as_fault(then, "then"))


@FAULTS.register(Contradictory, help="answers that disagree with earlier answers", fuzz=({},))
def contradictory(values: list[Any] | tuple[Any, ...] | None = None) -> Contradictory:
    if values is None:
        return Contradictory()
    if not isinstance(values, (list, tuple)) or len(values) < 2:
        raise _FieldError("values", f"expected a list of at least 2 values, got {values!r}")
    return Contradictory(tuple(values))


@FAULTS.register(Oversized, help="a result of N bytes", fuzz=({"size": 16384},))
def oversized(size: int = 1_000_000) -> Oversized:
    _check_number("size", size, minimum=1, integer=True)
    return Oversized(int(size))


# Drawn only when named: it makes sense for a tool that takes a cursor.
@FAULTS.register(Paginated, help="pages behind a cursor (legit repetition)", fuzz=({"pages": 3},),
                 fuzz_by_default=False)
def paginated(pages: int = 3, page_size: int = 5, cursor_arg: str = "cursor") -> Paginated:
    _check_number("pages", pages, minimum=1, integer=True)
    _check_number("page_size", page_size, minimum=1, integer=True)
    return Paginated(int(pages), int(page_size), cursor_arg)


# Never drawn: only a read tool (``reads:``) may answer it, and the fuzzed tools need not read.
@FAULTS.register(Stale, help="a read answered as the world was N writes ago (read tools only)", fuzz=None)
def stale(behind: int = 1) -> Stale:
    _check_number("behind", behind, minimum=1, integer=True)
    return Stale(int(behind))


def as_fault(spec: Any, where: str = "outcome", tool: str = "?") -> Fault:
    """Parse a fault from ``"timeout"``, ``{"timeout": {...}}``, ``{"timeout": 30}`` or a ``Fault``."""
    if isinstance(spec, Fault):
        return spec
    try:
        name, raw = _split(spec, where)
        kind = FAULTS.get(name)
        if kind is None:
            raise _FieldError(where, f"unknown fault kind {name!r}{did_you_mean(str(name), FAULTS)}")
        return kind.build(**_check_params(kind.name, kind.param_names, _named(kind.first, raw)))
    except _FieldError as exc:
        field_path = exc.field if exc.field == where else f"{where}.{exc.field}"
        raise DefinitionError(tool, field_path, exc.problem) from None
    except DefinitionError as exc:  # from a nested outcome (pending.then, slow.then)
        raise DefinitionError(tool, f"{where}.{exc.field}", exc.problem) from None


def _split(spec: Any, where: str) -> tuple[Any, Any]:
    """(kind name, its raw parameters) of ``"kind"`` or ``{kind: parameters}``."""
    if isinstance(spec, str):
        return spec, None
    if isinstance(spec, Mapping) and len(spec) == 1:
        return next(iter(spec.items()))
    raise _FieldError(where, f"expected a fault kind or a one-key mapping, got {spec!r}")


def _named(first: Param | None, raw: Any) -> dict[str, Any]:
    """Parameters by name; ``{"malformed": "truncated"}``-style shorthand gives the first one."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    return {first.name if first is not None else "?": raw}


def _check_params(kind: str, allowed: tuple[str, ...], params: dict[str, Any]) -> dict[str, Any]:
    for key in params:
        if key not in allowed:
            raise _FieldError(key, f"unknown parameter for {kind!r}{did_you_mean(key, allowed)}"
                              f" (known: {', '.join(allowed) or 'none'})")
    return params


