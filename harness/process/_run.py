"""Run a process agent under chaos: ``toolchaos.process.run(ProcessAgent(...), task=..., tools=..., policy=...)``.

For the length of the run:

- a ``toolchaos.serve.Server`` answers the model APIs (OpenAI Chat Completions and Responses,
  Anthropic Messages, Gemini) from the policy and serves the fake tools over MCP, through the
  engine's own trace, ledger, ceiling and watchdog;
- the agent is started through ``toolchaos._plumbing.children`` (its own process group and,
  where the platform allows, PID namespace, a loopback-only network that reaches nothing but
  the server, and temporary folders of its own in which no other run's relay socket is), with
  every SDK's base URL and key, the MCP URL and a temporary HOME in its
  environment and, for a preset, the client's own config files written there; of the caller's
  environment it gets only an allowlist (PATH, the locale, TZ, TMPDIR: ``toolchaos._plumbing.environ``)
  and the names passed to it (the agent's ``pass_env``, the run's ``RunSpec.pass_env``), so no
  token of the caller's reaches the agent under test;
- the task reaches it as its last argument or on its standard input; its exit means done (a
  non-zero exit is a FAILED run, whatever its model said last); the harness ends it, with all it
  started, when the run hits the ceiling or the watchdog, or when the agent ended the run itself
  (``POST /toolchaos/end``) and does not exit within the grace.

Its exit code and capped output are kept with the result (``ProcessRunResult.process``),
written beside the trace as ``<name>.process.json`` and shown in a failing scenario's report.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from toolchaos._agents import PRESETS, PROCESS, Endpoints, ProcessAgent, common_env, common_files
from toolchaos._engine import RunSpec, safe_name
from toolchaos._internal.types import HARNESS_STATES
from toolchaos._plumbing import children
from toolchaos._plumbing.clock import real_monotonic
from toolchaos._plumbing.environ import inherited
from toolchaos.errors import AgentRefError
from toolchaos.process._relay import Relay
from toolchaos.serve import Server
from toolchaos.wire import WireRunResult

GRACE = 0.5  # real seconds between SIGTERM and SIGKILL when the harness ends a child
EXIT_GRACE = 2.0  # real seconds a child may take to exit by itself once its run has ended
OUTPUT_CAP = 64 * 1024  # bytes of each of stdout and stderr kept with the result
_POLL = 0.02  # real seconds between looks at the child and the run
READY_WAIT = 10.0  # real seconds for the run to finish once it was ended


@dataclass(frozen=True)
class ProcessOutcome:
    """How the agent's process ended, and what it printed (each stream capped)."""

    command: tuple[str, ...]
    exit_code: int  # the exit code, or -N when signal N ended it
    ended_by: str  # "agent": it exited by itself; "harness": the harness ended it
    why: str  # why the harness ended it ("" when it exited by itself)
    killed: bool  # it ignored SIGTERM and was killed
    sealed: bool  # it ran in its own PID and loopback-only network namespace
    stdout: str
    stderr: str
    # it saw the machine's temporary folders empty but for its own run's folder and what it was given
    private_tmp: bool = False
    private_note: str = ""  # what of that it did not get, and why ("" when it did)

    def to_data(self) -> dict[str, Any]:
        return {"command": list(self.command), "exit_code": self.exit_code, "ended_by": self.ended_by,
                "why": self.why, "killed": self.killed, "sealed": self.sealed, "private_tmp": self.private_tmp,
                "private_note": self.private_note, "stdout": self.stdout, "stderr": self.stderr}

    def summary(self) -> str:
        """One line for failure reports."""
        how = (f"exited with code {self.exit_code}" if self.ended_by == "agent" else
               f"was ended by the harness ({self.why}; exit code {self.exit_code})"
               f"{', killed: it ignored SIGTERM' if self.killed else ''}")
        return f"process {shlex.join(self.command)} {how}"

    def tail(self, lines: int = 8) -> str:
        """The last lines of its stderr (else stdout), for failure reports."""
        text = (self.stderr or self.stdout).rstrip()
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class ProcessRunResult(WireRunResult):
    """A ``WireRunResult`` plus how the agent's process ended (``process``)."""

    process: ProcessOutcome | None = None


def run(agent: ProcessAgent, spec: RunSpec | None = None, *, grace: float = GRACE, **settings: Any) -> ProcessRunResult:
    """Run the process agent once (see the module docstring).

    The run's settings: a ``toolchaos.RunSpec``, or its keywords (``task=``, ``tools=``, ``policy=``,
    ``seed=``, ...), as for ``toolchaos.run``, and ``pass_env=`` (names of the caller's variables the
    agent gets, beyond the allowlist).
    """
    if spec is None:
        spec = RunSpec.of(**settings)
    elif settings:
        raise TypeError(f"process.run() takes a RunSpec or its keywords, not both (got {', '.join(settings)})")
    if spec.ledger is not None:
        raise AgentRefError(f"agent {agent.label}: an effect ledger to continue is for in-process agents; a process "
                            f"agent's run starts its own", field="ledger")
    home = Path(tempfile.mkdtemp(prefix="toolchaos-agent-"))
    try:
        srv = Server(spec.with_(artifacts=None))  # its artifacts: the trace and the child's record, written below
        with srv:
            outcome = _drive(agent, srv, spec, home, grace)
        result = srv.result
        if result is None:  # the run itself could not finish: the server's own error
            raise srv.error if srv.error is not None else RuntimeError("toolchaos: the served run left no result")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    out = ProcessRunResult(**{f.name: getattr(result, f.name) for f in fields(WireRunResult)}, process=outcome)
    out.agent_kind = PROCESS  # its judge reads what the kind can report (the served run's record says in-process)
    if spec.artifacts is not None:
        _write(spec.artifacts, spec.name, out)
    return out


def _drive(agent: ProcessAgent, srv: Server, spec: RunSpec, home: Path, grace: float) -> ProcessOutcome:
    ep = Endpoints(srv.base_urls["openai"], srv.base_urls["anthropic"], srv.base_urls["gemini"], srv.mcp_url, home)
    argv, env, stdin = launch(agent, ep, spec.task, spec.pass_env)
    sealed = children.sealing_available()
    relay = Relay(home / "server.sock", srv.port) if sealed else None
    try:
        try:
            # private_tmp: another run's folder (its relay socket) in the shared temporary folder is not there for it
            child = children.start(argv, env=env, cwd=agent.cwd, stdin=stdin, seal_network=sealed,
                                   forward={srv.port: relay.path} if relay is not None else None, cap=OUTPUT_CAP,
                                   private_tmp=(home,))
        except OSError as exc:
            srv.end("FAILED", f"could not start {argv[0]}: {exc}", why="the agent's process could not start")
            return ProcessOutcome(tuple(argv), 127, "agent", "", False, sealed, "", f"{type(exc).__name__}: {exc}")
        srv.agent_process(child.pid)  # its stopped time and its wait for a CPU are no chance to make progress
        run_over = _watch(child, srv)
        ended = child.end(grace)
        if not run_over:  # its exit ends the run
            code = ended.code
            srv.end(None if code == 0 else "FAILED", None if code == 0 else f"the agent's process exited {code}",
                    why=f"the agent's process exited ({code})")
        ended_by, why = _who_ended(srv)
        return ProcessOutcome(tuple(argv), ended.code, ended_by, why, ended.killed, sealed,
                              child.stdout.decode("utf-8", "replace"), child.stderr.decode("utf-8", "replace"),
                              child.private_tmp, child.private_note)
    finally:
        if relay is not None:
            relay.close()


def _watch(child: children.Child, srv: Server) -> bool:
    """Wait until the child exits (False) or the run ends without it (True: then it has a grace to exit)."""
    while True:
        if child.wait(_POLL) is not None:
            return False
        if srv.wait(0) is not None or srv.error is not None:  # the ceiling, the watchdog, or the agent's own end
            deadline = real_monotonic() + EXIT_GRACE
            while real_monotonic() < deadline and child.wait(_POLL) is None:
                pass
            return True


def _who_ended(srv: Server) -> tuple[str, str]:
    """("harness", why) when the harness's ceiling or watchdog ended the run, else ("agent", "")."""
    res = srv.wait(READY_WAIT)
    if res is None or res.terminal_state in HARNESS_STATES:
        state = res.terminal_state if res is not None else "ERROR"
        return "harness", f"the run ended {state}" + (f": {res.error}" if res is not None and res.error else "")
    return "agent", ""


def launch(agent: ProcessAgent, ep: Endpoints, task: str,
           pass_env: Iterable[str] = ()) -> tuple[list[str], dict[str, str], bytes]:
    """The argv, environment and stdin bytes of the child; a preset's files are written under ``ep.home``.

    Its environment, each layer over the one before: the caller's allowlisted variables and those
    named in ``pass_env`` or the agent's ``pass_env``; the harness's (``common_env``, the preset's),
    which a passed variable cannot override (the child must reach the run's server, not the
    real API); the agent's own ``env``.
    """
    env = inherited((*agent.pass_env, *pass_env))
    env.update(common_env(ep, task))
    files = common_files(ep)
    args: tuple[str, ...] = ()
    task_flag: tuple[str, ...] = ()
    program = agent.command
    if agent.preset is not None:
        preset = PRESETS[agent.preset]
        built = preset.build(ep)
        env.update(built.env)
        files.update(built.files)
        args, task_flag = built.args, built.task_flag
        program = agent.command or preset.program
    cwd = Path(agent.cwd) if agent.cwd is not None else Path.cwd()
    # Node resolves packages from a script's own folder: the example agents find the project's
    # node_modules through NODE_PATH.
    env["NODE_PATH"] = os.pathsep.join(p for p in (str(cwd / "node_modules"), env.get("NODE_PATH", "")) if p)
    env.update(agent.env)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    argv = [*program, *args]
    if agent.task == "arg":
        return [*argv, *task_flag, task], env, b""
    return [*argv, *task_flag], env, task.encode("utf-8")


def _write(folder: Path, name: str, res: ProcessRunResult) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    res.trace.write(folder / f"{safe_name(name)}.trace.jsonl")
    if res.process is not None:
        text = json.dumps(res.process.to_data(), indent=2) + "\n"
        (folder / f"{safe_name(name)}.process.json").write_text(text, encoding="utf-8")

