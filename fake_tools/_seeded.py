"""Random generators seeded from text, built from a remembered state.

``random.Random(text)`` hashes the text (SHA-512) and runs the Mersenne Twister's array
seeding: ~10-15 us, several times a run (the policy's generator, each payload, each
probabilistic fault rule). Setting a remembered state is ~3 times cheaper and gives the very
same sequence, but remembering costs a ``getstate()`` (a 625-number tuple, as dear as the
seeding): worth it only for a text that comes back. Fuzzing reruns the same few texts
example after example; a suite whose every scenario has its own seed never repeats one. So a
text's state is kept the second time the text is asked for, not the first.
"""

from __future__ import annotations

import random
from typing import Any

_KEPT = 256  # texts remembered (a state is ~5 kB); past that the table starts again
_states: dict[str, Any] = {}
_once: set[str] = set()  # texts asked for once: seeded directly, their state not kept (yet)


def seeded(text: str) -> random.Random:
    """A new generator in the state ``random.Random(text)`` starts in."""
    state = _states.get(text)
    if state is None:
        if text not in _once:
            if len(_once) >= 4 * _KEPT:
                _once.clear()
            _once.add(text)
            return random.Random(text)
        if len(_states) >= _KEPT:
            _states.clear()
        state = _states[text] = random.Random(text).getstate()
    rng = random.Random.__new__(random.Random)  # unseeded: the state is set next
    rng.setstate(state)
    return rng
