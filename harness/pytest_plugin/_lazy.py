"""The plugin's one door to what chaos work needs: ``_lazy.NAME`` imports it on first use (PEP 562).

pytest loads this plugin in every session of a venv where toolchaos is installed, and a session that runs
no chaos test must not pay for the engine, the agents, virtual time (freezegun), the reports, nor the
scenario loader's YAML and pydantic (tests/pytest_plugin/test_footprint.py). So the plugin's modules import
none of them: they read ``_lazy.safe_name``, ``_lazy.run_scenario``, ... The first read imports ``_work``
(the engine's side: a chaos session starts, a chaos test runs, a report is written) and, for the names it
does not have, ``_scenarios`` (the scenario loader and the certification runner: a scenario file is
collected, run or reported); their module-level imports are the names read here. Type checkers see the
same names imported eagerly. The fuzzer (hypothesis) and the wire (respx) are not here: only a fuzzed
scenario and ``chaos.wire`` load them, where they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolchaos.pytest_plugin._scenarios import *  # noqa: F403
    from toolchaos.pytest_plugin._work import *  # noqa: F403


def __getattr__(name: str) -> object:
    if name.startswith("_"):  # probes, never a name read here: pytest reads __wrapped__ and _mock_name of every
        # attribute of a plugin module while looking for fixtures, this module included; they must load nothing
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from toolchaos.pytest_plugin import _work  # the engine, the agents, virtual time, the reports: chaos work began

    module: object = _work
    if name not in _work.__all__:
        from toolchaos.pytest_plugin import _scenarios  # YAML and pydantic: a scenario is collected, run or reported

        module = _scenarios
    value = getattr(module, name)  # an AttributeError naming the name for one neither module has
    globals()[name] = value  # once: later reads are plain attribute reads
    return value
