"""The plugin's command-line options, registered here and nowhere else, and read back with ``option()``.

Every option is declared by its ``--chaos...`` name (``add_options``; the report options come
from ``toolchaos.pytest_plugin._settings.add_report_options``, through the same group). They are
registered once every installed plugin has registered its own (``pytest_load_initial_conftests``,
before pytest parses the command line), so toolchaos can see whether another plugin already owns
``--chaos`` (agentic-chaos does) instead of breaking pytest's start-up for everyone:

- ``--chaos`` free: the options are ``--chaos``, ``--chaos-agent``, ... (dest ``chaos``, ``chaos_agent``, ...);
- ``--chaos`` taken: they are ``--toolchaos``, ``--toolchaos-agent``, ... (dest ``toolchaos``, ...), the
  marker and fixture to use are ``toolchaos`` (``chaos`` belongs to the other plugin), and a warning
  says once which plugin holds ``--chaos`` and how to choose (``-p no:NAME``).

Read an option with ``option(config, "agent")`` (the name after ``--chaos-``, ``""`` for ``--chaos``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import pytest

PRIMARY = "chaos"
FALLBACK = "toolchaos"
GROUP = ("toolchaos", "chaos tests for agent tool loops (toolchaos)")


@dataclass(frozen=True)
class Naming:
    """How this session spells the options, the marker and the fixture."""

    prefix: str  # "chaos", or "toolchaos" when another plugin owns --chaos
    holder: str | None = None  # the option group of the plugin that owns --chaos

    @property
    def fallback(self) -> bool:
        return self.prefix != PRIMARY

    def flag(self, name: str = "") -> str:
        return f"--{self.prefix}{'-' + name if name else ''}"

    def dest(self, name: str = "") -> str:
        return self.flag(name)[2:].replace("-", "_")


naming_key = pytest.StashKey[Naming]()


class OptionGroup:
    """pytest's option group, taking ``--chaos...`` names and registering them under this session's prefix."""

    def __init__(self, group: Any, naming: Naming) -> None:
        self._group = group
        self.naming = naming

    def addoption(self, name: str, **attrs: Any) -> None:
        if name != "--chaos" and not name.startswith("--chaos-"):  # another spelling (--agent-version): as given
            self._group.addoption(name, **attrs)
            return
        short = name[len("--chaos-"):] if name != "--chaos" else ""
        self._group.addoption(self.naming.flag(short), dest=self.naming.dest(short), **attrs)


def owner_of_chaos(parser: pytest.Parser) -> str | None:
    """The name of the option group (i.e. the plugin) that registered ``--chaos`` already, if any.

    pytest has no public way to list registered options: this reads the parser's groups, the
    one place pytest itself checks for a clash.
    """
    for group in getattr(parser, "_groups", []):
        for opt in group.options:
            if "--chaos" in opt.names() or opt.dest == PRIMARY:
                return str(group.name)
    for opt in getattr(getattr(parser, "_anonymous", None), "options", []):
        if "--chaos" in opt.names() or opt.dest == PRIMARY:
            return "(an option outside any group)"
    return None


def register(config: pytest.Config, parser: pytest.Parser, declare: list[Callable[[OptionGroup], None]]) -> Naming:
    """Register the options (``declare``: functions adding them) under ``--chaos`` or the fallback."""
    holder = owner_of_chaos(parser)
    naming = Naming(PRIMARY if holder is None else FALLBACK, holder)
    group = OptionGroup(parser.getgroup(*GROUP), naming)
    try:
        for add in declare:
            add(group)
    except (ValueError, argparse.ArgumentError) as exc:  # a clash pytest saw and we did not: never stop pytest
        raise pytest.UsageError(f"toolchaos could not register its options: {exc}") from None
    config.stash[naming_key] = naming
    return naming


def naming(config: pytest.Config) -> Naming:
    stash = getattr(config, "stash", None)  # a bare namespace standing in for a config (tests) has none
    return Naming(PRIMARY) if stash is None else stash.get(naming_key, Naming(PRIMARY))


def option(config: pytest.Config, name: str = "") -> Any:
    """The value of ``--chaos-NAME`` (or ``--toolchaos-NAME``) on this session's command line."""
    return getattr(config.option, naming(config).dest(name), None)


def clash_message(n: Naming) -> str:
    others = sorted(ep.name for ep in metadata.entry_points(group="pytest11") if ep.name != "toolchaos")
    owner = _guess_plugin(n.holder or "", others)
    choose = (f"-p no:{owner}" if owner else "-p no:NAME (pytest --trace-config lists the plugins' names)")
    return (f"toolchaos: --chaos belongs to another plugin ({n.holder}); toolchaos's options are "
            f"{n.flag()}, {n.flag('agent')}, {n.flag('certify')}, ... and its marker and fixture are "
            f"`toolchaos`. To give --chaos to toolchaos, disable the other plugin: {choose}; to disable "
            "toolchaos: -p no:toolchaos")


def _guess_plugin(holder: str, names: list[str]) -> str | None:
    """The entry-point name of the plugin whose option group is ``holder`` (agentic-chaos -> agentic_chaos)."""
    words = holder.lower().replace("-", "_").split()
    for name in names:
        if any(name.lower().replace("-", "_") in w for w in words):
            return name
    return None
