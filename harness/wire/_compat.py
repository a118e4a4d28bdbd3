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

from toolchaos._internal.clock import real_datetime

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
    """Import ``modules`` with the real ``datetime``/``date`` classes in place (``clock.real_datetime``).

    ``pydantic.v1`` (which LangChain imports) fails at import under freezegun's fakes; imported
    here first, it binds the real classes.
    """
    import importlib
    import sys

    with real_datetime():
        for name in [m for m in modules if m not in sys.modules]:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
