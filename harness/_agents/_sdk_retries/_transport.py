"""The transport: each tool request sent the way the official OpenAI and Anthropic Python SDKs send theirs.

What those SDKs document and do (the Stainless-generated clients, ``_base_client.py`` and
``_constants.py`` of openai-python and anthropic-sdk-python; the retries section of their READMEs):

- ``DEFAULT_MAX_RETRIES = 2``: a request is sent at most 3 times (the first attempt and two
  retries), with no model turn in between: the caller sees one answer per request;
- what is retried: a timeout, a connection error, and the status codes 408 (request timeout),
  409 (lock timeout), 429 (rate limit) and every 5xx; a server's ``x-should-retry: true`` /
  ``false`` overrides the status. Nothing else (400, 401, 403, 404, 422) is retried;
- the wait before retry ``n`` (0-based retries taken): ``retry-after-ms`` first, then
  ``Retry-After`` as seconds, then ``Retry-After`` as an HTTP-date; a server-directed wait is
  honoured when it is above 0 and at most ``MAX_RETRY_AFTER`` (60) seconds. For a longer one
  the clients differ by release: older ones fall back to the backoff (and come back before the
  server's time), the newest openai-python does not retry past its cap; this transport takes
  the sound one and does not retry. Without a server wait: ``min(INITIAL_RETRY_DELAY * 2**n,
  MAX_RETRY_DELAY)`` with up to 25% taken off at random (``1 - 0.25 * random()``): 0.5 s, then
  1 s, capped at 8 s;
- a non-GET request carries one idempotency key, generated once and reused by every retry of
  that request. The SDKs send it because their APIs honour it; so this transport resends a
  side effect whose answer was lost (a timeout, a reset) only to an API whose spec declares
  ``x-idempotency: honoured``; otherwise the unknown outcome goes up to the caller.

The quota headers (``x-ratelimit-reset-*``, ``anthropic-ratelimit-*-reset``) are not read: the
SDKs' retry logic does not read them. The jitter is drawn from the run's seed, the call id and
the attempt, so a run replays byte for byte; the waits are ``time.sleep`` (virtual under the
harness).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

DEFAULT_MAX_RETRIES = 2  # the first attempt and two retries: 3 attempts per request
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0  # a server-directed wait the SDKs honour (longer: not retried)
JITTER = 0.25  # up to a quarter of the backoff taken off at random

# What an HTTP API would have answered for each of the fake tools' error codes.
STATUS: dict[str, int] = {
    "rate_limited": 429, "unavailable": 503, "internal_error": 500, "bad_gateway": 502, "overloaded": 529,
    "request_timeout": 408, "conflict": 409,
    "invalid_argument": 400, "missing_argument": 400, "wrong_type": 400, "unknown_argument": 400,
    "idempotency_key_reused": 400, "unauthorized": 401, "permission_denied": 403, "policy_blocked": 403,
    "not_found": 404,
}
NO_RESPONSE = frozenset({"timeout", "connection_reset"})  # the request went out and no answer came back
_RETRY_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True)
class Response:
    """What the transport got for one request, after its retries.

    ``status`` is None for a success and for a request that got no answer (``code`` says which:
    a timeout or a reset); ``outcome_unknown``: a side effect may have applied although no answer
    came; ``wait``: the server-directed wait of the last answer, in seconds, if it gave one.
    """

    result: Any
    ok: bool
    code: str | None = None
    status: int | None = None
    attempts: int = 1
    wait: float | None = None
    argument: str | None = None  # the argument an invalid request named
    outcome_unknown: bool = False
    retryable: bool = False  # what the SDKs would retry (given more attempts or a shorter server wait)
    headers: Mapping[str, str] = field(default_factory=dict)


def should_retry(status: int | None, headers: Mapping[str, str]) -> bool:
    """The SDKs' ``_should_retry``: ``x-should-retry`` first, then 408, 409, 429 and 5xx."""
    said = headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return status is not None and (status in _RETRY_STATUS or status >= 500)


def retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    """The SDKs' ``_parse_retry_after_header``: ``retry-after-ms``, then seconds, then an HTTP-date."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - now).total_seconds()


def backoff(retries_taken: int, draw: float) -> float:
    """The SDKs' exponential backoff: ``min(0.5 * 2**n, 8)``, less up to a quarter (``draw`` in [0, 1))."""
    return min(INITIAL_RETRY_DELAY * 2.0 ** retries_taken, MAX_RETRY_DELAY) * (1 - JITTER * draw)


def _now_utc() -> datetime:
    return datetime.now(UTC)  # an HTTP-date is compared with the clock (the virtual one under the harness)


def _headers(error: Mapping[str, Any]) -> dict[str, str]:
    """The response headers an error carried; a body's ``retry_after`` number stands for ``Retry-After``."""
    found = error.get("headers")
    out = {str(k).lower(): str(v) for k, v in found.items()} if isinstance(found, Mapping) else {}
    seconds = error.get("retry_after")
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and "retry-after" not in out:
        out["retry-after"] = f"{seconds:g}"
    if isinstance(error.get("retryable"), bool) and error.get("code") not in STATUS:
        out.setdefault("x-should-retry", "true" if error["retryable"] else "false")  # the API's own word
    return out


@dataclass(frozen=True)
class _Answer:
    """One attempt's answer, read as an HTTP client reads it."""

    result: Any
    code: str | None  # None: a success
    status: int | None
    headers: Mapping[str, str]
    argument: str | None = None

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def no_response(self) -> bool:
        return self.code in NO_RESPONSE


def _read(result: Any) -> _Answer:
    error = result.get("error") if isinstance(result, Mapping) else None
    if not isinstance(error, Mapping):
        return _Answer(result, None, None, {})
    code = str(error.get("code") or "error")
    return _Answer(result, code, STATUS.get(code), _headers(error), error.get("field"))


def _read_raised(exc: Exception) -> _Answer:
    """A raised error: what it carries from the server, else its built-in type (a timeout, a reset)."""
    said = getattr(exc, "outcome", None)
    if said is not None and hasattr(said, "error_payload"):
        answer = _read(said.error_payload())
        return _Answer({"error": {"code": answer.code, "message": str(exc)}}, answer.code, answer.status,
                       answer.headers, answer.argument)
    code = "timeout" if isinstance(exc, TimeoutError) else "connection_reset" if isinstance(exc, ConnectionError) \
        else type(exc).__name__
    return _Answer({"error": {"code": code, "message": str(exc)}}, code, None, {})


@dataclass
class Transport:
    """Sends one tool request with the SDKs' retries; ``may_retry(wait)`` lets the runtime's budgets veto one."""

    tools: Any
    max_retries: int = DEFAULT_MAX_RETRIES
    executions: int = 0  # attempts sent in this run

    def send(self, name: str, args: Mapping[str, Any], call_id: str | None, *, replay_safe: bool,
             may_retry: Callable[[float], bool]) -> Response:
        """Send ``name(args)`` up to ``max_retries + 1`` times under one call id.

        ``replay_safe``: a lost answer may be resent (a read, or a write under a key its API
        honours); otherwise a timeout or a reset comes back at once with the outcome unknown.
        """
        retries = 0
        while True:
            answer = self._attempt(name, args, call_id)
            if answer.ok:
                return Response(answer.result, True, attempts=retries + 1)
            retryable = answer.no_response or should_retry(answer.status, answer.headers)
            wait = self._wait(answer, retries, call_id) if retryable else None
            unknown = answer.no_response and not replay_safe
            if retries >= self.max_retries or unknown or wait is None or not may_retry(wait):
                return Response(answer.result, False, answer.code, answer.status, retries + 1,
                                retry_after(answer.headers, _now_utc()), answer.argument,
                                outcome_unknown=answer.no_response, retryable=retryable, headers=answer.headers)
            time.sleep(wait)  # virtual under the harness
            retries += 1

    def _attempt(self, name: str, args: Mapping[str, Any], call_id: str | None) -> _Answer:
        self.executions += 1
        try:
            return _read(self.tools.call(name, dict(args), call_id=call_id))
        except Exception as exc:  # a client library raises; keep what the server said
            return _read_raised(exc)

    def _wait(self, answer: _Answer, retries: int, call_id: str | None) -> float | None:
        """Seconds before the next retry of a retryable answer, or None when the server asks for too long."""
        directed = retry_after(answer.headers, _now_utc())
        if directed is not None and directed > MAX_RETRY_AFTER:
            return None  # the server asks for longer than the SDKs wait: the caller decides
        if directed is not None and directed > 0:
            return directed
        return backoff(retries, self._draw(call_id, retries))

    def _draw(self, call_id: str | None, retries: int) -> float:
        digest = hashlib.sha256(f"{self.tools.seed}:{call_id}:{retries}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big")).random()
