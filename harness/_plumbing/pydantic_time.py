"""pydantic under virtual time.

freezegun replaces ``datetime.datetime``/``datetime.date`` process-wide while the
virtual clock is installed. pydantic recognises those types by identity when it builds a
schema (``obj is datetime.datetime`` before 2.14, a handler table keyed by the class from
2.14 on), and it sees whichever class was installed when pydantic, or the module that
declares a model, was imported. The SDKs build some schemas at import and some lazily
(``defer_build``), inside or outside a run, so a model may meet either class: "Unable to
generate pydantic-core schema for <class 'datetime.datetime'>".

``patch_pydantic()`` makes pydantic accept both: the 2.14 handler table answers the real
and the fake class alike, and the older ``match_type`` maps either onto the installed one.
Values are unaffected (a fake datetime is a real ``datetime`` subclass).
"""

from __future__ import annotations

import datetime as _dt
import sys
from typing import Any

_patched = False


def patch_pydantic() -> None:
    """Idempotent; a no-op until pydantic is imported (call it again after importing it)."""
    global _patched
    if _patched or "pydantic" not in sys.modules:
        return
    from freezegun import api as fz
    from pydantic._internal import _generate_schema as gs

    cls: Any = getattr(gs, "GenerateSchema", None)
    if cls is None:  # pragma: no cover - another pydantic layout: nothing to fix
        return
    swaps = ((fz.real_datetime, fz.FakeDatetime, "datetime"), (fz.real_date, fz.FakeDate, "date"))
    handlers = getattr(cls, "_handlers", None)
    if isinstance(handlers, dict):  # pydantic >= 2.14
        for real, fake, _ in swaps:
            handler = handlers.get(real) or handlers.get(fake)
            if handler is not None:
                handlers.setdefault(real, handler)
                handlers.setdefault(fake, handler)
    original = getattr(cls, "match_type", None)
    if original is not None:
        def match_type(self: Any, obj: Any, *args: Any, **kwargs: Any) -> Any:  # 2.14 adds `origin`
            for real, fake, name in swaps:
                if obj is real or obj is fake:
                    obj = getattr(_dt, name)
                    break
            return original(self, obj, *args, **kwargs)

        cls.match_type = match_type
    _patched = True
