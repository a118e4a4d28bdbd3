"""The bounded state of one session while its calls stream by, and its report.

Memory stays flat however long the session: at most ``MAX_TRACKED`` fingerprints are
tracked exactly (past that, counts become Misra-Gries lower bounds and the unique count
a HyperLogLog estimate, and the report says so); intervals are kept as a bounded
systematic sample; cycles need only the last ``MAX_PERIOD`` fingerprints and the longest
run's round. ``Session.tool`` runs once per call of every file analysed: it stays inline.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import deque
from collections.abc import Sequence
from typing import Any

from toolchaos.forensics._report import Cycle, Repeated, SessionReport, Tokens
from toolchaos.forensics._verdict import Thresholds, judge

MAX_TRACKED = 50_000  # fingerprints tracked exactly per session
MAX_PERIOD = 4  # longest cycle round detected (Session.tool's comparisons are unrolled for it)
GAP_SAMPLE = 4096  # interval sample size per session
_HLL_P = 14
_HLL_M = 1 << _HLL_P


class Session:
    """The bounded state of one session while its events stream by."""

    __slots__ = (
        "calls",
        "counts",
        "cyc_best",
        "cyc_len",
        "cyc_max",
        "cyc_p",
        "ended",
        "first_t",
        "format",
        "gap_n",
        "gap_stride",
        "gaps",
        "guard",
        "hist",
        "hll",
        "last_model",
        "last_t",
        "overflow",
        "pending",
        "refused",
        "sid",
        "source",
        "state",
        "streak",
        "streak_max",
        "tok_first",
        "tok_last",
        "turns",
        "unknown_t",
    )

    def __init__(self, sid: str, fmt: str = "toolchaos", source: str = "") -> None:
        self.sid, self.format, self.source = sid, fmt, source
        self.calls = self.refused = self.pending = self.turns = 0
        # fp -> [count, last outcome signature, tool, args preview]
        self.counts: dict[bytes, list[Any]] = {}
        self.overflow = False
        self.hll: bytearray | None = None
        # the last MAX_PERIOD fingerprints, newest first; None until that many calls were seen
        self.hist: deque[bytes | None] = deque([None] * MAX_PERIOD, MAX_PERIOD)
        self.cyc_p = self.cyc_len = 0  # the cycle run under way: its period (0: none) and calls
        self.cyc_max = 0  # the longest run that ended, in calls, and one round of it in order
        self.cyc_best: tuple[bytes | None, ...] = ()
        self.streak = self.streak_max = 0
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.unknown_t = 0
        self.gaps: list[float] = []
        self.gap_n = 0
        self.gap_stride = 1
        self.tok_first: int | None = None
        self.tok_last: int | None = None
        self.last_model: bytes | None = None
        self.state: str | None = None
        self.guard: str | None = None
        self.ended = False

    # -- events --------------------------------------------------------------------------------

    def tool(self, fp: bytes, t: float | None, sig: bytes, tool: str | None = None, args: str | None = None) -> bool:
        """One executed call: fingerprint, time, and what it answered (``sig``: outcome class and
        code, or a digest of the content; a ``"PENDING"`` one is a poll). True on its first sight."""
        self.calls += 1
        if t is not None:
            last = self.last_t
            if last is None:
                self.first_t = t
            else:
                n = self.gap_n = self.gap_n + 1
                if n % self.gap_stride == 0:
                    gaps = self.gaps
                    gaps.append(t - last)
                    if len(gaps) >= GAP_SAMPLE:
                        del gaps[1::2]
                        self.gap_stride *= 2
            self.last_t = t
        else:
            self.unknown_t += 1
        rec = self.counts.get(fp)
        if rec is None:
            progress = new = True
            self._new(fp, sig, tool, args)
        else:
            rec[0] += 1
            new = False
            if rec[1] == sig:
                progress = False
            else:
                rec[1] = sig
                progress = True
        if sig[:9] == b'"PENDING"':  # a poll: neither progress nor the lack of it
            self.pending += 1
        elif progress:
            self.streak = 0
        else:
            st = self.streak = self.streak + 1
            if st > self.streak_max:
                self.streak_max = st
        if self.hll is not None:
            self._hll_add(fp)
        # Cycles, inline because this runs for every call. A run under way continues while the
        # call repeats the one a period back (one comparison), so a round that revisits a step
        # (search, read, search, summarize) stays one period-4 run. A plain repeat (period 1),
        # which the counts and the no-progress streak already judge, ends it. Only a call among the
        # last few can start a run, and a fingerprint never seen is not one, so exploring costs no
        # comparison (unless the counts overflowed: then a recent one may have been evicted and
        # look new) and revisiting an older call one scan of ``hist``.
        h = self.hist
        q = self.cyc_p
        if q and fp == h[q - 1]:
            self.cyc_len += 1
        elif fp == h[0]:
            if q:
                self._cycle_ended()
        elif q or ((not new or self.overflow) and fp in h):
            self._cycle_started(fp)
        h.appendleft(fp)
        return new

    def _cycle_started(self, fp: bytes) -> None:
        """A call that is no plain repeat ends the run under way and, when it repeats the call 2, 3
        or 4 calls back, starts a run on the smallest such period (A-B-A-B is period 2, never 4)."""
        if self.cyc_p:
            self._cycle_ended()
        h = self.hist
        q = 2 if fp == h[1] else 3 if fp == h[2] else 4 if fp == h[3] else 0
        if q:
            self.cyc_p, self.cyc_len = q, q + 1  # the call a period back starts the run

    def _cycle_ended(self) -> None:
        """The run under way stops (``hist`` still ends with it): keep it if it is the longest, end it.

        Ties keep the first run. Only a new longest run allocates, so few do over a session.
        """
        if self.cyc_len > self.cyc_max:
            self.cyc_max, self.cyc_best = self.cyc_len, _round(self.hist, self.cyc_p, self.cyc_len)
        self.cyc_p = 0

    def longest_cycle(self) -> tuple[int, tuple[bytes | None, ...]]:
        """Calls in the longest cycle run so far (the one under way included) and one round of it."""
        if self.cyc_p and self.cyc_len > self.cyc_max:
            return self.cyc_len, _round(self.hist, self.cyc_p, self.cyc_len)
        return self.cyc_max, self.cyc_best

    def model_line(self, line: bytes) -> None:
        """A model event of the engine's layout: counted now, its tokens read only when needed."""
        self.turns += 1
        if self.tok_first is None:
            self.tok_first = _tokens_in(line)
        self.last_model = line

    def _new(self, fp: bytes, sig: bytes, tool: str | None, args: str | None) -> None:
        counts = self.counts
        if len(counts) >= MAX_TRACKED:
            if not self.overflow:
                self.overflow = True
                self.hll = bytearray(_HLL_M)
                for known in counts:
                    self._hll_add(known)
            # Misra-Gries: make room by decrementing every count (counts become lower bounds)
            for key in [k for k, rec in counts.items() if rec[0] <= 1]:
                del counts[key]
            if len(counts) >= MAX_TRACKED:
                for rec in counts.values():
                    rec[0] -= 1
                for key in [k for k, rec in counts.items() if rec[0] <= 0]:
                    del counts[key]
        counts[fp] = [1, sig, tool, args]

    def _hll_add(self, fp: bytes) -> None:
        assert self.hll is not None
        h = int.from_bytes(hashlib.blake2b(fp, digest_size=8).digest(), "big")
        idx = h >> (64 - _HLL_P)
        rest = (h << _HLL_P) & 0xFFFFFFFFFFFFFFFF
        rank = 1
        while rank <= 64 - _HLL_P and not rest & (1 << 63):
            rank += 1
            rest <<= 1
        if rank > self.hll[idx]:
            self.hll[idx] = rank

    def model(self, tokens_in: int | None) -> None:
        self.turns += 1
        self.last_model = None
        if tokens_in is not None:
            if self.tok_first is None:
                self.tok_first = tokens_in
            self.tok_last = tokens_in

    def refusal(self) -> None:
        self.refused += 1

    def end(self, state: str | None, guard: str | None) -> None:
        self.state, self.guard, self.ended = state, guard, True

    # -- the report ----------------------------------------------------------------------------

    def unique(self) -> int:
        if self.hll is None:
            return len(self.counts)
        m = _HLL_M
        z = sum(2.0 ** -r for r in self.hll)
        estimate = 0.7213 / (1 + 1.079 / m) * m * m / z
        zeros = self.hll.count(0)
        if estimate <= 2.5 * m and zeros:
            estimate = m * math.log(m / zeros)
        return min(self.calls, round(estimate))

    def report(self, thresholds: Thresholds | None = None, top: int = 5) -> SessionReport:
        th = thresholds or Thresholds()
        unique = self.unique()
        calls = self.calls
        repeat_rate = 0.0 if calls == 0 else max(0.0, 1 - unique / calls)
        tops = heapq.nlargest(top, self.counts.items(), key=lambda kv: kv[1][0])
        top_list = [Repeated(fp.decode(errors="replace"), rec[0], rec[2], rec[3]) for fp, rec in tops if rec[0] > 1]
        median, spread = self._intervals()
        rep = SessionReport(
            session=self.sid, format=self.format, source=self.source, calls=calls, refused=self.refused,
            polls=self.pending, turns=self.turns, unique=unique, approximate=self.overflow,
            repeat_rate=round(repeat_rate, 4), top=top_list, cycle=self._cycle_report(),
            longest_no_progress=self.streak_max, interval_median=None if median is None else round(median, 6),
            interval_spread=None if spread is None else (round(spread, 4) if math.isfinite(spread) else None),
            duration=None if self.first_t is None or self.last_t is None else round(self.last_t - self.first_t, 6),
            tokens=self._tokens(), state=self.state, guard=self.guard)
        rep.verdict, rep.reason = judge(rep, th)
        return rep

    def _intervals(self) -> tuple[float | None, float | None]:
        """The median gap between calls and its spread (interquartile range / median), from the sample."""
        gaps = sorted(self.gaps)
        if not gaps:
            return None, None
        median = _quantile(gaps, 0.5)
        iqr = _quantile(gaps, 0.75) - _quantile(gaps, 0.25)
        return median, iqr / median if median > 0 else (0.0 if iqr == 0 else math.inf)

    def _tokens(self) -> Tokens | None:
        """Input tokens of the first and the last turn, and the growth between them."""
        if self.last_model is not None:
            self.tok_last = _tokens_in(self.last_model)
        first, last, turns = self.tok_first, self.tok_last, self.turns
        if first is None or last is None or not turns:
            return None
        per_turn = (last - first) / (turns - 1) if turns > 1 else 0.0
        ratio = last / first if first else None
        return Tokens(first, last, turns, round(per_turn, 2), round(ratio, 2) if ratio is not None else None)

    def _cycle_report(self) -> Cycle | None:
        calls, steps = self.longest_cycle()
        if not calls:
            return None
        # a run needs a full round of calls before it, so its steps are never hist's None padding
        fps = [(fp or b"").decode(errors="replace") for fp in steps]
        names = [_name(self.counts, fp or b"") for fp in steps]
        return Cycle(calls, names[0], names[1], fps[0], fps[1], len(steps), names, fps)


def _round(hist: deque[bytes | None], period: int, calls: int) -> tuple[bytes | None, ...]:
    """One round of a cycle run of ``calls`` calls that ends with ``hist[0]``, in the order the run
    began: the last ``period`` calls hold every step; the one that came ``k`` calls into the run
    is ``(calls - 1 - k) % period`` calls back."""
    return tuple(hist[(calls - 1 - k) % period] for k in range(period))


def _tokens_in(line: bytes) -> int | None:
    p = line.rfind(b'"tokens_in":')
    if p < 0:
        return None
    end = line.find(b",", p)
    value = line[p + 12:end if end > 0 else line.rfind(b"}")]
    return int(value) if value.isdigit() else None


def _name(counts: dict[bytes, list[Any]], fp: bytes) -> str:
    rec = counts.get(fp)
    return str(rec[2]) if rec is not None and rec[2] else fp.decode(errors="replace")


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)
