"""Retry-After in every form real APIs send it, written and read on the virtual clock.

A rate-limited answer tells the client when to come back, but not always the same way
(the form names are what a fault's ``retry_form`` takes):

- ``seconds``: ``Retry-After: 20`` (RFC 9110 delay-seconds);
- ``http_date``: ``Retry-After: Thu, 01 Jan 2026 00:00:20 GMT`` (RFC 9110 HTTP-date);
- ``ms``: ``retry-after-ms: 20000`` (OpenAI and Anthropic; their SDKs read it first);
- ``x-ratelimit-reset-requests``, ``x-ratelimit-reset-tokens``: OpenAI, a Go duration (``6m0s``);
- ``anthropic-ratelimit-requests-reset``, ``-tokens-reset``, ``-input-tokens-reset``,
  ``-output-tokens-reset``: Anthropic, an RFC 3339 time (``2026-01-01T00:00:20Z``).

``headers(form, seconds, now)`` writes one; ``wait(headers, now)`` reads back the longest wait
any of them asks for, whichever was sent. ``now`` is virtual seconds since the run began;
absolute times count from ``EPOCH``, the virtual clock's origin (2026-01-01T00:00:00Z, as
``toolchaos._plumbing.clock.EPOCH``). Dates have whole seconds: a wait that ends within a
second is rounded up, never down, so a client that honours the date never comes back early.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from email.utils import format_datetime, parsedate_to_datetime

EPOCH = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
SECONDS = "seconds"
OPENAI = ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
ANTHROPIC = ("anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset",
             "anthropic-ratelimit-input-tokens-reset", "anthropic-ratelimit-output-tokens-reset")
FORMS = (SECONDS, "http_date", "ms", *OPENAI, *ANTHROPIC)

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def headers(form: str, seconds: float, now: float) -> tuple[tuple[str, str], ...]:
    """The header a server sends to say "come back in ``seconds``", answered at ``now``."""
    if form == SECONDS:
        return (("retry-after", str(math.ceil(seconds))),)
    if form == "ms":
        return (("retry-after-ms", str(math.ceil(seconds * 1000))),)
    if form in OPENAI:
        return ((form, duration(seconds)),)
    at = EPOCH + _dt.timedelta(seconds=math.ceil(now + seconds))
    if form == "http_date":
        return (("retry-after", format_datetime(at, usegmt=True)),)
    if form in ANTHROPIC:
        return ((form, at.strftime("%Y-%m-%dT%H:%M:%SZ")),)
    raise ValueError(f"unknown Retry-After form {form!r}; known: {', '.join(FORMS)}")


def duration(seconds: float) -> str:
    """A Go duration, as OpenAI writes its reset headers: ``6m0s``, ``1h2m3.5s``, ``20s``, ``250ms``."""
    if seconds < 1:
        return f"{math.ceil(seconds * 1000)}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.3f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{int(minutes)}m{text}"
    return text


def wait(found: Mapping[str, str], now: float) -> float | None:
    """The longest wait any Retry-After form in ``found`` asks for (seconds from ``now``), or None.

    Header names are matched case-insensitively; a value that cannot be read is ignored, as
    clients do.
    """
    waits = [w for name, value in found.items() if (w := _one(name.lower(), str(value).strip(), now)) is not None]
    return max(waits) if waits else None


def _one(name: str, value: str, now: float) -> float | None:
    if name == "retry-after-ms":
        return _number(value, 1e-3)
    if name == "retry-after":
        secs = _number(value, 1.0)
        return secs if secs is not None else _until(_http_date(value), now)
    if name in OPENAI:
        parts = _DURATION.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            return None
        return sum(float(n) * _UNIT[u] for n, u in parts)
    if name.startswith("anthropic-ratelimit-") and name.endswith("-reset"):
        try:
            return _until(_dt.datetime.fromisoformat(value.replace("Z", "+00:00")), now)
        except ValueError:
            return None
    return None


def _number(value: str, unit: float) -> float | None:
    try:
        n = float(value)
    except ValueError:
        return None
    return n * unit if math.isfinite(n) and n >= 0 else None


def _http_date(value: str) -> _dt.datetime | None:
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None


def _until(at: _dt.datetime | None, now: float) -> float | None:
    if at is None:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=_dt.UTC)
    return max(0.0, (at - EPOCH).total_seconds() - now)


__all__ = ["ANTHROPIC", "EPOCH", "FORMS", "OPENAI", "SECONDS", "duration", "headers", "wait"]
