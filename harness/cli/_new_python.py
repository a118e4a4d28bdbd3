"""``toolchaos new TOOL FAULT --python-tool NAME``: a fake tool of your own, in Python, and its test.

The scaffold is two files a user's test suite runs as they are: ``fake_NAME.py`` defines the tool
with ``toolchaos.fake_tools.fake_tool`` (the catalogue TOOL's arguments, side effect, idempotency
key and world access, under the user's name, with the fault template's schedule), and
``test_NAME_FAULT.py`` is a chaos test of it (the template's task, model behaviour and
invariants, and ``faults_fired``: a test whose fault never fired proves nothing). What to write
comes from the scenario scaffold (``_new.py``) as a ``Sketch``; this module only writes Python.
"""

from __future__ import annotations

import pprint
import textwrap
from dataclasses import dataclass
from typing import Any

from toolchaos.fake_tools import FakeTool


@dataclass(frozen=True)
class Sketch:
    """What the scaffold holds, whatever it is written as."""

    command: str  # the `toolchaos new ...` line that made it
    name: str  # the user's tool
    shape: FakeTool  # the catalogue tool it is shaped like
    fault: str
    title: str
    why: str
    faults: Any  # the tool's fault schedule, as plain data
    default: Any  # the outcome when no rule matches (None: the schedule is the whole story)
    policy: str  # stubborn | stubborn_never | poll_until | paginate
    args: dict[str, Any]  # what the model double sends
    expect: list[Any]  # invariants as plain data: "name" or {name: parameters}
    task: str
    world: dict[str, Any] | None = None  # the collections the run starts from
    api: tuple[tuple[str, Any], ...] = ()  # fake_tool's idempotency settings the command set


API_NOTES = {"idempotency": "what the API does with a key: honoured (a replay) or ignored",
             "honoured_after_applied": "a key is stored only once a response was delivered"}


def _made_by(s: Sketch) -> list[str]:
    return ["Scaffolded by this command; edit freely:", "", f"    {s.command}"]


def module_name(name: str) -> str:
    return f"fake_{name}"


def test_name(name: str, fault: str) -> str:
    return f"test_{name}_{fault}"


def render(sketch: Sketch) -> dict[str, str]:
    """File name -> text: the tool's module and its test."""
    return {f"{module_name(sketch.name)}.py": _module(sketch),
            f"{test_name(sketch.name, sketch.fault)}.py": _test(sketch)}


def _value(value: Any, indent: int) -> str:
    """A Python literal, wrapped to fit the line under ``indent`` spaces (continuation lines indented too)."""
    text = pprint.pformat(value, width=110 - indent, sort_dicts=False)
    return text.replace("\n", "\n" + " " * indent)


def _module(s: Sketch) -> str:
    shape = s.shape
    lines = [
        f'"""{s.name}: a fake tool of your own, shaped like the catalogue\'s {shape.name}.',
        "",
        "Its arguments are validated on every call, as the real API would; its fault schedule answers",
        "each call (rules by call, calls, match or probability, the first match wins, then the default;",
        "`toolchaos list faults` shows every fault).",
        "",
        *_made_by(s),
        '"""',
        "",
        "from toolchaos.fake_tools import fake_tool",
        "",
        f"{s.name} = fake_tool(",
        f"    {s.name!r},",
        f"    {_value(shape.description, 4)},",
        f"    {_value(dict(shape.parameters), 4)},",
    ]
    if shape.side_effect:
        lines.append("    side_effect=True,  # every execution goes to the effect ledger")
    if shape.idempotency_key is not None:
        lines.append(f"    idempotency_key={shape.idempotency_key!r},  # the argument carrying the operation key")
    lines += [f"    {key}={value!r},  # {API_NOTES[key]}" for key, value in s.api]
    if shape.writes is not None:
        lines.append(f"    writes={_value(_given(shape.writes.spec(), key=None, delete=False), 4)},"
                     "  # an applied call leaves a record in the world")
    if shape.reads is not None:
        spec = shape.reads.spec()
        lines.append(f"    reads={_value(_given(spec, field=spec['by'], many=False), 4)},  # the answer is the world's")
    lines.append(f"    faults={_value(s.faults, 4)},")
    if s.default is not None:
        lines.append(f"    default={_value(s.default, 4)},  # when no rule matches")
    return "\n".join([*lines, ")", ""])


def _given(spec: dict[str, Any], **defaults: Any) -> dict[str, Any]:
    """The keys of a world spec that differ from their defaults: what a reader needs to see."""
    return {key: value for key, value in spec.items() if key not in defaults or defaults[key] != value}


def _invariant(spec: Any) -> str:
    if isinstance(spec, str):
        return f"inv.{spec}()"
    ((name, params),) = spec.items()
    if isinstance(params, dict):
        given = ", ".join(f"{key}={value!r}" for key, value in params.items())
    elif isinstance(params, list):
        given = ", ".join(repr(value) for value in params)
    else:
        given = repr(params)
    return f"inv.{name}({given})"


def _policy(s: Sketch) -> str:
    if s.policy == "stubborn_never":  # never satisfied: the model keeps asking
        return f"chaos.policies.stubborn({s.name!r}, args, until='never')"
    return f"chaos.policies.{s.policy}({s.name!r}, args)"


def _test(s: Sketch) -> str:
    why = textwrap.wrap(s.why, width=100)
    run = [f"task={s.task!r},", f"tools=[{s.name}],", f"policy={_policy(s)},"]
    given = ["    # the call the model double asks for", f"    args = {_value(s.args, 11)}"]
    if s.world is not None:
        given += ["    # the state behind the tools at the start: collection -> records",
                  f"    world = {_value(s.world, 12)}"]
        run.append("world=world,")
    expect = [f"{_invariant(e)}," for e in s.expect]
    expect.append("inv.faults_fired(),  # a test whose fault never fired proves nothing")
    lines = [
        f'"""{s.title}.', "", *why, "", *_made_by(s), '"""', "",
        "import pytest", "from toolchaos import invariants as inv", "",
        f"from {module_name(s.name)} import {s.name}", "", "",
        "# The agent under test: pytest --chaos --chaos-agent=yourpkg.agent:run, or @pytest.mark.chaos(agent=run_agent);",
        "# with neither, the reference runtime builtin:guarded.",
        "@pytest.mark.chaos",
        f"def {test_name(s.name, s.fault)}(chaos):",
        *given,
        "    chaos.run(",
        *[f"        {line}" for line in run],
        "        expect=[",
        *[f"            {line}" for line in expect],
        "        ],",
        "    )",
    ]
    return "\n".join([*lines, ""])
