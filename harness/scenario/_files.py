"""Scenario files on disk: reading one (size and encoding checked), finding them under a folder."""

from __future__ import annotations

from pathlib import Path

from toolchaos._internal.files import read_capped
from toolchaos.errors import ScenarioError
from toolchaos.scenario._load import load_text
from toolchaos.scenario._scenario import Scenario
from toolchaos.scenario._spans import Span
from toolchaos.scenario._yaml import MAX_BYTES

SCENARIO_PATTERN = "*.chaos.yaml"


def load_file(path: str | Path, *, allow_imports: bool = False) -> list[Scenario]:
    """The scenarios of one file (errors are ``ScenarioError`` naming the file, line and column)."""
    p = Path(str(path).replace("\x00", "\\0"))  # as the error shows it
    try:
        data = read_capped(path, MAX_BYTES)
    except OSError as exc:
        raise ScenarioError(f"cannot read the file ({exc.strerror or exc})", p) from None
    except ValueError as exc:  # a path the system cannot take
        raise ScenarioError(f"cannot read the file ({exc})", p) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ScenarioError("the file is not UTF-8 text", p, Span(line, col, line, col + 1)) from None
    return load_text(text, p, allow_imports=allow_imports)


def find_files(root: str | Path, pattern: str = SCENARIO_PATTERN) -> list[Path]:
    """Scenario files under a directory (or the file itself), sorted."""
    p = Path(root)
    if p.is_file():
        return [p]
    return sorted(f for f in p.rglob(pattern) if f.is_file())
