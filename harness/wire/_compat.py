"""pydantic under virtual time.

freezegun replaces ``datetime.datetime``/``datetime.date`` process-wide while the
virtual clock is installed. pydantic recognises those types by identity
(``obj is datetime.datetime``) when it builds a schema, and the SDKs' models build
their schemas lazily (``defer_build``): a model declared before the clock was installed
(annotated with the real ``datetime``) and first used inside a run then fails with
"Unable to generate pydantic-core schema for <class 'datetime.datetime'>". The same
happens the other way round after the clock is uninstalled.

``patch_pydantic()`` maps either class onto the one currently installed before pydantic
looks it up; values are unaffected (a fake datetime is a real ``datetime`` subclass).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

_patched = False


def patch_pydantic() -> None:
    global _patched
    if _patched:
        return
    try:
        from freezegun import api as fz
        from pydantic._internal import _generate_schema as gs
    except ImportError:  # pragma: no cover - both are core dependencies
        return
    cls: Any = getattr(gs, "GenerateSchema", None)
    original = getattr(cls, "match_type", None)
    if original is None:  # pragma: no cover - another pydantic layout: nothing to fix
        return
    swaps = ((fz.real_datetime, fz.FakeDatetime, "datetime"), (fz.real_date, fz.FakeDate, "date"))

    def match_type(self: Any, obj: Any, *args: Any, **kwargs: Any) -> Any:  # pydantic 2.14 adds `origin`
        for real, fake, name in swaps:
            if obj is real or obj is fake:
                obj = getattr(_dt, name)
                break
        return original(self, obj, *args, **kwargs)

    cls.match_type = match_type
    _patched = True


def import_with_real_datetime(*modules: str) -> None:
    """Import ``modules`` with the real ``datetime``/``date`` classes in place.

    A module imported while freezegun is active binds its fakes; ``pydantic.v1`` (which
    LangChain imports) then fails at import: ``class ConstrainedDate(date, metaclass=...)``
    is a metaclass conflict with freezegun's ``FakeDate``. Imported here first, it binds
    the real classes (fake instances still pass its checks: they subclass the real ones).
    """
    import importlib
    import sys

    missing = [m for m in modules if m not in sys.modules]
    if not missing:
        return
    try:
        from freezegun import api as fz
    except ImportError:  # pragma: no cover - a core dependency
        return
    saved = (_dt.datetime, _dt.date)
    faked = saved[0] is not fz.real_datetime
    if faked:
        _dt.datetime, _dt.date = fz.real_datetime, fz.real_date  # type: ignore[misc]
    try:
        for name in missing:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
    finally:
        if faked:
            _dt.datetime, _dt.date = saved  # type: ignore[misc]
