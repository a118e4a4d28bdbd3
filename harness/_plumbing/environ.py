"""What a process agent takes from its caller's environment: an allowlist, and the names the user passes.

A process agent's child starts from an empty environment, not the caller's: the caller's
tokens (``GITHUB_TOKEN``, ``HF_TOKEN``, a cloud login) must not reach the agent under test. It
gets only the variables a program needs to start and behave as it would at a prompt
(``ALLOWED``: where programs are, the locale, the time zone, the temporary folder), the
settings of a coverage measurement of the session, and the names the user passes by name
(``pass_env``: ``--chaos-pass-env``, ``toolchaos run --pass-env``, ``RunSpec.pass_env``, a
process agent's own ``pass_env``). The harness's own variables (base URLs, fake keys, the MCP
URL, a temporary HOME) are added on top by the launch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from toolchaos.errors import UserError

__all__ = ["ALLOWED", "ALLOWED_PREFIXES", "check_names", "inherited", "split_names"]

# PATH: the program and what it runs are found there (a virtualenv's python finds its packages
# from its own path, without VIRTUAL_ENV). LANG, LANGUAGE, LC_*: text encoding and messages.
# TZ: the harness's time zone (UTC during a run: toolchaos._plumbing.clock). TMPDIR: a
# temporary folder the platform allows (macOS sets one per user). COVERAGE_PROCESS_START and
# COVERAGE_PROCESS_CONFIG: coverage.py's settings for measuring subprocesses, so a Python agent
# under `coverage run -m pytest` is measured too.
ALLOWED = ("PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")
ALLOWED_PREFIXES = ("LC_",)
_SEPARATORS = re.compile(r"[,\s]+")
_NOT_IN_A_NAME = re.compile(r"[=,\s\0]")


def split_names(values: Iterable[str], field: str = "pass_env") -> tuple[str, ...]:
    """Names given as ``A,B`` or ``A B``, one value or several (a repeated option), in order, once each."""
    return check_names([name for value in values for name in _SEPARATORS.split(value) if name], field)


def check_names(names: object, field: str = "pass_env") -> tuple[str, ...]:
    """Variable names as a tuple, in order, once each; a clear error for anything that is not one."""
    if isinstance(names, str):  # one name, as a convenience
        names = (names,)
    if not isinstance(names, Iterable):
        raise UserError(f"{field}: expected a list of environment variable names, got {names!r}", field=field)
    out: list[str] = []
    for name in names:
        if not isinstance(name, str) or not name or _NOT_IN_A_NAME.search(name):
            raise UserError(f"{field}: {name!r} is not an environment variable name; give names such as "
                            f"GITHUB_TOKEN, one per item (not NAME=value: set values with the agent's env:)",
                            field=field)
        if name not in out:
            out.append(name)
    return tuple(out)


def inherited(pass_env: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's variables a process agent gets: the allowlist and ``pass_env``, those that are set."""
    source = os.environ if environ is None else environ
    wanted = set(pass_env)
    return {k: v for k, v in source.items() if k in ALLOWED or k.startswith(ALLOWED_PREFIXES) or k in wanted}
