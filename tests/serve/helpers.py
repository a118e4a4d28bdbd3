"""Helpers for the serve tests: an async client on its own real-time loop, and the scenarios they serve."""

from __future__ import annotations

import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from toolchaos._engine import RunSpec
from toolchaos._plumbing import clock as _clock
from toolchaos.certification import scenario_spec
from toolchaos.scenario import Scenario, load_file

HERE = Path(__file__).parent
LOOP_YAML = HERE / "timeout-loop.chaos.yaml"


def loop_scenario() -> Scenario:
    (scenario,) = load_file(LOOP_YAML)
    return scenario


def loop_spec(**changes: Any) -> RunSpec:
    """The run of LOOP_YAML, as ``toolchaos serve`` builds it: a tool that always times out; the ceiling: 6 model turns."""
    return scenario_spec(loop_scenario()).with_(**changes)
_T = TypeVar("_T")


def run_async(coro: Coroutine[Any, Any, _T], seconds: float = 30) -> _T:
    """Run an async client (the MCP SDK's) in a thread of its own, on real time, as another process would."""
    box: dict[str, Any] = {}

    def target() -> None:
        loop = _clock.RealTimeEventLoop()
        try:
            box["value"] = loop.run_until_complete(coro)
        except BaseException as exc:
            box["error"] = exc
        finally:
            loop.close()

    thread = threading.Thread(target=target, name="test-async-client")
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the async client did not finish"
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def harness_threads() -> set[str]:
    """Threads of this process other than the main one and the process-wide watchdog."""
    return {t.name for t in threading.enumerate() if t is not threading.main_thread() and t.name != "toolchaos-watchdog"}
