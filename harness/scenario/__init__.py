"""Scenario files (``*.chaos.yaml``): a safe YAML loader with line marks, the schema, the builder.

    from toolchaos.scenario import load_file
    for scenario in load_file("payment-lost.chaos.yaml"):
        ...

Mistakes are :class:`ScenarioError` with file, line, column, key and a "did you mean".

The modules, one concern each: ``_yaml`` (the safe loader), ``_spans`` (located data and
the error), ``_locate`` (finding a path in it), ``_spec`` (the pydantic models),
``_context`` (what building shares), ``_tools`` / ``_policies`` / ``_invariants``
(building each from its registry), ``_variants`` (merging), ``_load`` (a document to
scenarios), ``_files`` (files on disk), ``_jsonschema`` (``toolchaos schema``).
"""

from toolchaos.errors import ScenarioError
from toolchaos.scenario._files import SCENARIO_PATTERN, find_files, load_file
from toolchaos.scenario._jsonschema import SCHEMA_URL, json_schema
from toolchaos.scenario._load import load_text
from toolchaos.scenario._scenario import Expectation, Restart, Scenario, Useful, expand_trials
from toolchaos.scenario._spec import CATEGORIES, MAX_TRIALS, SEVERITIES
from toolchaos.scenario._yaml import load_yaml

__all__ = [
    "CATEGORIES", "MAX_TRIALS", "SCENARIO_PATTERN", "SCHEMA_URL", "SEVERITIES", "Expectation", "Restart", "Scenario",
    "ScenarioError", "Useful", "expand_trials", "find_files", "json_schema", "load_file", "load_text", "load_yaml",
]
