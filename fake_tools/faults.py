"""Fault constructors: ``faults.timeout(after=30, applied=True)`` and friends.

Every constructor validates its parameters; the same constructors serve plain-data
(YAML) definitions through ``as_fault``. ``FAULTS`` is the registry of fault kinds
(``toolchaos.fake_tools.registry``): register a constructor there to add a kind, and
write its resolution against ``CallInfo``.
"""

from toolchaos.fake_tools._faults import (
    FAULTS,
    CallInfo,
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
    stale,
    timeout,
    transient,
)

__all__ = [
    "FAULTS", "CallInfo", "Fault", "as_fault", "contradictory", "empty", "fatal", "malformed", "ok", "oversized",
    "paginated", "pending", "slow", "stale", "timeout", "transient",
]
