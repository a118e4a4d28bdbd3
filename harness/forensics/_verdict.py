"""The verdict on a session: ``looping``, ``suspicious`` or ``healthy``, with the reason, by ``Thresholds``."""

from __future__ import annotations

from dataclasses import dataclass

from toolchaos.forensics._report import SessionReport, seconds


@dataclass(frozen=True)
class Thresholds:
    """The verdict's rules.

    looping, when any of:
      - one fingerprint was called ``loop_repeats`` times or more and the longest streak
        without progress reached ``loop_streak`` calls;
      - a cycle (a round of 2 to ``MAX_PERIOD`` calls repeated in order, A-B-A-B included)
        lasted ``loop_cycle`` calls or more.
    suspicious, when (with at least ``min_calls`` calls) any of:
      - the repeat rate reached ``repeat_rate``;
      - a streak without progress of ``streak`` calls;
      - a cycle of ``cycle`` calls;
      - input tokens grew ``token_growth`` times or more over the session while calls
        repeat (growth alone is what exploring costs, not a loop);
      - machine-regular spacing: median gap under ``machine_gap`` seconds with a spread
        under ``regular_spread``, over ``loop_repeats`` calls or more, with a repeat rate
        of at least half of ``repeat_rate``.
    healthy otherwise. Sessions dominated by polls (PENDING answers) at a human-scale
    interval are at most suspicious: polling under a contract is legitimate repetition.
    """

    loop_repeats: int = 10
    loop_streak: int = 10
    loop_cycle: int = 8
    min_calls: int = 5
    repeat_rate: float = 0.5
    streak: int = 5
    cycle: int = 6
    token_growth: float = 4.0
    machine_gap: float = 1.0
    regular_spread: float = 0.1


def judge(rep: SessionReport, th: Thresholds) -> tuple[str, str]:
    """(verdict, reason) of one session; see ``Thresholds``."""
    machine = _machine_regular(rep, th)
    loops = _loop_reasons(rep, th, machine)
    if loops:
        polling = rep.polls * 2 >= rep.calls > 0 and (rep.interval_median or 0) >= th.machine_gap
        if not polling:
            return "looping", "; ".join(loops)
        return "suspicious", f"polling: {'; '.join(loops)} (PENDING answers at a {seconds(rep.interval_median)} " \
                             f"interval)"
    reasons = _suspicious_reasons(rep, th, machine)
    if reasons:
        return "suspicious", "; ".join(reasons)
    if rep.calls == 0:
        return "healthy", "no tool calls"
    return "healthy", "calls converge: no repeat, cycle or stall past the thresholds"


def _machine_regular(rep: SessionReport, th: Thresholds) -> bool:
    """Calls at machine speed and machine-regular spacing, over enough of them to tell."""
    return (rep.interval_median is not None and rep.interval_spread is not None
            and rep.interval_median < th.machine_gap and rep.interval_spread < th.regular_spread
            and rep.calls >= th.loop_repeats)


def _loop_reasons(rep: SessionReport, th: Thresholds, machine: bool) -> list[str]:
    top = rep.top[0] if rep.top else None
    streak = rep.longest_no_progress
    reasons: list[str] = []
    if top is not None and top.count >= th.loop_repeats and streak >= th.loop_streak:
        pace = (f"; calls every {seconds(rep.interval_median)} (spread {rep.interval_spread:.2f})"
                if machine and rep.interval_spread is not None else "")
        reasons.append(f"{top.text()} repeated {top.count} times, {streak} calls in a row without progress{pace}")
    if rep.cycle is not None and rep.cycle.calls >= th.loop_cycle:
        reasons.append(f"{rep.cycle.text()} for {rep.cycle.calls} calls")
    return reasons


def _suspicious_reasons(rep: SessionReport, th: Thresholds, machine: bool) -> list[str]:
    reasons: list[str] = []
    if rep.calls >= th.min_calls:
        top = rep.top[0] if rep.top else None
        if rep.repeat_rate >= th.repeat_rate:
            what = f" (most: {top.text()} x{top.count})" if top else ""
            reasons.append(f"repeat rate {rep.repeat_rate:.0%}{what}")
        if rep.longest_no_progress >= th.streak:
            reasons.append(f"{rep.longest_no_progress} calls in a row without progress")
        if rep.cycle is not None and rep.cycle.calls >= th.cycle:
            reasons.append(f"{rep.cycle.text()} for {rep.cycle.calls} calls")
        if machine and rep.repeat_rate >= th.repeat_rate / 2:
            reasons.append(f"machine-regular calls every {seconds(rep.interval_median)}")
    tokens = rep.tokens
    if (tokens and tokens.ratio and tokens.ratio >= th.token_growth and tokens.turns >= th.min_calls
            and rep.repeat_rate > 0):
        reasons.append(f"input tokens grew x{tokens.ratio:g} ({tokens.first} -> {tokens.last})")
    return reasons
