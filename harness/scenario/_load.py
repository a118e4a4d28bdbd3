"""From a scenario document to ``Scenario`` objects: one per document, or one per variant.

Loading goes through three stages, each of which points at the offending place in the
file:

1. **YAML** (``_yaml.load_yaml``): located plain data.
2. **Structure** (``_spec``): the pydantic models: types, required keys, unknown keys.
3. **Meaning**: tools, faults, policies and invariants are built by the harness's own
   constructors, found in their registries (``toolchaos.fake_tools.faults.FAULTS``,
   ``toolchaos.policies.POLICIES``, ``toolchaos.invariants.INVARIANTS``), so there is
   one validation path; their errors (``DefinitionError``, ``PolicyError``,
   ``ValueError``) are re-raised as a ``ScenarioError`` at the line and column of the
   field they name (their ``field``). Cross-checks that no single constructor can make
   happen there too.

Every error is a ``ScenarioError``: ``file:line:col: message`` followed by the source line
and a caret. No harness traceback is ever part of it.

``module:attr`` references (a custom agent, policy or invariant) import Python code; they
are refused unless the caller allows imports (pytest ini ``chaos_allow_imports = true``,
``toolchaos run --allow-imports``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolchaos import _agents as agents
from toolchaos import invariants as _invariants
from toolchaos._internal.files import MAX_LOG_BYTES, read_capped
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.types import ADVISORY
from toolchaos.errors import AgentRefError, ApiFaultError, FuzzSpecError, ScenarioError, did_you_mean
from toolchaos.fake_tools import FakeTool
from toolchaos.scenario._context import IMPORTS_HINT, Context, import_ref
from toolchaos.scenario._goal import build_goal, completed_by_goal
from toolchaos.scenario._invariants import build_expect, cross_check
from toolchaos.scenario._locate import split_path
from toolchaos.scenario._policies import build_policy, check_policy_args, check_policy_tools
from toolchaos.scenario._scenario import Expectation, Restart, Scenario, Useful
from toolchaos.scenario._spans import Span, YMap, plain, short
from toolchaos.scenario._spec import ProcessAgentSpec, RestartSpec, ScenarioSpec, UsefulSpec, validate
from toolchaos.scenario._tools import build_tools
from toolchaos.scenario._variants import variant_roots, with_tool_overrides
from toolchaos.scenario._yaml import load_yaml


def load_text(text: str, path: str | Path | None = None, *, allow_imports: bool = False) -> list[Scenario]:
    """The scenarios (one, or one per variant) of a scenario document."""
    p = Path(path) if path is not None else None
    root = load_yaml(text, p)
    if not isinstance(root, YMap):
        what = "an empty file" if root is None else ("a list" if isinstance(root, list) else f"{short(root)}")
        raise ScenarioError(f"a scenario file holds one mapping (id, title, task, tools, policy, expect); "
                            f"found {what}", p, getattr(root, "span", Span(1, 1, 1, 2)), text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    ctx = Context(p, text, root, allow_imports)
    spec = validate(ScenarioSpec, root, ctx, root)
    if not spec.variants:
        return [_build(spec, root, ctx, digest, None, root.span.line)]
    out: list[Scenario] = []
    for variant, merged, line in variant_roots(root, spec.variants, ctx):
        vctx = Context(p, text, merged, allow_imports)
        out.append(_build(validate(ScenarioSpec, merged, vctx, merged), merged, vctx, digest, variant, line))
    return out


# Checked on every run of every scenario: the run ended by the agent, nothing run after a refusal
# (the Python API's defaults), and every declared fault rule answering a call (no vacuous pass).
IMPLICIT = (*_invariants.DEFAULT, _invariants.FaultsFired())


def _build(spec: ScenarioSpec, root: YMap, ctx: Context, digest: str, variant: str | None, line: int) -> Scenario:
    if spec.severity == ADVISORY and not (spec.severity_why or "").strip():
        raise ctx.error("an advisory scenario is required by no level, so it must say why: add `severity_why:` "
                        "(what sound runtimes do instead), or give it a levelled severity (critical, major, minor)",
                        ["severity"], root=root)
    tools = build_tools(spec.tools, ctx, ["tools"], root)
    policy = build_policy(root["policy"], ctx, ["policy"], root)
    check_policy_tools(policy, tools, ctx, ["policy"], root)
    check_policy_args(policy, tools, ctx, ["policy"], root)
    expect = build_expect(spec.expect, ctx, ["expect"], "run", root)
    cross_check(expect, tools, ctx, ["expect"], root)
    agent = _agent(spec.agent, ctx, root)
    budgets = Budgets(**spec.budgets.model_dump(exclude_none=True)) if spec.budgets else None
    ceiling = Ceiling(**spec.ceiling.model_dump(exclude_none=True)) if spec.ceiling else None
    restart = None
    if spec.restart is not None:
        restart = _build_restart(spec.restart, spec.task, root, ctx, tools, policy, expect)
    if spec.goal is not None:
        expect = completed_by_goal(expect) + build_goal(spec.goal, ctx, root, tools, restart is not None)
    fuzz = _build_fuzz(root, tools, ctx) if "fuzz" in root else None
    api_faults = _build_api_faults(root, ctx) if root.get("api_faults") is not None else None
    digest = _with_dependencies(digest, ctx.depends)
    explicit = {e.name for e in expect if e.phase == "run"}
    for inv in IMPLICIT:
        if inv.name not in explicit:
            expect.append(Expectation(inv, f"(implicit) {inv.name}", None, "each"))
    return Scenario(
        id=spec.id, title=spec.title, description=spec.description.strip(), category=spec.category,
        severity=spec.severity, tags=tuple(spec.tags), seed=spec.seed, task=spec.task, agent=agent,
        tools=tools, policy=policy, expect=tuple(expect), budgets=budgets, ceiling=ceiling, restart=restart,
        variant=variant, path=ctx.path, content_hash=digest, line=line,
        severity_why=" ".join((spec.severity_why or "").split()) or None, spec=spec, fuzz=fuzz,
        world=plain(root.get("world")) or {}, useful=_useful(spec.useful), api_faults=api_faults,
        needs=_needs(spec), trials=spec.trials)


def _needs(spec: ScenarioSpec) -> tuple[str, ...]:
    """What the scenario declares it needs, with what its blocks imply: a restart needs one, a budget needs the
    agent to be told it, and one of virtual seconds the agent's clock to be the run's (every name once, in
    ``NEEDS``'s order)."""
    wanted = set(spec.needs or ())
    if spec.restart is not None:
        wanted.add("restart")
    if spec.budgets is not None:  # a budget the agent must be told: of virtual seconds, on the run's clock
        wanted.add("budgets")
        if spec.budgets.max_seconds is not None:
            wanted.add("virtual_time")
    return tuple(n for n in agents.NEEDS if n in wanted)


def _useful(spec: UsefulSpec | None) -> Useful | None:
    return Useful(spec.executions, spec.turns, " ".join(spec.why.split())) if spec else None


def _build_restart(rspec: RestartSpec, task: str, root: YMap, ctx: Context, tools: tuple[FakeTool, ...],
                   policy: Callable[[], Any], expect: list[Expectation]) -> Restart:
    """The second run (its tools, policy and task); ``expect_before`` is added to ``expect``."""
    rraw = root["restart"]
    rtools = tools
    if rspec.tools:
        rroot = with_tool_overrides(root, rraw)
        rtools = build_tools(validate(ScenarioSpec, rroot, ctx, rroot).tools, ctx, ["tools"], rroot)
    rpolicy = policy
    if rspec.policy is not None:
        rpolicy = build_policy(rraw["policy"], ctx, ["restart", "policy"], root)
        check_policy_tools(rpolicy, rtools, ctx, ["restart", "policy"], root)
        check_policy_args(rpolicy, rtools, ctx, ["restart", "policy"], root)
    restart = Restart(rspec.task or task, rpolicy, rtools)
    if rspec.expect_before:
        before = build_expect(rspec.expect_before, ctx, ["restart", "expect_before"], "before", root)
        cross_check(before, tools, ctx, ["restart", "expect_before"], root)
        expect += before
    return restart


def _with_dependencies(digest: str, files: Sequence[Path]) -> str:
    """The scenario's hash, covering the files it replays: editing a recorded log changes what runs."""
    if not files:
        return digest
    h = hashlib.sha256(digest.encode())
    for f in files:  # read already when the policy was built: a missing file is a located error there
        h.update(b"\x00" + hashlib.sha256(read_capped(f, MAX_LOG_BYTES)).hexdigest().encode())
    return h.hexdigest()


def _build_fuzz(root: YMap, tools: Sequence[FakeTool], ctx: Context) -> Any:
    """The ``fuzz:`` block, validated by the fuzzer's own ``FuzzSpec.from_data``."""
    from toolchaos.fuzzing import FuzzSpec  # imports hypothesis: only for a fuzz: block

    try:
        return FuzzSpec.from_data(plain(root["fuzz"]), [t.name for t in tools])
    except FuzzSpecError as exc:
        path = split_path(exc.field)
        names_key = "unknown key" in exc.problem
        raise ctx.error(f"{exc.field}: {exc.problem}", path, key=names_key, root=root) from None


def _agent(spec: Any, ctx: Context, root: YMap) -> str | agents.ProcessAgent | None:
    """The scenario's agent: a reference (checked), or a process agent whose ``cwd`` is read from the file's folder."""
    if spec is None:
        return None
    if not isinstance(spec, str | dict):
        raise ctx.error("agent: expected a reference (text) or a process agent (a mapping: command, env, cwd, task, "
                        "preset, pass_env)", ["agent"], root=root)
    if isinstance(spec, str) and not agents.is_process_ref(spec):
        _check_agent(spec, ctx, ["agent"], root)
        return spec
    if not ctx.allow_imports:
        raise ctx.error(f"agent: a process agent runs a command; {IMPORTS_HINT}", ["agent"], root=root)
    where: list[Any] = ["agent"]
    try:
        if isinstance(spec, str):
            agent = agents.process_ref(spec)
        else:
            data = validate(ProcessAgentSpec, root["agent"], ctx, root["agent"], prefix=["agent"])
            agent = agents.process_agent(data.model_dump(exclude_none=True))
    except AgentRefError as exc:
        key = split_path(exc.field)[-1] if exc.field else None
        if isinstance(spec, dict) and key in spec:
            where.append(key)
        raise ctx.error(str(exc), where, root=root) from None
    return agent.in_folder(ctx.base)


def _build_api_faults(root: YMap, ctx: Context) -> Any:
    """The ``api_faults:`` block, built by the wire's own ``ApiFaults`` (errors located at the block)."""
    from toolchaos.wire import ApiFaults  # respx (the wire's package): only for an api_faults: block

    try:
        return ApiFaults(plain(root["api_faults"]))
    except ApiFaultError as exc:
        raise ctx.error(f"api_faults: {exc}", ["api_faults"], root=root) from None


def _check_agent(agent: str, ctx: Context, where: list[Any], root: Any) -> None:
    """``agent:``: a built-in, or a reference of any kind (``KIND:`` named or recognised), imported when allowed."""
    try:
        kind, target = agents.split(agent)
    except AgentRefError as exc:
        raise ctx.error(f"agent: {exc}", where, root=root) from None
    if target.startswith("builtin:"):
        name = target.partition(":")[2]
        if name not in agents.BUILTIN:
            raise ctx.error(f"agent: no built-in agent {name!r}{did_you_mean(name, agents.BUILTIN)} "
                            f"(built-in: {', '.join('builtin:' + n for n in agents.BUILTIN)})", where, root=root)
        return
    obj = import_ref(target, ctx, where, "agent", root)
    found = agents.kinds_of_type(obj)
    named = agents.kinds()[kind] if kind is not None else None
    if named is not None and named.by_type and found != kind:
        raise ctx.error(f"agent {agent!r} names the kind {kind} ({named.help}), but it is a "
                        f"{type(obj).__module__}.{type(obj).__qualname__}", where, root=root)
    if found is None and not callable(obj):
        raise ctx.error(f"agent {agent!r} is not callable, nor an agent of a kind recognised by its type; "
                        f"{agents.accepted()}", where, root=root)
