"""The retry policy: how many attempts, how long between them.

Exponential backoff with full jitter (a uniform draw up to ``BASE * 2**n``, capped), never
shorter than the server's wait, and a small pad on top of that wait against clock skew. The
jitter is drawn from the run's seed, so the same run waits the same: reproducible under test.
A run also has a retry budget, so retries of many calls cannot add up without limit.
"""

from __future__ import annotations

import hashlib
import random

MAX_ATTEMPTS = 3  # the first attempt and two retries
RUN_RETRY_BUDGET = 8
BACKOFF_BASE = 0.5
BACKOFF_CAP = 20.0
SERVER_WAIT_PAD = 0.25  # seconds added to a server's wait: its clock and ours may differ a little


def backoff(attempt: int, server_wait: float | None, seed: int, fp: str) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (``attempt`` >= 1 attempts made so far)."""
    digest = hashlib.sha256(f"{seed}:{fp}:{attempt}".encode()).digest()
    jitter = random.Random(int.from_bytes(digest[:8], "big")).uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** attempt))
    if server_wait is None:
        return jitter
    return max(server_wait + SERVER_WAIT_PAD, jitter)
