"""Policies, the model double: ``policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"})``.

``POLICIES`` is the registry of built-in policies (``toolchaos.fake_tools.registry``).
"""

from toolchaos._internal.model import Decision, Feedback, ModelView
from toolchaos.errors import PolicyError
from toolchaos.policies._builtin import (
    POLICIES,
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
from toolchaos.policies._cassette import cassette, openai_chat

__all__ = [
    "POLICIES", "Decision", "Feedback", "ModelView", "Policy", "PolicyError", "alternate", "cassette", "explore",
    "ignores_refusals", "jitter", "obedient", "openai_chat", "paginate", "paraphrase", "poll_until", "recorded",
    "scripted", "stubborn",
]
