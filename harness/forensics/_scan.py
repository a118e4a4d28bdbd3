"""Reading files into sessions: toolchaos traces by a byte-level scanner, other logs through the importers.

Toolchaos traces are read a line at a time by a few ``find`` calls per line, no JSON
parsing; a line not in the engine's own layout goes through ``json.loads``. Imported
JSON documents are read whole (they are conversations, not streams); JSON Lines stream.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolchaos._internal.events import KEYS
from toolchaos._internal.model import interpret
from toolchaos.errors import LogFormatError
from toolchaos.forensics._report import SessionReport
from toolchaos.forensics._session import Session
from toolchaos.forensics._verdict import Thresholds
from toolchaos.logs import RecordedCall, load, open_bytes

# The bytes the fast path finds, from the key order the engine writes (events.KEYS): every event
# opens with its run id and its seq, the kind is followed by the time, and a tool event's outcome
# signature (its class and code) ends at the key after the code.
_TOOL_KEYS = KEYS["tool"]


def _key_after(key: str) -> bytes:
    return _TOOL_KEYS[_TOOL_KEYS.index(key) + 1].encode()


_OPEN = b'{"%s":"' % _TOOL_KEYS[0].encode()  # {"run":"
_RUN_END = b'","%s":' % _TOOL_KEYS[1].encode()  # ","seq":
_TOOL_T = b'tool","%s":' % _key_after("kind")  # tool","t":
_SIG_END = b',"%s"' % _key_after("code")  # ,"retry_after"


def sniff(path: str | Path) -> str:
    """``toolchaos`` when the file's first record is a toolchaos trace event, else ``import``."""
    with open_bytes(path) as fh:
        for raw in fh:
            line = raw.strip()
            if not line:
                continue
            if line.startswith(_OPEN[:-1]):
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
        last_run = b""
        sess: Session | None = None
        tool: Any = None
        n = 0
        slow = self._slow
        run_end, tool_t, sig_end = _RUN_END, _TOOL_T, _SIG_END  # locals: read on every line
        n_open, n_t = len(_OPEN), 9 + len(tool_t)  # n_t: past ,"kind":"tool","t":
        with open_bytes(path) as fh:
            for line in fh:
                n += 1
                k = line.find(b',"kind":"', 12)
                if k < 0:
                    if line.strip():
                        slow(line, source, n)
                    continue
                run = line[n_open:line.find(run_end, n_open)]
                if run != last_run or sess is None:
                    found = self._session_of_line(run, line, source)
                    if found is None:
                        slow(line, source, n)
                        continue
                    sess, last_run, tool = found, run, found.tool
                c = line[k + 9]
                if c == 116:  # tool
                    f = line.rfind(b'"fp":"')
                    o = line.find(b',"class":', f)
                    r = line.find(sig_end, o)
                    if f < 0 or o < 0 or r < 0 or line[k + 9:k + n_t] != tool_t:
                        slow(line, source, n)
                        continue
                    e = f + 18 if line[f + 18] == 34 else line.find(b'"', f + 6)  # fingerprints: 12 hex digits
                    fp = line[f + 6:e]
                    if tool(fp, float(line[k + n_t:line.find(b",", k + n_t)]), line[o + 9:r]):
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

    def _session_of_line(self, run: bytes, line: bytes, source: str) -> Session | None:
        """The session of a line in the engine's layout (its run sliced out); None for any other line."""
        if not run or line[:len(_OPEN)] != _OPEN:
            return None
        sid = run.decode() if b"\\" not in run else str(json.loads(b'"' + run + b'"'))
        sess = self.sessions.get(sid)
        if sess is None:
            sess = self.sessions[sid] = Session(sid, "toolchaos", source)
        return sess

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
        """An imported log (any format of ``toolchaos.logs``): its sessions' turns and calls."""
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


def _signature(call: RecordedCall) -> bytes:
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
    """Reports for every session of every file (see ``toolchaos.forensics``)."""
    a = Analysis(thresholds)
    for p in paths:
        a.add_path(p, format)
    return a.reports(top)
