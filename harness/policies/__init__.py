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

# isort: split
# What other packages of toolchaos (the engine, the scenario loader, the strategies, toolchaos replay) need
# beyond the public names: importable from this facade, not part of the API (not in __all__).
from toolchaos.policies._builtin import Recorded as Recorded
from toolchaos.policies._builtin import as_policy as as_policy
from toolchaos.policies._builtin import known_calls as known_calls
from toolchaos.policies._builtin import tools_of as tools_of
from toolchaos.policies._fuzz import example_args as example_args

__all__ = [
    "POLICIES", "Decision", "Feedback", "ModelView", "Policy", "PolicyError", "alternate", "cassette", "explore",
    "ignores_refusals", "jitter", "obedient", "openai_chat", "paginate", "paraphrase", "poll_until", "recorded",
    "scripted", "stubborn",
]
