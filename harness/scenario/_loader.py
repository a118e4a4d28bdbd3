"""Scenario files: the YAML schema, a safe loader that remembers where every value came
from, and the translation of a scenario into the harness's own objects.

A scenario is one ``*.chaos.yaml`` file: fake tools and their faults, the model double
(a policy), the task, budgets and what must hold (``expect``). Loading goes through
three stages, each of which points at the offending place in the file:

1. **YAML** (``load_yaml``): PyYAML's ``SafeLoader`` composes the node tree; the tree is
   turned into plain data (``YMap``/``YList``, a ``dict``/``list`` that also remember the
   line and column of every key and value). Only plain-data tags are accepted, duplicate
   keys are errors, nesting depth, file size and alias expansion are bounded so no input
   can hang the loader.
2. **Structure** (pydantic models, which also give ``toolchaos schema`` its JSON Schema):
   types, required keys, unknown keys with a "did you mean".
3. **Meaning**: tools, faults, policies and invariants are built by the harness's own
   constructors (``toolchaos.fake_tools.fake_tool``, ``catalogue.get``, ``toolchaos.policies._builtin.BUILTIN``,
   ``toolchaos.invariants._builtin.BUILTIN``), so there is one validation path; their errors
   (``DefinitionError``, ``PolicyError``, ``ValueError``) are re-raised as a
   ``ScenarioError`` at the line and column of the field they name (their ``field``). Cross-checks that no
   single constructor can make happen here: a policy that calls a tool the scenario does
   not define, bounds that cannot both be met (min > max), invariants on unknown tools.

Every error is a ``ScenarioError``: ``file:line:col: message`` followed by the source line
and a caret. No harness traceback is ever part of it.

``module:attr`` references (a custom agent, policy or invariant) import Python code; they
are refused unless the caller allows imports (pytest ini ``chaos_allow_imports = true``,
``toolchaos run --allow-imports``).
"""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import importlib
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from toolchaos._agents import BUILTIN as AGENTS
from toolchaos._internal.limits import Budgets, Ceiling
from toolchaos._internal.types import TERMINAL_STATES
from toolchaos.errors import DefinitionError, FuzzSpecError, ScenarioError, UserError, did_you_mean
from toolchaos.fake_tools import FakeTool, catalogue, fake_tool
from toolchaos.fake_tools._faults import KINDS as FAULT_KINDS
from toolchaos.fake_tools._schedule import RULE_KEYS
from toolchaos.invariants import _builtin as _invariants
from toolchaos.logs import FORMATS
from toolchaos.policies import _builtin as _policies
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

SCENARIO_PATTERN = "*.chaos.yaml"
CATEGORIES = ("loops", "error_classes", "side_effects", "budgets", "legit", "resume", "custom")
SEVERITIES = ("critical", "major", "minor")
SCHEMA_URL = "https://raw.githubusercontent.com/toolchaos/toolchaos/main/docs/scenario.schema.json"
IMPORTS_HINT = ("scenario files may name Python code only when imports are allowed: set the ini option "
                "`chaos_allow_imports = true` (pytest) or pass `--allow-imports` (toolchaos run)")

MAX_BYTES = 1_000_000
MAX_DEPTH = 40
MAX_VALUES = 20_000

# --- located plain data ------------------------------------------------------------------


class Span(NamedTuple):
    """Where a YAML node sits: 1-based line and column of its start and end."""

    line: int
    col: int
    end_line: int
    end_col: int


_NOWHERE = Span(1, 1, 1, 1)


class YMap(dict[Any, Any]):
    """A mapping from a YAML file, with the span of the whole node, each key and each value."""

    __slots__ = ("key_spans", "span", "value_spans")

    def __init__(self, *args: Any, span: Span = _NOWHERE, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.span = span
        self.key_spans: dict[Any, Span] = {}
        self.value_spans: dict[Any, Span] = {}


class YList(list[Any]):
    """A sequence from a YAML file, with the span of the node and of each item."""

    __slots__ = ("item_spans", "span")

    def __init__(self, *args: Any, span: Span = _NOWHERE) -> None:
        super().__init__(*args)
        self.span = span
        self.item_spans: list[Span] = []


def plain(value: Any) -> Any:
    """A copy of located data as plain dicts and lists (what the harness constructors get)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _short(value: Any, limit: int = 60) -> str:
    text = repr(plain(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- stage 1: YAML -----------------------------------------------------------------------

_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "timestamp")}
_MAP_TAG, _SEQ_TAG, _STR_TAG = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:str"


class _TooDeep(Exception):
    def __init__(self, mark: Any) -> None:
        super().__init__("too deep")
        self.mark = mark


def _libyaml_speaks_this_yaml() -> bool:
    """Whether libyaml's parser hands out the event and error classes of the ``yaml`` imported here.

    The C extension ``yaml._yaml`` is initialised once per process and can never be re-run:
    it keeps the ``yaml.events``/``yaml.error`` classes of the first import of PyYAML. When
    ``yaml`` is imported again after its modules left ``sys.modules`` (pytester's in-process
    sessions restore ``sys.modules`` after each run; ``importlib.reload``), the new Python
    modules get new classes while the extension still builds the old ones. PyYAML's
    ``Composer`` tells events apart by class identity, so it would then match none of them and
    fail with ``UnboundLocalError``, and parse errors would slip past ``yaml.MarkedYAMLError``.
    Probing what the parser actually produces (rather than a private attribute of the
    extension) keeps this true to whatever PyYAML version is installed.
    """
    if not getattr(yaml, "__with_libyaml__", False):  # pragma: no cover - PyYAML built without libyaml
        return False
    from yaml._yaml import CParser

    probe = CParser("[")  # a stream start, a document start, a sequence start, then a parse error
    try:
        if not isinstance(probe.get_event(), yaml.events.StreamStartEvent):
            return False
        for _ in range(4):
            probe.get_event()
    except yaml.MarkedYAMLError:
        return True
    except Exception:  # the error class of another import of PyYAML
        return False
    finally:
        probe.dispose()
    return False  # pragma: no cover - libyaml accepted an unclosed flow sequence


if _libyaml_speaks_this_yaml():  # libyaml scans and parses in C (8x faster); composing stays here
    from yaml._yaml import CParser as _Parser

    class _Base(Composer, _Parser, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            _Parser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            Composer.__init__(self)
else:  # no libyaml, or libyaml bound to an earlier import of PyYAML: all-Python, all from this import
    _Base = yaml.SafeLoader  # type: ignore[misc,assignment]


class _Loader(_Base):
    """A safe loader that composes in Python (so nesting depth is checked before recursing:
    no document nested deeper than ``MAX_DEPTH`` is composed)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(getattr(self.peek_event(), "start_mark", None))
            node: Node | None = super().compose_node(parent, index)
            return node
        finally:
            self._depth -= 1


def _span(node: Node) -> Span:
    s, e = node.start_mark, node.end_mark
    return Span(s.line + 1, s.column + 1, e.line + 1, e.column + 1)


def _mark_span(mark: Any) -> Span:
    return Span(mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 2)


def load_yaml(text: str, path: str | Path | None = None) -> Any:
    """Plain located data (``YMap``/``YList``/scalars) from YAML text; errors are ``ScenarioError``."""
    if len(text) > MAX_BYTES:
        raise ScenarioError(f"the file is {len(text):,} characters long; scenario files are limited to "
                            f"{MAX_BYTES:,}", path)
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except _TooDeep as exc:
            raise ScenarioError(f"values are nested more than {MAX_DEPTH} levels deep; a scenario never needs "
                                f"that", path, _mark_span(exc.mark) if exc.mark is not None else None, text) from None
        except yaml.MarkedYAMLError as exc:
            raise _yaml_error(exc, path, text) from None
        except yaml.reader.ReaderError as exc:
            line = text.count("\n", 0, exc.position) + 1
            col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
            raise ScenarioError(f"invalid YAML: character {exc.character!r} is not allowed in a YAML file",
                                path, Span(line, col, line, col + 1), text) from None
        except yaml.YAMLError as exc:  # pragma: no cover - every PyYAML error above is marked
            raise ScenarioError(f"invalid YAML: {exc}", path) from None
        except RecursionError:  # pragma: no cover - MAX_DEPTH keeps the composer far from the limit
            raise ScenarioError("values are nested too deeply", path) from None
        if node is None:
            return None
        _check_size(node, path, text)
        return _convert(node, loader, {}, path, text)
    finally:
        dispose = getattr(loader, "dispose", None)
        if dispose is not None:
            dispose()


def _yaml_error(exc: yaml.MarkedYAMLError, path: str | Path | None, text: str) -> ScenarioError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or "cannot parse"
    lines = text.splitlines()
    at = lines[mark.line][mark.column: mark.column + 1] if mark is not None and mark.line < len(lines) else ""
    if "expected a single document" in str(exc.context or "") or "expected '<document start>'" in problem:
        problem = "more than one YAML document; a scenario file holds exactly one (use `variants:` for more)"
    elif at == "\t" or "found character '\\t'" in problem:
        problem = "a tab character where YAML needs spaces for indentation"
    else:
        context = f" ({exc.context})" if exc.context and exc.context not in problem else ""
        problem = f"invalid YAML: {problem}{context}"
    return ScenarioError(problem, path, _mark_span(mark) if mark is not None else None, text)


def _check_size(root: Node, path: str | Path | None, text: str) -> None:
    """Reject documents whose aliases expand beyond ``MAX_VALUES`` values (billion laughs)."""
    memo: dict[int, int] = {}

    def size(node: Node) -> int:
        key = id(node)
        if key in memo:
            return memo[key]
        memo[key] = MAX_VALUES + 1  # a cycle (a recursive alias) counts as too large
        n = 1
        if isinstance(node, MappingNode):
            for k, v in node.value:
                n += size(k) + size(v)
                if n > MAX_VALUES:
                    break
        elif isinstance(node, SequenceNode):
            for v in node.value:
                n += size(v)
                if n > MAX_VALUES:
                    break
        memo[key] = n
        return n

    if size(root) > MAX_VALUES:
        raise ScenarioError(f"the document expands to more than {MAX_VALUES:,} values (through aliases?); "
                            f"scenario files are limited to that", path, _span(root), text)


def _convert(node: Node, loader: _Loader, memo: dict[int, Any], path: str | Path | None, text: str) -> Any:
    key = id(node)
    if key in memo:
        return memo[key]
    if isinstance(node, MappingNode):
        if node.tag != _MAP_TAG:
            raise _tag_error(node, path, text)
        try:
            loader.flatten_mapping(node)
        except yaml.MarkedYAMLError as exc:
            raise _yaml_error(exc, path, text) from None
        out = YMap(span=_span(node))
        memo[key] = out
        for knode, vnode in node.value:
            if not isinstance(knode, ScalarNode):
                raise ScenarioError("a key must be a plain word or number, not a list or mapping",
                                    path, _span(knode), text)
            k = _scalar(knode, loader, path, text)
            if k in out:
                first = out.key_spans[k]
                raise ScenarioError(f"duplicate key {k!r} (first at line {first.line}); each key may appear once",
                                    path, _span(knode), text)
            out.key_spans[k] = _span(knode)
            out.value_spans[k] = _span(vnode)
            out[k] = _convert(vnode, loader, memo, path, text)
        return out
    if isinstance(node, SequenceNode):
        if node.tag != _SEQ_TAG:
            raise _tag_error(node, path, text)
        seq = YList(span=_span(node))
        memo[key] = seq
        for item in node.value:
            seq.item_spans.append(_span(item))
            seq.append(_convert(item, loader, memo, path, text))
        return seq
    assert isinstance(node, ScalarNode)
    return _scalar(node, loader, path, text)


def _tag_error(node: Node, path: str | Path | None, text: str) -> ScenarioError:
    return ScenarioError(f"the tag {node.tag!r} is not allowed: scenario files are plain data, loaded safely "
                         f"(no tags that build objects)", path, _span(node), text)


def _scalar(node: ScalarNode, loader: _Loader, path: str | Path | None, text: str) -> Any:
    if node.tag not in _PLAIN_TAGS:
        raise _tag_error(node, path, text)
    if node.tag == _STR_TAG or node.tag.endswith(":timestamp"):
        return node.value  # dates stay text: tool arguments are JSON
    try:
        return loader.construct_object(node, deep=True)
    except (yaml.MarkedYAMLError, ValueError, OverflowError) as exc:
        raise ScenarioError(f"cannot read the value {node.value!r} ({exc})", path, _span(node), text) from None


# --- stage 2: structure (pydantic; also the JSON Schema) ----------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# Placeholders replaced by ``json_schema`` (pydantic would try to resolve a ``$ref`` itself).
_FAULTS_REF: Any = {"x-toolchaos": "FaultSchedule"}
_FAULT_REF: Any = {"x-toolchaos": "Fault"}
_POLICY_REF: Any = {"x-toolchaos": "Policy"}
_EXPECT_REF: Any = {"x-toolchaos": "Invariants"}


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
    faults: Any = Field(None, description="fault schedule: rules (first match wins) or one fault for every call",
                        json_schema_extra=_FAULTS_REF)
    default: Any = Field(None, description="the outcome when no rule matches (default: ok)",
                         json_schema_extra=_FAULT_REF)


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
    real_seconds: float | None = Field(None, gt=0)


class RestartSpec(_Model):
    """Run the agent a second time after the first run ends, sharing its persistent ``store``.

    The second run meets the tools afresh (their schedules restart, with the overrides
    given here); ``expect`` of the scenario is checked over both runs together (one
    trace, one effect ledger), ``expect_before`` over the first run alone.
    """

    task: str | None = Field(None, description="task of the restarted run (default: the scenario's)")
    policy: Any = Field(None, description="model double of the restarted run (default: the scenario's)",
                        json_schema_extra=_POLICY_REF)
    tools: dict[str, ToolSpec | None] | None = Field(
        None, description="per-tool overrides for the restarted run (merged into the scenario's tools)")
    expect_before: list[Any] | None = Field(None, description="invariants of the first run alone",
                                            json_schema_extra=_EXPECT_REF)


_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class VariantSpec(_Model):
    """One parametrised item: its id and the fields it overrides (``tools`` and ``budgets`` merge per key)."""

    id: str = Field(pattern=_ID, max_length=80)
    title: str | None = None
    description: str | None = None
    severity: Literal["critical", "major", "minor"] | None = None
    tags: list[str] | None = None
    seed: int | None = Field(None, ge=0)
    task: str | None = None
    agent: str | None = None
    tools: dict[str, ToolSpec | None] | None = None
    policy: Any = Field(None, json_schema_extra=_POLICY_REF)
    budgets: BudgetsSpec | None = None
    ceiling: CeilingSpec | None = None
    expect: list[Any] | None = Field(None, json_schema_extra=_EXPECT_REF)
    restart: RestartSpec | None = None
    fuzz: Any = Field(None, json_schema_extra={"x-toolchaos": "Fuzz"})


class ScenarioSpec(_Model):
    """A chaos scenario: fake tools with faults, a model double, a task, and what must hold."""

    id: str = Field(pattern=_ID, max_length=100, description="the pytest item name; unique in a suite")
    title: str = Field(description="one line: what goes wrong")
    description: str = Field("", description="why it matters, what a correct runtime does")
    category: Literal["loops", "error_classes", "side_effects", "budgets", "legit", "resume", "custom"] = "custom"
    severity: Literal["critical", "major", "minor"] = "major"
    tags: list[str] = Field(default_factory=list)
    seed: int = Field(0, ge=0, description="same seed, byte-identical trace")
    task: str = Field(description="what the agent is asked to do")
    agent: str | None = Field(None, description="'builtin:NAME' or 'package.module:attr' (needs chaos_allow_imports); "
                                                "--chaos-agent on the command line wins")
    tools: dict[str, ToolSpec | None] = Field(min_length=1, description="tool name -> catalogue tool or inline tool")
    policy: Any = Field(description="the model double: a built-in policy with its parameters",
                        json_schema_extra=_POLICY_REF)
    budgets: BudgetsSpec | None = None
    ceiling: CeilingSpec | None = None
    expect: list[Any] = Field(min_length=1, description="invariants that must hold after the run",
                              json_schema_extra=_EXPECT_REF)
    restart: RestartSpec | None = None
    fuzz: Any = Field(None, description="fault-schedule fuzzing of this scenario (toolchaos.fuzzing.FuzzSpec)",
                      json_schema_extra={"x-toolchaos": "Fuzz"})
    variants: list[VariantSpec] | None = Field(None, min_length=1,
                                               description="parametrised items (each overrides some fields)")


_CHOICES: dict[str, Sequence[str]] = {"category": CATEGORIES, "severity": SEVERITIES, "delivery": ("return", "raise")}
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


# --- locating a path in located data -------------------------------------------------------


def _split_path(path: str) -> list[str | int]:
    """``faults[0].outcome.after`` -> ``['faults', 0, 'outcome', 'after']``."""
    out: list[str | int] = []
    for part in re.split(r"\.(?![^\[]*\])", path):
        for m in re.finditer(r"([^\[\]]+)|\[(\d+)\]", part):
            if m.group(1) is not None:
                out.append(m.group(1))
            else:
                out.append(int(m.group(2)))
    return out


def locate(root: Any, path: Sequence[Any], key: bool = False) -> Span | None:
    """The span of the deepest value found along ``path`` (lenient: skips segments it cannot follow).

    ``key``: when the last segment is a key found in a mapping, the span of the key itself.
    A segment missing from a one-key mapping (a fault or policy written ``{kind: params}``)
    descends into that one value and tries again.
    """
    cur, span = root, getattr(root, "span", None)
    i = 0
    parts = list(path)
    while i < len(parts):
        part = parts[i]
        if isinstance(cur, YMap):
            if part in cur:
                span = cur.key_spans[part] if key and i == len(parts) - 1 else cur.value_spans[part]
                cur = cur[part]
                i += 1
                continue
            if len(cur) == 1:
                (only,) = cur
                span, cur = cur.value_spans[only], cur[only]
                continue
        elif isinstance(cur, YList) and isinstance(part, int) and 0 <= part < len(cur):
            span, cur = cur.item_spans[part], cur[part]
            i += 1
            continue
        i += 1
    return span


def _find_scalar(root: Any, value: Any) -> Span | None:
    """The span of the first scalar equal to ``value`` under ``root`` (to point at a tool name)."""
    if isinstance(root, YMap):
        for k, v in root.items():
            if v == value and not isinstance(v, (dict, list)):
                return root.value_spans[k]
            found = _find_scalar(v, value)
            if found:
                return found
    elif isinstance(root, YList):
        for i, v in enumerate(root):
            if v == value and not isinstance(v, (dict, list)):
                return root.item_spans[i]
            found = _find_scalar(v, value)
            if found:
                return found
    return None


# --- the built scenario ------------------------------------------------------------------


@dataclass(frozen=True)
class Expectation:
    """One invariant of ``expect`` with where it came from (for failure reports)."""

    invariant: Any
    text: str  # its YAML source (or "(implicit) name")
    line: int | None  # 1-based line in the scenario file, None for implicit ones
    phase: str = "run"  # "run" (the whole run), "before" (restart: the first run alone), "each" (every run)

    @property
    def name(self) -> str:
        return str(getattr(self.invariant, "name", type(self.invariant).__name__))


@dataclass(frozen=True)
class Restart:
    task: str
    policy: Callable[[], Any]
    tools: tuple[FakeTool, ...]


@dataclass(frozen=True)
class Scenario:
    """A loaded, validated scenario (one item: a file's variants are separate scenarios)."""

    id: str
    title: str
    description: str
    category: str
    severity: str
    tags: tuple[str, ...]
    seed: int
    task: str
    agent: str | None
    tools: tuple[FakeTool, ...]
    policy: Callable[[], Any]  # builds a fresh policy for each run
    expect: tuple[Expectation, ...]
    budgets: Budgets | None = None
    ceiling: Ceiling | None = None
    restart: Restart | None = None
    variant: str | None = None
    path: Path | None = None
    content_hash: str = ""
    line: int = 1  # where the scenario (or its variant) starts
    spec: ScenarioSpec | None = field(default=None, repr=False, compare=False)
    fuzz: Any = None  # a toolchaos.fuzzing.FuzzSpec when the file has a `fuzz:` block

    @property
    def name(self) -> str:
        """The item name: the id, with ``[variant]`` for a variant."""
        return f"{self.id}[{self.variant}]" if self.variant else self.id

    @property
    def invariants(self) -> list[Any]:
        return [e.invariant for e in self.expect]


# --- stage 3: meaning ----------------------------------------------------------------------


class _Ctx:
    def __init__(self, path: Path | None, text: str, root: YMap, allow_imports: bool) -> None:
        self.path, self.text, self.root, self.allow_imports = path, text, root, allow_imports
        self.base = path.parent if path is not None else Path.cwd()
        self.depends: list[Path] = []  # other files the scenario reads (a recorded log): part of its hash

    def error(self, message: str, where: Sequence[Any] = (), key: bool = False, span: Span | None = None,
              root: Any = None) -> ScenarioError:
        if span is None:
            span = locate(self.root if root is None else root, where, key=key)
        return ScenarioError(message, self.path, span, self.text)

    def source_of(self, span: Span, value: Any = None) -> str:
        """The YAML text of a value (for failure reports), dedented."""
        end = _end_of(value, span)
        last = end.end_line if end.end_col > 1 else end.end_line - 1
        chunk = self.text.splitlines()[span.line - 1: max(span.line, last)]
        if not chunk:
            return ""
        indent = span.col - 1
        first = chunk[0]
        out = [first[indent:] if first[:indent].strip() in ("", "-") or first[:indent].rstrip().endswith("-")
               else first.strip()]
        out += [extra[indent:] if extra[:indent].strip() == "" else extra for extra in chunk[1:]]
        while out and (not out[-1].strip() or out[-1].lstrip().startswith("#")):
            out.pop()
        return "\n".join(line.rstrip() for line in out)


def _end_of(value: Any, span: Span) -> Span:
    """The span of the last scalar inside a value: where its text really ends (a block node's
    own end mark is the start of the next token, often on the next line)."""
    if isinstance(value, YMap) and value:
        last = list(value)[-1]
        return _end_of(value[last], value.value_spans[last])
    if isinstance(value, YList) and value:
        return _end_of(value[-1], value.item_spans[-1])
    return span


def _dotted(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the scenario"


def _structure_error(exc: ValidationError, ctx: _Ctx, model: Any, root: Any, prefix: Sequence[Any]) -> ScenarioError:
    errors = exc.errors(include_url=False)
    rank = {"extra_forbidden": 0, "missing": 2}  # a misspelled key explains the missing one: report it first

    def order(e: Any) -> tuple[int, int, int]:
        span = locate(root, [p for p in e["loc"] if p != "[key]"]) or _NOWHERE
        return rank.get(e["type"], 1), span.line, span.col

    err = min(errors, key=order)
    loc = [p for p in err["loc"] if p != "[key]"]
    kind = err["type"]
    where = _dotted([*prefix, *loc])
    value = err.get("input")
    if kind == "extra_forbidden":
        owner = _model_at(model, loc[:-1])
        known = list(owner.model_fields) if isinstance(owner, type) and issubclass(owner, BaseModel) else []
        name = loc[-1]
        parent = _dotted([*prefix, *loc[:-1]])
        msg = (f"unknown key {name!r} in {parent}{did_you_mean(name, known)}"
               + (f" (known: {', '.join(known)})" if known else ""))
        return ctx.error(msg, loc, key=True, root=root)
    if kind == "missing":
        name = loc[-1]
        parent = _dotted([*prefix, *loc[:-1]])
        owner = _model_at(model, loc[:-1])
        doc = ""
        if isinstance(owner, type) and issubclass(owner, BaseModel):
            f = owner.model_fields.get(str(name))
            doc = f" ({f.description})" if f is not None and f.description else ""
        return ctx.error(f"{parent} is missing the required key {name!r}{doc}", loc[:-1], root=root)
    if kind in ("literal_error", "enum"):
        choices = _CHOICES.get(str(loc[-1]), ())
        got = repr(value) if isinstance(value, str) else _short(value)
        msg = f"{where}: expected one of {', '.join(choices)}; got {got}{did_you_mean(value, choices)}"
        return ctx.error(msg, loc, root=root)
    if kind in _TYPE_WORDS:
        return ctx.error(f"{where}: expected {_TYPE_WORDS[kind]}, got {_short(value)}", loc, root=root)
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        sign = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        limit = next(iter((err.get("ctx") or {}).values()), "?")
        return ctx.error(f"{where}: expected a number {sign} {limit}, got {_short(value)}", loc, root=root)
    if kind == "too_short":
        return ctx.error(f"{where}: must not be empty", loc, root=root)
    if kind == "string_pattern_mismatch":
        return ctx.error(f"{where}: {value!r} is not a valid id: use letters, digits, '-', '_' and '.', starting "
                         f"with a letter or digit", loc, root=root)
    if kind == "string_too_long":
        return ctx.error(f"{where}: too long ({len(str(value))} characters)", loc, root=root)
    return ctx.error(f"{where}: {err['msg'].lower()} (got {_short(value)})", loc, root=root)


def _validate(model: Any, data: Any, ctx: _Ctx, root: Any, prefix: Sequence[Any] = ()) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _structure_error(exc, ctx, model, root, prefix) from None


# -- tools --


def _build_tools(specs: Mapping[str, ToolSpec | None], ctx: _Ctx, where: Sequence[Any],
                 root: Any = None) -> tuple[FakeTool, ...]:
    root = ctx.root if root is None else root
    out = []
    for name, spec in specs.items():
        out.append(_build_tool(str(name), spec or _EMPTY_TOOL, ctx, [*where, name], root))
    return tuple(out)


_EMPTY_TOOL = ToolSpec.model_validate({})
_INLINE_ONLY = ("description", "side_effect", "idempotency_key", "volatile")


def _build_tool(name: str, spec: ToolSpec, ctx: _Ctx, where: list[Any], root: Any) -> FakeTool:
    raw = ctx.root if root is None else root
    faults, default = plain(spec.faults), plain(spec.default)
    try:
        if spec.parameters is None:
            if name not in catalogue.NAMES:
                raise ctx.error(f"tool {name!r} is not in the catalogue{did_you_mean(name, catalogue.NAMES)}; "
                                f"to define a tool inline give it `parameters:` (catalogue: "
                                f"{', '.join(catalogue.NAMES)})", where, key=True, root=raw)
            for f in _INLINE_ONLY:
                if getattr(spec, f) is not None:
                    raise ctx.error(f"tool {name!r}: {f!r} is only for tools defined inline (with `parameters:`); "
                                    f"the catalogue tool has its own", [*where, f], key=True, root=raw)
            return catalogue.get(name, faults, default=default, delivery=spec.delivery or "return")
        return fake_tool(name, spec.description or "", plain(spec.parameters), side_effect=bool(spec.side_effect),
                         idempotency_key=spec.idempotency_key, volatile=spec.volatile,
                         delivery=spec.delivery or "return", faults=faults, default=default)
    except DefinitionError as exc:
        path = _split_path(exc.field)
        problem = exc.problem
        kind = re.search(r"unknown fault kind '([^']*)'", problem)
        names_key = problem.startswith(("unknown parameter", "unknown rule key", "unknown fault kind"))
        span = None if kind else _exact(raw, [*where, *path], key=names_key)
        if span is None and path and path[0] == "then":  # a nested fault reports its path from the inner fault
            holder = _holder_of(_subtree(raw, where), "then")
            span = locate(holder, path, key=names_key) if holder is not None else None
        if span is None and names_key:  # point at the unknown name itself: a key somewhere in this tool
            unknown_name = kind.group(1) if kind else path[-1] if path else None
            holder = _holder_of(_subtree(raw, where), unknown_name) if isinstance(unknown_name, str) else None
            span = holder.key_spans[unknown_name] if holder is not None else None
        if kind and "did you mean" not in problem:
            close = difflib.get_close_matches(kind.group(1), RULE_KEYS, n=1, cutoff=0.6)
            if close:
                problem += f"; did you mean the rule key {close[0]!r}? (a rule needs an `outcome:`)"
        raise ctx.error(f"tool {name!r}: {exc.field}: {problem}", [*where, *path], key=names_key, span=span,
                        root=raw) from None
    except ScenarioError:
        raise
    except Exception as exc:  # a constructor tripped on a value it did not expect: still the file's fault
        raise ctx.error(f"tool {name!r}: invalid definition ({type(exc).__name__}: {exc})", where, key=True,
                        root=raw) from None


def _exact(root: Any, path: Sequence[Any], key: bool) -> Span | None:
    """The span at exactly ``path`` (None when the path is not literally in the file)."""
    node, span = root, None
    for i, part in enumerate(path):
        if isinstance(node, YMap) and part in node:
            span = node.key_spans[part] if key and i == len(path) - 1 else node.value_spans[part]
            node = node[part]
        elif isinstance(node, YList) and isinstance(part, int) and 0 <= part < len(node):
            span, node = node.item_spans[part], node[part]
        else:
            return None
    return span


def _holder_of(node: Any, key: str) -> YMap | None:
    """The first mapping under ``node`` that has ``key``."""
    if isinstance(node, YMap):
        if key in node:
            return node
        items: Iterable[Any] = node.values()
    elif isinstance(node, YList):
        items = node
    else:
        return None
    for v in items:
        found = _holder_of(v, key)
        if found is not None:
            return found
    return None


# -- Python references --


def _is_ref(name: Any) -> bool:
    return isinstance(name, str) and ":" in name and not name.startswith("builtin:")


def _import_ref(ref: str, ctx: _Ctx, where: Sequence[Any], what: str, root: Any = None) -> Any:
    if not ctx.allow_imports:
        raise ctx.error(f"{what} {ref!r} names Python code; {IMPORTS_HINT}", where, root=root)
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ctx.error(f"{what} {ref!r}: expected 'package.module:attr'", where, root=root)
    try:
        obj: Any = importlib.import_module(module)
    except Exception as exc:  # any import failure is the user's: one line
        raise ctx.error(f"{what} {ref!r}: cannot import {module!r} ({type(exc).__name__}: {exc})", where,
                        root=root) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ctx.error(f"{what} {ref!r}: module {module!r} has no attribute {attr!r}", where, root=root)
        obj = getattr(obj, part)
    return obj


# -- policies --

_POLICY_CLASSES: dict[str, type] = {}


def _policy_classes() -> dict[str, type]:
    if not _POLICY_CLASSES:
        todo = list(_policies._Base.__subclasses__())
        while todo:
            cls = todo.pop()
            todo.extend(cls.__subclasses__())
            if cls.__module__ == _policies.__name__ and getattr(cls, "name", "") in _policies.BUILTIN:
                _POLICY_CLASSES[cls.name] = cls
    return _POLICY_CLASSES


_signature = functools.lru_cache(maxsize=256)(inspect.signature)

# Parameters a file cannot give: `turns` takes Decision objects (the Python API's); a file names a log.
_PYTHON_ONLY: dict[str, tuple[str, ...]] = {"recorded": ("turns",)}


@functools.lru_cache(maxsize=64)
def _params_of(cls: type) -> tuple[tuple[str, ...], str | None]:
    """(all keyword names a built-in policy accepts, its first positional parameter)."""
    names: list[str] = []
    first: str | None = None
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = [p for p in _signature(init).parameters.values() if p.name != "self"]
        for p in params:
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name in _PYTHON_ONLY.get(getattr(cls, "name", ""), ()):
                continue
            if first is None and p.kind is p.POSITIONAL_OR_KEYWORD:
                first = p.name
            if p.name not in names:
                names.append(p.name)
        if klass is _policies._Base:
            break
    return tuple(names), first


def _one_key(value: Any, ctx: _Ctx, where: Sequence[Any], what: str, known: Iterable[str],
             root: Any = None) -> tuple[str, Any]:
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and len(value) == 1:
        (name,) = value
        if not isinstance(name, str):
            raise ctx.error(f"{_dotted(where)}: {what} names are words, got {name!r}", where, root=root)
        return name, value[name]
    known = list(known)
    got = "an empty mapping" if isinstance(value, dict) and not value else (
        f"a mapping with {len(value)} keys ({', '.join(map(str, value))})" if isinstance(value, dict) else _short(value))
    raise ctx.error(f"{_dotted(where)}: expected one {what} written as `name` or `name: {{parameters}}` "
                    f"(known: {', '.join(known)}); got {got}", where, root=root)


def _build_policy(value: Any, ctx: _Ctx, where: list[Any], root: Any = None) -> Callable[[], Any]:
    """Validate a policy spec now; return a builder of fresh instances."""
    classes = _policy_classes()
    name, raw = _one_key(value, ctx, where, "policy", classes, root)
    at = [*where, name] if isinstance(value, dict) else where
    if _is_ref(name):
        obj = _import_ref(name, ctx, at, "policy", root)
        params = plain(raw) if raw is not None else None
        if params is not None and not isinstance(params, dict):
            raise ctx.error(f"policy {name!r}: parameters must be a mapping, got {_short(raw)}", at, root=root)

        def custom() -> Any:
            if params:
                made = obj(**params)
            elif inspect.isclass(obj):
                made = obj()
            else:
                made = obj
            return _policies.as_policy(made)

        _try_build(custom, ctx, at, f"policy {name!r}", root)
        return custom
    if name not in classes:
        raise ctx.error(f"{_dotted(where)}: unknown policy {name!r}{did_you_mean(name, classes)} "
                        f"(known: {', '.join(classes)})", at, key=isinstance(value, dict), root=root)
    cls = classes[name]
    allowed, first = _params_of(cls)
    if raw is None:
        kwargs: dict[str, Any] = {}
    elif isinstance(raw, dict) and not (name in ("obedient", "ignores_refusals") and len(raw) == 1
                                        and next(iter(raw)) not in allowed):
        kwargs = dict(raw)
    elif first is not None:
        kwargs = {first: raw}
    else:  # pragma: no cover - every built-in policy has a first parameter
        raise ctx.error(f"policy {name!r} takes named parameters", at, root=root)
    positional = first is not None and first in kwargs and not (isinstance(raw, dict) and first in raw)
    for k in kwargs:
        if k not in allowed:
            raise ctx.error(f"policy {name!r}: unknown parameter {k!r}{did_you_mean(k, allowed)} "
                            f"(known: {', '.join(allowed)})", [*at, k], key=True, root=root)
    inner_builders: dict[str, Callable[[], Any]] = {}
    for k, v in kwargs.items():
        if k == "inner":
            inner_at = at if positional else [*at, "inner"]
            inner_builders[k] = _build_policy(v, ctx, inner_at, root)
    plain_kwargs = {k: plain(v) for k, v in kwargs.items() if k not in inner_builders}
    if name == "recorded" and isinstance(plain_kwargs.get("path"), str):
        plain_kwargs["path"] = str((ctx.base / plain_kwargs["path"]).resolve())
        ctx.depends.append(Path(plain_kwargs["path"]))

    def build() -> Any:
        kw = dict(plain_kwargs)
        for k, b in inner_builders.items():
            kw[k] = b()
        return _policies.BUILTIN[name](**kw)

    built = _try_build(build, ctx, at, f"policy {name!r}", root, kwargs=kwargs, positional=positional)
    if name == "recorded":
        # The log is read and converted once, now, where its errors point into this file; each
        # run gets a copy sharing the turns (a Recorded never changes them), so a fuzz run of
        # a hundred examples does not parse the log a hundred times.
        return functools.partial(copy.copy, built)
    return build


def _try_build(build: Callable[[], Any], ctx: _Ctx, at: list[Any], what: str, root: Any,
               kwargs: Mapping[str, Any] | None = None, positional: bool = False) -> Any:
    try:
        return build()
    except ScenarioError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        msg = msg.removeprefix(f"{what.split()[-1].strip(chr(39))}: ")
        named = exc.field if isinstance(exc, UserError) else None  # the constructor says which parameter
        target = [*at, named] if named is not None and not positional and named in (kwargs or {}) else at
        if isinstance(exc, TypeError):
            msg = re.sub(r"^\w+\.?\w*\(\) ", "", msg)
            msg = f"bad parameters ({msg})"
        elif isinstance(exc, (KeyError, IndexError)):
            msg = f"bad parameters (missing {msg})"
        raise ctx.error(f"{what}: {msg}", target, root=root) from None
    except Exception as exc:  # anything else a constructor raised on the file's values: still the file's fault
        raise ctx.error(f"{what}: bad parameters ({type(exc).__name__}: {exc})", at, root=root) from None


# -- invariants --


def _build_expect(items: Sequence[Any], ctx: _Ctx, where: list[Any], phase: str,
                  root: Any = None) -> list[Expectation]:
    out = []
    for i, item in enumerate(items):
        at = [*where, i]
        span = locate(ctx.root if root is None else root, at)
        inv = _build_invariant(item, ctx, at, root)
        text = ctx.source_of(span, item) if span is not None else str(plain(item))
        out.append(Expectation(inv, text, span.line if span else None, phase))
    return out


def _build_invariant(value: Any, ctx: _Ctx, at: list[Any], root: Any) -> Any:
    known = _invariants.BUILTIN
    name, raw = _one_key(value, ctx, at, "invariant", known, root)
    inner = [*at, name] if isinstance(value, dict) else at
    if _is_ref(name):
        obj = _import_ref(name, ctx, inner, "invariant", root)
        params = plain(raw)

        def make() -> Any:
            if params is not None:
                if not isinstance(params, dict):
                    raise ValueError(f"parameters must be a mapping, got {params!r}")
                return obj(**params)
            if inspect.isclass(obj):
                return obj()
            if hasattr(obj, "check"):
                return obj
            if _required_params(obj) == 0:  # a factory: call it for the invariant
                return obj()
            return FunctionInvariant(obj, name)  # a check: (result) -> violations | bool

        inv = _try_build(make, ctx, inner, f"invariant {name!r}", root)
        if not callable(getattr(inv, "check", None)):
            raise ctx.error(f"invariant {name!r} has no check(result) method", inner, root=root)
        return inv
    if name not in known:
        raise ctx.error(f"{_dotted(at)}: unknown invariant {name!r}{did_you_mean(name, known)} "
                        f"(known: {', '.join(known)})", inner, key=isinstance(value, dict), root=root)
    fn = known[name]
    sig = _signature(fn)
    params = list(sig.parameters.values())
    var = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    names = [p.name for p in params]
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    if raw is None:
        pass
    elif isinstance(raw, dict) and (not params or var is not None or all(k in names for k in raw)
                                    or len(params) > 1 or params[0].annotation not in ("int", int)):
        for k, v in raw.items():
            if k not in names:
                raise ctx.error(f"invariant {name!r}: unknown parameter {k!r}{did_you_mean(k, names)} "
                                f"(known: {', '.join(names) or 'none'})", [*inner, k], key=True, root=root)
            if k == var:
                args.extend(plain(v) if isinstance(v, list) else [plain(v)])
            else:
                kwargs[k] = plain(v)
    elif not params:
        raise ctx.error(f"invariant {name!r} takes no parameters; write it as `- {name}`", inner, root=root)
    elif var is not None:
        args = plain(raw) if isinstance(raw, list) else [plain(raw)]
    else:
        args = [plain(raw)]
    _check_param_types(name, fn, args, kwargs, ctx, inner, root)
    return _try_build(lambda: fn(*args, **kwargs), ctx, inner, f"invariant {name!r}", root,
                      kwargs=kwargs)


_NUMERIC = {"executions", "turns", "virtual_seconds", "tokens", "n"}


def _check_param_types(name: str, fn: Any, args: list[Any], kwargs: dict[str, Any], ctx: _Ctx,
                       at: list[Any], root: Any) -> None:
    """Invariant constructors trust their types; a scenario must not hand them nonsense."""
    bound = _signature(fn).bind_partial
    try:
        ba = bound(*args, **kwargs)
    except TypeError as exc:
        raise ctx.error(f"invariant {name!r}: bad parameters ({exc})", at, root=root) from None
    for pname, value in ba.arguments.items():
        where = [*at, pname]
        if pname in _NUMERIC:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (
                    pname != "virtual_seconds" and not isinstance(value, int)):
                kind = "a number" if pname == "virtual_seconds" else "an integer"
                raise ctx.error(f"invariant {name!r}: {pname}: expected {kind} >= 0, got {_short(value)}", where,
                                root=root)
        elif pname in ("per_tool", "successes"):
            if not isinstance(value, dict) or not all(
                    isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
                    for k, v in value.items()):
                raise ctx.error(f"invariant {name!r}: {pname}: expected a mapping of tool name -> integer >= 0, "
                                f"got {_short(value)}", where, root=root)
        elif pname == "tool":
            if not isinstance(value, str):
                raise ctx.error(f"invariant {name!r}: tool: expected a tool name, got {_short(value)}", where,
                                root=root)
        elif pname in ("states", "fields"):
            seq = value if isinstance(value, (list, tuple)) else [value]
            if not seq or not all(isinstance(s, str) for s in seq):
                raise ctx.error(f"invariant {name!r}: {pname}: expected a list of names, got {_short(value)}", at,
                                root=root)
    if name == "bounded" and not ba.arguments:
        raise ctx.error("invariant 'bounded' needs at least one bound (executions, per_tool, turns, "
                        "virtual_seconds, tokens)", at, root=root)
    if name == "terminal_state" and not args:
        raise ctx.error(f"invariant 'terminal_state' needs at least one state ({', '.join(TERMINAL_STATES)})",
                        at, root=root)


def _required_params(fn: Any) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    return sum(1 for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


class FunctionInvariant:
    """A plain function ``(result) -> violations`` used as an invariant (``module:attr`` in ``expect``)."""

    def __init__(self, fn: Callable[[Any], Any], name: str) -> None:
        self.fn, self.name = fn, name

    def check(self, result: Any) -> list[Any]:
        out = self.fn(result)
        if out is None or out is True:
            return []
        if out is False:
            return [_invariants.Violation(self.name, "the check to hold", "it returned false")]
        return list(out)

    def __repr__(self) -> str:
        return f"{self.name}()"


# -- cross-checks --


def _cross_check(expect: list[Expectation], tools: Sequence[FakeTool], ctx: _Ctx,
                 where: list[Any], root: Any) -> None:
    names = {t.name for t in tools}
    by_name: dict[str, list[tuple[int, Any]]] = {}
    for i, e in enumerate(expect):
        by_name.setdefault(e.name, []).append((i, e.invariant))

    def at(i: int, *rest: Any) -> list[Any]:
        return [*where, i, *rest]

    for i, e in enumerate(expect):
        inv = e.invariant
        mentioned: list[tuple[str, list[Any]]] = []
        if isinstance(inv, _invariants.Bounded):
            mentioned += [(t, at(i, "bounded", "per_tool", t)) for t in inv.per_tool]
        elif isinstance(inv, _invariants.Completed):
            mentioned += [(t, at(i, "completed", "successes", t)) for t in inv.successes]
        elif isinstance(inv, _invariants.MaxSideEffects) and inv.tool is not None:
            mentioned.append((inv.tool, at(i, "max_side_effects", "tool")))
        for tool, loc in mentioned:
            if tool not in names:
                raise ctx.error(f"invariant {e.name!r} names the tool {tool!r}, which this scenario does not define"
                                f"{did_you_mean(tool, names)} (tools: {', '.join(sorted(names))})", loc,
                                key=True, root=root)
    bounded = by_name.get("bounded", [])
    for i, comp in by_name.get("completed", []):
        need = dict(comp.successes)
        for j, b in bounded:
            for tool, n in need.items():
                cap = b.per_tool.get(tool)
                if cap is not None and n > cap:
                    raise ctx.error(f"bounds cannot both be met: completed needs at least {n} successful calls of "
                                    f"{tool}, but bounded (line {expect[j].line}) allows at most {cap} executions "
                                    f"of it", at(i, "completed", "successes", tool), root=root)
            if b.executions is not None and sum(need.values()) > b.executions:
                raise ctx.error(f"bounds cannot both be met: completed needs at least {sum(need.values())} "
                                f"successful calls, but bounded (line {expect[j].line}) allows at most "
                                f"{b.executions} executions", at(i), root=root)
        for j, ts in by_name.get("terminal_state", []):
            if "COMPLETED" not in ts.states:
                raise ctx.error(f"bounds cannot both be met: completed requires the state COMPLETED, but "
                                f"terminal_state (line {expect[j].line}) allows only {', '.join(ts.states)}",
                                at(i), root=root)
    for i, ms in by_name.get("max_side_effects", []):
        if ms.tool is not None:
            spec = next(t for t in tools if t.name == ms.tool)
            if not spec.side_effect:
                raise ctx.error(f"invariant 'max_side_effects' on {ms.tool!r}, a tool without side effects: it can "
                                f"never break (give the tool `side_effect: true`, or drop the invariant)",
                                at(i, "max_side_effects", "tool"), root=root)


def _check_policy_tools(build: Callable[[], Any], tools: Sequence[FakeTool], ctx: _Ctx, where: list[Any],
                        root: Any) -> None:
    names = {t.name for t in tools}
    used = _policies.tools_of(build())
    for tool in sorted(used - names):
        span = _find_scalar(_subtree(root, where), tool)
        raise ctx.error(f"the policy calls the tool {tool!r}, which this scenario does not define"
                        f"{did_you_mean(tool, names)} (tools: {', '.join(sorted(names))})", where, span=span,
                        root=root)


def _subtree(root: Any, where: Sequence[Any]) -> Any:
    node = root
    for part in where:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            break
    return node


# -- merging (variants, restart tool overrides) --

_VARIANT_MERGE = {"tools": 2, "budgets": 1, "ceiling": 1}


def _merge(base: Any, over: Any, depth: int | Mapping[str, int]) -> Any:
    """``over`` on top of ``base``, merging mappings ``depth`` levels deep (per key at the top
    when ``depth`` is a mapping). Every value keeps the span it was written at."""
    if not isinstance(base, YMap) or not isinstance(over, YMap) or depth == 0:
        return over
    out = YMap(base, span=over.span)
    out.key_spans, out.value_spans = dict(base.key_spans), dict(base.value_spans)
    for k, v in over.items():
        d = depth.get(k, 0) if isinstance(depth, Mapping) else depth - 1
        out[k] = _merge(base[k], v, d) if k in base else v
        out.key_spans[k], out.value_spans[k] = over.key_spans[k], over.value_spans[k]
    return out


def _without(node: YMap, key: str) -> YMap:
    out = YMap({k: v for k, v in node.items() if k != key}, span=node.span)
    out.key_spans = {k: s for k, s in node.key_spans.items() if k != key}
    out.value_spans = {k: s for k, s in node.value_spans.items() if k != key}
    return out


# --- entry points --------------------------------------------------------------------------


def load_text(text: str, path: str | Path | None = None, *, allow_imports: bool = False) -> list[Scenario]:
    """The scenarios (one, or one per variant) of a scenario document."""
    p = Path(path) if path is not None else None
    root = load_yaml(text, p)
    if not isinstance(root, YMap):
        what = "an empty file" if root is None else ("a list" if isinstance(root, list) else f"{_short(root)}")
        raise ScenarioError(f"a scenario file holds one mapping (id, title, task, tools, policy, expect); "
                            f"found {what}", p, getattr(root, "span", Span(1, 1, 1, 2)), text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    ctx = _Ctx(p, text, root, allow_imports)
    spec = _validate(ScenarioSpec, root, ctx, root)
    if not spec.variants:
        return [_build(spec, root, ctx, digest, None, root.span.line)]
    raw_variants = root["variants"]
    base = _without(root, "variants")
    out: list[Scenario] = []
    seen: dict[str, int] = {}
    for i, variant in enumerate(spec.variants):
        line = raw_variants.item_spans[i].line
        if variant.id in seen:
            raise ctx.error(f"variant id {variant.id!r} is used twice (first at line {seen[variant.id]})",
                            ["variants", i, "id"])
        seen[variant.id] = line
        merged = _merge(base, _without(raw_variants[i], "id"), _VARIANT_MERGE)
        vctx = _Ctx(p, text, merged, allow_imports)
        vspec = _validate(ScenarioSpec, merged, vctx, merged)
        out.append(_build(vspec, merged, vctx, digest, variant.id, line))
    return out


def _build(spec: ScenarioSpec, root: YMap, ctx: _Ctx, digest: str, variant: str | None, line: int) -> Scenario:
    tools = _build_tools(spec.tools, ctx, ["tools"], root)
    policy = _build_policy(root["policy"], ctx, ["policy"], root)
    _check_policy_tools(policy, tools, ctx, ["policy"], root)
    expect = _build_expect(spec.expect, ctx, ["expect"], "run", root)
    _cross_check(expect, tools, ctx, ["expect"], root)
    if spec.agent is not None:
        _check_agent(spec.agent, ctx, ["agent"], root)
    budgets = Budgets(**spec.budgets.model_dump(exclude_none=True)) if spec.budgets else None
    ceiling = Ceiling(**spec.ceiling.model_dump(exclude_none=True)) if spec.ceiling else None
    restart = None
    if spec.restart is not None:
        rraw = root["restart"]
        rtools = tools
        if spec.restart.tools:
            over = YMap({"tools": rraw["tools"]}, span=rraw.span)
            over.key_spans["tools"], over.value_spans["tools"] = rraw.key_spans["tools"], rraw.value_spans["tools"]
            rroot = _merge(root, over, {"tools": 2})
            rspec = _validate(ScenarioSpec, rroot, ctx, rroot)
            rtools = _build_tools(rspec.tools, ctx, ["tools"], rroot)
        rpolicy = policy
        if spec.restart.policy is not None:
            rpolicy = _build_policy(rraw["policy"], ctx, ["restart", "policy"], root)
            _check_policy_tools(rpolicy, rtools, ctx, ["restart", "policy"], root)
        restart = Restart(spec.restart.task or spec.task, rpolicy, rtools)
        if spec.restart.expect_before:
            before = _build_expect(spec.restart.expect_before, ctx, ["restart", "expect_before"], "before", root)
            _cross_check(before, tools, ctx, ["restart", "expect_before"], root)
            expect += before
    fuzz = _build_fuzz(root, tools, ctx) if "fuzz" in root else None
    digest = _with_dependencies(digest, ctx.depends)
    explicit = {e.name for e in expect if e.phase == "run"}
    for inv in _invariants.DEFAULT:
        if inv.name not in explicit:
            expect.append(Expectation(inv, f"(implicit) {inv.name}", None, "each"))
    return Scenario(
        id=spec.id, title=spec.title, description=spec.description.strip(), category=spec.category,
        severity=spec.severity, tags=tuple(spec.tags), seed=spec.seed, task=spec.task, agent=spec.agent,
        tools=tools, policy=policy, expect=tuple(expect), budgets=budgets, ceiling=ceiling, restart=restart,
        variant=variant, path=ctx.path, content_hash=digest, line=line, spec=spec, fuzz=fuzz)


def _with_dependencies(digest: str, files: Sequence[Path]) -> str:
    """The scenario's hash, covering the files it replays: editing a recorded log changes what runs."""
    if not files:
        return digest
    h = hashlib.sha256(digest.encode())
    for f in files:  # read already when the policy was built: a missing file is a located error there
        h.update(b"\x00" + hashlib.sha256(f.read_bytes()).hexdigest().encode())
    return h.hexdigest()


def _build_fuzz(root: YMap, tools: Sequence[FakeTool], ctx: _Ctx) -> Any:
    """The ``fuzz:`` block, validated by the fuzzer's own ``FuzzSpec.from_data``."""
    from toolchaos.fuzzing._core import FuzzSpec  # the fuzzer loads hypothesis: only for a fuzz block

    try:
        return FuzzSpec.from_data(plain(root["fuzz"]), [t.name for t in tools])
    except FuzzSpecError as exc:
        path = _split_path(exc.field)
        names_key = "unknown key" in exc.problem
        raise ctx.error(f"{exc.field}: {exc.problem}", path, key=names_key, root=root) from None


def _check_agent(agent: str, ctx: _Ctx, where: list[Any], root: Any) -> None:
    if agent.startswith("builtin:"):
        name = agent.partition(":")[2]
        if name not in AGENTS:
            raise ctx.error(f"agent: no built-in agent {name!r}{did_you_mean(name, AGENTS)} "
                            f"(built-in: {', '.join('builtin:' + n for n in AGENTS)})", where, root=root)
        return
    if ":" not in agent:
        raise ctx.error(f"agent: expected 'builtin:NAME' or 'package.module:attr', got {agent!r}", where, root=root)
    obj = _import_ref(agent, ctx, where, "agent", root)
    if not callable(obj):
        raise ctx.error(f"agent {agent!r} is not callable", where, root=root)


def load_file(path: str | Path, *, allow_imports: bool = False) -> list[Scenario]:
    """The scenarios of one file (errors are ``ScenarioError`` naming the file, line and column)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"cannot read the file ({exc.strerror or exc})", p) from None
    if len(data) > MAX_BYTES:
        raise ScenarioError(f"the file is {len(data):,} bytes; scenario files are limited to {MAX_BYTES:,}", p)
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


def load_dir(root: str | Path, *, pattern: str = SCENARIO_PATTERN, allow_imports: bool = False) -> list[Scenario]:
    out: list[Scenario] = []
    for f in find_files(root, pattern):
        out.extend(load_file(f, allow_imports=allow_imports))
    return out


# --- JSON Schema ---------------------------------------------------------------------------


def _fault_schema() -> dict[str, Any]:
    variants: list[dict[str, Any]] = [{"enum": sorted(FAULT_KINDS)}]
    for kind, fn in sorted(FAULT_KINDS.items()):
        params: dict[str, Any] = {p: {} for p in inspect.signature(fn).parameters}
        variants.append({"type": "object", "additionalProperties": False, "required": [kind], "properties": {
            kind: {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": False,
                                                "properties": params}, {"not": {"type": "object"}}]}}})
    return {"description": "a fault kind, or {kind: {parameters}}, or {kind: first-parameter}", "anyOf": variants}


def _param_schemas(name: str) -> dict[str, dict[str, Any]]:
    """Typed parameters of a built-in policy where the schema can say more than "any value"."""
    if name != "recorded":
        return {}
    return {
        "path": {"type": "string", "description": "the toolchaos trace or agent log to replay, relative to the "
                                                  "scenario file"},
        "format": {"enum": ["auto", *FORMATS], "description": "the log's format (default: auto, detected)"},
        "session": {"type": "string", "description": "which session of the log (default: the first)"},
    }


def _policy_schema() -> dict[str, Any]:
    classes = _policy_classes()
    variants: list[dict[str, Any]] = [{"enum": sorted(classes)},
                                      {"type": "string", "pattern": r"^[\w.]+:[\w.]+$",
                                       "description": "package.module:attr (needs chaos_allow_imports)"}]
    for name, cls in sorted(classes.items()):
        allowed, _ = _params_of(cls)
        typed = _param_schemas(name)
        props: dict[str, Any] = {p: ({"$ref": "#/$defs/Policy"} if p == "inner" else typed.get(p, {}))
                                 for p in allowed}
        params: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": props}
        forms: list[dict[str, Any]] = [{"type": "null"}, {"not": {"type": "object"}}, params]
        if name == "recorded":  # a log to replay is required: `recorded: PATH` or `recorded: {path: PATH, ...}`
            params["required"] = ["path"]
            forms = [{"type": "string"}, params]
        if "inner" in allowed:  # a wrapper: `ignores_refusals: {stubborn: {...}}` is its inner policy
            forms.append({"$ref": "#/$defs/Policy"})
        variants.append({"type": "object", "additionalProperties": False, "required": [name],
                         "description": _policies.HELP.get(name, ""), "properties": {name: {"anyOf": forms}}})
    return {"description": "a built-in policy: `name` or `name: {parameters}`", "anyOf": variants}


def _invariant_schema() -> dict[str, Any]:
    variants: list[dict[str, Any]] = [{"enum": sorted(_invariants.BUILTIN)}]
    for name, fn in sorted(_invariants.BUILTIN.items()):
        params: dict[str, Any] = {p: {} for p in inspect.signature(fn).parameters}
        variants.append({"type": "object", "additionalProperties": False, "required": [name],
                         "description": _invariants.HELP.get(name, ""), "properties": {
                             name: {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": False,
                                                                 "properties": params},
                                              {"not": {"type": "object"}}]}}})
    variants.append({"type": "object", "maxProperties": 1, "propertyNames": {"pattern": r"^[\w.]+:[\w.]+$"},
                     "description": "package.module:attr (needs chaos_allow_imports)"})
    return {"description": "an invariant: `name` or `name: {parameters}`", "anyOf": variants}


def _fuzz_schema() -> dict[str, Any]:
    from toolchaos.fuzzing._core import FUZZ_KEYS  # the fuzzer loads hypothesis: only when the schema is built

    return {"description": "fault-schedule fuzzing: `fuzz: true` or a mapping of options",
            "anyOf": [{"type": "boolean"}, {"type": "null"},
                      {"type": "object", "additionalProperties": False, "properties": {k: {} for k in FUZZ_KEYS}}]}


def _rule_schema() -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["outcome"], "properties": {
        "call": {"type": "integer", "minimum": 1, "description": "the Nth call of this tool (1-based)"},
        "calls": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": ["integer", "null"]},
                  "description": "[first, last] call numbers, inclusive; last may be null (open-ended)"},
        "match": {"type": "object", "description": "calls whose arguments include these values"},
        "probability": {"type": "number", "minimum": 0, "maximum": 1, "description": "seeded random"},
        "always": {"type": "boolean"},
        "outcome": {"$ref": "#/$defs/Fault"}}}


def _refs(node: Any) -> Any:
    """Replace the ``x-toolchaos`` placeholders with references to the hand-written definitions."""
    if isinstance(node, dict):
        target = node.get("x-toolchaos")
        out = {k: _refs(v) for k, v in node.items() if k != "x-toolchaos"}
        if target == "Invariants":
            _set_items(out, {"$ref": "#/$defs/Invariant"})
        elif target is not None:
            out = {"$ref": f"#/$defs/{target}", **({"description": node["description"]} if "description" in node else {})}
        return out
    if isinstance(node, list):
        return [_refs(v) for v in node]
    return node


def _set_items(node: dict[str, Any], items: dict[str, Any]) -> None:
    if node.get("type") == "array":
        node["items"] = items
    for sub in node.get("anyOf", []):
        if isinstance(sub, dict):
            _set_items(sub, items)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (what ``toolchaos schema`` prints)."""
    schema: dict[str, Any] = _refs(ScenarioSpec.model_json_schema())
    defs = schema.setdefault("$defs", {})
    defs["Fault"] = _fault_schema()
    defs["Rule"] = _rule_schema()
    defs["FaultSchedule"] = {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/Fault"}, {
        "type": "array", "items": {"anyOf": [{"$ref": "#/$defs/Rule"}, {"$ref": "#/$defs/Fault"}]}}]}
    defs["Policy"] = _policy_schema()
    defs["Invariant"] = _invariant_schema()
    defs["Fuzz"] = _fuzz_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_URL
    schema["title"] = "toolchaos scenario"
    return schema
