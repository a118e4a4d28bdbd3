"""Faults of the model API itself, served over the wire on the virtual clock.

An agent must survive its model provider too: 429 with ``retry-after``, 500/503, 529
overloaded, a request that times out, a stream cut part-way, a body that is not JSON.
The wait of a 429/503/529 can come in any form real APIs use (``retry_form``: seconds, an
HTTP-date, ``retry-after-ms``, OpenAI's ``x-ratelimit-reset-*`` durations, Anthropic's
``anthropic-ratelimit-*-reset`` times; see ``toolchaos.fake_tools.retry``).
A faulted request never reaches the policy (no model turn is recorded); the trace gets
an ``api`` event instead, so "model requests" = model turns + ``api`` events.

Schedules are keyed by the model request's number (1-based, per run, across every model
API of the run)::

    api_faults={1: "429", 2: {"rate_limited": {"retry_after": 20, "retry_form": "ms"}}, 3: "stream_cut",
                "always": "503"}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolchaos.errors import ApiFaultError
from toolchaos.fake_tools.registry import Param, Registry
from toolchaos.fake_tools.retry import FORMS, SECONDS


@dataclass(frozen=True, slots=True)
class ApiFault:
    kind: str
    retry_after: float | None = None  # rate_limited / unavailable / overloaded: the retry-after header
    after: float | None = None  # timeout: virtual seconds before it fires (default: the client's read timeout)
    events: int = 2  # stream_cut: events (or body chunks) delivered before the cut
    retry_form: str = SECONDS  # how the retry-after wait is written (toolchaos.fake_tools.retry.FORMS)

    @property
    def status(self) -> int | None:
        """The HTTP status the fault answers with (None: it never answers, or answers 200)."""
        kind = API_FAULTS.get(self.kind)
        return None if kind is None else kind.extra.get("status")

    @property
    def code(self) -> str:
        return self.kind

    def describe(self) -> str:
        extra = {"retry_after": self.retry_after, "after": self.after}
        args = ", ".join(f"{k}={v:g}" for k, v in extra.items() if v is not None)
        if self.retry_form != SECONDS:
            args += f", retry_form={self.retry_form}"
        return f"{self.kind}({args})" if args else self.kind

    def to_data(self) -> Any:
        """The plain-data spelling: ``as_api_fault(fault.to_data()) == fault``."""
        params = {p.name: getattr(self, p.name) for p in API_FAULTS[self.kind].params}
        return {self.kind: params} if params else self.kind


API_FAULTS: Registry[ApiFault] = Registry("model-API fault", key="kind")


@API_FAULTS.register(ApiFault, aliases=("429", "rate_limit"), status=429, schemas={"retry_form": {"enum": list(FORMS)}})
def rate_limited(retry_after: float | None = 1.0, retry_form: str = SECONDS) -> ApiFault:
    """HTTP 429 with ``retry-after`` (seconds, or another ``retry_form``)."""
    return ApiFault("rate_limited", _number("retry_after", retry_after), retry_form=_form(retry_form, retry_after))


@API_FAULTS.register(ApiFault, aliases=("500",), status=500)
def server_error() -> ApiFault:
    """HTTP 500."""
    return ApiFault("server_error")


@API_FAULTS.register(ApiFault, aliases=("503",), status=503, schemas={"retry_form": {"enum": list(FORMS)}})
def unavailable(retry_after: float | None = None, retry_form: str = SECONDS) -> ApiFault:
    """HTTP 503 (optionally with ``retry-after``)."""
    return ApiFault("unavailable", _number("retry_after", retry_after), retry_form=_form(retry_form, retry_after))


@API_FAULTS.register(ApiFault, aliases=("529", "overload"), status=529, schemas={"retry_form": {"enum": list(FORMS)}})
def overloaded(retry_after: float | None = None, retry_form: str = SECONDS) -> ApiFault:
    """HTTP 529, Anthropic's "overloaded"."""
    return ApiFault("overloaded", _number("retry_after", retry_after), retry_form=_form(retry_form, retry_after))


@API_FAULTS.register(ApiFault)
def timeout(after: float | None = None) -> ApiFault:
    """No answer: the client's read timeout fires (after ``after`` virtual seconds, if shorter)."""
    return ApiFault("timeout", after=_number("after", after))


@API_FAULTS.register(ApiFault, aliases=("cut",))
def stream_cut(events: int = 2) -> ApiFault:
    """The connection drops after ``events`` server-sent events (or part of a JSON body)."""
    if isinstance(events, bool) or not isinstance(events, int) or events < 0:
        raise ApiFaultError(f"stream_cut.events: expected an integer >= 0, got {events!r}")
    return ApiFault("stream_cut", events=events)


@API_FAULTS.register(ApiFault)
def malformed() -> ApiFault:
    """HTTP 200 whose body is not valid JSON."""
    return ApiFault("malformed")


def _form(form: Any, retry_after: Any) -> str:
    if form not in FORMS:
        raise ApiFaultError(f"retry_form: expected one of {', '.join(FORMS)}, got {form!r}")
    if form != SECONDS and retry_after is None:
        raise ApiFaultError(f"retry_form: {form} writes a wait: give retry_after too")
    return str(form)


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ApiFaultError(f"{name}: expected a number >= 0, got {value!r}")
    return float(value)


def _statuses() -> list[str]:
    """The status numbers a fault may be named by: 429, 500, ..."""
    return [a for kind in API_FAULTS.values() for a in kind.aliases if a.isdigit()]


def as_api_fault(spec: Any) -> ApiFault:
    """``"429"``, ``"stream_cut"``, ``{"rate_limited": {"retry_after": 2}}``, ``{"timeout": 30}`` or an ``ApiFault``."""
    if isinstance(spec, ApiFault):
        return spec
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = str(spec)
    if isinstance(spec, str):
        name, raw = spec, None
    elif isinstance(spec, Mapping) and len(spec) == 1:
        ((key, raw),) = spec.items()
        name = str(key)
    else:
        raise ApiFaultError(f"expected a model-API fault ({', '.join(API_FAULTS)} or {'/'.join(_statuses())}), "
                            f"got {spec!r}")
    kind = API_FAULTS.get(API_FAULTS.resolve(name))
    params = _named(name, kind.first if kind is not None else None, raw)
    if kind is None:
        raise ApiFaultError(f"unknown model-API fault {name!r}; known: {', '.join(API_FAULTS)} "
                            f"(or {', '.join(_statuses())})")
    try:
        return kind.build(**params)
    except TypeError as exc:
        raise ApiFaultError(f"{kind.name}: {exc}") from None


def _named(name: str, first: Param | None, raw: Any) -> dict[str, Any]:
    """Parameters by name; ``{"429": 30}``-style shorthand gives the first one."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if first is None:
        raise ApiFaultError(f"{name}: takes no parameters, got {raw!r}")
    return {first.name: raw}


class ApiFaults:
    """Which model request gets which fault: by request number, or ``"always"``."""

    def __init__(self, spec: Any = None) -> None:
        self.by_request: dict[int, ApiFault] = {}
        self.always: ApiFault | None = None
        if spec is None:
            return
        if isinstance(spec, ApiFaults):
            self.by_request, self.always = dict(spec.by_request), spec.always
            return
        if not isinstance(spec, Mapping):
            raise ApiFaultError(f"api_faults: expected a mapping of request number -> fault, got {spec!r}")
        for key, value in spec.items():
            fault = as_api_fault(value)
            if key == "always":
                self.always = fault
                continue
            try:
                n = int(key)
            except (TypeError, ValueError):
                raise ApiFaultError(f"api_faults: keys are request numbers (1, 2, ...) or 'always', got {key!r}") from None
            if n < 1:
                raise ApiFaultError(f"api_faults: request numbers start at 1, got {key!r}")
            self.by_request[n] = fault

    def pick(self, n: int) -> ApiFault | None:
        fault = self.by_request.get(n)
        return fault if fault is not None else self.always

    def __bool__(self) -> bool:
        return bool(self.by_request) or self.always is not None
