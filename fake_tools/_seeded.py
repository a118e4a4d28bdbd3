"""Random generators seeded from text, built from a remembered state.

``random.Random(text)`` hashes the text (SHA-512) and runs the Mersenne Twister's array
seeding: ~15 us, several times a run (the policy's generator, each payload, each
probabilistic fault rule), with the same few texts run after run. Setting a remembered
state is ~3 times cheaper and gives the very same sequence.
"""

from __future__ import annotations

import random
from typing import Any

_KEPT = 256  # texts remembered (a state is ~5 kB); past that the table starts again
_states: dict[str, Any] = {}


def seeded(text: str) -> random.Random:
    """A new generator in the state ``random.Random(text)`` starts in."""
    state = _states.get(text)
    if state is None:
        if len(_states) >= _KEPT:
            _states.clear()
        state = _states[text] = random.Random(text).getstate()
    rng = random.Random.__new__(random.Random)  # unseeded: the state is set next
    rng.setstate(state)
    return rng
