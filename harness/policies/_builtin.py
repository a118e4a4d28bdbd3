"""Policies: the model double.

A policy sees what a model would see (``ModelView``: the task, the tool results or
errors the agent fed back, refusals from the runtime) and returns the next turn
(``Decision``). Policies keep per-run notes in ``view.memory`` and draw randomness only
from ``view.rng``, so the same seed replays the same conversation.

The misbehaving policies reproduce how real models loop (stubborn repeat, A-B-A-B,
jitter, paraphrase); they stop when the runtime refuses a call, as most models do when
told so, unless wrapped in ``ignores_refusals``. The well-behaved ones (poll_until,
paginate, obedient) are the legitimate repetition a guard must not kill.

Each built-in policy is registered in ``POLICIES`` (``toolchaos.fake_tools.registry``)
through its public constructor: its name, parameters (its class's and its bases'),
help (the class docstring's first line) and plain-data spelling (``to_data``) are
what the scenario loader, the JSON Schema, ``toolchaos list`` and the fuzzer read, and
``fuzz=``: how the fuzzer draws it over a run's tools (``toolchaos.policies._fuzz``), or
None: never drawn. A parameter typed ``Policy`` takes a policy (a file writes it as a
nested policy); one typed ``Path`` names a file (relative to the scenario that names it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from toolchaos._internal.model import Decision, Feedback, ModelView
from toolchaos.errors import LogFormatError, PolicyError
from toolchaos.fake_tools.registry import Declared, Kind, Param, Registry, signature_params
from toolchaos.logs import FORMATS, conversation
from toolchaos.policies import _fuzz


@runtime_checkable
class Policy(Protocol):
    name: str

    def decide(self, view: ModelView) -> Decision: ...


def _needs_met(fb: Feedback, needs: Sequence[str]) -> bool:
    if not needs:
        return True
    data = fb.content
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return False
    for path in needs:
        cur = data
        for part in path.split("."):
            if not isinstance(cur, Mapping) or part not in cur:
                return False
            cur = cur[part]
    return True


# Loops, not generator expressions: each is asked on every model turn of every run.
def satisfied(feedback: Sequence[Feedback], needs: Sequence[str] = ()) -> bool:
    """Did the last results give the model what it wanted (usable, non-empty data)?"""
    if not feedback:
        return False
    for fb in feedback:
        if fb.duplicate:  # refused, but its effect was applied before: the work is done
            continue
        if not fb.ok or (needs and not _needs_met(fb, needs)):
            return False
    return True


def refused(feedback: Sequence[Feedback]) -> Feedback | None:
    """The first refusal the model stops at: not one of a duplicate whose effect was already applied.

    That one says the work is done, as a ledger's recorded result does, so the model carries on
    with its script: a runtime may refuse a duplicate or answer it with data, judged the same.
    """
    for fb in feedback:
        if fb.kind == "refused" and not fb.duplicate:
            return fb
    return None


def _stop_text(fb: Feedback) -> str:
    return f"I cannot complete the task: the runtime refused {fb.tool} ({fb.code or 'refused'})."


class _Base:
    """Shared behaviour: respect refusals (unless told not to), cap turns."""

    name = "policy"

    def __init__(self, *, max_turns: int | None = None, respect_refusals: bool = True,
                 side_answer: str | dict[str, Any] | None = None, give_up: float = 0.0) -> None:
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise PolicyError(f"{self.name}: max_turns must be a positive integer, got {max_turns!r}",
                              field="max_turns")
        if isinstance(give_up, bool) or not isinstance(give_up, (int, float)) or not 0 <= give_up <= 1:
            raise PolicyError(f"{self.name}: give_up is a probability from 0 to 1 (the chance, each turn, that "
                              f"the model gives up), got {give_up!r}", field="give_up")
        self.max_turns = max_turns
        # A model that sometimes gives up: each turn, with this chance drawn from the run's seed, it answers
        # instead of acting. 0 (the default) draws nothing, so the runs of every other policy stay as they were.
        self.give_up = float(give_up)
        self.respect_refusals = respect_refusals
        # What the model double answers a side request with (a title, a loop check; docs/serve.md): never a turn
        self.side_answer = _check_side_answer(self.name, side_answer)

    def decide(self, view: ModelView) -> Decision:
        if self.respect_refusals:
            fb = refused(view.feedback)
            if fb is not None:
                return Decision.final(_stop_text(fb))
        if self.max_turns is not None and view.step > self.max_turns:
            return Decision.final("I give up: too many attempts.")
        if self.give_up and view.rng.random() < self.give_up:  # seeded: each trial (seed + i) gives up elsewhere
            return Decision.final("I give up on this task.")
        return self.next(view)

    def next(self, view: ModelView) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError

    def tools(self) -> set[str]:
        """Tool names this policy will call (checked against the scenario's tools)."""
        return set()

    def known_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """Calls this policy will make whose arguments it knows before the run (checked against the tools'
        schemas when a scenario loads); a policy that decides them as it goes knows none."""
        return []

    def to_data(self) -> Any:  # pragma: no cover - abstract
        """The plain-data (YAML) spelling: the ``policy:`` section that builds this policy again."""
        raise NotImplementedError

    def _turn_cap(self) -> dict[str, Any]:
        """The parameters every policy takes, as set (max_turns, side_answer, give_up)."""
        out: dict[str, Any] = {} if self.max_turns is None else {"max_turns": self.max_turns}
        if self.give_up:
            out["give_up"] = self.give_up
        if self.side_answer is not None:
            out["side_answer"] = self.side_answer
        return out

    def __repr__(self) -> str:
        return f"<policy {self.name}>"


def _check_side_answer(policy: str, value: Any) -> str | dict[str, Any] | None:
    """A side request's answer: a text, or ``{text, values}`` (values: property name -> value, for a schema)."""
    if value is None or isinstance(value, str):
        return value
    if (isinstance(value, Mapping) and value and set(value) <= {"text", "values"}
            and isinstance(value.get("text", ""), str) and isinstance(value.get("values", {}), Mapping)):
        return {k: dict(v) if k == "values" else v for k, v in value.items()}
    raise PolicyError(f"{policy}: side_answer must be a text, or a mapping with text (a string) and values "
                      f"(property name -> value, for a request with a response schema), got {value!r}",
                      field="side_answer")


def _check_draws(kind: Kind[Any], draws: Any) -> None:
    if draws is not None and not callable(draws):
        raise ValueError("expected a function (kind name, tools) -> the specs drawn, or None")


# The strategies draw the kinds with a ``fuzz=`` function in the order they are registered here,
# simplest first (a failing case shrinks toward the earlier ones); the fuzzer numbers the specs
# drawn by that order, so moving a drawn kind changes what a saved example or a seed replays.
POLICIES: Registry[Policy] = Registry("policy", key="name", declares=(
    Declared("fuzz", "how the fuzzer draws it: a function (kind name, tools) -> the policy specs drawn, "
                     "simplest first (see toolchaos.policies._fuzz); or None: never drawn", _check_draws),
))


def _init_params(cls: type, hide: Sequence[str] = ()) -> tuple[Param, ...]:
    """A built-in policy's parameters: its class's own, then its bases' up to ``_Base``."""
    out: dict[str, Param] = {}
    for klass in cls.__mro__[: cls.__mro__.index(_Base) + 1]:
        init = klass.__dict__.get("__init__")
        if init is not None:
            for param in signature_params(init, hide):
                if not param.variadic:
                    out.setdefault(param.name, param)
    return tuple(out.values())


def _decisions_data(decisions: Sequence[Decision]) -> list[dict[str, Any]]:
    """Model turns as ``scripted`` steps."""
    out: list[dict[str, Any]] = []
    for d in decisions:
        if not d.calls:
            out.append({"final": d.text or ""})
        elif len(d.calls) == 1:
            out.append({"call": d.calls[0][0], "args": dict(d.calls[0][1])})
        else:
            out.append({"calls": [{"call": n, "args": dict(a)} for n, a in d.calls]})
    return out


def _check_args(policy: str, args: Any) -> dict[str, Any]:
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise PolicyError(f"{policy}: args must be a mapping, got {args!r}", field="args")
    return dict(args)


def _check_tool(policy: str, tool: Any) -> str:
    if not isinstance(tool, str) or not tool:
        raise PolicyError(f"{policy}: tool must be a tool's name, got {tool!r}", field="tool")
    return tool


def _check_until(policy: str, until: str) -> str:
    if until not in ("success", "never"):
        raise PolicyError(f"{policy}: until must be 'success' or 'never', got {until!r}", field="until")
    return until


class Scripted(_Base):
    """An explicit list of turns: ``{"call": name, "args": {...}}``, ``{"calls": [...]}``, ``{"final": text}``."""

    name = "scripted"

    def __init__(self, steps: Sequence[Any], **kw: Any) -> None:
        super().__init__(**kw)
        self.steps = [self._parse(i, s) for i, s in enumerate(steps)]

    def _parse(self, i: int, step: Any) -> Decision:
        if isinstance(step, Decision):
            return step
        if isinstance(step, Mapping):
            if "final" in step:
                return Decision.final(str(step["final"]))
            if "call" in step:
                return Decision.call(str(step["call"]), _check_args(self.name, step.get("args")))
            if "calls" in step and isinstance(step["calls"], list):
                return Decision.many([(str(c["call"]), _check_args(self.name, c.get("args"))) for c in step["calls"]])
        raise PolicyError(f"scripted: steps[{i}] must be {{call: name, args: {{...}}}}, {{calls: [...]}}"
                          f" or {{final: text}}; got {step!r}", field="steps")

    def next(self, view: ModelView) -> Decision:
        i = view.step - 1
        return self.steps[i] if i < len(self.steps) else Decision.final("Done.")

    def tools(self) -> set[str]:
        return {n for d in self.steps for n, _ in d.calls}

    def known_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [c for d in self.steps for c in d.calls]

    def to_data(self) -> Any:
        return {"scripted": {"steps": _decisions_data(self.steps), **self._turn_cap()}}


class Stubborn(_Base):
    """The same call every turn until the result satisfies it (or forever with until=never)."""

    name = "stubborn"

    def __init__(self, tool: str, args: Mapping[str, Any] | None = None, *, until: str = "success",
                 needs: Sequence[str] = (), **kw: Any) -> None:
        super().__init__(**kw)
        self.tool, self.args = _check_tool(self.name, tool), _check_args(self.name, args)
        self.until = _check_until(self.name, until)
        self.needs = tuple([needs] if isinstance(needs, str) else needs)

    def next(self, view: ModelView) -> Decision:
        if self.until == "success" and satisfied(view.feedback, self.needs):
            return Decision.final(f"Here is the result of {self.tool}.")
        return Decision.call(self.tool, self.vary(view))

    def vary(self, view: ModelView) -> dict[str, Any]:
        return dict(self.args)

    def tools(self) -> set[str]:
        return {self.tool}

    def known_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(self.tool, dict(self.args))]

    def to_data(self) -> Any:  # a Jitter too, under its own name
        params: dict[str, Any] = {"tool": self.tool, "args": dict(self.args), "until": self.until}
        if self.needs:
            params["needs"] = list(self.needs)
        return {self.name: {**params, **self._turn_cap()}}


class Jitter(Stubborn):
    """The same call with meaningless differences: key order, whitespace, a fresh request id."""

    name = "jitter"

    def vary(self, view: ModelView) -> dict[str, Any]:
        rng = view.rng
        items = list(self.args.items())
        rng.shuffle(items)
        out: dict[str, Any] = {}
        for k, v in items:
            if isinstance(v, str):
                v = " " * rng.randrange(2) + v.replace(" ", "  " if rng.random() < 0.5 else " ") + " " * rng.randrange(2)
            out[k] = v
        out["request_id"] = f"req_{rng.getrandbits(48):012x}"
        return out


# Ordinary rewordings a person would type, written for this policy: not taken from any
# runtime's list of words to ignore, so only a runtime that judges what the calls return (the
# same documents again) catches the loop, not one tuned to these templates.
_PARAPHRASES = ("{q}", "what is our {q}", "how does the {q} work", "where is the {q} written down", "{q} rules",
                "the current {q}", "summary of the {q}", "{q} for customers", "latest version of the {q}",
                "explain the {q} to me")


class Paraphrase(Stubborn):
    """A reworded query each turn (seeded); with until=never it never accepts the answer."""

    name = "paraphrase"

    def __init__(self, tool: str, args: Mapping[str, Any] | None = None, *, field: str = "query",
                 until: str = "never", **kw: Any) -> None:
        super().__init__(tool, args, until=until, **kw)
        if field not in self.args:
            raise PolicyError(f"paraphrase: args must contain the field to reword ({field!r})", field="args")
        self.field = field

    def vary(self, view: ModelView) -> dict[str, Any]:
        out = dict(self.args)
        out[self.field] = view.rng.choice(_PARAPHRASES).format(q=self.args[self.field])
        return out

    def to_data(self) -> Any:
        return {"paraphrase": {"tool": self.tool, "args": dict(self.args), "field": self.field, "until": self.until,
                               **self._turn_cap()}}


class Alternate(_Base):
    """A-B-A-B: bounces between calls (two tools that cannot be reconciled), forever."""

    name = "alternate"

    def __init__(self, calls: Sequence[Any], *, until: str = "never", needs: Sequence[str] = (), **kw: Any) -> None:
        super().__init__(**kw)
        if not isinstance(calls, (list, tuple)) or len(calls) < 2:
            raise PolicyError(f"alternate: calls must list at least 2 calls, got {calls!r}", field="calls")
        self.calls = [(str(c["call"]), _check_args(self.name, c.get("args"))) if isinstance(c, Mapping)
                      else (str(c[0]), _check_args(self.name, c[1])) for c in calls]
        self.until = _check_until(self.name, until)
        self.needs = tuple([needs] if isinstance(needs, str) else needs)

    def next(self, view: ModelView) -> Decision:
        if self.until == "success" and satisfied(view.feedback, self.needs):
            return Decision.final("Reconciled.")
        name, args = self.calls[(view.step - 1) % len(self.calls)]
        return Decision.call(name, args)

    def tools(self) -> set[str]:
        return {n for n, _ in self.calls}

    def known_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return list(self.calls)

    def to_data(self) -> Any:
        params: dict[str, Any] = {"calls": [{"call": n, "args": dict(a)} for n, a in self.calls], "until": self.until}
        if self.needs:
            params["needs"] = list(self.needs)
        return {"alternate": {**params, **self._turn_cap()}}


class PollUntil(_Base):
    """Legit polling: call until the status is no longer pending; give up on a fatal error."""

    name = "poll_until"

    def __init__(self, tool: str, args: Mapping[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.tool, self.args = _check_tool(self.name, tool), _check_args(self.name, args)

    def next(self, view: ModelView) -> Decision:
        fb = view.feedback
        if fb:
            last = fb[-1]
            if last.kind == "ok":
                return Decision.final(f"The job finished: {json.dumps(last.content, default=str)[:200]}")
            if last.kind == "error" and last.retryable is False:
                return Decision.final(f"The job cannot be checked: {last.code}.")
        return Decision.call(self.tool, self.args)

    def tools(self) -> set[str]:
        return {self.tool}

    def known_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(self.tool, dict(self.args))]

    def to_data(self) -> Any:
        return {"poll_until": {"tool": self.tool, "args": dict(self.args), **self._turn_cap()}}


class Paginate(_Base):
    """Follows the cursor until there is no next page."""

    name = "paginate"

    def __init__(self, tool: str, args: Mapping[str, Any] | None = None, *, cursor_arg: str = "cursor",
                 next_field: str = "next_cursor", **kw: Any) -> None:
        super().__init__(**kw)
        self.tool, self.args = _check_tool(self.name, tool), _check_args(self.name, args)
        self.cursor_arg, self.next_field = cursor_arg, next_field

    def next(self, view: ModelView) -> Decision:
        pages = view.memory.setdefault("pages", 0)
        fb = view.feedback
        args = dict(self.args)
        if fb:
            last = fb[-1]
            content = last.content
            if isinstance(content, str):
                try:
                    content = json.loads(content)
                except ValueError:
                    content = None
            if last.kind == "ok" and isinstance(content, Mapping):
                view.memory["pages"] = pages + 1
                nxt = content.get(self.next_field)
                if not nxt:
                    return Decision.final(f"Listed {pages + 1} pages.")
                args[self.cursor_arg] = nxt
            elif last.kind == "error" and last.retryable is False:
                return Decision.final(f"Listing failed: {last.code}.")
            else:
                args = dict(view.memory.get("last_args", args))
        view.memory["last_args"] = args
        return Decision.call(self.tool, args)

    def tools(self) -> set[str]:
        return {self.tool}

    def known_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(self.tool, dict(self.args))]  # the cursor comes later

    def to_data(self) -> Any:
        return {"paginate": {"tool": self.tool, "args": dict(self.args), "cursor_arg": self.cursor_arg,
                             "next_field": self.next_field, **self._turn_cap()}}


class Explore(_Base):
    """Exploration: a new query each turn; stops after ``goal`` new facts (distinct results)."""

    name = "explore"

    def __init__(self, tool: str, queries: Sequence[Mapping[str, Any]], *, goal: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        if not queries:
            raise PolicyError("explore: queries must not be empty", field="queries")
        self.tool, self.queries = _check_tool(self.name, tool), [_check_args(self.name, q) for q in queries]
        if goal is not None and (type(goal) is not int or goal < 1):  # a count it compares with: text would crash a run
            raise PolicyError(f"explore: goal must be a positive integer (the new facts that end the exploration), "
                              f"got {goal!r}", field="goal")
        self.goal = goal if goal is not None else len(self.queries)

    def next(self, view: ModelView) -> Decision:
        facts = view.memory.setdefault("facts", set())
        for fb in view.feedback:
            if fb.ok:
                facts.add(json.dumps(fb.content, sort_keys=True, default=str))
        if len(facts) >= self.goal:
            return Decision.final(f"Found {len(facts)} facts.")
        return Decision.call(self.tool, self.queries[(view.step - 1) % len(self.queries)])

    def tools(self) -> set[str]:
        return {self.tool}

    def known_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(self.tool, dict(q)) for q in self.queries]

    def to_data(self) -> Any:
        return {"explore": {"tool": self.tool, "queries": [dict(q) for q in self.queries], "goal": self.goal,
                            **self._turn_cap()}}


class _Wrapper(_Base):
    """A policy around another one: it asks for the inner policy's tools and calls, and writes the inner one out."""

    inner: Policy

    def tools(self) -> set[str]:
        return _tools_of(self.inner)

    def known_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return known_calls(self.inner)

    def to_data(self) -> Any:
        return {self.name: {"inner": POLICIES.to_data(self.inner), **self._turn_cap()}}


class Obedient(_Wrapper):
    """Wraps a policy: gives up on a non-retryable error or a refusal."""

    name = "obedient"

    def __init__(self, inner: Policy, **kw: Any) -> None:
        super().__init__(**kw)
        self.inner = inner

    def next(self, view: ModelView) -> Decision:
        for fb in view.feedback:
            if fb.kind == "error" and fb.retryable is False:
                return Decision.final(f"I cannot complete the task: {fb.tool} failed ({fb.code}).")
        return self.inner.decide(view)


class IgnoresRefusals(_Wrapper):
    """Wraps a policy: keeps asking after being refused, as some models do until a hard stop."""

    name = "ignores_refusals"

    def __init__(self, inner: Policy, **kw: Any) -> None:
        super().__init__(respect_refusals=False, **kw)
        self.inner = inner

    def next(self, view: ModelView) -> Decision:
        # The inner policy reads a refusal as one more failure worth retrying.
        if refused(view.feedback) is None:
            return self.inner.decide(view)  # nothing to reread (most turns): no copy of the view
        seen = [dc_replace(fb, kind="error", retryable=True) if fb.kind == "refused" else fb for fb in view.feedback]
        return self.inner.decide(dc_replace(view, feedback=seen))


class Recorded(_Base):
    """Replays the model turns of a recorded trace or agent log (any importer format), whatever the tools answer now.

    ``path`` is a toolchaos trace or a log in one of ``toolchaos.logs.FORMATS``
    (``format="auto"`` detects it); ``session`` picks one session of the file (default:
    the first). ``turns`` gives the decisions directly instead (``path`` then only says
    where they came from). A recording keeps going after a refusal unless
    ``respect_refusals=True``: the model it recorded did not see this runtime's refusals.
    """

    name = "recorded"

    def __init__(self, path: str | Path | None = None, *, format: str = "auto", session: str | None = None,
                 turns: Sequence[Decision] | None = None, respect_refusals: bool = False, **kw: Any) -> None:
        super().__init__(respect_refusals=respect_refusals, **kw)
        if path is not None and not isinstance(path, (str, Path)):
            raise PolicyError(f"recorded: path must be the file to replay, got {path!r}", field="path")
        if not isinstance(format, str):
            raise PolicyError(f"recorded: format must be a format name, got {format!r}", field="format")
        if session is not None and not isinstance(session, str):
            # YAML reads `session: 42` or `session: 0xabc1` as a number: the id is lost unless quoted
            raise PolicyError(f"recorded: session must be text (quote it in YAML), got {session!r}", field="session")
        self.path = Path(path) if path is not None else None
        self.format, self.session = format, session
        if turns is not None:
            self.turns = list(turns)
        elif self.path is None:
            raise PolicyError("recorded: path is required (the trace or log to replay)", field="path")
        else:
            self.turns = load_turns(self.path, format, session)

    def next(self, view: ModelView) -> Decision:
        i = view.step - 1
        return self.turns[i] if i < len(self.turns) else Decision.final("End of the recording.")

    def tools(self) -> set[str]:
        return {n for d in self.turns for n, _ in d.calls}

    def to_data(self) -> Any:
        """The log it replays; decisions given as ``turns`` are written as a ``scripted`` policy."""
        if self.path is None:  # a recording keeps going after a refusal
            return {"scripted": {"steps": _decisions_data(self.turns), **self._turn_cap(), "respect_refusals": False}}
        picked: dict[str, Any] = {k: v for k, v in (("format", self.format), ("session", self.session))
                                  if v is not None and v != "auto"}
        if self.respect_refusals:  # not a recording's default
            picked["respect_refusals"] = True
        if picked or self._turn_cap():  # the same session of the same log must replay
            return {"recorded": {"path": str(self.path), **picked, **self._turn_cap()}}
        return {"recorded": str(self.path)}


def load_turns(path: str | Path, format: str = "auto", session: str | None = None) -> list[Decision]:
    """The model turns of one session of a trace or log, in order.

    The importers' conversion, the one ``toolchaos replay`` uses: a log replays the same
    turns from a scenario as from the command line.
    """

    try:
        return conversation(path, format, session).decisions()
    except LogFormatError as exc:
        field = exc.option or "path"
        if field == "format" and format == "auto":  # the format could not be detected: the log is at fault
            field = "path"
        raise PolicyError(f"recorded: {exc}", field=field) from None


def _tools_of(policy: Any) -> set[str]:
    fn = getattr(policy, "tools", None)
    return set(fn()) if callable(fn) else set()


class FunctionPolicy:
    """A plain function ``(view) -> Decision`` used as a policy."""

    def __init__(self, fn: Callable[[ModelView], Decision], name: str | None = None) -> None:
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", "function"))

    def decide(self, view: ModelView) -> Decision:
        return self.fn(view)


# --- public constructors (the names YAML scenarios use), registered ----------------------

_RECORDED_SCHEMAS: dict[str, dict[str, Any]] = {
    "path": {"type": "string", "description": "the toolchaos trace or agent log to replay, relative to the "
                                              "scenario file"},
    "format": {"enum": ["auto", *FORMATS], "description": "the log's format (default: auto, detected)"},
    "session": {"type": "string", "description": "which session of the log (default: the first)"},
}


# Not drawn: a script is the test's own; paginate needs a tool that pages; the wrappers wrap drawn
# policies (the strategies' ``ignores_refusals=``); a recording replays a file.
@POLICIES.register(Scripted, params=_init_params(Scripted), fuzz=None)
def scripted(steps: Sequence[Any], **kw: Any) -> Policy:
    return Scripted(steps, **kw)


@POLICIES.register(Stubborn, params=_init_params(Stubborn), fuzz=_fuzz.repeating)
def stubborn(tool: str, args: Mapping[str, Any] | None = None, **kw: Any) -> Policy:
    return Stubborn(tool, args, **kw)


@POLICIES.register(Jitter, params=_init_params(Jitter), fuzz=_fuzz.repeating)
def jitter(tool: str, args: Mapping[str, Any] | None = None, **kw: Any) -> Policy:
    return Jitter(tool, args, **kw)


@POLICIES.register(Alternate, params=_init_params(Alternate), fuzz=_fuzz.alternating)
def alternate(calls: Sequence[Any], **kw: Any) -> Policy:
    return Alternate(calls, **kw)


@POLICIES.register(Paraphrase, params=_init_params(Paraphrase), fuzz=_fuzz.paraphrasing)
def paraphrase(tool: str, args: Mapping[str, Any] | None = None, **kw: Any) -> Policy:
    return Paraphrase(tool, args, **kw)


@POLICIES.register(PollUntil, params=_init_params(PollUntil), fuzz=_fuzz.polling)
def poll_until(tool: str, args: Mapping[str, Any] | None = None, **kw: Any) -> Policy:
    return PollUntil(tool, args, **kw)


@POLICIES.register(Paginate, params=_init_params(Paginate), fuzz=None)
def paginate(tool: str, args: Mapping[str, Any] | None = None, **kw: Any) -> Policy:
    return Paginate(tool, args, **kw)


@POLICIES.register(Explore, params=_init_params(Explore), fuzz=_fuzz.exploring)
def explore(tool: str, queries: Sequence[Mapping[str, Any]], **kw: Any) -> Policy:
    return Explore(tool, queries, **kw)


@POLICIES.register(Obedient, params=_init_params(Obedient), fuzz=None)
def obedient(inner: Policy, **kw: Any) -> Policy:
    return Obedient(inner, **kw)


@POLICIES.register(IgnoresRefusals, params=_init_params(IgnoresRefusals), fuzz=None)
def ignores_refusals(inner: Policy, **kw: Any) -> Policy:
    return IgnoresRefusals(inner, **kw)


# `turns` takes Decision objects (the Python API's); a file names a log. A file must name it:
# `required` is what the schema insists on (`recorded: PATH` or `recorded: {path: PATH, ...}`).
@POLICIES.register(Recorded, params=_init_params(Recorded, hide=("turns",)), schemas=_RECORDED_SCHEMAS,
                   required=("path",), fuzz=None)
def recorded(path: str | Path, *, format: str = "auto", session: str | None = None, **kw: Any) -> Policy:
    return Recorded(path, format=format, session=session, **kw)


def tools_of(policy: Policy) -> set[str]:
    """Tool names a policy will call, where it can tell (for load-time checks)."""
    return _tools_of(policy)


def known_calls(policy: Any) -> list[tuple[str, dict[str, Any]]]:
    """The calls a policy will make with arguments it knows before the run, where it can tell (load-time checks)."""
    fn = getattr(policy, "known_calls", None)
    return list(fn()) if callable(fn) else []


def as_policy(obj: Any) -> Policy:
    # What isinstance(obj, Policy) checks, without typing's protocol machinery (~20 us a run).
    if callable(getattr(obj, "decide", None)) and hasattr(obj, "name"):
        return obj  # type: ignore[no-any-return]
    if callable(obj):
        return FunctionPolicy(obj)
    raise PolicyError(f"expected a policy or a function (view) -> Decision, got {obj!r}")

