"""Fault constructors: ``faults.timeout(after=30, applied=True)`` and friends.

Every constructor validates its parameters; the same constructors serve plain-data
(YAML) definitions through ``as_fault``.
"""

from toolchaos.fake_tools._faults import (
    KIND_HELP,
    KINDS,
    Fault,
    as_fault,
    contradictory,
    empty,
    fatal,
    malformed,
    ok,
    oversized,
    paginated,
    pending,
    slow,
    timeout,
    transient,
)

__all__ = [
    "KINDS", "KIND_HELP", "Fault", "as_fault", "contradictory", "empty", "fatal", "malformed", "ok",
    "oversized", "paginated", "pending", "slow", "timeout", "transient",
]
