"""The safe YAML loader: PyYAML's ``SafeLoader`` composes the node tree, which becomes located
plain data (``YMap``/``YList``, which remember the line and column of every key and value).

Only plain-data tags are accepted and duplicate keys are errors; nesting depth, file size
and alias expansion are bounded, so no input can hang the loader. Every error is a
``ScenarioError`` at the offending place.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml
from toolchaos.errors import ScenarioError
from toolchaos.scenario._spans import Span, YList, YMap
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

MAX_BYTES = 1_000_000
MAX_DEPTH = 40
MAX_VALUES = 20_000

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
        value = loader.construct_object(node, deep=True)
    except (yaml.MarkedYAMLError, ValueError, OverflowError) as exc:
        raise ScenarioError(f"cannot read the value {node.value!r} ({exc})", path, _span(node), text) from None
    except (KeyError, TypeError, AttributeError):  # `!!bool maybe`: PyYAML's constructor fails its own way
        kind = node.tag.rsplit(":", 1)[-1]
        raise ScenarioError(f"cannot read the value {node.value!r} as the tag !!{kind} asks", path, _span(node),
                            text) from None
    if isinstance(value, float) and not math.isfinite(value):
        # Every number in a scenario is a bound, a limit, a time or an argument: NaN passes every
        # comparison and infinity is not JSON, so neither can mean anything here.
        raise ScenarioError(f"{node.value} is not a finite number: write a number, or leave the key out",
                            path, _span(node), text)
    return value
