"""Outcome classes and the resolved outcome of one fake tool call.

An *outcome* is what one execution of a fake tool produced: a machine-readable class
(the branch a correct runtime takes), a code, whether retrying may help, an optional
``retry_after``, the payload, and whether the side effect was applied. Fault kinds
(see ``_faults``) resolve to outcomes; the tool then delivers them to the agent either
as a returned payload or as a raised exception.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from toolchaos.fake_tools._frozen import quick_init


class OutcomeClass(str, enum.Enum):
    """The five result classes of DOMAIN.md; a runtime must not share one retry branch."""

    SUCCESS = "SUCCESS"
    RETRYABLE = "RETRYABLE"
    PRECONDITION = "PRECONDITION"
    FATAL = "FATAL"
    PENDING = "PENDING"

    def __str__(self) -> str:
        return self.value


# Applied states, as in Jepsen histories: an execution's effect happened, did not, or
# the caller cannot know (the response was lost). The ledger stores the truth; what the
# *agent* could know is the ``status``.
APPLIED = "applied"
NOT_APPLIED = "not_applied"


@quick_init
@dataclass(frozen=True, slots=True)
class Outcome:
    """The resolved result of one execution of a fake tool."""

    kind: str  # fault kind that produced it: ok, empty, timeout, transient, ...
    cls: OutcomeClass
    code: str
    data: Any = None
    retryable: bool = False
    retry_after: float | None = None
    message: str = ""
    latency: float = 0.0  # virtual seconds the call takes before answering
    applied: bool = True  # ground truth: did the side effect happen (side-effect tools)
    field: str | None = None  # the offending argument, for PRECONDITION outcomes
    # Retry-After as the API wrote it, when not plain seconds (an HTTP-date, retry-after-ms, a
    # rate-limit reset header): what the caller must read; ``retry_after`` stays the wait in seconds.
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def status(self) -> str:
        """What the caller can know: ok, failed, or unknown (Jepsen's three endings)."""
        if self.cls is OutcomeClass.SUCCESS:
            return "ok"
        if self.kind == "timeout":
            return "unknown"
        return "failed"

    def error_payload(self) -> dict[str, Any]:
        """The error as a real API would return it in a response body.

        A wait in another form than seconds comes as the ``headers`` that carried it, and
        no ``retry_after``: the caller has to read the form the scenario sent.
        """
        err: dict[str, Any] = {
            "code": self.code,
            "class": self.cls.value,
            "retryable": self.retryable,
            "message": self.message or self.code.replace("_", " "),
        }
        if self.headers:
            err["headers"] = dict(self.headers)
        elif self.retry_after is not None:
            err["retry_after"] = self.retry_after
        if self.field is not None:
            err["field"] = self.field
        return {"error": err}
