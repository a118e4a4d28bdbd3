"""What ``POST /toolchaos/end`` may carry: the agent's result, as an in-process agent returns it.

The body is empty (a plain return) or a JSON object ``{"state"?, "answer"?, "report"?}``:
``state`` a string (a terminal state: the run's invariants judge it, as they judge an
in-process agent's), ``answer`` a string, ``report`` the stop report, an object of fields.
Anything else is refused with a 400 saying what the body must be, and the run goes on: an
end the server cannot read must not end the run in a way the agent did not ask for.
"""

from __future__ import annotations

import json
from typing import Any

from toolchaos._internal.types import REPORT_FIELDS, TERMINAL_STATES
from toolchaos.errors import did_you_mean
from toolchaos.wire import json_type

__all__ = ["END_BODY", "end_request"]

END_BODY = ('the body is empty, or a JSON object {"state"?, "answer"?, "report"?}: state a string (the terminal '
            f'state: {", ".join(TERMINAL_STATES)}), answer a string (the final answer), report an object (the stop '
            f'report, with fields such as {", ".join(REPORT_FIELDS)})')
_TYPES: dict[str, tuple[type, str]] = {"state": (str, "a string"), "answer": (str, "a string"),
                                       "report": (dict, "an object (the stop report)")}


def end_request(raw: bytes) -> dict[str, Any] | str:
    """The body of an end request as ``Server.end``'s keywords, or why it is refused."""
    try:
        data = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's depth
        return f"the body is not JSON; {END_BODY}"
    if not isinstance(data, dict):
        return f"the body is {json_type(data)}; {END_BODY}"
    for key, value in data.items():
        if key not in _TYPES:
            return f"unknown field {key!r}{did_you_mean(key, _TYPES)}; {END_BODY}"
        expected, what = _TYPES[key]
        if value is not None and not isinstance(value, expected):
            return f"{key} is {json_type(value)}, not {what}; {END_BODY}"
    return data
