"""The model as the in-process agent sees it: each turn answered by the policy, recorded as a trace event."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolchaos._engine.state import RunState
from toolchaos._internal.events import AskedCall, model_event
from toolchaos._internal.model import (
    Decision,
    Feedback,
    ModelTurn,
    ModelView,
    ToolCall,
    Usage,
    estimate_tokens,
    read_feedback,
)
from toolchaos.errors import HardCeiling, HarnessStop, PolicyCrashed, RunClosed


class ModelClient:
    """The model as the in-process agent sees it, answered by the policy."""

    def __init__(self, run: RunState) -> None:
        self._run = run
        self.feedback: list[Feedback] = []  # the last turn's tool results as the policy read them

    def complete(self, messages: Sequence[Mapping[str, Any]], tools: Iterable[Any] | None = None, *,
                 unchanged: int = 0, source: object | None = None) -> ModelTurn:
        """One model turn. ``unchanged``/``source``: see ``TokenMeter.read`` (the wire vouches for its
        own messages, so a long conversation's history is not compared every turn)."""
        run = self._run
        if run.closed:
            raise RunClosed("the model was called after the run had ended")
        with run.lock:  # one turn at a time: policies are not thread-safe, steps must not interleave
            if run.step >= run.ceiling.max_model_turns:
                stop = HardCeiling(f"more than {run.ceiling.max_model_turns} model turns (the harness ceiling)")
                run.stopped = run.stopped or stop
                raise stop
            if run.pending:
                run.flush_pending()
            run.step += 1
            msgs = run.prompt_meter.read(messages, unchanged, source)  # the policy's copies: only new or changed made
            # What became of each call is the harness's record, not what the runtime wrote back.
            self.feedback = read_feedback(msgs, *run.handled())
            view = ModelView(run.task, run.step, msgs, self.feedback, list(run.tools), run.rng, run.memory)
            try:
                decision = run.policy.decide(view)
            except HarnessStop:
                raise
            except BaseException as exc:
                raise PolicyCrashed(exc) from exc
            return self._turn(run, msgs, decision)

    def count_tokens(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """The prompt tokens ``complete(messages)`` would report, without a model turn (as Anthropic's
        ``count_tokens``): a runtime checks its budget before it sends, and the turn then measures nothing twice."""
        run = self._run
        if run.closed:
            raise RunClosed("the model was called after the run had ended")
        with run.lock:
            return run.prompt_meter.count(messages)

    async def acomplete(self, messages: Sequence[Mapping[str, Any]], tools: Iterable[Any] | None = None) -> ModelTurn:
        return self.complete(messages, tools)

    def _turn(self, run: RunState, msgs: list[dict[str, Any]], decision: Decision) -> ModelTurn:
        step = run.step
        if decision.calls:
            calls = tuple([ToolCall(f"call_{step}_{i}", name, args) for i, (name, args) in enumerate(decision.calls)])
            text = None
            out_tokens = 4 + estimate_tokens([[c.name, c.arguments] for c in calls])
        else:
            calls, text = (), decision.text
            out_tokens = 4 + estimate_tokens([text])
        usage = Usage(run.prompt_meter.estimate(msgs), out_tokens)
        run.usage.append(usage)
        asked: list[AskedCall] = []
        fingerprint = run.toolset.fingerprint
        for c in calls:
            _, fp = fingerprint(c.name, c.arguments)
            run.pending.append((c.id, c.name, fp))
            asked.append({"id": c.id, "tool": c.name, "args": c.arguments, "fp": fp})
        run.last_final = text
        run.events.append(model_event(run.run_id, next(run.seq), run.step, run.clock.t, asked, text,
                                      usage.input_tokens, usage.output_tokens))
        return ModelTurn(run.step, text, calls, usage)
