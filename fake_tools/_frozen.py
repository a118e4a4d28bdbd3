"""A quicker constructor for the frozen, slotted dataclasses built on every model turn and tool call.

``@dataclass(frozen=True)`` refuses plain assignment, so the ``__init__`` it writes sets each
field with ``object.__setattr__(self, name, value)``: a global and an attribute lookup, then a
call that finds the slot by name. A run builds a dozen and a half of these (a ``Feedback`` of
nine fields is ~1.2 us). Each slot's own descriptor sets the same value directly, which is what
``object.__setattr__`` ends up doing: ``quick_init`` writes an ``__init__`` that calls them, with
the same parameters and defaults. Everything else the dataclass made (frozen assignment refused,
``__eq__``, ``__hash__``, ``__repr__``, ``replace``) is left as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

_T = TypeVar("_T")


def quick_init(cls: type[_T]) -> type[_T]:
    """Replace a frozen, slotted dataclass's ``__init__`` by one that sets the slots through their descriptors.

    Only for plain fields: no ``default_factory``, no ``init=False``, no keyword-only fields and no
    ``__post_init__`` (each is refused here, so a class that gains one fails at import, not at run).
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"quick_init: {cls.__qualname__} is not a frozen, slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"quick_init: {cls.__qualname__} has a __post_init__")
    names: dict[str, Any] = {}
    args, body = [], []
    for i, f in enumerate(dataclasses.fields(cls)):  # type: ignore[arg-type]
        if not f.init or f.kw_only or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"quick_init: {cls.__qualname__}.{f.name} is not a plain field")
        if f.default is dataclasses.MISSING:
            args.append(f.name)
        else:
            names[f"_default{i}"] = f.default
            args.append(f"{f.name}=_default{i}")
        names[f"_set{i}"] = cls.__dict__[f.name].__set__  # the slot's member descriptor
        body.append(f"    _set{i}(self, {f.name})")
    source = f"def __init__(self, {', '.join(args)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, names)  # as dataclasses writes its own methods
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
