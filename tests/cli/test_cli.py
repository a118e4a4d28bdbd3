"""The ``toolchaos`` command line: help with examples everywhere, one-line errors, exit codes; progress."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from toolchaos import cli
from toolchaos._agents import AgentRefError
from toolchaos.cli import CommandError, main


def test_top_level_help_lists_commands_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  toolchaos certify --agent" in out and "pytest --chaos --chaos-report=out/" in out
    for name in ("list", "new"):
        assert f"\n    {name} " in out


def test_every_command_has_help_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert {"list", "new"} <= set(cli.COMMANDS)
    for name, mod in cli.COMMANDS.items():
        assert mod.HELP and "\n" not in mod.HELP, name
        assert mod.EXAMPLES.strip().startswith("toolchaos") or "toolchaos" in mod.EXAMPLES, name
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: toolchaos {name}") and "\nexamples:\n" in out, name


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from toolchaos import __version__

    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"toolchaos {__version__}\n"


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().out.startswith("usage: toolchaos")


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["new", "search"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err == ("toolchaos new: error: the following arguments are required: FAULT "
                   "(see toolchaos new --help)\n")
    with pytest.raises(SystemExit):
        main(["nosuchcommand"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("toolchaos: error: argument COMMAND: invalid choice")


class _Fake:
    HELP = "a fake command"
    EXAMPLES = "  toolchaos fake"

    def __init__(self, exc: BaseException | None = None, code: int = 0) -> None:
        self.exc, self.code = exc, code

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        if self.exc is not None:
            raise self.exc
        return self.code


def run_fake(monkeypatch: pytest.MonkeyPatch, fake: Any) -> int:
    monkeypatch.setattr(cli, "COMMANDS", {"fake": fake})
    return main(["fake"])


@pytest.mark.parametrize(("exc", "code", "err"), [
    (CommandError("bad input"), 2, "toolchaos fake: error: bad input\n"),
    (CommandError("not certified", code=1), 1, "toolchaos fake: error: not certified\n"),
    (AgentRefError("no built-in agent 'gaurded'"), 2, "toolchaos fake: error: no built-in agent 'gaurded'\n"),
    (FileNotFoundError(2, "No such file or directory", "x.chaos.yaml"), 2,
     "toolchaos fake: error: No such file or directory: x.chaos.yaml\n"),
    (KeyboardInterrupt(), 130, "toolchaos fake: interrupted\n"),
    (RuntimeError("boom\nsecond line"), 3,
     "toolchaos fake: internal error: RuntimeError: boom second line (set TOOLCHAOS_DEBUG=1 for the traceback)\n"),
])
def test_errors_are_one_line_and_an_exit_code(exc: BaseException, code: int, err: str, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLCHAOS_DEBUG", raising=False)
    assert run_fake(monkeypatch, _Fake(exc)) == code
    captured = capsys.readouterr()
    assert captured.err == err and "Traceback" not in captured.out + captured.err


def test_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCHAOS_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        run_fake(monkeypatch, _Fake(RuntimeError("boom")))


def test_exit_code_is_the_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_fake(monkeypatch, _Fake(code=1)) == 1


def test_a_user_error_through_python_m_is_a_user_error(tmp_path: Path) -> None:
    # Run as ``python -m toolchaos.cli``, the file is a second copy of the module; its errors must
    # still be the commands' own (exit 2), not "internal error" (exit 3).
    proc = subprocess.run([sys.executable, "-m", "toolchaos.cli", "run", str(tmp_path / "missing.chaos.yaml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("toolchaos run: error: no such file or directory") and "internal" not in proc.stderr


def test_console_entry_point_runs() -> None:
    proc = subprocess.run([sys.executable, "-m", "toolchaos.cli", "list", "levels"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("levels: certification levels")


# --- progress ----------------------------------------------------------------------------




HELP_LOADS = """
import contextlib, io, json, sys
from toolchaos.cli import _lazy, main
probes = [hasattr(_lazy, name) for name in ("__wrapped__", "_mock_name", "__path__")]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
heavy = ("pydantic", "yaml", "hypothesis", "respx", "uvicorn", "toolchaos.scenario", "toolchaos.certification")
loaded = sorted({m.split(".")[0] if not m.startswith("toolchaos") else ".".join(m.split(".")[:2]) for m in sys.modules
                 if any(m == h or m.startswith(h + ".") for h in heavy)})
print(json.dumps({"probes": probes, "loaded": loaded}))
"""


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["list", "faults"]])
def test_help_and_light_commands_load_no_scenario_loader(argv: list[str]) -> None:
    """``toolchaos --help`` stays fast: YAML, pydantic, hypothesis and the serve extra load only for the commands
    that use them (through ``toolchaos.cli._lazy``), and probing that door loads nothing."""
    out = subprocess.run([sys.executable, "-c", HELP_LOADS, *argv], capture_output=True, text=True, timeout=60,
                         check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"probes": [False, False, False], "loaded": []}


def test_the_door_loads_the_scenario_loader_on_first_use() -> None:
    code = ("import sys; from toolchaos.cli import _lazy; assert 'yaml' not in sys.modules; "
            "assert _lazy.SCHEMA_URL.startswith('http') and 'yaml' in sys.modules; "
            "import toolchaos.scenario as s; assert _lazy.load_file is s.load_file\n"
            "try:\n    _lazy.no_such_name\nexcept AttributeError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "no_such_name" in out.stdout
