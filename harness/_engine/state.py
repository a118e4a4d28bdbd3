"""The shared state of one run: what the toolbox, the model client and the wire all write to.

Every counter on the call path is an ``itertools.count`` (atomic in CPython), so workers
that call tools at once never share a number; ``lock`` orders model turns and the matching
of calls to the model's requests. Events are appended as they happen and put back in
``seq`` order when the run ends.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, MutableMapping
from typing import Any, cast

from toolchaos._internal.events import Event, Shown, api_event, side_event, skipped_event
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.model import Handled, TokenMeter, Usage
from toolchaos._plumbing.clock import VirtualClock
from toolchaos.errors import HarnessStop
from toolchaos.fake_tools import Outcome, ToolSet
from toolchaos.fake_tools.internals import deferred
from toolchaos.policies import Policy


class RunState:
    """Shared state of one run (the toolbox and the model client both write to it)."""

    def __init__(self, run_id: str, task: str, seed: int, toolset: ToolSet, policy: Policy,
                 ceiling: Ceiling, budgets: Budgets, store: MutableMapping[str, Any]) -> None:
        self.run_id = run_id
        self.task = task
        self.seed = seed
        self.toolset = toolset
        self.tools = toolset.tools
        self.clock = cast(VirtualClock, toolset.clock)  # run() binds each run's tool set to a VirtualClock
        self.policy = policy
        self.ceiling = ceiling
        self.budgets = budgets
        self.store = store
        self.events: list[Event] = []
        self.seq = itertools.count(1)
        self.step = 0
        self.tool_calls = itertools.count(1)  # atomic under concurrent workers
        self.lock = threading.Lock()  # model turns and request matching, when workers run at once
        self.stopped: HarnessStop | None = None  # a ceiling hit in any thread ends the run
        self.late = itertools.count(1)
        self.refusals = itertools.count(1)
        self.ended = False  # the end event is written: later calls are refused and not recorded
        self.pending: list[tuple[str, str, str]] = []  # (call_id, tool, fingerprint) asked for, not yet handled
        self.served: dict[int, Outcome] = {}  # tool event seq -> the outcome served; read by the next turn's handled()
        self.usage: list[Usage] = []
        self.prompt_meter = TokenMeter()  # the conversation grows each turn: count only what is new
        self.memory: dict[str, Any] = {}
        self.rng = deferred(f"{seed}:policy")  # most policies never draw: seeded on the first draw
        self.closed = False
        self.last_final: str | None = None
        self.limit: tuple[float, str] = (0.0, "")  # the watchdog's limit and who set it (RunSpec.watchdog_limit)
        self.total: tuple[float, str] = (0.0, "")  # the total real-time limit and who set it (RunSpec.total_limit)
        self.tried: dict[Any, int] = {}  # attempts at each call of this turn, by call id and by (tool, fingerprint)
        self.tried_step = 0
        self.sides = 0  # side events in ``events`` (a watchdog's progress count may leave them out)

    def attempt(self, name: str, fp: str, call_id: str | None) -> int:
        """Which attempt at one request this execution is: 1, or more for a transport retry.

        A transport retry re-executes a call with no model turn in between: the same call id, or,
        without one, the same tool and fingerprint (an HTTP layer retrying a request, as the
        official SDKs do twice by default). The model's re-asks come in later turns: attempt 1.
        """
        if self.tried_step != self.step:  # a model turn since: every call is a new request again
            self.tried, self.tried_step = {}, self.step
        tried, by_tool = self.tried, (name, fp)
        n = tried.get(by_tool if call_id is None else call_id, 0) + 1
        tried[by_tool] = n
        if call_id is not None:
            tried[call_id] = n
        return n

    def fp(self, name: str, args: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        return self.toolset.fingerprint(name, args)

    def take_request(self, name: str, fp: str, call_id: str | None) -> str | None:
        """Match an execution or refusal to the model's request it answers."""
        pending = self.pending
        if not pending:
            return call_id
        with self.lock:
            for i, (cid, _, tfp) in enumerate(pending):
                if cid == call_id or (call_id is None and tfp == fp):
                    del pending[i]
                    return cid
            if call_id is None:
                for i, (cid, tname, _) in enumerate(pending):
                    if tname == name:
                        del pending[i]
                        return cid
        return call_id

    def handled(self) -> tuple[dict[str, Handled], list[Outcome]]:
        """How each call asked for at the model's last turn was handled, by call id, with what it served;
        and every outcome served since that turn, in order (a runtime's own calls included: a lookup
        whose result it handed back in place of a lost one).

        Only the events since that turn are read (a few per turn, so a long run stays linear), and
        their served outcomes are let go; an execution wins over a refusal of the same call
        (``no_execution_after_refusal`` judges that one), and a call executed more than once
        (a runtime's own retry under one call id) reads as its last execution.
        """
        out: dict[str, Handled] = {}
        served, outcomes = self.served, []
        unrun: list[Any] = []
        turn: Any = None
        for e in reversed(self.events):
            if e["kind"] == "model":
                turn = e
                break
            if e["kind"] == "tool":
                cid = e["call_id"]
                outcome = served.pop(e["seq"], None)
                if outcome is not None:
                    outcomes.append(outcome)
                if cid is not None and (cid not in out or not out[cid].executed):
                    out[cid] = Handled.of("tool", served=outcome)
            elif e["kind"] == "refusal" or e["kind"] == "skipped":
                cid = e["call_id"]
                if cid is not None and cid not in out:
                    out[cid] = Handled.of(e["kind"], e.get("guard"))
                    unrun.append(e)
        for e in unrun:  # rare: a few refusals in a run, so the ledger is read only then
            if not out[e["call_id"]].executed and self._applied_before(e, turn):
                out[e["call_id"]] = Handled.of(e["kind"], e.get("guard"), duplicate=True)
        outcomes.reverse()
        return out, outcomes

    def _applied_before(self, e: Any, turn: Any) -> bool:
        """Whether a call that was not run repeats an operation whose effect applied and was answered (done).

        The operation is the tool and its operation key (the idempotency key's value, else the
        fingerprint), from the arguments the model asked with: the same key the ledger counts by.
        Answered: the effect's response came back (ledger status ``ok``), so the model had read
        the success before; after a timeout nobody knew the work was done, and a refused retry
        reads as any refusal.
        """
        tool = self.tools.get(e["tool"])
        if tool is None or not tool.side_effect:
            return False
        args = e.get("args")
        for asked in (turn or {}).get("asked") or ():
            if asked["id"] == e["call_id"]:
                args = asked["args"]
                break
        return self.toolset.ledger.answered(e["tool"], tool.operation_key(args or {}, e["fp"]))

    def flush_pending(self) -> None:
        """Calls the model asked for that were neither executed nor refused."""
        for cid, name, fp in self.pending:
            self.events.append(skipped_event(self.run_id, next(self.seq), self.step, self.clock.t, name, fp, cid))
        self.pending = []

    def api_fault(self, api: str, request: int, code: str, status: int | None, retry_after: float | None,
                  url: str) -> None:
        """A model-API request the wire answered with a fault."""
        self.events.append(api_event(self.run_id, next(self.seq), self.step, self.clock.t, api, request, code,
                                     status, retry_after, url))

    def side_request(self, api: str, request: int, why: str, answer: str, tokens_in: int, tokens_out: int) -> None:
        """A side request the wire answered itself: recorded, never a model turn (the step stays)."""
        self.events.append(side_event(self.run_id, next(self.seq), self.step, self.clock.t, api, request, why, answer,
                                      tokens_in, tokens_out))
        self.sides += 1

    def show(self, shown: list[Shown]) -> None:
        """What the agent showed the model of the previous turn's results, on the turn just made."""
        last = self.events[-1] if self.events else None
        if last is not None and last["kind"] == "model":
            last["shown"] = shown
            self.events[-1] = last  # the same event: an isolated run's stream sends it again, now complete
