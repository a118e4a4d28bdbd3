"""fake_tools._frozen.quick_init: the same dataclass, built through its slots' descriptors."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest
from toolchaos._internal.model import Feedback, ToolCall, Usage
from toolchaos.fake_tools import Outcome, OutcomeClass
from toolchaos.fake_tools._frozen import quick_init


@dataclass(frozen=True, slots=True)
class _Plain:
    a: int
    b: str = "b"
    c: Any = None


@quick_init
@dataclass(frozen=True, slots=True)
class _Quick:
    a: int
    b: str = "b"
    c: Any = None


def test_it_builds_what_the_dataclass_builds() -> None:
    for args, kw in (((1,), {}), ((1, "x"), {}), ((1,), {"c": [2]}), ((), {"a": 3, "b": "y", "c": None})):
        quick, plain = _Quick(*args, **kw), _Plain(*args, **kw)
        assert (quick.a, quick.b, quick.c) == (plain.a, plain.b, plain.c)
        assert repr(quick) == repr(plain).replace("_Plain", "_Quick")
    assert _Quick(1) == _Quick(1) and hash(_Quick(1, "x")) == hash(_Quick(1, "x")) and _Quick(1) != _Quick(2)


def test_it_takes_the_same_arguments_and_refuses_the_same_mistakes() -> None:
    with pytest.raises(TypeError):
        _Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Quick(1, d=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Quick(1, "x", None, 4)  # type: ignore[call-arg]


def test_it_stays_frozen_and_works_with_replace_and_pickle() -> None:
    q = _Quick(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.a = 2  # type: ignore[misc]
    assert dataclasses.replace(q, b="z") == _Quick(1, "z")
    assert pickle.loads(pickle.dumps(Usage(3, 4))) == Usage(3, 4)


def test_the_hot_classes_use_it_and_keep_their_defaults() -> None:
    assert Usage(1, 2).total == 3
    assert ToolCall("c", "t", {"a": 1}).arguments == {"a": 1}
    fb = Feedback("c", "t", {}, None, "ok")
    assert (fb.retryable, fb.code, fb.retry_after, fb.executed) == (None, None, None, None)
    out = Outcome("ok", OutcomeClass.SUCCESS, "ok")
    assert (out.data, out.applied, out.headers, out.latency) == (None, True, (), 0.0)
    for cls in (Usage, ToolCall, Feedback, Outcome):
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
        assert "_set0" in cls.__init__.__globals__  # quick_init's, not the one dataclass wrote


def test_a_class_it_cannot_serve_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="not a frozen, slotted dataclass"):
        quick_init(dataclass(slots=True)(type("Mutable", (), {"__annotations__": {"a": int}})))
    with pytest.raises(TypeError, match="not a frozen, slotted dataclass"):
        quick_init(dataclass(frozen=True)(type("Unslotted", (), {"__annotations__": {"a": int}})))

    @dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = field(default_factory=list)

    with pytest.raises(TypeError, match=r"Factory\.a is not a plain field"):
        quick_init(Factory)

    @dataclass(frozen=True, slots=True)
    class Post:
        a: int

        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError, match="has a __post_init__"):
        quick_init(Post)
