"""Policies, the model double: ``policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})``."""

from toolchaos._internal.model import Decision, Feedback, ModelView
from toolchaos.errors import PolicyError
from toolchaos.policies._builtin import (
    BUILTIN,
    HELP,
    Policy,
    alternate,
    explore,
    ignores_refusals,
    jitter,
    obedient,
    paginate,
    paraphrase,
    poll_until,
    recorded,
    scripted,
    stubborn,
)

__all__ = [
    "BUILTIN", "HELP", "Decision", "Feedback", "ModelView", "Policy", "PolicyError", "alternate", "explore",
    "ignores_refusals", "jitter", "obedient", "paginate", "paraphrase", "poll_until", "recorded", "scripted",
    "stubborn",
]
