"""The commands' one door to the scenario loader and the certification runner: ``_lazy.NAME`` imports
them on first use (PEP 562).

They load YAML and pydantic, which ``toolchaos --help``, ``toolchaos list faults`` or ``toolchaos diff``
do not need; so the command modules import none of them and read ``_lazy.load_file``,
``_lazy.run_scenario``, ... The first read imports ``_scenarios``, whose module-level imports are the names
read here. Type checkers see the same names imported eagerly. What one command alone needs of an optional
or heavier part (the fuzzer's hypothesis for ``replay --scenario``, the serve extra) it imports itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolchaos.cli._scenarios import *  # noqa: F403


def __getattr__(name: str) -> object:
    if name.startswith("_"):  # probes (__path__, __wrapped__, _mock_name), never a name read here: load nothing
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from toolchaos.cli import _scenarios  # YAML and pydantic: a command loads or runs scenarios, not --help

    value = getattr(_scenarios, name)  # an AttributeError naming the name for one it does not have
    globals()[name] = value  # once: later reads are plain attribute reads
    return value
