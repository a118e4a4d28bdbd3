"""The ``toolchaos`` command line.

Each sub-command lives in its own module ``harness._cmd_<name>`` exposing
``HELP`` (one line), ``EXAMPLES`` (text), ``add_arguments(parser)`` and
``run(args) -> int``. Errors are one clear line on stderr and a non-zero exit,
never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

# name -> module; a command whose module is absent is simply not offered.
COMMANDS = {
    "certify": "harness._cmd_certify",
    "run": "harness._cmd_run",
    "replay": "harness._cmd_replay",
    "analyze": "harness._cmd_analyze",
    "schema": "harness._cmd_schema",
    "new": "harness._cmd_new",
    "list": "harness._cmd_list",
}


class CommandError(Exception):
    """A user error: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def _modules() -> dict[str, Any]:
    found = {}
    for name, path in COMMANDS.items():
        try:
            found[name] = importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if exc.name != path:
                raise
    return found


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Any]]:
    parser = argparse.ArgumentParser(
        prog="toolchaos", description="Chaos tests for the tool loops of AI agents.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  toolchaos certify --agent builtin:guarded\n  toolchaos list faults")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = _modules()
    for name, mod in modules.items():
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP, epilog=f"examples:\n{mod.EXAMPLES}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
    return parser, modules


def main(argv: list[str] | None = None) -> int:
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    try:
        return int(modules[args.command].run(args))
    except CommandError as exc:
        print(f"toolchaos {args.command}: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print(f"toolchaos {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
