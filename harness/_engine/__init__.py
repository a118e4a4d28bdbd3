"""The run engine: one agent, its fake tools and a policy, under the virtual clock.

``run()`` hands the agent three things: the task, a ``ModelClient`` answered by the
policy, and a ``Toolbox`` of fake tools. The agent is the system under test: it decides
what to execute, what to refuse and when to stop. The engine only watches: every model
turn and every tool call becomes a trace event, every side effect a ledger entry.

The harness always terminates: a ceiling on tool calls and model turns raises
``HardCeiling`` inside the agent, and a watchdog stops an agent that spins
without calling anything. Both are ``BaseException``s so ``except Exception`` in an
agent cannot swallow them; the run then ends as a failure with its trace kept.

Concurrency: an agent may call its tools from several threads or asyncio tasks at once
(``tools.acall`` for async tools; parallel calls of one model turn under ``asyncio.gather``).
Every counter on the call path is an ``itertools.count`` (atomic in CPython), events are
put back in ``seq`` order when the run ends, and the ledger's counts are exact. A ceiling
hit in a worker thread ends the run even if the agent's own thread carried on. Calls from
threads that outlive the run are refused, recorded (``late``) and, if they keep coming,
stopped; a run whose threads were still calling when it returned fails (``threads``).
See docs/isolation.md.

Modules: ``runner`` (``run()``), ``state`` (the per-run state all the others write to),
``toolbox`` (what the agent calls), ``client`` (the model client), ``result``
(``RunResult``), ``subject`` (``AgentUnderTest``: an agent of any kind, with its own run),
``isolated`` (a run in a contained child process, its trace streamed back), ``spec``
(``RunSpec``: every setting of a run, and the session's defaults for what a run leaves unset).
The stops the harness raises inside the agent live in ``toolchaos.errors``.
"""

from toolchaos._engine.client import ModelClient
from toolchaos._engine.isolated import default_for_certification
from toolchaos._engine.result import RunResult
from toolchaos._engine.runner import run, run_spec, safe_name
from toolchaos._engine.spec import (
    ISOLATION_MODES,
    RunSpec,
    session_defaults,
    session_isolation,
    session_real_seconds,
    session_total_seconds,
)
from toolchaos._engine.subject import AgentUnderTest
from toolchaos._engine.toolbox import Toolbox

__all__ = ["ISOLATION_MODES", "AgentUnderTest", "ModelClient", "RunResult", "RunSpec", "Toolbox",
           "default_for_certification", "run", "run_spec", "safe_name", "session_defaults", "session_isolation",
           "session_real_seconds", "session_total_seconds"]
