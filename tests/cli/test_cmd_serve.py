"""``toolchaos serve`` as another process starts it: the URLs on stdout and in --urls-file, the run
driven over HTTP, ended at POST /toolchaos/end, the verdict on stderr and in the exit status."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("uvicorn", reason="needs the serve extra")

from toolchaos.cli import main

from tests.serve.helpers import LOOP_YAML


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 30) -> dict[str, str]:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no urls file"
        time.sleep(0.05)
    return dict(json.loads(path.read_text()))


def test_serve_prints_its_urls_serves_the_run_and_ends_with_the_verdict(tmp_path: Path) -> None:
    urls_file = tmp_path / "urls.json"
    proc = subprocess.Popen([sys.executable, "-m", "toolchaos", "serve", str(LOOP_YAML), "--urls-file", str(urls_file),
                             "--artifacts", str(tmp_path), "--linger", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        urls = _wait_for(urls_file, proc)
        with httpx.Client(timeout=10) as http:
            turn = http.post(urls["openai"] + "/chat/completions", json={"model": "m", "messages": [
                {"role": "user", "content": "go"}]}).json()
            call = turn["choices"][0]["message"]["tool_calls"][0]
            result = http.post(urls["mcp"], headers={"accept": "application/json, text/event-stream"}, json={
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"])}})
            assert result.json()["result"]["isError"] is True
            http.post(urls["end"], json={"state": "STOPPED_LOOP_GUARD"})
            # the server outlives the run (--linger): a late request is told the run is over, not refused
            late = http.post(urls["openai"] + "/chat/completions", json={"model": "m", "messages": []})
            assert late.status_code == 400 and "the run has ended" in late.json()["error"]["message"]
        started = time.monotonic()
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - started < 10  # then it stops
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[0]) == urls and urls["anthropic"].startswith("http://127.0.0.1:")
    assert "PASS  serve-timeout-loop" in err
    trace = [json.loads(line) for line in (tmp_path / "serve-timeout-loop.trace.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in trace] == ["model", "tool", "end"] and trace[1]["call_id"] == call["id"]


def test_serve_refuses_a_file_of_several_scenarios_and_a_bad_limit(capsys: pytest.CaptureFixture[str]) -> None:
    variants = Path(__file__).parents[2] / "scenarios" / "examples" / "04-variants.chaos.yaml"
    assert main(["serve", str(variants)]) == 2
    assert "pick one with -k" in capsys.readouterr().err
    assert main(["serve", str(LOOP_YAML), "--real-seconds", "0"]) == 2
    assert "--real-seconds: expected a positive number" in capsys.readouterr().err
    for command in ("serve", "mcp"):
        assert main([command, str(LOOP_YAML), "--total-seconds", "-1"]) == 2
        assert ("--total-seconds: expected a positive number of seconds (the total real-time limit of the run), "
                "got '-1'") in capsys.readouterr().err
    assert main(["serve", str(LOOP_YAML), "--max-body", "8M"]) == 2
    assert "--max-body: expected a positive whole number of bytes" in capsys.readouterr().err
    resume = next(p for p in (LOOP_YAML.parents[2] / "scenarios").rglob("*.chaos.yaml") if "restart:" in p.read_text())
    assert main(["serve", str(resume)]) == 2  # a restart runs the agent twice; a served run is one run
    assert "restart: runs the agent twice" in capsys.readouterr().err


def test_serve_ends_a_run_at_its_total_limit(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main(["serve", str(LOOP_YAML), "--total-seconds", "0.3", "--linger", "0"]) == 1
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert "serve-timeout-loop" in err and ("the watchdog ended it: the run went on for 0.3s of real time in all "
                                            "without reaching a ceiling, its total limit (set by --total-seconds)") in err


def test_without_the_serve_extra_the_commands_say_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "toolchaos.serve", None)  # an import of it fails, as without the extra
    assert main(["mcp", str(LOOP_YAML)]) == 2
    assert "pip install 'CLONE[serve]' (CLONE: the path of your toolchaos clone" in capsys.readouterr().err


def test_binding_beyond_loopback_needs_allow_remote(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(LOOP_YAML), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "lets other machines reach the run" in err and "--allow-remote" in err


def test_serve_max_body_caps_the_request_bodies_it_reads(tmp_path: Path) -> None:
    urls_file = tmp_path / "urls.json"
    proc = subprocess.Popen([sys.executable, "-m", "toolchaos", "serve", str(LOOP_YAML), "--urls-file", str(urls_file),
                             "--max-body", "65536", "--linger", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        urls = _wait_for(urls_file, proc)
        with httpx.Client(timeout=10) as http:
            too_large = http.post(urls["openai"] + "/chat/completions", content=b" " * 65537)
            fits = http.post(urls["openai"] + "/chat/completions", json={"model": "m", "messages": [
                {"role": "user", "content": "go" + " " * 65000}]})
            http.post(urls["end"])
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert too_large.status_code == 413 and "at most 65536 bytes" in too_large.json()["error"]["message"]
    assert fits.status_code == 200, err
