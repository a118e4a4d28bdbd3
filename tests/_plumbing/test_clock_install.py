"""Installing virtual time patches what freezegun patches, and loads nothing a module exports lazily."""

from __future__ import annotations

import json
import subprocess
import sys

# In a fresh process: installation happens once per process and is never undone.
INSTALL = """
import json, sys, types
from datetime import datetime
from time import monotonic
import toolchaos

held = types.ModuleType("held_references")  # a module that took references before installation
held.datetime, held.monotonic = datetime, monotonic
sys.modules["held_references"] = held
before = set(sys.modules)

from toolchaos._plumbing import clock
clock.install()
import freezegun.api as fz

print(json.dumps({
    "new": sorted(set(sys.modules) - before),
    "datetime_patched": held.datetime is fz.FakeDatetime,
    "monotonic_patched": held.monotonic is fz.fake_monotonic,
    "lazy_export_still_works": toolchaos.Ceiling.__name__,
}))
"""


def _install() -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", INSTALL], capture_output=True, text=True, check=True, timeout=60)
    data: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def test_install_patches_the_references_modules_already_hold() -> None:
    data = _install()
    assert data["datetime_patched"] is True
    assert data["monotonic_patched"] is True
    assert data["lazy_export_still_works"] == "Ceiling"


def test_install_loads_no_lazy_export() -> None:
    """freezegun's scan of every module used to run toolchaos's lazy ``__getattr__`` for every export
    (the scenario loader, pydantic, YAML: ~0.2 s per pytest process under --chaos)."""
    new = [str(m) for m in _install()["new"]]  # type: ignore[attr-defined]
    loaded = [m for m in new if m.startswith(("toolchaos.", "pydantic", "yaml"))]
    assert not any(m.startswith(("toolchaos.scenario", "toolchaos.certification", "pydantic", "yaml"))
                   for m in loaded), loaded
