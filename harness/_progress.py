"""Progress of a long run: a bar on a terminal, plain lines anywhere else.

    with Progress(total=len(scenarios), label="certify") as bar:
        for s in scenarios:
            verdict = run_one(s)
            bar.advance(s.id, "pass" if verdict.passed else "fail", detail=headline)

On a TTY one line is redrawn in place (``[#####.....] 12/40 loops.exact_repeat``) and
each failure is printed above it as it happens. When the stream is not a TTY (CI logs,
pipes, files), or ``TERM=dumb``, every item is one plain line (``[12/40] FAIL id: why``):
CI logs must stay readable and greppable, with no carriage returns. ``NO_COLOR``
turns colours off.
"""

from __future__ import annotations

import os
import shutil
import sys
from types import TracebackType
from typing import TextIO

_COLOURS = {"pass": "32", "ok": "32", "fail": "31", "error": "33", "skip": "90"}


def is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty()) and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


class Progress:
    """Reports items as they finish. ``tty=None`` decides from the stream."""

    def __init__(self, total: int, *, label: str = "", stream: TextIO | None = None, tty: bool | None = None,
                 colour: bool | None = None, width: int | None = None) -> None:
        self.total = max(int(total), 0)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = is_tty(self.stream) if tty is None else tty
        self.colour = (self.tty and "NO_COLOR" not in os.environ) if colour is None else colour
        self._width = width
        self.done = 0
        self.counts: dict[str, int] = {}
        self._drawn = False

    # -- drawing ---------------------------------------------------------------------------

    def _paint(self, text: str, status: str) -> str:
        code = _COLOURS.get(status)
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour and code else text

    def _columns(self) -> int:
        return self._width or shutil.get_terminal_size((80, 24)).columns

    def _bar_line(self, name: str) -> str:
        cols = self._columns()
        n = len(str(self.total))
        count = f"{self.done:>{n}}/{self.total}"
        cells = max(10, min(30, cols // 4))
        filled = cells * self.done // self.total if self.total else cells
        bar = "#" * filled + "." * (cells - filled)
        head = f"{self.label} " if self.label else ""
        line = f"{head}[{bar}] {count} {name}"
        return line if len(line) < cols else line[: cols - 2] + "…"

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self._drawn = False

    def advance(self, name: str, status: str = "ok", detail: str = "") -> None:
        """One item finished with ``status`` (pass, fail, error, skip, ok); ``detail`` explains a failure."""
        self.done += 1
        self.counts[status] = self.counts.get(status, 0) + 1
        failed = status in ("fail", "error")
        if self.tty:
            self._clear()
            if failed:
                why = f": {detail}" if detail else ""
                self.stream.write(f"{self._paint(status.upper(), status)} {name}{why}\n")
            self.stream.write(self._bar_line(name))
            self._drawn = True
        else:
            n = len(str(self.total))
            why = f": {detail}" if detail and failed else ""
            self.stream.write(f"[{self.done:>{n}}/{self.total}] {status.upper()} {name}{why}\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """A message that must not be overwritten by the bar."""
        self._clear()
        self.stream.write(text.rstrip("\n") + "\n")
        if self.tty and self.done:
            self.stream.write(self._bar_line(""))
            self._drawn = True
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self._clear()
        parts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items()))
        if self.total:
            head = f"{self.label}: " if self.label else ""
            self.stream.write(f"{head}{self.done}/{self.total} done" + (f" ({parts})" if parts else "") + "\n")
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
