"""A tiny "application" whose agent tool the tests patch by import path."""

from __future__ import annotations

from typing import Any


def lookup_invoice(invoice_id: str, *, expand: bool = False) -> dict[str, Any]:
    """Look an invoice up in the real billing system (never reached under test)."""
    raise RuntimeError("the real billing system was called")


async def alookup_invoice(invoice_id: str) -> dict[str, Any]:
    """The async twin."""
    raise RuntimeError("the real billing system was called")
