"""A Node agent on the ``openai`` npm package (pinned in .ci/node, installed by README command 2 with
``npm ci``), run as a child process against the server: its own counts match the trace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="needs the serve extra: pip install toolchaos[serve]")

from toolchaos._plumbing import clock as _clock
from toolchaos.serve import Server

from tests.serve.helpers import loop_spec

AGENT = Path(__file__).parent / "node" / "agent.cjs"
PACKAGES = Path(__file__).parents[2] / ".ci" / "node" / "node_modules"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    NODE is None or not (PACKAGES / "openai").is_dir(),
    reason="needs Node and the openai npm package: npm ci --prefix .ci/node (README command 2 does)")


def test_a_node_openai_agent_counts_what_the_trace_holds() -> None:
    srv = Server(loop_spec())  # a tool that always times out; the ceiling: 6 model turns
    with srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.base_urls["openai"], "OPENAI_API_KEY": "x",
               "TOOLCHAOS_MCP_URL": srv.mcp_url, "NODE_PATH": str(PACKAGES)}
        proc = subprocess.Popen([str(NODE), str(AGENT)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        # Waited in real seconds: while the run is on, time.monotonic (and so subprocess's own
        # timeouts) follows the run's virtual clock, which each 30 s timeout fault moves.
        deadline = _clock.real_monotonic() + 60
        while proc.poll() is None and _clock.real_monotonic() < deadline:
            _clock.real_sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == 0, err
    counts = json.loads(out.strip().splitlines()[-1])
    res = srv.result
    assert res is not None and res.terminal_state == "HARD_CEILING"
    assert counts["answers"] == res.turns == 6
    assert counts["tool_calls"] == counts["errors"] == res.total_executions == 6
    assert counts["refused"].startswith("400") and "the run has ended" in counts["refused"]
    assert {e["call_id"] for e in res.trace.of_kind("tool")} == {f"call_{n}_0" for n in range(1, 7)}
