"""Fault schedules: which outcome each call of a tool gets.

A schedule is an ordered list of rules and a default. A rule matches by call number, by
a range of call numbers, by arguments (a subset match), with a seeded probability, or
always (no condition); conditions in one rule must all hold. The first rule that
matches wins; when none does, the default answers.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from toolchaos.errors import DefinitionError, did_you_mean
from toolchaos.fake_tools._faults import CallInfo, Fault, Ok, as_fault
from toolchaos.fake_tools._seeded import seeded

RULE_KEYS = ("outcome", "call", "calls", "match", "probability", "always")
FIRED = "fired_rules"  # the tool state's record: rule index -> how many calls it answered


@dataclass(frozen=True, slots=True)
class Rule:
    outcome: Fault
    call: int | None = None
    calls: tuple[int, int | None] | None = None  # inclusive; None = open-ended
    match: Mapping[str, Any] | None = None
    probability: float | None = None

    def matches(self, call: CallInfo, rng: random.Random | None) -> bool:
        n = call.call_no
        if self.call is not None and n != self.call:
            return False
        if self.calls is not None:
            lo, hi = self.calls
            if n < lo or (hi is not None and n > hi):
                return False
        if self.match is not None:
            args = call.args
            for k, v in self.match.items():
                if k not in args or args[k] != v:
                    return False
        if self.probability is not None:
            assert rng is not None
            return rng.random() < self.probability
        return True

    def describe(self) -> str:
        parts = []
        if self.call is not None:
            parts.append(f"call {self.call}")
        if self.calls is not None:
            lo, hi = self.calls
            parts.append(f"calls {lo}..{'' if hi is None else hi}")
        if self.match is not None:
            parts.append(f"args match {dict(self.match)}")
        if self.probability is not None:
            parts.append(f"p={self.probability:g}")
        return f"{' and '.join(parts) or 'always'} -> {self.outcome.describe()}"


@dataclass(frozen=True, slots=True)
class FaultSchedule:
    rules: tuple[Rule, ...] = ()
    default: Fault = field(default_factory=Ok)

    def pick(self, call: CallInfo, seed: int) -> Fault:
        """The fault for this call. Probability draws come from a per-rule seeded RNG."""
        for i, rule in enumerate(self.rules):
            rng = None
            if rule.probability is not None:
                rngs = call.state.setdefault("rngs", {})
                rng = rngs.get(i)
                if rng is None:
                    rng = rngs[i] = seeded(f"{seed}:{call.tool}:{i}")
            if rule.matches(call, rng):
                hits = call.state.setdefault(FIRED, {})  # so a rule that never fires can be named, and coverage counted
                hits[i] = hits.get(i, 0) + 1
                return rule.outcome
        return self.default

    @property
    def constant(self) -> bool:
        """True when every call gets the default (the hot path can skip rule checks)."""
        return not self.rules


def rule(outcome: Any, *, call: int | None = None, calls: Sequence[int | None] | None = None,
         match: Mapping[str, Any] | None = None, probability: float | None = None,
         tool: str = "?", where: str = "faults") -> Rule:
    """Build and validate one rule; errors name the tool and the field."""
    fault = as_fault(outcome, f"{where}.outcome", tool)
    for key, problem in (("call", _call_problem(call)), ("calls", _calls_problem(calls)),
                         ("match", _match_problem(match)), ("probability", _probability_problem(probability))):
        if problem:
            raise DefinitionError(tool, f"{where}.{key}", problem)
    return Rule(fault, call, None if calls is None else (cast(int, calls[0]), calls[1]),
                None if match is None else dict(match), None if probability is None else float(probability))


def _whole(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _call_problem(call: Any) -> str:
    return "" if call is None or _whole(call, 1) else f"expected a call number >= 1, got {call!r}"


def _calls_problem(calls: Any) -> str:
    if calls is None or (isinstance(calls, (list, tuple)) and len(calls) == 2 and _whole(calls[0], 1)
                         and (calls[1] is None or (isinstance(calls[1], int) and calls[1] >= calls[0]))):
        return ""
    return f"expected [first, last] with 1 <= first <= last (last may be null), got {calls!r}"


def _match_problem(match: Any) -> str:
    return "" if match is None or isinstance(match, Mapping) else f"expected a mapping of argument values, got {match!r}"


def _probability_problem(p: Any) -> str:
    if p is None or (isinstance(p, (int, float)) and not isinstance(p, bool) and 0 <= p <= 1):
        return ""
    return f"expected a number in [0, 1], got {p!r}"


def parse_rule(spec: Any, tool: str, where: str) -> Rule:
    """A rule from plain data: ``{"call": 2, "outcome": "timeout"}``; a bare fault = always."""
    if isinstance(spec, Rule):
        return spec
    if isinstance(spec, Fault) or isinstance(spec, str) or (
            isinstance(spec, Mapping) and len(spec) == 1 and next(iter(spec)) not in RULE_KEYS):
        return rule(spec, tool=tool, where=where)
    if not isinstance(spec, Mapping):
        raise DefinitionError(tool, where, f"expected a rule mapping, got {spec!r}")
    for key in spec:
        if key not in RULE_KEYS:
            raise DefinitionError(tool, f"{where}.{key}",
                                  f"unknown rule key{did_you_mean(str(key), RULE_KEYS)} (known: {', '.join(RULE_KEYS)})")
    if "outcome" not in spec:
        raise DefinitionError(tool, f"{where}.outcome", "a rule needs an outcome")
    kwargs = {k: v for k, v in spec.items() if k not in ("outcome", "always")}
    return rule(spec["outcome"], tool=tool, where=where, **kwargs)


def schedule(faults: Any = None, default: Any = None, tool: str = "?") -> FaultSchedule:
    """A schedule from a list of rules (or one fault meaning "always") and a default."""
    if isinstance(faults, FaultSchedule):
        return faults
    dflt = Ok() if default is None else as_fault(default, "default", tool)
    if faults is None:
        return FaultSchedule((), dflt)
    if not isinstance(faults, (list, tuple)):
        faults = [faults]
    rules = tuple(parse_rule(spec, tool, f"faults[{i}]") for i, spec in enumerate(faults))
    return FaultSchedule(rules, dflt)
