"""A process agent with private temporary folders still finds what it needs there: its virtualenv, HOME, config.

The virtualenv lives in a folder of its own in the shared temporary folder, apart from the
agent's script and working directory, as a CI job's may; the agent is named by the
virtualenv's ``python`` (on its command line, or first on ``PATH``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolchaos import Ceiling, policies
from toolchaos._plumbing import children
from toolchaos.fake_tools import catalogue
from toolchaos.process import ProcessAgent, run

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

# Imports a module only the virtualenv has, reads the MCP config the harness wrote in its HOME.
AGENT = """
import json, os, sys
import only_in_this_venv
config = json.load(open(os.environ["TOOLCHAOS_MCP_CONFIG"]))
print("SAW " + json.dumps({"prefix": sys.prefix, "module": only_in_this_venv.NAME,
                           "mcp": config["mcpServers"]["chaos"]["url"] == os.environ["TOOLCHAOS_MCP_URL"],
                           "home": sorted(os.listdir(os.environ["HOME"]))}))
"""


@pytest.fixture(scope="module")
def venv() -> Iterator[Path]:
    """A virtualenv in a folder of its own in the temporary folder, with one module of its own."""
    folder = Path(tempfile.mkdtemp(prefix="toolchaos-test-venv-"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    site = next((folder / "venv" / "lib").glob("python*/site-packages"))
    (site / "only_in_this_venv.py").write_text("NAME = 'from the venv'\n")
    yield folder / "venv"
    shutil.rmtree(folder, ignore_errors=True)


def _saw(agent: ProcessAgent) -> tuple[dict[str, Any], bool]:
    res = run(agent, task="Say hello.", tools=[catalogue.get("search")], policy=policies.scripted([{"final": "hi"}]),
              ceiling=Ceiling(real_seconds=30))
    assert res.process is not None and res.process.exit_code == 0, res.process and res.process.stderr
    line = next(ln for ln in res.process.stdout.splitlines() if ln.startswith("SAW "))
    return json.loads(line[4:]), res.process.private_tmp


@pytest.mark.parametrize("how", ["argv", "PATH"])
def test_a_python_agent_in_a_virtualenv_under_the_temporary_folder_runs(venv: Path, tmp_path: Path, how: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    if how == "PATH":
        monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    python = str(venv / "bin" / "python") if how == "argv" else "python"
    saw, private = _saw(ProcessAgent((python, str(script)), cwd=str(tmp_path)))
    assert private is _private_here()  # the folders were private, where the platform allows it
    assert saw["prefix"] == str(venv) and saw["module"] == "from the venv"
    assert saw["mcp"] is True and "mcp.json" in saw["home"], saw  # its HOME, and the config the harness wrote there


def _private_here() -> bool:
    if not children.sealing_available():
        return False
    probe = children.start(["true"], env={"PATH": os.defpath}, private_tmp=())
    probe.end(1.0)
    return probe.private_tmp
