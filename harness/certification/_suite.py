"""The bundled suites and their discovery: the YAML files installed as the package ``toolchaos_scenarios``.

Found with ``importlib.resources``, so they load from any directory (and from a zipped
install). ``suite(name)`` loads a bundled suite (``certification`` or ``examples``),
``certify(agent)`` runs the certification suite against one agent.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolchaos.certification._judge import Verdict
from toolchaos.certification._run import run_scenario
from toolchaos.scenario import SCENARIO_PATTERN, Scenario, load_file, load_text

if TYPE_CHECKING:
    from importlib.abc import Traversable

SUITE_PACKAGE = "toolchaos_scenarios"
# Bump when a certification scenario is added, removed or changes what it demands: reports
# carry it next to the per-file hashes, so two certifications can be compared.
# 3: bounds with margins and a why, useful work, two scenarios added; 4: the side-effect and resume
# scenarios say why and state their useful work, side-email-asked-repeatedly's turn bound 4 -> 6; 5: every
# scenario declares what it needs of the agent's kind (needs:), so some are N/A to a process agent, and
# the quota-header rate-limit forms are advisory; 6: transport retries bounded apart (bounded.attempts),
# loop bounds derived with room above every published constant, a token bound with one turn of
# overshoot, side-effect scenarios that judge a refused duplicate as a ledger's answer, pending jobs
# that finish on virtual time (poll_interval_honoured)
SUITE_VERSION = "6"


def suite_root() -> Traversable:
    """The bundled scenarios: the package ``toolchaos_scenarios``, installed with toolchaos."""
    return resources.files(SUITE_PACKAGE)


def _files(root: Traversable, pattern: str) -> list[Traversable]:
    suffix = pattern.lstrip("*")
    out: list[Traversable] = []
    todo = [root]
    while todo:
        cur = todo.pop()
        for child in cur.iterdir():
            if child.is_dir():
                if not child.name.startswith(("_", ".")):
                    todo.append(child)
            elif child.name.endswith(suffix):
                out.append(child)
    return sorted(out, key=lambda t: str(t))


@functools.lru_cache(maxsize=8)
def _load_cached(where: str, name: str) -> tuple[Scenario, ...]:
    root = suite_root() if where == "" else Path(where)
    folder = root.joinpath(name) if name else root
    out: list[Scenario] = []
    for f in _files(folder, SCENARIO_PATTERN):
        if isinstance(f, Path):
            out.extend(load_file(f))
        else:  # pragma: no cover - a zipped install
            out.extend(load_text(f.read_text(encoding="utf-8"), f"{SUITE_PACKAGE}/{name}/{f.name}"))
    return tuple(sorted(out, key=lambda s: s.name))


def suite(name: str = "certification", root: str | Path | None = None) -> list[Scenario]:
    """The scenarios of a bundled suite (``certification`` or ``examples``), sorted by id."""
    return list(_load_cached("" if root is None else str(root), name))


def suite_files(name: str = "certification") -> list[Traversable]:
    return _files(suite_root().joinpath(name), SCENARIO_PATTERN)


def certify(agent: Any = "builtin:guarded", scenarios: Iterable[Scenario] | None = None, *,
            artifacts: str | Path | None = None, label: str | None = None,
            isolation: str | None = None) -> list[Verdict]:
    """Run the certification suite (or ``scenarios``) against one agent.

    ``isolation="process"`` runs each scenario's agent in a contained child (an untrusted agent
    cannot hang, crash or tamper with this process); unset, the session's (``toolchaos.RunSpec``).
    """
    todo = suite() if scenarios is None else list(scenarios)
    return [run_scenario(s, agent, artifacts=artifacts, label=label, isolation=isolation) for s in todo]
