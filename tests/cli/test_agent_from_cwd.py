"""The console script imports the user's agent from the current directory, as uvicorn and celery do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

AGENT = '''
from toolchaos._agents import GuardedAgent

run = GuardedAgent()
'''


def test_toolchaos_certify_imports_myapp_from_the_project_root(tmp_path: Path) -> None:
    script = shutil.which("toolchaos", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the toolchaos console script is not installed next to this interpreter")
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "agent.py").write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([script, "certify", "--agent", "myapp.agent:run", "-k", "budget-steps"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "CERTIFIED" in out.stdout + out.stderr
