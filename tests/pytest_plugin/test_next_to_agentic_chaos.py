"""Next to agentic-chaos (which also registers ``--chaos``): pytest starts in both load orders, toolchaos says once
which plugin holds ``--chaos`` and runs its own tests under ``--toolchaos``.

agentic-chaos is installed from the registry into a folder of its own (its pytest plugin imports only pytest),
put on ``PYTHONPATH`` for the inner sessions; the order is chosen with ``-p`` and autoloading off.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

USER_TESTS = '''
import pytest

@pytest.mark.toolchaos
def test_a_toolchaos_test(toolchaos):
    result = toolchaos.run(task="t", tools=[toolchaos.tool("search")],
                           policy=toolchaos.policies.scripted([{"call": "search", "args": {"query": "q"}}, {"final": "ok"}]))
    assert result.terminal_state == "COMPLETED"

def test_plain():
    pass
'''

ORDERS = {"toolchaos first": ["toolchaos.pytest_plugin", "pytest_agentic_chaos.plugin"],
          "agentic-chaos first": ["pytest_agentic_chaos.plugin", "toolchaos.pytest_plugin"]}


@pytest.fixture(scope="module")
def agentic_chaos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("agentic-chaos")
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target",
                          str(target), "agentic-chaos"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"could not install agentic-chaos from the registry:\n{out.stderr[-2000:]}"
    return target


def _pytest(project: Path, target: Path, *args: str, autoload: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    env["PYTHONPATH"] = str(target)
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("order", list(ORDERS))
def test_pytest_starts_in_both_orders_and_names_the_clash(order: str, agentic_chaos: Path, tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    plugins = [arg for name in ORDERS[order] for arg in ("-p", name)]
    res = _pytest(tmp_path, agentic_chaos, *plugins, "--toolchaos", "-W", "always::pytest.PytestConfigWarning")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "2 passed" in res.stdout
    assert out.count("toolchaos: --chaos belongs to another plugin (agentic-chaos)") == 1, out[-3000:]
    assert "-p no:agentic_chaos" in out and "--toolchaos-agent" in out
    # the other plugin keeps its own --chaos
    res = _pytest(tmp_path, agentic_chaos, *plugins, "--chaos", "-q")
    assert res.returncode == 0 and "1 passed, 1 skipped" in res.stdout, (res.stdout + res.stderr)[-3000:]


@pytest.mark.slow
def test_with_autoloading_and_the_other_plugin_disabled_toolchaos_has_chaos(agentic_chaos: Path,
                                                                             tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    res = _pytest(tmp_path, agentic_chaos, "-p", "no:randomly", "--toolchaos", autoload=True)
    assert res.returncode == 0 and "2 passed" in res.stdout, (res.stdout + res.stderr)[-3000:]
    res = _pytest(tmp_path, agentic_chaos, "-p", "no:randomly", "-p", "no:agentic_chaos", "--chaos", autoload=True)
    assert res.returncode == 0 and "2 passed" in res.stdout, (res.stdout + res.stderr)[-3000:]
    assert "belongs to another plugin" not in res.stdout + res.stderr
