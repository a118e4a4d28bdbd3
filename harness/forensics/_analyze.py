"""Loop forensics: read call logs and say, per session, whether the agent was looping.

``analyze([paths])`` streams toolchaos traces (JSON Lines, gzip or not) and the log
formats of ``toolchaos.logs`` (OpenAI chat / Responses, Anthropic, OpenTelemetry
GenAI spans), and reports for every session:

- **calls** executed (and refused), **unique fingerprints**, **repeat rate**
  (``1 - unique / calls``) and the **most repeated fingerprints** with their counts;
- **cycles**: the longest run of calls going round the same 2, 3 or 4 fingerprints in the
  same order (A-B-A-B, search -> read -> summarize -> search -> ...), with its period and
  one round of it;
- the **longest streak without progress**: consecutive calls none of which brought
  anything new. A call is progress when its fingerprint was never seen in the session,
  or when the same call now answers differently than last time (another outcome code,
  or other content in an imported log). PENDING answers (``processing``) are polls:
  counted apart, they neither make nor break a streak;
- **interval regularity**: median gap between calls and its spread (interquartile
  range / median): a machine-regular spacing at machine speed is how runaway loops look;
- **token growth per turn**: input tokens of the first and last turn, the mean growth
  per turn and the ratio (estimated from the conversation's length when the log has
  no usage);
- a **verdict**, ``looping`` / ``suspicious`` / ``healthy``, with the reason
  (``Thresholds`` holds the rules; docs/forensics.md explains them).

Memory stays flat however long the file: per session the state is bounded (at most
``MAX_TRACKED`` fingerprints are tracked exactly; past that, counts become Misra-Gries
lower bounds and the unique count a HyperLogLog estimate, and the report says so;
intervals are kept as a bounded systematic sample; cycles need only the last
``MAX_PERIOD`` fingerprints and the longest run's round). Toolchaos traces are read by a
byte-level scanner (a few ``find`` calls per line, no JSON parsing) that falls back to
``json.loads`` for any line not in the engine's own layout. Imported JSON documents
are read whole (they are conversations, not streams); JSON Lines stream.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from toolchaos._internal.model import interpret
from toolchaos.errors import LogFormatError
from toolchaos.logs import load

MAX_TRACKED = 50_000  # fingerprints tracked exactly per session
MAX_PERIOD = 4  # longest cycle round detected (Session.tool's comparisons are unrolled for it)
GAP_SAMPLE = 4096  # interval sample size per session
_HLL_P = 14
_HLL_M = 1 << _HLL_P


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


# --- per-session state --------------------------------------------------------------------------


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
        # (search, read, search, summarize) stays one period-4 run. Otherwise a run starts on the
        # smallest period that matches, so A-B-A-B is period 2, never 4; period 1 is a plain
        # repeat, which the counts and the no-progress streak already judge. A fingerprint never
        # seen cannot start a run, so exploring costs no comparison (unless the counts
        # overflowed: then a recent one may have been evicted and look new).
        h = self.hist
        q = self.cyc_p
        if q and fp == h[q - 1]:
            self.cyc_len += 1
        elif q or not new or self.overflow:
            if q:
                self._cycle_ended()
            q = 0 if fp == h[0] else 2 if fp == h[1] else 3 if fp == h[2] else 4 if fp == h[3] else 0
            if q:
                self.cyc_p, self.cyc_len = q, q + 1  # the call a period back starts the run
        h.appendleft(fp)
        return new

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
        cycle = self._cycle_report()
        gaps = sorted(self.gaps)
        median = spread = None
        if gaps:
            median = _quantile(gaps, 0.5)
            iqr = _quantile(gaps, 0.75) - _quantile(gaps, 0.25)
            spread = iqr / median if median > 0 else (0.0 if iqr == 0 else math.inf)
        if self.last_model is not None:
            self.tok_last = _tokens_in(self.last_model)
        tokens = None
        if self.tok_first is not None and self.tok_last is not None and self.turns:
            per_turn = (self.tok_last - self.tok_first) / (self.turns - 1) if self.turns > 1 else 0.0
            ratio = self.tok_last / self.tok_first if self.tok_first else None
            tokens = Tokens(self.tok_first, self.tok_last, self.turns, round(per_turn, 2),
                            round(ratio, 2) if ratio is not None else None)
        rep = SessionReport(
            session=self.sid, format=self.format, source=self.source, calls=calls, refused=self.refused,
            polls=self.pending, turns=self.turns, unique=unique, approximate=self.overflow,
            repeat_rate=round(repeat_rate, 4), top=top_list, cycle=cycle, longest_no_progress=self.streak_max,
            interval_median=None if median is None else round(median, 6),
            interval_spread=None if spread is None else (round(spread, 4) if math.isfinite(spread) else None),
            duration=None if self.first_t is None or self.last_t is None else round(self.last_t - self.first_t, 6),
            tokens=tokens, state=self.state, guard=self.guard)
        rep.verdict, rep.reason = judge(rep, th)
        return rep

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


@dataclass
class Repeated:
    fp: str
    count: int
    tool: str | None
    args: str | None


@dataclass
class Cycle:
    """The longest cycle run: ``calls`` calls going round ``steps`` in order.

    ``a`` and ``b`` (and their fingerprints) are the round's first two steps, as they were
    when only A-B alternations were detected; ``steps`` names every step (the tool, or the
    fingerprint when the log has no name) and ``steps_fp`` gives their fingerprints.
    """

    calls: int  # length of the longest run, in calls (two rounds of period 3 are 6 calls)
    a: str
    b: str
    a_fp: str
    b_fp: str
    period: int = 2
    steps: list[str] = field(default_factory=list)
    steps_fp: list[str] = field(default_factory=list)

    def text(self) -> str:
        """``A-B cycle a <-> b`` for period 2, ``cycle a -> b -> c (period 3)`` for longer rounds."""
        if self.period == 2 or not self.steps:
            return f"A-B cycle {self.a} <-> {self.b}"
        return f"cycle {' -> '.join(self.steps)} (period {self.period})"


@dataclass
class Tokens:
    first: int
    last: int
    turns: int
    per_turn: float
    ratio: float | None


@dataclass
class SessionReport:
    session: str
    format: str
    source: str
    calls: int
    refused: int
    polls: int
    turns: int
    unique: int
    approximate: bool
    repeat_rate: float
    top: list[Repeated]
    cycle: Cycle | None
    longest_no_progress: int
    interval_median: float | None
    interval_spread: float | None
    duration: float | None
    tokens: Tokens | None
    state: str | None
    guard: str | None
    verdict: str = "healthy"
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _call_text(r: Repeated) -> str:
    return f"{r.tool or '?'}{' ' + r.args if r.args else ''}"


def judge(rep: SessionReport, th: Thresholds) -> tuple[str, str]:
    """(verdict, reason) of one session; see ``Thresholds``."""
    top = rep.top[0] if rep.top else None
    streak = rep.longest_no_progress
    cycle = rep.cycle.calls if rep.cycle else 0
    machine = (rep.interval_median is not None and rep.interval_spread is not None
               and rep.interval_median < th.machine_gap and rep.interval_spread < th.regular_spread
               and rep.calls >= th.loop_repeats)
    pace = (f"; calls every {_seconds(rep.interval_median)} (spread {rep.interval_spread:.2f})"
            if machine and rep.interval_median is not None and rep.interval_spread is not None else "")
    polling = rep.polls * 2 >= rep.calls > 0 and (rep.interval_median or 0) >= th.machine_gap
    reasons: list[str] = []
    if top is not None and top.count >= th.loop_repeats and streak >= th.loop_streak:
        reasons.append(f"{_call_text(top)} repeated {top.count} times, {streak} calls in a row without progress"
                       f"{pace}")
    if cycle >= th.loop_cycle and rep.cycle is not None:
        reasons.append(f"{rep.cycle.text()} for {cycle} calls")
    if reasons and not polling:
        return "looping", "; ".join(reasons)
    if reasons:
        return "suspicious", f"polling: {'; '.join(reasons)} (PENDING answers at a {_seconds(rep.interval_median)} " \
                             f"interval)"
    if rep.calls >= th.min_calls:
        if rep.repeat_rate >= th.repeat_rate:
            what = f" (most: {_call_text(top)} x{top.count})" if top else ""
            reasons.append(f"repeat rate {rep.repeat_rate:.0%}{what}")
        if streak >= th.streak:
            reasons.append(f"{streak} calls in a row without progress")
        if cycle >= th.cycle and rep.cycle is not None:
            reasons.append(f"{rep.cycle.text()} for {cycle} calls")
        if machine and rep.repeat_rate >= th.repeat_rate / 2:
            reasons.append(f"machine-regular calls every {_seconds(rep.interval_median)}")
    if (rep.tokens and rep.tokens.ratio and rep.tokens.ratio >= th.token_growth and rep.tokens.turns >= th.min_calls
            and rep.repeat_rate > 0):
        reasons.append(f"input tokens grew x{rep.tokens.ratio:g} ({rep.tokens.first} -> {rep.tokens.last})")
    if reasons:
        return "suspicious", "; ".join(reasons)
    if rep.calls == 0:
        return "healthy", "no tool calls"
    return "healthy", "calls converge: no repeat, cycle or stall past the thresholds"


def _seconds(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value < 1e-3:
        return f"{value * 1e6:.0f}us"
    if value < 1:
        return f"{value * 1e3:.1f}ms"
    if value < 120:
        return f"{value:.1f}s"
    return f"{value / 60:.1f}min"


# --- reading: the toolchaos fast path ----------------------------------------------------------------


def _open_binary(path: str | Path) -> IO[bytes]:
    p = Path(path)
    fh = p.open("rb")
    magic = fh.peek(2)[:2] if hasattr(fh, "peek") else b""
    if magic == b"\x1f\x8b":
        import gzip

        fh.close()
        return gzip.open(p, "rb")  # type: ignore[return-value]
    return fh


def sniff(path: str | Path) -> str:
    """``toolchaos`` when the file's first record is a toolchaos trace event, else ``import``."""
    with _open_binary(path) as fh:
        for raw in fh:
            line = raw.strip()
            if not line:
                continue
            if line.startswith(b'{"run":'):
                return "toolchaos"
            try:
                first = json.loads(line)
            except ValueError:
                return "import"
            if isinstance(first, dict) and "run" in first and "kind" in first:
                return "toolchaos"
            return "import"
    return "import"


class Analysis:
    """Sessions by id, filled from any number of files."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self.sessions: dict[str, Session] = {}
        self.events = 0
        self.files: list[str] = []

    def session(self, sid: str, fmt: str, source: str) -> Session:
        s = self.sessions.get(sid)
        if s is None:
            s = self.sessions[sid] = Session(sid, fmt, source)
        return s

    def add_path(self, path: str | Path, format: str = "auto") -> None:
        source = str(path)
        self.files.append(source)
        if format == "auto":
            format = "toolchaos" if sniff(path) == "toolchaos" else "auto"
        if format == "toolchaos":
            self.scan_toolchaos(path)
        else:
            self.add_conversations(path, format)

    def scan_toolchaos(self, path: str | Path) -> None:
        """Stream a toolchaos trace: a few byte operations per line, JSON only for odd lines.

        Lines in the engine's own layout (``{"run":..,"seq":..,"step":..,"kind":..,"t":..``;
        tool events ending ``"fp":..,"call_id":..,"outcome":..,"class":..,"code":..,
        "retry_after"``) are sliced, never parsed; any other line goes through
        ``json.loads``. A model event is counted and kept: its tokens are read only for the
        session's first and last turn.
        """
        source = str(path)
        sessions = self.sessions
        last_run = b""
        sess: Session | None = None
        tool: Any = None
        n = 0
        slow = self._slow
        with _open_binary(path) as fh:
            for line in fh:
                n += 1
                k = line.find(b',"kind":"', 12)
                if k < 0:
                    if line.strip():
                        slow(line, source, n)
                    continue
                run = line[8:line.find(b'","seq":', 8)]
                if run != last_run or sess is None:
                    if not run or line[:8] != b'{"run":"':
                        slow(line, source, n)
                        continue
                    sid = run.decode() if b"\\" not in run else str(json.loads(b'"' + run + b'"'))
                    sess = sessions.get(sid)
                    if sess is None:
                        sess = sessions[sid] = Session(sid, "toolchaos", source)
                    last_run = run
                    tool = sess.tool
                c = line[k + 9]
                if c == 116:  # tool
                    f = line.rfind(b'"fp":"')
                    o = line.find(b',"class":', f)
                    r = line.find(b',"retry_after"', o)
                    if f < 0 or o < 0 or r < 0 or line[k + 9:k + 19] != b'tool","t":':
                        slow(line, source, n)
                        continue
                    e = f + 18 if line[f + 18] == 34 else line.find(b'"', f + 6)  # fingerprints: 12 hex digits
                    fp = line[f + 6:e]
                    if tool(fp, float(line[k + 19:line.find(b",", k + 19)]), line[o + 9:r]):
                        sess.counts[fp][2:] = _first_sight(line, k, f)
                elif c == 109:  # model
                    sess.model_line(line)
                elif c == 114:  # refusal
                    sess.refusal()
                elif c == 101:  # end
                    event = json.loads(line)
                    sess.end(event.get("state"), event.get("guard"))
                elif c not in (115, 108):  # skipped and late calls were not executed
                    slow(line, source, n)
        self.events += n

    def _slow(self, line: bytes, source: str, n: int) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            raise LogFormatError("not valid JSON", source, f"line {n}", fmt="toolchaos") from None
        if not isinstance(event, dict) or not isinstance(event.get("run"), str):
            raise LogFormatError("expected a trace event with a run and a kind", source, f"line {n}",
                                 "run", "toolchaos")
        sess = self.session(event["run"], "toolchaos", source)
        kind = event.get("kind")
        if kind == "tool":
            # the same bytes the fast path slices: "CLASS","code":"code"
            sig = (json.dumps(event.get("class")) + ',"code":' + json.dumps(event.get("code"))).encode()
            t = event.get("t")
            sess.tool(str(event.get("fp") or "").encode(), float(t) if isinstance(t, (int, float)) else None, sig,
                      str(event.get("tool")), _preview(event.get("args")))
        elif kind == "model":
            tin = event.get("tokens_in")
            sess.model(int(tin) if isinstance(tin, int) else None)
        elif kind == "refusal":
            sess.refusal()
        elif kind == "end":
            sess.end(event.get("state"), event.get("guard"))

    def add_conversations(self, path: str | Path, format: str = "auto") -> None:
        """An imported log (``toolchaos.logs`` formats): its sessions' turns and calls."""
        source = str(path)
        count = 0
        for conv in load(path, format):
            sess = self.session(conv.session, conv.format, source)
            for turn in conv.turns:
                sess.model(turn.tokens_in)
                count += 1
                for call in turn.calls:
                    count += 1
                    if not call.executed:
                        sess.refusal()
                        continue
                    sess.tool(call.fp.encode(), call.t, _signature(call), call.tool, _preview(call.args))
        self.events += count

    def reports(self, top: int = 5) -> list[SessionReport]:
        return [s.report(self.thresholds, top) for s in self.sessions.values()]


def _first_sight(line: bytes, k: int, f: int) -> tuple[str | None, str | None]:
    """Tool name and argument preview of an engine-written tool event, without parsing it."""
    a = line.find(b'"tool":"', k)
    tool = line[a + 8:line.find(b'"', a + 8)].decode(errors="replace") if a >= 0 else None
    b = line.find(b',"args":', k)
    args = line[b + 8:f - 1].decode(errors="replace") if 0 <= b < f else None
    if args is not None and len(args) > 60:
        args = args[:59] + "…"
    return tool, args


def _signature(call: Any) -> bytes:
    """What a call answered, as a short signature: a changed answer is progress."""
    if not call.has_result:
        return b"none"

    kind = interpret(call.result)[0]
    if kind == "pending":
        return b'"PENDING"'
    text = call.result if isinstance(call.result, str) else json.dumps(call.result, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest().encode()


def _preview(args: Any, width: int = 60) -> str | None:
    if args is None:
        return None
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def analyze(paths: Iterable[str | Path], format: str = "auto", thresholds: Thresholds | None = None,
            top: int = 5) -> list[SessionReport]:
    """Reports for every session of every file (see the module docstring)."""
    a = Analysis(thresholds)
    for p in paths:
        a.add_path(p, format)
    return a.reports(top)


# --- rendering ----------------------------------------------------------------------------------------


def render_table(reports: Sequence[SessionReport]) -> str:
    """The terminal report: one summary row per session, then the details of each session."""
    head = ("session", "calls", "unique", "repeat", "top", "cycle", "no-progress", "gap", "tokens/turn", "verdict")
    rows = [head]
    for r in reports:
        rows.append((
            _clip(r.session, 36), f"{r.calls}" + (f"+{r.refused}r" if r.refused else ""),
            f"{'~' if r.approximate else ''}{r.unique}", f"{r.repeat_rate:.0%}",
            f"{r.top[0].count}x" if r.top else "-", _cycle_cell(r.cycle),
            str(r.longest_no_progress), _seconds(r.interval_median) if r.interval_median is not None else "-",
            f"{r.tokens.per_turn:+g}" if r.tokens else "-", r.verdict.upper() if r.verdict != "healthy" else r.verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for r in reports:
        lines += ["", f"{r.session} ({r.format}, {r.source})", f"  verdict      {r.verdict}: {r.reason}"]
        lines.append(f"  calls        {r.calls} executed, {r.refused} refused, {r.polls} polls, {r.turns} model turns")
        lines.append(f"  unique       {'~' if r.approximate else ''}{r.unique} fingerprint(s); repeat rate "
                     f"{r.repeat_rate:.1%}")
        for t in r.top[:3]:
            lines.append(f"  repeated     {t.count}x {_call_text(t)} ({t.fp})")
        if r.cycle and r.cycle.period == 2:
            lines.append(f"  A-B cycle    {r.cycle.a} <-> {r.cycle.b}: {r.cycle.calls} calls alternating")
        elif r.cycle:
            lines.append(f"  cycle        {' -> '.join(r.cycle.steps)} (period {r.cycle.period}): "
                         f"{r.cycle.calls} calls going round")
        lines.append(f"  no progress  longest streak {r.longest_no_progress} calls")
        if r.interval_median is not None:
            spread = f"{r.interval_spread:.2f}" if r.interval_spread is not None else "n/a"
            lines.append(f"  intervals    median {_seconds(r.interval_median)}, spread {spread} "
                         f"over {_seconds(r.duration)}")
        else:
            lines.append("  intervals    n/a (the log has no times)")
        if r.tokens:
            ratio = f", x{r.tokens.ratio:g}" if r.tokens.ratio else ""
            lines.append(f"  tokens       {r.tokens.first} -> {r.tokens.last} input tokens over {r.tokens.turns} turns "
                         f"({r.tokens.per_turn:+g} per turn{ratio})")
        if r.state:
            lines.append(f"  ended        {r.state}{f' (guard: {r.guard})' if r.guard else ''}")
    return "\n".join(lines)


def _cycle_cell(cycle: Cycle | None) -> str:
    """Calls in the longest cycle; ``/p3`` marks a round longer than A-B."""
    if cycle is None:
        return "-"
    return str(cycle.calls) if cycle.period == 2 else f"{cycle.calls}/p{cycle.period}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def as_json(reports: Sequence[SessionReport], files: Sequence[str] = (), events: int = 0) -> dict[str, Any]:
    verdicts = [r.verdict for r in reports]
    return {"files": list(files), "events": events, "sessions": [r.as_dict() for r in reports],
            "summary": {v: verdicts.count(v) for v in ("looping", "suspicious", "healthy")}}


__all__ = ["MAX_PERIOD", "MAX_TRACKED", "Analysis", "Cycle", "Repeated", "Session", "SessionReport", "Thresholds",
           "Tokens", "analyze", "as_json", "judge", "render_table", "sniff"]
