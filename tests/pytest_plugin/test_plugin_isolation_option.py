"""``--chaos-isolation`` and the ``chaos_isolation`` ini option: where each run's agent executes.

Precedence: the command line, then the ini file, then the default: ``process`` under
``--chaos-certify``, ``none`` otherwise. The mode is process-wide and put back when the
session ends.
"""

from __future__ import annotations

import pytest
from toolchaos._engine import session_isolation as isolation

pytest_plugins = ["pytester"]

PROBE = """
from toolchaos._engine import session_isolation as isolation

def test_mode():
    print("MODE", isolation())
"""


def _mode(pytester: pytest.Pytester, *args: str) -> str:
    pytester.makepyfile(test_probe=PROBE)
    res = pytester.runpytest("-s", "-k", "test_mode", *args)
    assert res.parseoutcomes()["passed"] == 1
    return next(line.split("MODE ", 1)[1].split()[0] for line in res.outlines if "MODE " in line)


@pytest.mark.parametrize(("args", "ini", "mode"), [
    (("--chaos",), "", "none"),
    (("--chaos-certify",), "", "process"),
    (("--chaos", "--chaos-isolation=process"), "", "process"),
    (("--chaos-certify", "--chaos-isolation=none"), "", "none"),
    (("--chaos",), "process", "process"),
    (("--chaos-certify", "--chaos-isolation=none"), "process", "none"),
])
def test_where_runs_execute(pytester: pytest.Pytester, args: tuple[str, ...], ini: str, mode: str) -> None:
    if ini:
        pytester.makeini(f"[pytest]\nchaos_isolation = {ini}\n")
    assert _mode(pytester, *args) == mode
    assert isolation() == "none"  # the inner session put this one's back


def test_a_bad_ini_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nchaos_isolation = threads\n")
    pytester.makepyfile(test_probe=PROBE)
    res = pytester.runpytest("--chaos")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*ini chaos_isolation: expected one of none, process, got 'threads'*"])


def test_a_bad_option_value_is_refused_by_its_choices(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--chaos", "--chaos-isolation=thread")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*--chaos-isolation: invalid choice: 'thread'*"])


def test_certification_isolates_by_default_on_linux_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolchaos._engine import default_for_certification, isolated

    monkeypatch.setattr(isolated.sys, "platform", "linux")
    assert default_for_certification() == "process"
    monkeypatch.setattr(isolated.sys, "platform", "darwin")
    assert default_for_certification() == "none"
