"""``toolchaos certify|run|replay --real-seconds`` and ``--total-seconds``: the session's watchdog limits.

The same knobs as pytest's ``--chaos-real-seconds`` and ``--chaos-total-seconds``
(tests/pytest_plugin/test_plugin_real_seconds_option.py), with the same precedence: a scenario's own
``ceiling.real_seconds`` > ``--real-seconds`` > the built-in default (5 s). The agent waits
blocked and never calls the model or a tool, so only the watchdog ends it: each run lasts
exactly its limit, which keeps the limits small and makes the built-in 5 s default (what a run
gets if the option were ignored) show as a slow test.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from chaos_samples import SPIN_AGENTS, SPIN_NO_OWN_LIMIT, SPIN_OWN_LIMIT, SPIN_SCENARIO
from toolchaos import _engine as engine  # the session's defaults of every RunSpec
from toolchaos._internal import limits
from toolchaos.cli import main
from toolchaos.pytest_plugin import _settings

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = str(ROOT / "scenarios" / "examples" / "05-incident.trace.jsonl")
SPIN_MODULE = "toolchaos_cli_spin"
SPIN_AGENT = f"{SPIN_MODULE}:spin"

SPIN, SCENARIO, OWN_LIMIT, NO_OWN_LIMIT = SPIN_AGENTS, SPIN_SCENARIO, SPIN_OWN_LIMIT, SPIN_NO_OWN_LIMIT

FROM_OPTION = ("the watchdog ended it: the agent made no progress (no model request, tool call or event) "
               "for 0.3s while it could run, its no-progress limit (set by --real-seconds)")


@pytest.fixture
def spin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory holding the spinning agent's module (importable) and its scenario."""
    (tmp_path / f"{SPIN_MODULE}.py").write_text(SPIN)
    (tmp_path / "spin.chaos.yaml").write_text(SCENARIO)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop(SPIN_MODULE, None)  # the next test's module lives in another tmp_path


def timed(argv: list[str]) -> tuple[int, float]:
    started = time.perf_counter()
    code = main(argv)
    return code, time.perf_counter() - started


@pytest.mark.parametrize("command", ["run", "certify"])
def test_a_spinning_scenario_fails_at_the_limit(command: str, spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = [str(spin / "spin.chaos.yaml")] if command == "run" else ["--suite", str(spin)]
    code, took = timed([command, *where, "--agent", SPIN_AGENT, "--real-seconds", "0.3"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAIL  spin" in out and FROM_OPTION in out
    assert 0.25 <= took < 2.5, f"the command ran {took:.2f}s under a 0.3s limit (the built-in default is 5s)"
    assert engine.session_real_seconds() is None, "the command's limit outlived it"


def test_the_reproduce_line_carries_the_limit(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(spin / "spin.chaos.yaml"), "--agent", SPIN_AGENT, "--real-seconds", "0.3", "-v"]) == 1
    out = capsys.readouterr().out
    reproduce = next(line for line in out.splitlines() if line.startswith("reproduce: "))
    assert reproduce.endswith(f"--agent {SPIN_AGENT} --seed 0 --real-seconds 0.3"), reproduce
    (spin / "own.chaos.yaml").write_text(OWN_LIMIT)  # fails at its own 0.1 s: no session limit to carry
    assert main(["run", str(spin / "own.chaos.yaml"), "--agent", SPIN_AGENT, "-v"]) == 1
    reproduce = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("reproduce: "))
    assert reproduce.endswith(f"--agent {SPIN_AGENT} --seed 0"), reproduce


def test_replay_a_spinning_agent_fails_at_the_limit(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, took = timed(["replay", INCIDENT, "--agent", SPIN_AGENT, "--real-seconds", "0.3", "--json"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert '"state": "WATCHDOG"' in out and FROM_OPTION in out
    assert 0.25 <= took < 2.5, f"the replay ran {took:.2f}s under a 0.3s limit (the built-in default is 5s)"
    assert engine.session_real_seconds() is None


def test_a_scenarios_own_real_seconds_wins(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (spin / "spin.chaos.yaml").unlink()
    (spin / "own.chaos.yaml").write_text(OWN_LIMIT)
    (spin / "other.chaos.yaml").write_text(NO_OWN_LIMIT)
    # The scenario's 0.1 s beats the option's 0.3 s; a ceiling block without real_seconds follows the option.
    assert main(["run", str(spin), "--agent", SPIN_AGENT, "--real-seconds", "0.3", "--json"]) == 1
    rows = {r["id"]: r for r in map(_json, capsys.readouterr().out.splitlines())}
    assert rows["own-limit"]["violations"][0]["actual"] == (
        "the watchdog ended it: the agent made no progress (no model request, tool call or event) for 0.1s while it "
        "could run, its no-progress limit")
    assert rows["no-own-limit"]["violations"][0]["actual"] == FROM_OPTION


def test_the_total_limit_from_the_command_line(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, took = timed(["run", str(spin / "spin.chaos.yaml"), "--agent", SPIN_AGENT, "--real-seconds", "30",
                        "--total-seconds", "0.3", "--json", "-v"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert ("the watchdog ended it: the run went on for 0.3s of real time in all without reaching a ceiling, its "
            "total limit (set by --total-seconds)") in out
    assert 0.25 <= took < 2.5 and engine.session_total_seconds() is None


def test_the_reproduce_line_carries_the_total_limit(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(spin / "spin.chaos.yaml"), "--agent", SPIN_AGENT, "--total-seconds", "0.3", "-v"]) == 1
    reproduce = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("reproduce: "))
    assert reproduce.endswith(f"--agent {SPIN_AGENT} --seed 0 --total-seconds 0.3"), reproduce


def _json(line: str) -> dict[str, Any]:
    data = json.loads(line)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("command", ["run", "certify", "replay"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "abc", ""])
def test_a_bad_value_is_a_one_line_error(command: str, value: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "spin.chaos.yaml").write_text(SCENARIO)
    target = {"run": [str(tmp_path)], "certify": [], "replay": [INCIDENT]}[command]
    # Nothing runs: the check comes first (a run of the bundled suite would take seconds).
    code, took = timed([command, *target, f"--real-seconds={value}"])
    out, err = capsys.readouterr()
    assert code == 2 and not out and took < 1.0
    assert err == (f"toolchaos {command}: error: --real-seconds: expected a positive number of seconds "
                   f"(the no-progress limit of each chaos run), got {value!r}\n")
    code, _ = timed([command, *target, "--real-seconds=1", f"--total-seconds={value}"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert err == (f"toolchaos {command}: error: --total-seconds: expected a positive number of seconds "
                   f"(the total real-time limit of each chaos run), got {value!r}\n")


def test_the_limit_is_restored_after_the_command(spin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    restore = engine.session_defaults(real_seconds=0.5, source="an outer session")
    try:
        assert main(["run", str(spin), "--agent", SPIN_AGENT, "--real-seconds", "0.3"]) == 1
        assert FROM_OPTION in capsys.readouterr().out
        assert engine.session_real_seconds() == 0.5
        # Also when the command fails after setting it (no such file: exit 2).
        assert main(["run", str(spin / "missing.chaos.yaml"), "--real-seconds", "0.3"]) == 2
        assert engine.session_real_seconds() == 0.5
        # A second command without the option runs under the outer limit, not the first command's.
        assert main(["run", str(spin), "--agent", SPIN_AGENT]) == 1
        assert ("the agent made no progress (no model request, tool call or event) for 0.5s while it could run, its "
                "no-progress limit (set by an outer session)") in capsys.readouterr().out
    finally:
        restore()


@pytest.mark.parametrize("command", ["run", "certify", "replay"])
def test_help_names_the_option_and_its_default(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("no- progress", "no-progress")  # argparse wraps at "-"
    assert "--real-seconds SECONDS no-progress limit of each agent run" in text
    assert "default 5 seconds, 60 for toolchaos.wire SDK agents" in text
    assert ("a scenario's own ceiling real_seconds wins" in text) == (command != "replay")
    assert "--total-seconds SECONDS total limit of each agent run" in text
    assert "default 3 times the no-progress limit" in text
    assert "real-time limit" not in text  # the no-progress limit is not one


@pytest.mark.parametrize("value", ["0", "-2.5", "nan", "inf", "five", ""])
def test_the_plugin_and_the_cli_refuse_the_same_values_in_the_same_words(value: str) -> None:
    config = SimpleNamespace(option=SimpleNamespace(chaos_real_seconds=value), getini=lambda name: "")
    with pytest.raises(pytest.UsageError) as plugin_error:
        _settings.real_seconds(config)  # type: ignore[arg-type]
    with pytest.raises(ValueError) as cli_error:
        limits.check_real_seconds(value, _settings.REAL_SECONDS_OPTION)
    assert str(cli_error.value) == str(plugin_error.value)
    assert limits.check_real_seconds(" 0.25 ", "x") == 0.25
