"""Hostile process agents: each tries to end or drive a run that is not its own.

Two certifications side by side on one machine (parallel CI jobs on one runner) each run a
process agent that looks for the other run's socket in the shared temporary directory (the
relay of a contained child, ``toolchaos-agent-*/server.sock``), or its TCP port, and posts a
forged end there. Neither run can be ended or queried by the other: the forged requests lack
the other run's token, are refused, and are recorded in the victim's result as foreign
attempts, while each run ends as its own agent made it end.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from toolchaos import Ceiling, RunSpec, policies
from toolchaos.fake_tools import catalogue
from toolchaos.process import ProcessAgent, run

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

# Waits until it sees another run's socket (or gives up), posts a forged end to every socket it
# finds but its own, with its own token (all it knows), then asks its own model once and exits 0.
HOSTILE = r'''
import glob, json, os, socket, sys, tempfile, time, urllib.parse, urllib.request

base = os.environ["OPENAI_BASE_URL"]
url = urllib.parse.urlsplit(base)
mine = os.path.join(os.environ["HOME"], "server.sock")
token_prefix = url.path.rsplit("/v1", 1)[0]
pattern = os.path.join(tempfile.gettempdir(), "toolchaos-agent-*", "server.sock")
deadline = time.monotonic() + 10
others = []
while time.monotonic() < deadline:
    others = [p for p in glob.glob(pattern) if p != mine]
    if others:
        break
    time.sleep(0.05)
answers = []
body = json.dumps({"state": "STOPPED_LOOP_GUARD", "report": {"guard": "hijack", "reason": "forged"}})
for path in others:
    for prefix in (token_prefix, ""):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(5)
            s.connect(path)
            s.sendall((f"POST {prefix}/toolchaos/end HTTP/1.1\r\nHost: {url.netloc}\r\n"
                       f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                       f"{body}").encode())
            answers.append(s.recv(64).split(b"\r\n", 1)[0].decode())
        except OSError as exc:
            answers.append(f"unreachable: {exc}")
        finally:
            s.close()
req = urllib.request.Request(base + "/chat/completions", data=json.dumps(
    {"model": "m", "messages": [{"role": "user", "content": "go"}]}).encode(),
    headers={"content-type": "application/json", "authorization": "Bearer x"})
urllib.request.urlopen(req, timeout=10).read()
print("ATTACKS", json.dumps({"others": len(others), "answers": answers}), flush=True)
'''


def _run_one(script: Path, out: dict[str, Any], key: str) -> None:
    spec = RunSpec.of(task="Get the total of invoice inv_1.", tools=[catalogue.get("fetch_invoice")],
                      policy=policies.scripted([{"final": "done"}]), ceiling=Ceiling(real_seconds=30))
    try:
        out[key] = run(ProcessAgent((sys.executable, str(script))), spec)
    except BaseException as exc:  # shown by the test's assertion, not lost in a thread
        out[key] = exc


def test_two_runs_side_by_side_cannot_end_each_other_through_their_sockets(tmp_path: Path) -> None:
    from toolchaos._internal import children

    if not children.sealing_available():
        pytest.skip("no user namespaces here: children share the network, there is no relay socket to find")
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    results: dict[str, Any] = {}
    threads = [threading.Thread(target=_run_one, args=(script, results, k)) for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert set(results) == {"a", "b"} and not any(isinstance(r, BaseException) for r in results.values()), results
    for res in results.values():
        attacks = next(ln for ln in res.process.stdout.splitlines() if ln.startswith("ATTACKS "))
        found = json.loads(attacks.partition(" ")[2])
        assert found["others"] >= 1, "each agent found the other run's socket"
        # every forged end was refused (401/403), none accepted or left unanswered
        assert found["answers"] and all(a.startswith(("HTTP/1.1 401", "HTTP/1.1 403")) for a in found["answers"]), found
        # the run ended as its own agent ended it: by exiting after one model turn, not "hijack"
        assert res.terminal_state == "COMPLETED" and res.stop_report is None, (res.terminal_state, res.error)
        assert res.process.ended_by == "agent"
        # the other agent's attempts (with its own token, and with none), recorded here: refused on the
        # Host it named (its own run's port), and on the token when the Host is right
        assert len(res.foreign) >= 2 and all(a["path"].endswith("/toolchaos/end") for a in res.foreign), res.foreign
