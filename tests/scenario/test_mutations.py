"""A derandomised mutator of the bundled scenarios: every variant loads, or fails with a located ``ScenarioError``.

Each bundled scenario file is mutated at every place in its document (type swaps, deletions,
huge, NaN and infinite numbers, wrong YAML tags, paths to special files, loops and NUL bytes),
and a fixed sample of the variants is loaded under a real-time limit: no internal error, no
traceback, no hang, and every error names the file and a line. A smaller sample of the
variants that load is also run.
"""

from __future__ import annotations

import copy as _copymod
import math
import random
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from toolchaos import run
from toolchaos.errors import ScenarioError
from toolchaos.scenario import load_text

SCENARIOS = sorted((Path(__file__).parents[2] / "scenarios").rglob("*.chaos.yaml"))
VARIANTS = 1_200
LOAD_LIMIT = 5.0  # real seconds for one load: far above the few milliseconds one takes, far below a hang

NASTY_PATHS = ["/dev/zero", "/dev/urandom", "/dev/stdin", "/proc/self/fd/0", "a\x00b", "loop.jsonl",
               "../../../../../etc/passwd", "/", "~", "x" * 5000]
REPLACEMENTS: list[Any] = [
    None, True, 0, -1, 10**30, -(10**30), 1e308, math.nan, math.inf, -math.inf, "", "x", "x" * 20_000,
    [], {}, [[]], {"a": {}}, {"tool": [], "args": {}}, {"tool": {}, "args": []}, [None], "\u0000",
    {"recorded": "/dev/zero"}, {"recorded": {"path": "/dev/urandom"}}, {"stubborn": {"tool": [], "args": {}}},
    {"stubborn": {"tool": {"x": 1}}}, {"scripted": [{"call": [], "args": 3}]}, {"bounded": {"virtual_seconds": math.nan}},
    {"bounded": {"executions": math.inf}}, {"examples": 10**12},
]
TAGS = ["!!bool maybe", "!!int x", "!!float x", "!!binary '@@'", "!!set {a}", "!!omap [a]", "!!python/object:os.system",
        "!!timestamp nope", "!!null x", "!!str", '"\\ud800"', '"\\0"', "!<tag:yaml.org,2002:bool> 12", "!local x",
        "&a x", "*nope"]


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: the mutator must stay fast
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _dump(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)


def _copy(doc: Any) -> Any:
    return _copymod.deepcopy(doc)


FOCUS = ("policy", "expect", "fuzz", "ceiling", "budgets", "restart", "goal", "useful", "tools")


def _data_variant(rng: random.Random, doc: Any) -> str:
    paths = _paths(doc)[1:] or [()]
    if rng.random() < 0.5:  # half the time in the sections whose values the harness builds objects from
        paths = [p for p in paths if p and p[0] in FOCUS] or paths
    path = rng.choice(paths)
    kind = rng.randrange(4)
    copy = _copy(doc)
    if kind == 0 and path:
        return _dump(_set(copy, path, None, delete=True))
    if kind == 1:
        return _dump(_set(copy, path, rng.choice(NASTY_PATHS)))
    if kind == 2 and path and isinstance(path[-1], str):  # a key renamed: a typo, or a key of another section
        parent = copy
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1] + rng.choice(["s", "_", "x"])] = parent.pop(path[-1])
        return _dump(copy)
    return _dump(_set(copy, path, rng.choice(REPLACEMENTS)))


def _text_variant(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    candidates = [i for i, line in enumerate(lines) if ": " in line and not line.lstrip().startswith("#")]
    i = rng.choice(candidates)
    key, _, _ = lines[i].partition(": ")
    lines[i] = f"{key}: {rng.choice(TAGS)}"
    if rng.random() < 0.1:  # a broken indentation or a tab, too
        lines[i] = ("\t" if rng.random() < 0.5 else " ") + lines[i]
    return "\n".join(lines) + "\n"


def variants() -> Iterator[tuple[str, str]]:
    rng = random.Random(17)
    texts = {p: p.read_text(encoding="utf-8") for p in SCENARIOS}
    docs = {p: yaml.load(t, Loader=_LOADER) for p, t in texts.items()}
    for n in range(VARIANTS):
        p = SCENARIOS[n % len(SCENARIOS)]
        text = _text_variant(rng, texts[p]) if rng.random() < 0.3 else _data_variant(rng, docs[p])
        yield f"{p.name}#{n}", text


class _Hung(Exception):
    pass


@contextmanager
def _limit(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise _Hung()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_at_least_a_thousand_variants_of_every_bundled_scenario_load_or_fail_located(tmp_path, monkeypatch):
    assert len(SCENARIOS) >= 20
    monkeypatch.chdir(tmp_path)
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(tmp_path / "loop2.jsonl")
    (tmp_path / "loop2.jsonl").symlink_to(loop)
    internal, hung, unlocated, loaded = [], [], [], []
    seen = set()
    for name, text in variants():
        seen.add(text)
        where = tmp_path / (name.split("#")[0])
        try:
            with _limit(LOAD_LIMIT):
                loaded.append((name, load_text(text, where)))
        except ScenarioError as exc:
            if exc.path is None or exc.line is None:
                unlocated.append((name, str(exc)))
        except _Hung:
            hung.append(name)
        except Exception as exc:  # an internal error: what this test exists to catch
            internal.append((name, f"{type(exc).__name__}: {exc}"))
    assert len(seen) >= 1_000  # distinct variants
    assert internal == [] and hung == []
    assert unlocated == []
    assert len(loaded) > 50  # the mutator does not only break files
    for name, scenarios in loaded[:: max(1, len(loaded) // 8)][:8]:  # a sample runs: whatever it holds, run returns
        s = scenarios[0]
        r = run("builtin:guarded", task=s.task, tools=s.tools, policy=s.policy(), seed=0, ceiling=s.ceiling,
                budgets=s.budgets)
        assert r.trace.events[-1]["kind"] == "end", name


@pytest.mark.parametrize(("value", "message"), [
    ("task: !!bool maybe", "cannot read the value 'maybe' as the tag !!bool asks"),
    ("policy: {stubborn: {tool: [], args: {}}}", "policy"),
    ("policy: {stubborn: {tool: {a: 1}}}", "policy"),
    ("policy: {explore: {tool: search, queries: [{query: q}], goal: x}}", "goal must be a positive integer"),
    ("expect: [{bounded: {virtual_seconds: .nan}}]", ".nan is not a finite number"),
    ("expect: [{bounded: {executions: .inf}}]", ".inf is not a finite number"),
    ("ceiling: {real_seconds: .inf}", ".inf is not a finite number"),
    ("policy: {recorded: /dev/zero}", "a character device, not a regular file"),
    ("policy: {recorded: \"a\\0b\"}", "the path contains a NUL byte"),
])
def test_type_surprises_get_located_errors(value, message):
    base = {"id": "id: x", "title": "title: t", "task": "task: Get it.", "tools": "tools: {search: {}}",
            "policy": "policy: {stubborn: {tool: search, args: {query: q}}}", "expect": "expect: [terminated]"}
    key = value.split(":", 1)[0]
    base[key] = value
    with pytest.raises(ScenarioError) as err:
        load_text("\n".join(base.values()) + "\n", "s.chaos.yaml")
    assert message in str(err.value) and err.value.line is not None
