"""Ready-made tools: ``catalogue.get("fetch_invoice", faults=...)``."""

from toolchaos.fake_tools._catalogue import NAMES, describe, get

__all__ = ["NAMES", "describe", "get"]
