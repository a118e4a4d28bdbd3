"""Scenario files (``*.chaos.yaml``): a safe YAML loader with line marks, the schema, the builder.

    from toolchaos.scenario import load_file
    for scenario in load_file("payment-lost.chaos.yaml"):
        ...

Mistakes are :class:`ScenarioError` with file, line, column, key and a "did you mean".
"""

from toolchaos.errors import ScenarioError
from toolchaos.scenario._loader import (
    CATEGORIES,
    SCENARIO_PATTERN,
    SEVERITIES,
    Expectation,
    Restart,
    Scenario,
    find_files,
    json_schema,
    load_file,
    load_text,
    load_yaml,
)

__all__ = [
    "CATEGORIES", "SCENARIO_PATTERN", "SEVERITIES", "Expectation", "Restart", "Scenario", "ScenarioError",
    "find_files", "json_schema", "load_file", "load_text", "load_yaml",
]
