"""``toolchaos schema``: the JSON Schema of a scenario file.

Editors that speak the YAML language server (VS Code's YAML extension, JetBrains IDEs,
Neovim with yaml-language-server) give completion and validation for scenario files
whose first line names the schema::

    # yaml-language-server: $schema=./scenario.schema.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from toolchaos.cli import _lazy
from toolchaos.errors import CommandError

HELP = "print the JSON Schema of scenario files (for editor completion and validation)"
EXAMPLES = """\
  toolchaos schema                              # print it
  toolchaos schema --output scenario.schema.json
  # then, as the first line of a scenario file:
  # yaml-language-server: $schema=./scenario.schema.json"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", "-o", metavar="FILE", help="write the schema to FILE instead of printing it")


def render() -> str:
    return json.dumps(_lazy.json_schema(), indent=2, sort_keys=True) + "\n"


def run(args: argparse.Namespace) -> int:
    text = render()
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
