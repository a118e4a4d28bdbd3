"""The token meter's work per turn: what is new, not the history; its counts exact where its check says.

Work is counted, not timed: the meter's own ``work`` counter, and, independently of it, the
messages it reads from an instrumented sequence (``_Counted``). Every count is compared with a
from-scratch ``estimate_tokens`` of the same messages.
"""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Iterator, Sequence
from typing import Any, overload

from toolchaos import Ceiling, policies, run
from toolchaos._internal.model import TokenMeter, estimate_tokens
from toolchaos.fake_tools import catalogue, faults


class _Counted(Sequence[Any]):
    """A conversation that counts the messages read from it (an item, each item of a slice, each one iterated)."""

    def __init__(self, items: list[Any]) -> None:
        self.items, self.reads = items, 0

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        got = self.items[i]
        self.reads += len(got) if isinstance(i, slice) else 1
        return got

    def __iter__(self) -> Iterator[Any]:
        for m in self.items:
            self.reads += 1
            yield m

    def append(self, m: Any) -> None:
        self.items.append(m)


def _message(i: int) -> dict[str, Any]:
    if i % 2:
        return {"role": "tool", "tool_call_id": f"c{i}", "name": "fetch", "content": {"rows": ["é" * (i % 7), i / 3]}}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i + 1}", "name": "fetch",
                                                                  "arguments": {"n": i}}]}


def _turns(meter: TokenMeter, msgs: list[Any], turns: int) -> list[int]:
    """Turns as the engine makes them (count, read, the view estimated); the meter's work of each."""
    work = []
    for _ in range(turns):
        msgs += [_message(len(msgs)), _message(len(msgs) + 1)]
        before = meter.work
        counted = meter.count(msgs)
        view = meter.read(msgs)
        assert counted == meter.estimate(view) == estimate_tokens(msgs)
        work.append(meter.work - before)
    return work


def test_an_append_only_turn_costs_the_same_whatever_the_history():
    meter, msgs = TokenMeter(), [{"role": "user", "content": "go"}]
    work = _turns(meter, msgs, 400)
    assert len(msgs) == 801
    assert set(work[5:]) == {work[5]} and work[5] <= 2 * 9 + 4 + 2  # two checks of 9, two messages measured
    counted = _Counted(msgs)
    meter.read(counted)  # another object: compared in full once
    assert counted.reads >= len(msgs)
    for _ in range(50):
        counted.append(_message(len(msgs)))
        counted.reads = 0
        assert meter.estimate(meter.read(counted)) == estimate_tokens(msgs)
        assert counted.reads <= 2 * (1 + 8) + 1  # the first, the last 8 twice (checked, kept), the new one
    counted.reads = 0
    assert meter.estimate(counted) == estimate_tokens(msgs) and counted.reads <= 19


def test_an_engine_turn_reads_only_what_is_new_in_the_agents_conversation():
    reads: list[int] = []
    counts: list[int] = []

    def agent(task: str, model: Any, tools: Any) -> None:
        msgs = _Counted([{"role": "user", "content": task}])
        for _ in range(300):
            msgs.reads = 0
            turn = model.complete(msgs, tools.specs)
            reads.append(msgs.reads)
            counts.append(turn.usage.input_tokens - estimate_tokens(msgs.items))
            msgs.append(turn.as_message())
            for call in turn.tool_calls:
                try:
                    result: Any = tools.call(call.name, call.arguments, call_id=call.id)
                except Exception as exc:
                    result = f"Error: {exc}. Please try again."
                msgs.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result})

    tools = [catalogue.get("fetch_invoice", faults=faults.timeout(after=30))]
    run(agent, task="Total of inv_1?", tools=tools, policy=policies.stubborn("fetch_invoice", {"invoice_id": "inv_1"}),
        ceiling=Ceiling(max_model_turns=310, max_tool_calls=310))
    assert len(reads) == 300 and set(counts) == {0}  # every turn's input tokens exact
    assert set(reads[10:]) == {reads[10]} and reads[10] <= 20


def _stale(meter: TokenMeter, msgs: list[Any]) -> int:
    """The meter's count and the exact one differ: what the documented check does not see."""
    counted = meter.estimate(msgs)
    assert counted != estimate_tokens(msgs)
    return counted


def test_an_edit_the_check_sees_is_measured_again_and_costs_the_history_once():
    meter, msgs = TokenMeter(), [{"role": "system", "content": "Be brief."}]
    steady = _turns(meter, msgs, 100)[-1]
    cases = [
        lambda: msgs[-3].__setitem__("content", "trimmed"),  # one of the last 8, edited in place
        lambda: msgs[-1].pop("role"),  # a key removed
        lambda: msgs[-8].__setitem__("extra", 1),  # a key added to the oldest of the last 8
        lambda: msgs.__setitem__(-2, {"role": "user", "content": "replaced"}),  # one of them replaced
        lambda: msgs[0].__setitem__("content", "Be briefer."),  # the first message, in place
        lambda: msgs.__delitem__(slice(40, 60)),  # the list shortened, in the middle
        lambda: msgs.insert(30, {"role": "user", "content": "inserted"}),  # the last ones move
    ]
    for edit in cases:
        edit()
        before = meter.work
        assert meter.count(msgs) == estimate_tokens(msgs)
        assert meter.work - before >= len(msgs) - 1  # compared in full: the check failed
        assert meter.estimate(meter.read(msgs)) == estimate_tokens(msgs)
        assert _turns(meter, msgs, 2) == [steady, steady]  # and the next turns are cheap again


def test_a_new_list_is_compared_in_full_and_counted_exactly():
    meter, msgs = TokenMeter(), [{"role": "system", "content": "Be brief."}]
    _turns(meter, msgs, 60)
    rebuilt = [msgs[0], *[dict(m) for m in msgs[1:]]]  # a runtime that converts its messages every turn
    rebuilt[10]["content"] = "trimmed"
    before = meter.work
    assert meter.estimate(meter.read(rebuilt)) == estimate_tokens(rebuilt)
    assert meter.work - before >= len(rebuilt)
    window = [rebuilt[0], *rebuilt[-20:]]  # a sliding window, new each turn
    assert meter.read(window) == window and meter.count(window) == estimate_tokens(window)


def test_not_seen_an_old_message_edited_in_place_until_a_new_list_is_handed():
    meter, msgs = TokenMeter(), [{"role": "system", "content": "Be brief."}]
    _turns(meter, msgs, 30)
    counted = meter.estimate(msgs)
    msgs[10]["content"] = "trimmed"  # between the first and the last 8, in the same list
    assert _stale(meter, msgs) == counted  # measured as it was
    msgs.append({"role": "user", "content": "more"})
    assert meter.estimate(msgs) - counted == estimate_tokens(msgs[-1:]) - 8 + 1  # only the new one added
    assert meter.estimate(list(msgs)) == estimate_tokens(msgs)  # a new list: compared in full


def test_not_seen_an_old_message_replaced_in_the_same_list():
    meter, msgs = TokenMeter(), [{"role": "system", "content": "Be brief."}]
    _turns(meter, msgs, 30)
    counted = meter.count(msgs)
    msgs[20] = {"role": "user", "content": "a different message, as long as the list"}
    assert _stale(meter, msgs) == counted
    del msgs[-1]  # the list shrinks: compared in full
    assert meter.estimate(msgs) == estimate_tokens(msgs)


def test_never_seen_a_value_changed_inside_where_the_copy_shares_it():
    meter, msgs = TokenMeter(), [{"role": "system", "content": "Be brief."}]
    _turns(meter, msgs, 5)
    counted = meter.estimate(msgs)
    result = next(m for m in reversed(msgs) if m["role"] == "tool")
    result["content"]["rows"].append("x" * 400)  # a list inside a recent tool result, appended to in place
    assert _stale(meter, msgs) == counted and _stale(meter, list(msgs)) == counted  # a shallow copy shares it
    result["content"] = {"rows": list(result["content"]["rows"])}  # an equal value: still as it was measured
    assert _stale(meter, msgs) == counted
    result["content"] = "trimmed"  # a value that differs from the copy's: seen
    assert meter.estimate(msgs) == estimate_tokens(msgs)


def test_the_reader_gets_the_same_list_grown_and_its_own_edits_never_count():
    meter, msgs = TokenMeter(), [{"role": "user", "content": "go"}]
    _turns(meter, msgs, 20)
    view = meter.read(msgs)
    edited = view[-1]
    edited["content"] = "scribbled"  # the reader edits a copy: a fresh one next turn
    view[0].clear()
    msgs.append(_message(len(msgs)))
    again = meter.read(msgs)
    assert again is view and again == msgs and again[-2] is not edited and meter.estimate(again) == estimate_tokens(msgs)
    again.append({"role": "user", "content": "the reader's own"})  # the reader changes the list itself
    assert meter.estimate(again) == estimate_tokens(again)  # counted as it was given
    fresh = meter.read(msgs)
    assert fresh is not again and fresh == msgs and meter.estimate(fresh) == estimate_tokens(msgs)
    assert type(copy.copy(fresh)) is list and type(pickle.loads(pickle.dumps(fresh))) is list
    assert meter.estimate(meter.read(msgs)) == estimate_tokens(msgs)


def _edit_seen(rng: random.Random, msgs: list[Any]) -> list[Any]:
    """One change the check sees (or a new list); returns the conversation to hand next."""
    op, at = rng.randrange(7), max(len(msgs) - 1 - rng.randrange(8), 0)
    if op == 0:
        msgs[at]["content"] = "x" * rng.randrange(50)
    elif op == 1:
        msgs[at] = {"role": "user", "content": "y" * rng.randrange(50)}
    elif op == 2 and msgs:
        msgs[0]["content"] = "z" * rng.randrange(50)
    elif op == 3:
        del msgs[rng.randrange(len(msgs) + 1):]
    elif op == 4 and len(msgs) > 2:
        del msgs[rng.randrange(1, len(msgs))]
    elif op == 5:
        return [dict(m) if rng.random() < 0.5 else m for m in msgs if rng.random() < 0.9]
    return msgs


def test_counts_stay_exact_through_any_mix_of_growth_and_seen_edits():
    rng, meter, msgs = random.Random(7), TokenMeter(), [{"role": "user", "content": "go"}]
    for step in range(1500):
        if rng.random() < 0.8:
            msgs += [_message(step + j) for j in range(rng.randrange(1, 4))]
        else:
            msgs = _edit_seen(rng, msgs)
        call = rng.randrange(3)
        if call == 0:
            assert meter.estimate(msgs) == estimate_tokens(msgs)
        elif call == 1:
            assert meter.count(msgs) == estimate_tokens(msgs)
        view = meter.read(msgs)
        assert view == msgs and meter.estimate(view) == estimate_tokens(msgs)
        if rng.random() < 0.2 and view:
            view[rng.randrange(len(view))]["content"] = "the reader's"
