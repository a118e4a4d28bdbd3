"""When a server says to come back, in every form real APIs write it.

A careful client reads the wait wherever the server put it and waits the longest of what it
finds (the servers of one provider may send several; the most conservative one is the limit):

- ``Retry-After``: delay-seconds or an HTTP-date (RFC 9110 section 10.2.3);
- ``retry-after-ms``: milliseconds (OpenAI and Anthropic SDKs read it);
- ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens``: a Go duration (``6m0s``,
  ``1m30s``, ``20ms``), OpenAI's rate-limit headers;
- ``anthropic-ratelimit-*-reset``: an RFC 3339 time, Anthropic's rate-limit headers;
- a ``retry_after`` number in an error payload, and the same hints in an error's text
  ("retry after 20 seconds", "try again in 1m30s", "Retry-After: 20").

Absolute times are turned into a wait against ``now`` (an aware UTC datetime: the caller's
clock, the harness's virtual one under test). Everything is stdlib: ``email.utils`` parses
HTTP-dates, ``datetime.fromisoformat`` RFC 3339 times.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")
# "retry after 20 seconds", "try again in 1m30s", "Retry-After: 20", "retry in 250ms"
_TEXT_HINT = re.compile(r"(?:retry[- ]after|try again in|retry in)[:\s]*([0-9][0-9a-zµ.]*)(\s*(?:seconds?|secs?|s\b))?",
                        re.IGNORECASE)


def go_duration(text: str) -> float | None:
    """Seconds in a Go duration (``1h2m3.5s``, ``6m0s``, ``250ms``); None if it is not one."""
    text = text.strip()
    parts = _GO_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def http_date(text: str, now: datetime) -> float | None:
    """Seconds from ``now`` until an HTTP-date (``Thu, 01 Jan 2026 00:00:50 GMT``); None if it is not one."""
    try:
        when = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110: an HTTP-date is always UTC
        when = when.replace(tzinfo=UTC)
    return (when - now).total_seconds()


def rfc3339(text: str, now: datetime) -> float | None:
    """Seconds from ``now`` until an RFC 3339 time (``2026-01-01T00:00:50Z``); None if it is not one."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - now).total_seconds()


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def header_wait(name: str, value: Any, now: datetime) -> float | None:
    """The wait one header asks for, or None when the header says nothing about waiting."""
    name, text = name.lower(), str(value)
    if name == "retry-after":
        seconds = _number(text)
        return seconds if seconds is not None else http_date(text, now)
    if name == "retry-after-ms":
        ms = _number(text)
        return None if ms is None else ms / 1000.0
    if name.startswith("x-ratelimit-reset"):
        return go_duration(text) if _number(text) is None else _number(text)
    if name.startswith("anthropic-ratelimit-") and name.endswith("-reset"):
        return rfc3339(text, now)
    return None


def text_wait(text: str) -> float | None:
    """A wait written in an error's prose ("retry after 20 seconds", "try again in 1m30s")."""
    waits = []
    for amount, _unit in _TEXT_HINT.findall(text):
        amount = amount.rstrip(".")
        seconds = _number(amount)
        if seconds is None:
            seconds = go_duration(amount)
        if seconds is not None:
            waits.append(seconds)
    return max(waits) if waits else None


def server_wait(retry_after: Any = None, headers: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
                text: str | None = None, *, now: datetime) -> float | None:
    """The longest wait the server asked for in any of the places it may have written one; None if none.

    A time already past is a wait of 0: the server may be called again now.
    """
    waits: list[float] = []
    if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool):
        waits.append(float(retry_after))
    elif isinstance(retry_after, str):
        found = header_wait("retry-after", retry_after, now)
        if found is not None:
            waits.append(found)
    pairs = headers.items() if isinstance(headers, Mapping) else (headers or ())
    for name, value in pairs:
        found = header_wait(str(name), value, now)
        if found is not None:
            waits.append(found)
    if text:
        found = text_wait(text)
        if found is not None:
            waits.append(found)
    return max(0.0, max(waits)) if waits else None
