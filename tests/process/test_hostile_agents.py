"""Hostile process agents: each tries to end or drive a run that is not its own.

Two certifications side by side on one machine (parallel CI jobs on one runner) each run a
process agent that looks for the other run's socket in the shared temporary directory (the
relay of a contained child, ``toolchaos-agent-*/server.sock``), or its TCP port, and posts a
forged end there. Where the child gets private temporary folders (a mount namespace), the other
run's socket is not there for it at all; where it does not (the first test shares the folders,
as a platform without mount namespaces does), neither run can be ended or queried by the other:
the forged requests lack the other run's token, are refused, and are recorded in the victim's
result as foreign attempts, while each run ends as its own agent made it end.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from chaos_samples import needs_private_temp
from toolchaos import Ceiling, RunSpec, policies
from toolchaos._plumbing import children
from toolchaos.fake_tools import catalogue
from toolchaos.process import ProcessAgent, run

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

# Waits until it sees the other run's socket among those it finds in the shared temporary folder
# (or gives up), posts a forged end there, with its own token (all it knows) and with none, then asks
# its own model once and exits 0. Which socket is the other run's, it reads from a file the other
# agent writes (argv: its own file, the other's), so that other tests' runs on the machine are left alone.
HOSTILE = r'''
import glob, json, os, socket, sys, tempfile, time, urllib.parse, urllib.request

base = os.environ["OPENAI_BASE_URL"]
url = urllib.parse.urlsplit(base)
mine = os.path.join(os.environ["HOME"], "server.sock")
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(mine)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
token_prefix = url.path.rsplit("/v1", 1)[0]
pattern = os.path.join(tempfile.gettempdir(), "toolchaos-agent-*", "server.sock")
deadline = time.monotonic() + 20
others, partner = [], None
while time.monotonic() < deadline:
    if partner is None and os.path.exists(sys.argv[2]):
        partner = open(sys.argv[2]).read()
    others = [p for p in glob.glob(pattern) if p != mine]
    if partner in others:
        break
    time.sleep(0.05)
answers = []
body = json.dumps({"state": "STOPPED_LOOP_GUARD", "report": {"guard": "hijack", "reason": "forged"}})
for path in [p for p in others if p == partner]:
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
    {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": [{"type": "function", "function": {
        "name": "fetch_invoice", "parameters": {"type": "object", "properties": {}}}}]}).encode(),
    headers={"content-type": "application/json", "authorization": "Bearer x"})
urllib.request.urlopen(req, timeout=10).read()
print("ATTACKS", json.dumps({"others": len(others), "answers": answers}), flush=True)
'''


def _run_one(script: Path, out: dict[str, Any], key: str, other: str) -> None:
    spec = RunSpec.of(task="Get the total of invoice inv_1.", tools=[catalogue.get("fetch_invoice")],
                      policy=policies.scripted([{"final": "done"}]), ceiling=Ceiling(real_seconds=30))
    try:
        out[key] = run(ProcessAgent((sys.executable, str(script), str(script.parent / key),
                                     str(script.parent / other))), spec)
    except BaseException as exc:  # shown by the test's assertion, not lost in a thread
        out[key] = exc


def _shared_temp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children share the machine's temporary folders, as where there are no mount namespaces."""
    real = children.start

    def start(*args: Any, private_tmp: object = None, **kwargs: Any) -> children.Child:
        return real(*args, **kwargs)

    monkeypatch.setattr(children, "start", start)


def test_two_runs_side_by_side_cannot_end_each_other_through_their_sockets(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if not children.sealing_available():
        pytest.skip("no user namespaces here: children share the network, there is no relay socket to find")
    _shared_temp(monkeypatch)  # the token alone: each agent finds the other's socket
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    results: dict[str, Any] = {}
    threads = [threading.Thread(target=_run_one, args=(script, results, *pair)) for pair in (("a", "b"), ("b", "a"))]
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


# Tells the other agent where its socket is (through a file in the test's folder, which both see:
# a folder their command names), waits for the other's, then tries to reach it by that path and by
# looking; and checks what it sees of the temporary folder: its own run's folder, nothing else.
PROBING = r'''
import glob, json, os, socket, sys, tempfile, time, urllib.request

me, other = sys.argv[1], sys.argv[2]
mine = os.path.join(os.environ["HOME"], "server.sock")
with open(me + ".tmp", "w") as f:
    f.write(mine)
os.rename(me + ".tmp", me)
deadline = time.monotonic() + 20
while not os.path.exists(other) and time.monotonic() < deadline:
    time.sleep(0.02)
theirs = open(other).read()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(theirs)
    reached = "connected"
except OSError as exc:
    reached = type(exc).__name__
finally:
    s.close()
own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
own.connect(mine)  # its own socket is there, and answers
own.close()
found = {
    "theirs": theirs, "exists": os.path.exists(theirs), "reached": reached,
    "globbed": [p for p in glob.glob(os.path.join(tempfile.gettempdir(), "toolchaos-agent-*", "server.sock"))
                if p != mine],
    "listed": sorted(os.listdir(tempfile.gettempdir())),
    "home": os.environ["HOME"], "home_files": sorted(os.listdir(os.environ["HOME"])),
    "cwd": os.getcwd(), "proc": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
}
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(
    {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": [{"type": "function", "function": {
        "name": "fetch_invoice", "parameters": {"type": "object", "properties": {}}}}]}).encode(),
    headers={"content-type": "application/json", "authorization": "Bearer x"})
urllib.request.urlopen(req, timeout=10).read()
print("FOUND", json.dumps(found), flush=True)
'''


def test_two_runs_side_by_side_cannot_see_each_others_socket(tmp_path: Path) -> None:
    needs_private_temp()
    script = tmp_path / "probing.py"
    script.write_text(PROBING)
    results: dict[str, Any] = {}
    spec = RunSpec.of(task="Get the total of invoice inv_1.", tools=[catalogue.get("fetch_invoice")],
                      policy=policies.scripted([{"final": "done"}]), ceiling=Ceiling(real_seconds=30))

    def one(me: str, other: str) -> None:
        try:
            results[me] = run(ProcessAgent((sys.executable, str(script), str(tmp_path / me), str(tmp_path / other)),
                                           cwd=str(tmp_path)), spec)
        except BaseException as exc:  # shown by the test's assertion, not lost in a thread
            results[me] = exc

    threads = [threading.Thread(target=one, args=pair) for pair in (("a", "b"), ("b", "a"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert set(results) == {"a", "b"} and not any(isinstance(r, BaseException) for r in results.values()), results
    founds = {}
    for me, res in results.items():
        assert res.process.private_tmp and res.process.private_note == "", res.process
        line = next((ln for ln in res.process.stdout.splitlines() if ln.startswith("FOUND ")), None)
        assert line is not None, res.process.stderr
        founds[me] = json.loads(line.partition(" ")[2])
    for me, other in (("a", "b"), ("b", "a")):
        res, found = results[me], founds[me]
        # the other run's socket, in its own run's folder (where that agent reached it); from here, nowhere
        assert found["theirs"] == str(Path(founds[other]["home"]) / "server.sock") != str(Path(found["home"]))
        assert not found["exists"] and found["reached"] == "FileNotFoundError", found
        assert found["globbed"] == [], found
        # of the temporary folder it sees its own run's folder and the folders its command names, no other run's
        home = Path(found["home"])
        assert [n for n in found["listed"] if n.startswith("toolchaos-agent-")] == [home.name], found["listed"]
        # its own socket, HOME and working directory are where they are outside
        assert "server.sock" in found["home_files"] and found["cwd"] == str(tmp_path), found
        assert found["proc"][0] == 1 and len(found["proc"]) < 10, "a /proc of its own PID namespace"
        # it ended as its own agent made it end, after its one model turn through its own socket
        assert res.terminal_state == "COMPLETED" and res.process.ended_by == "agent", (res.terminal_state, res.error)
        assert res.foreign == [], "nothing of the other run's reached this one"
