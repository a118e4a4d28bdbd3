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
import threading
from typing import Any

_KEPT = 256  # texts remembered (a state is ~5 kB); past that the table starts again
_states: dict[str, Any] = {}
_once: set[str] = set()  # texts asked for once: seeded directly, their state not kept (yet)


def seeded(text: str) -> random.Random:
    """A new generator in the state ``random.Random(text)`` starts in."""
    state = _kept(text)
    if state is None:
        return random.Random(text)
    return _plain(state)


def _kept(text: str) -> tuple[Any, ...] | None:
    """The remembered state of ``text``, or None the first time it is asked for (seed directly then)."""
    state = _states.get(text)
    if state is None:
        if text not in _once:
            if len(_once) >= 4 * _KEPT:
                _once.clear()
            _once.add(text)
            return None
        if len(_states) >= _KEPT:
            _states.clear()
        state = _states[text] = random.Random(text).getstate()
    return state


def _plain(state: tuple[Any, ...]) -> random.Random:
    rng = random.Random.__new__(random.Random)  # unseeded: the state is set next
    rng.setstate(state)
    return rng


_starting = threading.Lock()


def deferred(text: str) -> random.Random:
    """``seeded(text)``, seeded when first drawn from: a run's policy generator that no draw needs costs nothing."""
    return _Deferred(text)


class _Deferred(random.Random):
    """A ``random.Random`` that takes the state of ``seeded(text)`` on its first use.

    Most policies never draw, and setting a state is ~2.5 us, a tenth of a short run. The
    first draw (or ``getstate``, ``setstate``, ``seed``) sets it; from then on the generator's
    own C methods answer, bound on the instance, so a draw costs what it costs a plain
    ``Random``. Both ``random`` and ``getrandbits`` are overridden, so ``Random`` keeps drawing
    integers from ``getrandbits``: the very sequence ``random.Random(text)`` gives. Copies and
    pickles are plain ``Random`` objects in the same state.
    """

    def __init__(self, text: str) -> None:  # not Random.__init__, which would seed now
        self._text: str | None = text
        self.gauss_next = None  # read by gauss() before its first draw

    def _start(self) -> None:
        with _starting:  # two threads' first draws: one sets the state, neither draws before it is set
            text, self._text = self._text, None
            if text is not None:
                state = _kept(text)
                if state is None:
                    random.Random.seed(self, text)
                else:
                    random.Random.setstate(self, state)
            self.random = super().random  # type: ignore[method-assign]
            self.getrandbits = super().getrandbits  # type: ignore[method-assign]

    def random(self) -> float:
        self._start()
        return self.random()

    def getrandbits(self, k: int, /) -> int:
        self._start()
        return self.getrandbits(k)

    def getstate(self) -> tuple[Any, ...]:
        if self._text is not None:
            self._start()
        return super().getstate()

    def setstate(self, state: tuple[Any, ...]) -> None:
        self._text = None  # the state given replaces the one the text would have set
        self._start()
        super().setstate(state)

    def seed(self, a: Any = None, version: int = 2) -> None:
        self._text = None  # the seed given replaces the text's
        self._start()
        super().seed(a, version)

    def __reduce__(self) -> tuple[Any, ...]:
        return _plain, (self.getstate(),)
