"""Every exception toolchaos raises, in one hierarchy, and the "did you mean" of its messages.

This is the bottom layer: it imports only the standard library, so ``toolchaos.fake_tools``
and every other module can import it. The tree (builtin bases in brackets, kept so that an
``except ValueError`` / ``except AssertionError`` / ``except TimeoutError`` in user code
catches what it always did)::

    Exception
    └── ToolchaosError                      everything toolchaos raises as an Exception
        ├── UserError                       bad input; ``field`` names the offending key (or None);
        │   │                               the ``toolchaos`` command exits 2 on it
        │   ├── ScenarioError [ValueError]      a scenario file (``path``, ``line``, ``col``, ``excerpt``)
        │   ├── DefinitionError [ValueError]    a fake tool, fault or schedule definition (``tool``)
        │   ├── PolicyError [ValueError]        a policy's parameters
        │   ├── InvariantError [ValueError]     an invariant's parameters
        │   ├── AgentRefError [ValueError]      an agent reference (``builtin:NAME``, ``module:attr``)
        │   │   └── AgentCallError                  an agent the harness could not call at all (a run ends ERROR)
        │   ├── LogFormatError [ValueError]     a log to import (``source``, ``record``, ``option``)
        │   ├── ReportError [ValueError]        a report level or output directory
        │   ├── ApiFaultError [ValueError]      a model-API fault or schedule
        │   ├── PatchError [ValueError]         a ``patch`` target
        │   ├── FuzzSpecError [ValueError]      a ``fuzz:`` block (``field`` is its dotted path)
        │   ├── CassetteError [ValueError]      a cassette to replay: missing (record it first), unreadable
        │   └── CommandError                    a ``toolchaos`` command's usage (exit ``code``)
        ├── AgentFailure [AssertionError]   the agent under test broke what must hold
        │   ├── InvariantViolation              ``result``, ``violations``
        │   ├── FuzzFailed                      ``report``
        │   ├── CassetteDiverged                ``turn``: a replayed request differs from the recorded one
        │   └── ScenarioFailed                  ``verdict``
        ├── RunClosed [RuntimeError]        a tool or the model was called after its run ended
        ├── ToolError                       a fault delivered as an exception (``outcome``, ``code``, ...)
        │   ├── ToolTimeout [TimeoutError]
        │   ├── ToolConnectionReset [ConnectionResetError]
        │   ├── ToolPermissionDenied [PermissionError]
        │   ├── ToolNotFound [LookupError]
        │   └── ToolInvalidArgument [ValueError]
        └── UnknownTool [KeyError]          no fake tool by that name
    BaseException
    └── HarnessStop                         the harness ends a run; past an agent's ``except Exception``
        ├── HardCeiling                     the harness's ceiling on tool calls or model turns
        ├── WatchdogExpired                 the watchdog's limits: no progress, or total real time
        ├── NetworkBlocked                  real network access during a run
        ├── LeftoverStopped                 a thread kept calling tools after its run ended
        ├── PolicyCrashed                   the policy (the test) raised
        └── UnmatchedRequest                an HTTP request no route answers

Private control-flow exceptions that never leave their module stay there: ``_Stop``
(the guarded agent), ``_Broken`` (fuzzing), ``_TooDeep`` (the YAML loader), ``_Bad`` (the
log importers) and ``_FieldError`` (fault constructors); each is caught and turned into
one of the classes above.

The objects some messages are built from (a run result, an outcome, a verdict, a YAML
span) are typed here by the few members the message reads, so this module needs no
other; the attributes that keep them are ``Any``, because their classes live above it.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

# --- "did you mean" ----------------------------------------------------------------------


# ANSI/VT escape sequences (CSI ... final byte, OSC ... BEL or ST, and two-byte ESC forms), then
# any other control character, and lone surrogates (text that is not valid Unicode).
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escaped(m: re.Match[str]) -> str:
    ch = m.group()
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def printable(text: str) -> str:
    """Agent-supplied text made safe for a terminal: escape sequences removed, other control characters
    and lone surrogates shown as ``\\xNN`` / ``\\uNNNN``; newlines and tabs kept."""
    if text.isprintable():  # the common case: nothing to do
        return text
    return _CONTROLS.sub(_escaped, _ESCAPES.sub("", text))


def did_you_mean(word: object, known: Iterable[str], *, several: bool = False, prefix: str = "") -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known``, or ``""`` when none is close.

    ``several``: up to three close names, closest first (``"; did you mean 'run' or 'rerun'?"``);
    ``prefix`` is put before each name shown (a package's dotted path before a module's name).
    """
    import difflib  # only an error message needs it: keeps importing toolchaos cheap

    close = [prefix + c for c in difflib.get_close_matches(str(word), list(known), n=3 if several else 1, cutoff=0.6)]
    if not close:
        return ""
    names = [repr(c) for c in close]
    return f"; did you mean {' or '.join(names) if len(names) < 3 else ', '.join(names[:-1]) + ' or ' + names[-1]}?"


# --- what some messages read -------------------------------------------------------------


class _Span(Protocol):
    @property
    def line(self) -> int: ...
    @property
    def col(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def end_col(self) -> int: ...


class _OutcomeClass(Protocol):
    @property
    def value(self) -> str: ...


class _Outcome(Protocol):
    @property
    def cls(self) -> _OutcomeClass: ...
    @property
    def code(self) -> str: ...
    @property
    def retryable(self) -> bool: ...
    @property
    def retry_after(self) -> float | None: ...
    @property
    def message(self) -> str: ...
    @property
    def field(self) -> str | None: ...
    def error_payload(self) -> dict[str, Any]: ...


class _Trace(Protocol):
    @property
    def path(self) -> Path | None: ...
    def table(self, around: int | None = None, radius: int = 6, width: int = 48) -> str: ...
    def __len__(self) -> int: ...


class _RunResult(Protocol):
    @property
    def trace(self) -> _Trace: ...
    @property
    def error(self) -> str | None: ...
    @property
    def seed(self) -> int: ...
    def summary(self) -> str: ...


class _Violation(Protocol):
    @property
    def seq(self) -> int | None: ...
    def headline(self) -> str: ...


class _Headlined(Protocol):
    def headline(self) -> str: ...


class _Messaged(Protocol):
    def message(self) -> str: ...


# --- the hierarchy -----------------------------------------------------------------------


class ToolchaosError(Exception):
    """Base of every exception toolchaos raises as an ``Exception``."""


class UserError(ToolchaosError):
    """Bad input from the user of toolchaos; ``field`` names the offending key when one is known."""

    field: str | None = None

    def __init__(self, *args: object, field: str | None = None) -> None:
        super().__init__(*args)
        if field is not None:
            self.field = field


class ScenarioError(UserError, ValueError):
    """A scenario file is invalid. ``str()`` is ``file:line:col: message`` and the source line."""

    def __init__(self, message: str, path: str | Path | None = None, span: _Span | None = None,
                 source: str | None = None) -> None:
        self.message = message
        self.path = None if path is None else Path(path)
        self.span = span
        self.line = span.line if span else None
        self.col = span.col if span else None
        self.excerpt = _excerpt(source, span) if source is not None and span is not None else ""
        super().__init__(self.render())

    @property
    def location(self) -> str:
        where = str(self.path) if self.path is not None else "<scenario>"
        if self.span is not None:
            where += f":{self.span.line}:{self.span.col}"
        return where

    def render(self) -> str:
        text = f"{self.location}: {self.message}"
        return f"{text}\n{self.excerpt}" if self.excerpt else text

    def __str__(self) -> str:
        return self.render()


def _excerpt(source: str, span: _Span, context: int = 1) -> str:
    lines = source.splitlines()
    if not lines or span.line > len(lines) + 1:
        return ""
    lo, hi = max(1, span.line - context), min(len(lines), span.line)
    width = len(str(hi))
    out = []
    for n in range(lo, hi + 1):
        text = lines[n - 1]
        if len(text) > 160:
            text = text[:159] + "…"
        out.append(f" {'>' if n == span.line else ' '} {n:>{width}} | {text}")
    length = 1
    if span.end_line == span.line and span.end_col > span.col:
        length = span.end_col - span.col
    length = max(1, min(length, 80))
    col = min(span.col, 160)
    out.append(f"   {' ' * width} | {' ' * (col - 1)}{'^' * length}")
    return "\n".join(out)


class DefinitionError(UserError, ValueError):
    """A fake tool, fault or schedule definition is invalid.

    The message names the tool and the field, what was given and what was expected.
    """

    field: str

    def __init__(self, tool: str, field: str, problem: str) -> None:
        self.tool = tool
        self.field = field
        self.problem = problem
        super().__init__(f"tool {tool!r}, field {field!r}: {problem}")


class PolicyError(UserError, ValueError):
    """A policy was built with bad parameters; the message names the policy and field.

    ``field`` is the parameter at fault when the error is about one, so a scenario file
    can point at its key even when the message does not spell the parameter's name.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field)


class InvariantError(UserError, ValueError):
    """An invariant was built with bad parameters; ``field`` is the parameter at fault."""


class AgentRefError(UserError, ValueError):
    """An agent reference could not be resolved."""


class AgentCallError(AgentRefError):
    """The harness could not call the agent at all: its signature fits no agent kind (nothing ran).

    A run ends ERROR with this message rather than raising it (``toolchaos.run``), so a
    certification counts it apart from failures and says it could not certify.
    """

    def __init__(self, agent: str, problem: object, accepted: str) -> None:
        super().__init__(f"could not call agent {agent}: {problem}; {accepted}", field="agent")


class LogFormatError(UserError, ValueError):
    """A log cannot be read; the message names the file, the record and the field.

    ``option`` names the caller's choice at fault when it is not the log itself
    (``"format"``, ``"session"``), so a scenario file can point at that key rather than
    at the path.
    """

    def __init__(self, problem: str, source: str = "<log>", record: str | None = None, field: str | None = None,
                 fmt: str | None = None, option: str | None = None) -> None:
        self.problem, self.source, self.record, self.field, self.format = problem, source, record, field, fmt
        self.option = option
        where = [source]
        if record:
            where.append(record)
        if field:
            where.append(field)
        head = f"{fmt}: " if fmt else ""
        super().__init__(f"{': '.join(where)}: {head}{problem}")


class ReportError(UserError, ValueError):
    """Bad input to the report writer (an unknown level, an unusable output directory)."""


class ApiFaultError(UserError, ValueError):
    """A model-API fault or schedule is invalid; the message names the field."""


class PatchError(UserError, ValueError):
    """A ``patch`` target could not be resolved (the message names it)."""


class FuzzSpecError(UserError, ValueError):
    """A ``fuzz:`` block is invalid; ``field`` is the dotted path of the offending key."""

    field: str

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}")


class CommandError(UserError):
    """A ``toolchaos`` command's usage error: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


class AgentFailure(ToolchaosError, AssertionError):
    """The agent under test broke what must hold (an ``AssertionError``, so pytest reports a failure)."""


class CassetteDiverged(AgentFailure):
    """A replayed run's model request differs from the one the cassette recorded; the message holds the diff."""

    def __init__(self, message: str, *, turn: int) -> None:
        super().__init__(message)
        self.turn = turn


class CassetteError(UserError, ValueError):
    """A cassette that cannot be used: missing (record it first), unreadable, or not a cassette."""


class InvariantViolation(AgentFailure):
    """One or more invariants broke. ``violations`` lists them; the message shows the trace."""

    def __init__(self, result: _RunResult, violations: Sequence[_Violation]) -> None:
        self.result: Any = result  # a RunResult
        self.violations: list[Any] = list(violations)  # Violation records
        super().__init__(printable(render_violations(result, self.violations)))


def render_violations(result: _RunResult, violations: Sequence[_Violation], reproduce: str | None = None) -> str:
    """What broke and where, the run's summary and the trace around the first break.

    ``reproduce``: the line that says how to run it again, when the run's seed alone does not
    (a fuzzed case: its schedule was drawn); by default ``reproduce_line``.
    """
    first = violations[0]
    lines = [first.headline()]
    lines += [f"also: {v.headline()}" for v in violations[1:]]
    lines.append(result.summary())
    if result.error:
        lines.append(f"agent error: {result.error.strip().splitlines()[-1]}")
    coverage = getattr(result, "coverage_lines", None)  # a run's record says which faults it met
    if callable(coverage):
        lines += ["fault coverage:", *coverage()]
    lines.append(f"trace around event #{first.seq}:" if first.seq is not None else "trace:")
    lines.append(result.trace.table(around=first.seq if first.seq is not None else None, radius=6)
                 if first.seq is not None else result.trace.table(around=len(result.trace), radius=10))
    lines.append(trace_file_line(result))
    lines.append(reproduce or reproduce_line(result.seed))
    return "\n".join(lines)


def reproduce_line(seed: int) -> str:
    """A command that runs the failing run again: the pytest test by its node id, else the script."""
    current = os.environ.get("PYTEST_CURRENT_TEST")  # "path::test (call)", set by pytest while a test runs
    if current:
        node = current.rsplit(" (", 1)[0]
        return f"reproduce: pytest {shlex.quote(node)} --chaos --chaos-seed {seed}"
    script = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c") else None
    if script:
        return f"reproduce: python {shlex.quote(script)} (the run's seed: {seed})"
    return f"reproduce: the same toolchaos.run(..., seed={seed})"


def trace_file_line(result: _RunResult) -> str:
    """Where the trace was written, or how to have it written, whichever way the run was started."""
    path = result.trace.path
    if path:
        return f"trace file: {path}"
    return ("trace file: not written (pytest --chaos-artifacts=DIR, toolchaos --artifacts DIR, "
            "or run(..., artifacts=DIR))")


class FuzzFailed(AgentFailure):
    """Fuzzing broke at least one invariant; the message holds each minimal case as YAML."""

    def __init__(self, report: _Messaged) -> None:
        self.report: Any = report  # a FuzzReport
        super().__init__(report.message())


class ScenarioFailed(AgentFailure):
    """A scenario's expectations broke; ``verdict`` says which and where."""

    def __init__(self, verdict: _Headlined) -> None:
        self.verdict: Any = verdict  # a certification Verdict
        super().__init__(printable(verdict.headline()))


class RunClosed(ToolchaosError, RuntimeError):
    """A tool or the model was called after the run had ended (a leftover thread)."""


class ToolError(ToolchaosError):
    """A fault delivered as an exception. ``outcome`` carries class, code and retry hints.

    Each fault raises the exception a real client library would raise (a ``TimeoutError``
    for a timeout, a ``PermissionError`` for permission denied), always a ``ToolError``
    too, so a runtime can read the outcome class without guessing from the message.
    """

    def __init__(self, tool: str, outcome: _Outcome) -> None:
        self.tool = tool
        self.outcome: Any = outcome  # an Outcome
        self.code = outcome.code
        self.cls: Any = outcome.cls  # an OutcomeClass
        self.retryable = outcome.retryable
        self.retry_after = outcome.retry_after
        self.field = outcome.field
        detail = outcome.message or outcome.code.replace("_", " ")
        super().__init__(f"{tool}: {detail} [{outcome.cls.value}/{outcome.code}]")


class ToolTimeout(ToolError, TimeoutError):
    """The call timed out; whether its effect applied is unknown to the caller."""


class ToolConnectionReset(ToolError, ConnectionResetError):
    """The connection was reset before a response arrived."""


class ToolPermissionDenied(ToolError, PermissionError):
    """The caller is not allowed to do this; retrying cannot help."""


class ToolNotFound(ToolError, LookupError):
    """The resource does not exist."""


class ToolInvalidArgument(ToolError, ValueError):
    """An argument is missing or invalid; ``field`` names it."""


class UnknownTool(ToolchaosError, KeyError):
    """The caller asked for a tool that is not registered."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        super().__init__(f"no fake tool named {name!r}{did_you_mean(name, known)}; "
                         f"registered: {', '.join(sorted(known)) or 'none'}")

    def __str__(self) -> str:
        return str(self.args[0])


class HarnessStop(BaseException):
    """Base of the harness's own stops. A ``BaseException`` so ``except Exception`` in an agent cannot swallow it."""


class HardCeiling(HarnessStop):
    """The agent exceeded the harness's ceiling on tool calls or model turns."""


class WatchdogExpired(HarnessStop):
    """The run reached a limit of the watchdog: no progress while the agent could run, or its total real time."""


class NetworkBlocked(HarnessStop):
    """The agent tried to reach the real network during a run."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(f"toolchaos: real network access refused during a run: {what} "
                         f"(only loopback is allowed; serve the tool with a fake tool or a respx route)")


class LeftoverStopped(HarnessStop):
    """A thread kept calling tools after its run had ended; raised past ``except Exception`` to end it."""


class PolicyCrashed(HarnessStop):
    """The policy itself raised: a bug in the test, not in the agent."""

    def __init__(self, original: BaseException) -> None:
        self.original = original
        super().__init__(f"the policy raised {type(original).__name__}: {original}")


class UnmatchedRequest(HarnessStop):
    """A request that no route answers, while the harness serves the wire (names the URL)."""

    def __init__(self, method: str, url: str, hint: str = "") -> None:
        self.method = method
        self.url = url
        super().__init__(f"toolchaos: no route answers {method} {url}{hint}")


__all__ = [
    "AgentCallError", "AgentFailure", "AgentRefError", "ApiFaultError", "CassetteDiverged", "CassetteError",
    "CommandError", "DefinitionError", "FuzzFailed",
    "FuzzSpecError", "HardCeiling", "HarnessStop", "InvariantError", "InvariantViolation", "LeftoverStopped",
    "LogFormatError", "NetworkBlocked", "PatchError", "PolicyCrashed", "PolicyError", "ReportError", "RunClosed",
    "ScenarioError", "ScenarioFailed", "ToolConnectionReset", "ToolError", "ToolInvalidArgument", "ToolNotFound",
    "ToolPermissionDenied", "ToolTimeout", "ToolchaosError", "UnknownTool", "UnmatchedRequest", "UserError",
    "WatchdogExpired", "did_you_mean", "render_violations", "trace_file_line",
]
