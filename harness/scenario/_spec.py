"""The structure of a scenario file: pydantic models of every section (types, required keys,
unknown keys with a "did you mean"), which also give ``toolchaos schema`` its JSON Schema.

A validation error becomes one ``ScenarioError`` at the offending key or value: a
misspelled key is reported before the required key it leaves missing.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from toolchaos._agents import NEEDS, TASK_MODES
from toolchaos._internal.limits import TOTAL_FACTOR
from toolchaos._internal.types import CATEGORIES as CATEGORIES  # re-exported: toolchaos.scenario names them
from toolchaos._internal.types import SEVERITIES as SEVERITIES
from toolchaos.errors import ScenarioError, did_you_mean
from toolchaos.scenario._context import Context
from toolchaos.scenario._locate import dotted, locate
from toolchaos.scenario._spans import NOWHERE, short


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# Placeholders replaced by ``json_schema`` (pydantic would try to resolve a ``$ref`` itself).
FAULTS_REF: Any = {"x-toolchaos": "FaultSchedule"}
AGENT_REF: Any = {"x-toolchaos": "Agent"}  # a reference (text) or a ProcessAgentSpec, checked by the loader
FAULT_REF: Any = {"x-toolchaos": "Fault"}
POLICY_REF: Any = {"x-toolchaos": "Policy"}
EXPECT_REF: Any = {"x-toolchaos": "Invariants"}
API_FAULTS_SCHEMA: Any = {"type": "object", "propertyNames": {"pattern": "^([1-9][0-9]*|always)$"}}


class WritesSpec(_Model):
    """What an applied call does to a world collection."""

    collection: str = Field(description="the collection written")
    key: str | None = Field(None, description="the argument naming the record: each applied call replaces it "
                                              "(without one, each applied call creates a record)")
    delete: bool = Field(False, description="the call removes the record named by key")


class ReadsSpec(_Model):
    """How a read tool answers from a world collection."""

    collection: str = Field(description="the collection read")
    by: str = Field(description="the argument whose value selects records")
    field: str | None = Field(None, description="the record field compared with it (default: the argument's name)")
    many: bool = Field(False, description="a list endpoint: every match, maybe none (default: the one latest "
                                          "record, not_found when there is none)")


class ToolSpec(_Model):
    """A tool: from the catalogue (by its name, no ``parameters``) or defined inline (with ``parameters``)."""

    description: str | None = Field(None, description="inline tools: what the model is told the tool does")
    parameters: dict[str, Any] | None = Field(
        None, description="inline tools: the argument schema (JSON Schema object); its presence makes the "
                          "tool inline rather than from the catalogue")
    side_effect: bool | None = Field(None, description="inline tools: every execution is a side effect")
    idempotency_key: str | None = Field(None, description="inline tools: the argument carrying the operation key")
    volatile: list[str] | None = Field(None, description="inline tools: arguments ignored by fingerprints")
    delivery: Literal["return", "raise"] | None = Field(
        None, description="faults returned as an error payload (default) or raised as exceptions")
    idempotency: Literal["honoured", "ignored"] | None = Field(
        None, description="what the API does with an idempotency key: honoured (default: the same key and "
                          "arguments get the original result, nothing applies again) or ignored (no dedupe)")
    honoured_after_applied: bool | None = Field(
        None, description="false: the API stores a key only once a response was delivered, so a retry after a "
                          "lost response applies again (default: true)")
    idempotency_ttl: float | None = Field(None, gt=0, description="virtual seconds a key is remembered "
                                                                  "(default: 86400, as Stripe)")
    writes: str | WritesSpec | None = Field(
        None, description="inline tools: the world collection an applied call writes (a name, or collection/key)")
    reads: ReadsSpec | None = Field(None, description="inline tools: the world collection the tool answers from")
    faults: Any = Field(None, description="fault schedule: rules (first match wins) or one fault for every call",
                        json_schema_extra=FAULTS_REF)
    default: Any = Field(None, description="the outcome when no rule matches (default: ok)",
                         json_schema_extra=FAULT_REF)


class UsefulSpec(_Model):
    """The work the scenario needs done; reports grade the rest of a run's executions and tokens as waste."""

    executions: int = Field(ge=0, description="tool executions worth making")
    turns: int = Field(ge=1, description="model turns worth asking, those a runtime cannot avoid included")
    why: str = Field(min_length=1, description="why that is the useful work")


class BudgetsSpec(_Model):
    """Limits handed to the agent's runtime as ``tools.budgets``."""

    max_steps: int | None = Field(None, ge=1, description="model turns")
    max_executions: int | None = Field(None, ge=1, description="tool executions")
    max_seconds: float | None = Field(None, gt=0, description="virtual wall-clock seconds")
    max_tokens: int | None = Field(None, ge=1, description="input + output tokens over the run")


class CeilingSpec(_Model):
    """The harness's own fuse (it ends a run, it does not judge it)."""

    max_tool_calls: int | None = Field(None, ge=1)
    max_model_turns: int | None = Field(None, ge=1)
    max_refusals: int | None = Field(None, ge=1)
    real_seconds: float | None = Field(None, gt=0, allow_inf_nan=False,
                                       description="the watchdog's no-progress limit: real seconds without a model "
                                                   "request, tool call or event while the agent could run")
    total_seconds: float | None = Field(None, gt=0, allow_inf_nan=False,
                                        description="the watchdog's total limit: real seconds of the run in all "
                                                    f"(default: {TOTAL_FACTOR:g} times the no-progress limit)")


_AT_LEAST_ONE = Annotated[int, Field(ge=1)]
# What a scenario may need of an agent's kind (toolchaos._agents.NEEDS, where each is explained).
NeedName = Literal["stop_report", "virtual_time", "budgets", "restart", "two_workers"]
_NEEDS_HELP = ("what the scenario cannot be judged without, of the agent's kind: " + "; ".join(
    f"{n.name}: {n.meaning}" for n in NEEDS.values()) + ". An agent whose kind lacks one gets N/A, not a verdict "
    "(a restart: block needs restart, a budgets: block needs budgets, a budget of max_seconds virtual_time too, "
    "without saying so)")


class GoalSpec(_Model):
    """What COMPLETED means for the task, from ground truth (the trace and the effect ledger).

    Checked on every run that ends COMPLETED (the invariant ``goal``): a COMPLETED claim without
    the goal met is a reporting failure (severity at most major), not a runaway loop.
    """

    successes: dict[str, _AT_LEAST_ONE] | None = Field(
        None, description="tool -> at least N executions answered with usable data (SUCCESS, not empty, "
                          "not malformed): e.g. the invoice fetched, the 12 pages read")
    effects: dict[str, _AT_LEAST_ONE] | None = Field(
        None, description="tool -> at least N side effects applied (the effect ledger): e.g. the email sent")


class RestartSpec(_Model):
    """Run the agent a second time after the first run ends, sharing its persistent ``store``.

    The second run meets the tools afresh (their schedules restart, with the overrides
    given here); ``expect`` of the scenario is checked over both runs together (one
    trace, one effect ledger), ``expect_before`` over the first run alone.
    """

    task: str | None = Field(None, description="task of the restarted run (default: the scenario's)")
    policy: Any = Field(None, description="model double of the restarted run (default: the scenario's)",
                        json_schema_extra=POLICY_REF)
    tools: dict[str, ToolSpec | None] | None = Field(
        None, description="per-tool overrides for the restarted run (merged into the scenario's tools)")
    expect_before: list[Any] | None = Field(None, description="invariants of the first run alone",
                                            json_schema_extra=EXPECT_REF)


_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
MAX_TRIALS = 10_000  # a suite of trials stays a suite: a larger count is a typo, said before anything runs


class ProcessAgentSpec(_Model):
    """An agent run as a child process: any program, any language (``toolchaos.process``)."""

    command: list[str] | str | None = Field(None, description="the program and its arguments (a list, or one line "
                                                              "split like a shell's); with a preset: the program "
                                                              "to use in its place")
    env: dict[str, str] | None = Field(None, description="variables added to its environment (they win)")
    cwd: str | None = Field(None, description="its working directory, relative to this file's folder (default: "
                                              "this file's folder)")
    task: Literal["arg", "stdin"] = Field("arg", description="how the task reaches it: the last argument, or its "
                                                             "standard input")
    preset: str | None = Field(None, description="a ready-made recipe: codex, claude-code, gemini-cli, opencode, "
                                                 "node-openai, node-anthropic, openai-agents-js, vercel-ai, python")
    pass_env: list[str] | None = Field(None, description="names of variables of the environment toolchaos runs in "
                                                         "that it gets as they are (it gets none otherwise beyond "
                                                         "PATH, the locale, TZ and TMPDIR)")


class VariantSpec(_Model):
    """One parametrised item: its id and the fields it overrides (``tools`` and ``budgets`` merge per key)."""

    id: str = Field(pattern=_ID, max_length=80)
    title: str | None = None
    description: str | None = None
    severity: Literal["critical", "major", "minor", "advisory"] | None = None
    severity_why: str | None = None
    tags: list[str] | None = None
    seed: int | None = Field(None, ge=0)
    task: str | None = None
    agent: Any = Field(None, json_schema_extra=AGENT_REF)
    goal: GoalSpec | None = None
    tools: dict[str, ToolSpec | None] | None = None
    policy: Any = Field(None, json_schema_extra=POLICY_REF)
    budgets: BudgetsSpec | None = None
    ceiling: CeilingSpec | None = None
    expect: list[Any] | None = Field(None, json_schema_extra=EXPECT_REF)
    world: dict[str, dict[str, dict[str, Any]] | list[dict[str, Any]]] | None = None
    useful: UsefulSpec | None = None
    needs: list[NeedName] | None = None
    restart: RestartSpec | None = None
    api_faults: Any = Field(None, json_schema_extra=API_FAULTS_SCHEMA)
    fuzz: Any = Field(None, json_schema_extra={"x-toolchaos": "Fuzz"})


class ScenarioSpec(_Model):
    """A chaos scenario: fake tools with faults, a model double, a task, and what must hold."""

    id: str = Field(pattern=_ID, max_length=100, description="the pytest item name; unique in a suite")
    title: str = Field(description="one line: what goes wrong")
    description: str = Field("", description="why it matters, what a correct runtime does")
    category: Literal["loops", "error_classes", "side_effects", "budgets", "legit", "resume", "custom"] = "custom"
    severity: Literal["critical", "major", "minor", "advisory"] = Field(
        "major", description="how bad a failure is; advisory: reported apart, required by no level")
    severity_why: str | None = Field(None, description="why the scenario has its severity; required for advisory")
    tags: list[str] = Field(default_factory=list)
    seed: int = Field(0, ge=0, description="same seed, byte-identical trace")
    trials: int = Field(1, ge=1, le=MAX_TRIALS,
                        description="how many times the scenario runs, trial i with seed + i (trial 0 is the run "
                                    "without trials); it passes only if every trial passes; the report gives "
                                    "pass^k and pass@k (--trials / --chaos-trials wins)")
    task: str = Field(description="what the agent is asked to do")
    agent: Any = Field(
        None, json_schema_extra=AGENT_REF,
        description="'builtin:NAME', 'package.module:attr' or 'KIND:package.module:attr': an agent of any kind "
                    "(in-process, sdk, openai-agents, pydantic-ai, langgraph; needs chaos_allow_imports), "
                    "'cmd:COMMAND' or 'preset:NAME', or a mapping {command, env, cwd, task, preset, pass_env}: a "
                    "process agent (needs chaos_allow_imports too); --chaos-agent on the command line wins")
    goal: GoalSpec | None = Field(None, description="what COMPLETED means for the task, checked from the trace and "
                                                    "the ledger on every run that ends COMPLETED")
    tools: dict[str, ToolSpec | None] = Field(min_length=1, description="tool name -> catalogue tool or inline tool")
    policy: Any = Field(description="the model double: a built-in policy with its parameters",
                        json_schema_extra=POLICY_REF)
    budgets: BudgetsSpec | None = None
    ceiling: CeilingSpec | None = None
    expect: list[Any] = Field(min_length=1, description="invariants that must hold after the run",
                              json_schema_extra=EXPECT_REF)
    world: dict[str, dict[str, dict[str, Any]] | list[dict[str, Any]]] | None = Field(
        None, description="the state behind the tools at the start: collection name -> its records, a mapping "
                          "by key or a list (the catalogue's: charges, emails, records, jobs)")
    useful: UsefulSpec | None = Field(None, description="the work the scenario needs done, for the waste grade")
    needs: list[NeedName] | None = Field(None, description=_NEEDS_HELP)
    restart: RestartSpec | None = None
    api_faults: Any = Field(None, description="faults of the model API itself, by model request number (1, 2, ...) "
                                              "or 'always': 429, 500, 503, 529, timeout, stream_cut, malformed; "
                                              "applied where the model is answered over HTTP (SDK agents, "
                                              "toolchaos serve)", json_schema_extra=API_FAULTS_SCHEMA)
    fuzz: Any = Field(None, description="fault-schedule fuzzing of this scenario (toolchaos.fuzzing.FuzzSpec)",
                      json_schema_extra={"x-toolchaos": "Fuzz"})
    variants: list[VariantSpec] | None = Field(None, min_length=1,
                                               description="parametrised items (each overrides some fields)")


_CHOICES: dict[str, Sequence[str]] = {"category": CATEGORIES, "severity": SEVERITIES, "delivery": ("return", "raise"),
                                      "task": TASK_MODES,  # a process agent's task: (the scenario's is text)
                                      "needs": tuple(NEEDS)}
_TYPE_WORDS = {
    "int_type": "an integer", "float_type": "a number", "string_type": "text", "bool_type": "true or false",
    "dict_type": "a mapping", "model_type": "a mapping", "list_type": "a list", "int_from_float": "an integer",
}


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = args[0] if args else None
    return tp


def _model_at(model: Any, loc: Sequence[Any]) -> Any:
    """The pydantic model class found by following ``loc`` from ``model`` (for 'known keys')."""
    cur: Any = model
    for _part in loc:
        cur = _unwrap(cur)
        if isinstance(cur, type) and issubclass(cur, BaseModel):
            f = cur.model_fields.get(str(_part))
            if f is None:
                return None
            cur = f.annotation
        elif typing.get_origin(cur) in (dict, list):
            cur = typing.get_args(cur)[-1]
        else:
            return None
    return _unwrap(cur)


def _key_of(loc: Sequence[Any]) -> str:
    """The key a value sits under: a list item's is its list's (``needs[1]``: ``needs``)."""
    return next((str(p) for p in reversed(loc) if not isinstance(p, int)), "")


def _structure_error(exc: ValidationError, ctx: Context, model: Any, root: Any, prefix: Sequence[Any]) -> ScenarioError:
    errors = exc.errors(include_url=False)
    rank = {"extra_forbidden": 0, "missing": 2}  # a misspelled key explains the missing one: report it first

    def order(e: Any) -> tuple[int, int, int]:
        span = locate(root, [p for p in e["loc"] if p != "[key]"]) or NOWHERE
        return rank.get(e["type"], 1), span.line, span.col

    err = min(errors, key=order)
    loc = [p for p in err["loc"] if p != "[key]"]
    kind = err["type"]
    where = dotted([*prefix, *loc])
    value = err.get("input")
    if kind == "extra_forbidden":
        owner = _model_at(model, loc[:-1])
        known = list(owner.model_fields) if isinstance(owner, type) and issubclass(owner, BaseModel) else []
        name = loc[-1]
        parent = dotted([*prefix, *loc[:-1]])
        msg = (f"unknown key {name!r} in {parent}{did_you_mean(name, known)}"
               + (f" (known: {', '.join(known)})" if known else ""))
        return ctx.error(msg, loc, key=True, root=root)
    if kind == "missing":
        name = loc[-1]
        parent = dotted([*prefix, *loc[:-1]])
        owner = _model_at(model, loc[:-1])
        doc = ""
        if isinstance(owner, type) and issubclass(owner, BaseModel):
            f = owner.model_fields.get(str(name))
            doc = f" ({f.description})" if f is not None and f.description else ""
        return ctx.error(f"{parent} is missing the required key {name!r}{doc}", loc[:-1], root=root)
    if kind in ("literal_error", "enum"):
        choices = _CHOICES.get(_key_of(loc), ())
        got = repr(value) if isinstance(value, str) else short(value)
        msg = f"{where}: expected one of {', '.join(choices)}; got {got}{did_you_mean(value, choices)}"
        return ctx.error(msg, loc, root=root)
    if kind in _TYPE_WORDS:
        return ctx.error(f"{where}: expected {_TYPE_WORDS[kind]}, got {short(value)}", loc, root=root)
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        sign = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        limit = next(iter((err.get("ctx") or {}).values()), "?")
        return ctx.error(f"{where}: expected a number {sign} {limit}, got {short(value)}", loc, root=root)
    if kind == "too_short":
        return ctx.error(f"{where}: must not be empty", loc, root=root)
    if kind == "string_pattern_mismatch":
        return ctx.error(f"{where}: {value!r} is not a valid id: use letters, digits, '-', '_' and '.', starting "
                         f"with a letter or digit", loc, root=root)
    if kind == "string_too_long":
        return ctx.error(f"{where}: too long ({len(str(value))} characters)", loc, root=root)
    return ctx.error(f"{where}: {err['msg'].lower()} (got {short(value)})", loc, root=root)


def validate(model: Any, data: Any, ctx: Context, root: Any, prefix: Sequence[Any] = ()) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _structure_error(exc, ctx, model, root, prefix) from None
