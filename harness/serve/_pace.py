"""Real waits credited to the run's virtual clock (an agent in another process has its own clock).

An agent in this process sleeps on the run's virtual clock, so a Retry-After it honours
moves the clock by itself. An agent in another process sleeps in real seconds, which the
virtual clock never sees: the wait it owes would look ignored (``retry_after_honoured``)
and a tool enforcing its Retry-After would answer 429 forever. So the server remembers
the wait it asked for (the latest ``retry_after`` of an ``api`` or ``tool`` event, from the
virtual time it was given), and when the next request comes it credits the clock with the
real seconds that passed since the previous answer, at most up to the end of that wait
and rounded down to a tenth of a second. A client that honours the wait lands exactly on
its end (same trace, run after run); one that retries early is credited only what it
waited; nothing is credited when no wait is owed, so timings of ordinary requests never
reach the trace.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from toolchaos._plumbing import clock as _clock
from toolchaos._plumbing.clock import VirtualClock


class Pacer:
    def __init__(self, clock: VirtualClock, events: list[Any]) -> None:
        self.clock = clock
        self.events = events
        self.seen = len(events)
        self.owed_until = 0.0
        self.last_real = _clock.real_monotonic()
        self.lock = threading.Lock()

    def before(self) -> None:
        """A request arrives: credit the real wait since the last answer, up to the wait owed."""
        with self.lock:
            owed = self.owed_until - self.clock.t
            if owed > 0:
                waited = math.floor((_clock.real_monotonic() - self.last_real) * 10) / 10
                self.clock.advance(min(waited, owed))

    def after(self) -> None:
        """An answer leaves: note any wait it asked for."""
        with self.lock:
            events = self.events
            for e in events[self.seen:]:
                wait = e.get("retry_after")
                if isinstance(wait, (int, float)) and wait > 0:
                    self.owed_until = max(self.owed_until, e["t"] + (e.get("latency") or 0.0) + wait)
            self.seen = len(events)
            self.last_real = _clock.real_monotonic()
