"""Ready-made tools: ``catalogue.get("fetch_invoice", faults=...)``."""

from ._catalogue import NAMES, describe, get

__all__ = ["NAMES", "describe", "get"]
