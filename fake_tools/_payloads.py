"""Seeded payloads, made once per process for a payload function known to be deterministic.

A tool's success payload is ``payload(args, seeded(text))``: the same arguments and seed text
give the same data. Fuzzing and suites rerun the same few calls run after run, and making a
payload means setting a generator's state (a 625-number tuple) and drawing from it: ~6 us a
call, several calls a run. For a function marked ``deterministic`` (the catalogue's: they read
nothing but their arguments and their generator) the payload is made once and each run gets
its own copy, so an agent that edits the data it was handed changes nothing for the next run.
A function that is not marked (any user's) is called every time, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from toolchaos.fake_tools._seeded import seeded

_F = TypeVar("_F", bound=Callable[..., Any])
_DETERMINISTIC: set[Callable[..., Any]] = set()
# Payloads remembered; past that the table starts again. Fuzzing replays a few dozen; a suite of
# many seeds makes each payload once and fills the table without a hit: 4,096 added ~7 MB to the
# 1,000-scenario suite's peak (bench_scale.py), 512 adds under 1 MB.
_KEPT = 512
_made: dict[tuple[Callable[..., Any], str, str], Any] = {}
_PLAIN = (str, int, float, bool, type(None))


def deterministic(fn: _F) -> _F:
    """Mark a payload function whose data depends only on its arguments and its generator."""
    _DETERMINISTIC.add(fn)
    return fn


def make(fn: Callable[[Mapping[str, Any], Any], Any], args: Mapping[str, Any], text: str) -> Any:
    """``fn(args, seeded(text))``: remembered for a deterministic ``fn``, as a fresh copy each time."""
    if fn not in _DETERMINISTIC or not _plain_args(args):
        return fn(args, seeded(text))
    key = (fn, text, repr(args))  # the arguments as given: a payload may echo them (" a" is not "a")
    kept = _made.get(key)
    if kept is None:
        data = fn(args, seeded(text))
        kept = _copy(data)  # the caller's argument objects that the data holds are not shared
        if kept is _UNCOPYABLE:
            return data
        if len(_made) >= _KEPT:
            _made.clear()
        _made[key] = kept
    return _copy(kept)


def _plain_args(args: Mapping[str, Any]) -> bool:
    """Arguments whose ``repr`` tells them apart: a dict of text, numbers, booleans and None."""
    if type(args) is not dict:
        return False
    for v in args.values():
        if type(v) not in _PLAIN:
            return False
    return True


_UNCOPYABLE: Any = object()


def _copy(value: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, scalars); ``_UNCOPYABLE`` for anything else."""
    kind = type(value)
    if kind is dict:
        out = {}
        for k, v in value.items():
            v = v if type(v) in _PLAIN else _copy(v)
            if v is _UNCOPYABLE:
                return _UNCOPYABLE
            out[k] = v
        return out
    if kind is list:
        items = []
        for v in value:
            v = v if type(v) in _PLAIN else _copy(v)
            if v is _UNCOPYABLE:
                return _UNCOPYABLE
            items.append(v)
        return items
    return value if kind in _PLAIN else _UNCOPYABLE
