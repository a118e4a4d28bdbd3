"""The ``toolchaos`` command line: help with examples everywhere, one-line errors, exit codes; progress."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import cli
from harness._agents import AgentRefError
from harness._progress import Progress
from harness.cli import CommandError, build_parser, main


def test_top_level_help_lists_commands_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  toolchaos certify --agent" in out and "pytest --chaos --chaos-report=out/" in out
    for name in ("list", "new"):
        assert f"\n    {name} " in out


def test_every_command_has_help_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    _, modules = build_parser()
    assert {"list", "new"} <= set(modules)
    for name, mod in modules.items():
        assert mod.HELP and "\n" not in mod.HELP, name
        assert mod.EXAMPLES.strip().startswith("toolchaos") or "toolchaos" in mod.EXAMPLES, name
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: toolchaos {name}") and "\nexamples:\n" in out, name


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from harness import __version__

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
    monkeypatch.setattr(cli, "_modules", lambda: {"fake": fake})
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
    # Run as ``python -m harness.cli``, the file is a second copy of the module; its errors must
    # still be the commands' own (exit 2), not "internal error" (exit 3).
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(tmp_path / "missing.chaos.yaml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("toolchaos run: error: no such file or directory") and "internal" not in proc.stderr


def test_console_entry_point_runs() -> None:
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "list", "levels"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("levels: certification levels")


# --- progress ----------------------------------------------------------------------------


def test_progress_is_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    with Progress(3, label="certify", stream=out) as bar:
        bar.advance("loops.a", "pass")
        bar.advance("loops.b", "fail", detail="bounded.executions: 40 > 3")
        bar.advance("legit.c", "pass")
    assert out.getvalue() == ("[1/3] PASS loops.a\n[2/3] FAIL loops.b: bounded.executions: 40 > 3\n[3/3] PASS legit.c\n"
                              "certify: 3/3 done (1 fail, 2 pass)\n")
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_progress_draws_a_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    bar = Progress(4, label="certify", stream=out, tty=True, width=60)
    bar.advance("loops.a", "pass")
    bar.advance("loops.b", "fail", detail="why")
    text = out.getvalue()
    assert text == ("certify [###............] 1/4 loops.a"
                    "\r\x1b[2K\x1b[31mFAIL\x1b[0m loops.b: why\ncertify [#######........] 2/4 loops.b")
    bar.close()
    assert out.getvalue().endswith("\r\x1b[2Kcertify: 2/4 done (1 fail, 1 pass)\n")


def test_progress_respects_no_color_and_narrow_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = io.StringIO()
    bar = Progress(2, stream=out, tty=True, width=30)
    bar.advance("a-very-long-scenario-name-that-does-not-fit", "fail")
    text = out.getvalue()
    assert "\x1b[31m" not in text
    assert text.splitlines()[0] == "FAIL a-very-long-scenario-name-that-does-not-fit"  # messages are whole
    bar_line = text.splitlines()[-1]
    assert len(bar_line) < 30 and bar_line.endswith("…")  # the bar fits the terminal


def test_progress_detects_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm")
    assert Progress(1, stream=Tty()).tty
    monkeypatch.setenv("TERM", "dumb")
    assert not Progress(1, stream=Tty()).tty
    assert not Progress(1, stream=io.StringIO()).tty


def test_progress_note_keeps_the_bar() -> None:
    out = io.StringIO()
    bar = Progress(2, stream=out, tty=True, colour=False, width=50)
    bar.advance("a", "pass")
    bar.note("writing the report")
    assert out.getvalue() == "[######......] 1/2 a\r\x1b[2Kwriting the report\n[######......] 1/2 "
