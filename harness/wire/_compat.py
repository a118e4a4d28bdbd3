"""pydantic and LangChain under virtual time (``toolchaos._plumbing.pydantic_time`` has the why)."""

from __future__ import annotations

from toolchaos._plumbing.clock import real_datetime
from toolchaos._plumbing.pydantic_time import patch_pydantic


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


__all__ = ["import_with_real_datetime", "patch_pydantic"]
