"""What a scenario needs of an agent's kind, and whether a kind has it: the source of ``N/A``.

A scenario names what it cannot be judged without (its ``needs:``); a kind says what its
agents can do (``Capabilities``). A scenario that needs something the kind lacks is not
applicable (N/A) to agents of that kind: it is not run, and it neither passes nor fails.
Applicability is read from these two declarations alone, before anything runs, never
from how a run went.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from toolchaos._agents._registry import AgentKind


@dataclass(frozen=True)
class Need:
    """One thing a scenario may need: the capability that provides it, and why a scenario needs it."""

    name: str
    capability: str  # the ``Capabilities`` field that provides it
    meaning: str  # what the scenario asks for, in a report's words


NEEDS: dict[str, Need] = {n.name: n for n in (
    Need("stop_report", "reports_stop",
         "the agent's own stop report is what it judges; without this need, a kind that cannot report a stop is "
         "judged by harm, a run that ends by itself counting as stopped"),
    Need("virtual_time", "virtual_time",
         "the agent's own clock on the run's virtual clock: a budget of virtual seconds it must see, or waits of "
         "tens of virtual seconds it must sit out"),
    Need("budgets", "budgets",
         "the run's budgets handed to the agent to keep, as tools.budgets or the wire's env.budgets: a budget of "
         "steps, executions, seconds or tokens it must be told"),
    Need("restart", "restart", "a second run of the agent that resumes from the store the first one kept"),
    Need("two_workers", "concurrent_workers",
         "two calls of one model turn run at once against the agent's own ledger, two workers racing"),
)}


def missing(needs: Iterable[str], kind: AgentKind) -> list[Need]:
    """The needs of ``needs`` that ``kind`` lacks (none: the scenario applies to its agents)."""
    caps = kind.capabilities
    return [NEEDS[n] for n in needs if not getattr(caps, NEEDS[n].capability)]


def not_applicable(needs: Iterable[str], kind: AgentKind) -> str | None:
    """Why a scenario needing ``needs`` is N/A to agents of ``kind``; None when it applies."""
    lacking = missing(needs, kind)
    if not lacking:
        return None
    return "; ".join(f"needs {n.name}, which {_article(kind.name)} {kind.name} agent lacks ({n.meaning})" for n in lacking)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"
