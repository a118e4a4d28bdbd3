"""The ``toolchaos`` command line.

``COMMANDS`` is the table of sub-commands: each lives in its own module
``toolchaos.cli._<name>`` exposing ``HELP`` (one line), ``EXAMPLES`` (text),
``add_arguments(parser)`` and ``run(args) -> int`` (the ``Command`` protocol). What only
running a command needs is loaded when it runs, so ``toolchaos --help`` does not pay for it:
the scenario loader's YAML and pydantic through ``toolchaos.cli._lazy``, the fuzzer's
hypothesis (``replay --scenario``) and the serve extra by the one command that uses them.

Errors are one clear line on stderr and a non-zero exit, never a traceback: every
``toolchaos.errors.UserError`` (bad agent reference, scenario, tool definition, policy,
report level, command usage, ...) exits 2 (a ``CommandError`` with its own ``code``); an
unexpected exception is one "internal error" line and exit 3 (``TOOLCHAOS_DEBUG=1`` shows
the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn, Protocol

from toolchaos._internal.version import VERSION
from toolchaos.cli import _analyze, _certify, _diff, _list, _mcp, _new, _replay, _report, _run, _schema, _serve
from toolchaos.errors import CommandError, UserError


class Command(Protocol):
    """What the command line needs of a sub-command's module."""

    HELP: str  # one line
    EXAMPLES: str  # indented command lines, shown under "examples:" in the command's --help

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


COMMANDS: dict[str, Command] = {
    "certify": _certify,
    "run": _run,
    "replay": _replay,
    "analyze": _analyze,
    "diff": _diff,
    "report": _report,
    "schema": _schema,
    "new": _new,
    "list": _list,
    "serve": _serve,
    "mcp": _mcp,
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and a pointer to --help), not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


EPILOG = """\
examples:
  toolchaos certify --agent mypkg.agent:run --report out/ --require critical
  toolchaos run scenarios/ --agent builtin:guarded
  toolchaos new charge_payment timeout -o payment-timeout.chaos.yaml
  toolchaos list faults
  toolchaos diff last-release/ chaos-report/ --fail-on-regression
  toolchaos report merge shard-1/ shard-2/ shard-3/ --out chaos-report/
  pytest --chaos --chaos-report=out/ --chaos-require=major

Run `toolchaos COMMAND --help` for a command's options and examples."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toolchaos", description="Chaos tests for the tool loops of AI agents.",
                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"toolchaos {VERSION}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.HELP, description=command.HELP, epilog=f"examples:\n{command.EXAMPLES}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(p)
    return parser


def _import_from_cwd() -> None:
    """Agent references (``myapp.agent:run``) import from the current directory, as uvicorn and celery do.

    The ``toolchaos`` console script, unlike ``python -m toolchaos``, has no current directory on
    ``sys.path``; so the printed reproduce lines (``toolchaos run ...``) work as printed.
    """
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 2
    name = f"toolchaos {args.command}"
    _import_from_cwd()
    try:
        return int(COMMANDS[args.command].run(args))
    except CommandError as exc:  # the command's own words, as written (they may span lines)
        print(f"{name}: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `toolchaos list | head`: the reader left; not an error worth a word
        sys.stderr.close()
        return 0
    except UserError as exc:  # "your input is wrong", whichever module found it
        print(f"{name}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"{name}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except Exception as exc:
        if os.environ.get("TOOLCHAOS_DEBUG"):
            raise
        print(f"{name}: internal error: {type(exc).__name__}: {_one_line(exc)} "
              f"(set TOOLCHAOS_DEBUG=1 for the traceback)", file=sys.stderr)
        return 3


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 400 else text[:399] + "…"
