"""The ``chaos`` fixture's object: ``toolchaos.Chaos`` plus ``chaos.wire(...)`` for SDK agents.

``Chaos`` (the session layer) and ``toolchaos.wire`` are siblings that do not import each other,
so the pytest layer, above both, joins them here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolchaos._session import Chaos
from toolchaos.fake_tools import FakeTool

if TYPE_CHECKING:  # the wire (respx, httpx) loads when a test first uses chaos.wire
    from toolchaos.wire import Env


class PytestChaos(Chaos):
    """``Chaos`` whose SDK-agent runs pick up the test's seed, artifacts and name, like its other runs."""

    @contextmanager
    def wire(self, *, tools: Iterable[FakeTool], policy: Any, seed: int | None = None,
             **options: Any) -> Iterator[Env]:
        """``toolchaos.wire.session`` with this test's defaults; the block is the agent (see there)."""
        from toolchaos.wire import session  # respx and the SDK shims: only when a test uses chaos.wire

        n = len(self.results) + 1
        options.setdefault("name", self.name if n == 1 else f"{self.name}-{n}")
        options.setdefault("artifacts", self.artifacts)
        ran: list[Env] = []
        try:
            with session(tools=tools, policy=policy, seed=self.seed if seed is None else seed, **options) as env:
                ran.append(env)
                yield env
        finally:  # a failing block still leaves its run behind
            if ran and ran[0].result is not None:
                self.results.append(ran[0].result)
