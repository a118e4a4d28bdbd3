"""Project test configuration.

Virtual time is installed once, before any test measures time, as the plugin does
under ``--chaos`` (see harness/_internal/clock.py for why it is installed once per process).
"""

from __future__ import annotations

import pytest
from toolchaos._internal import clock as _clock


def pytest_configure(config: pytest.Config) -> None:
    _clock.install()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Inner sessions without hypothesis's and langsmith's plugins: they cost seconds per session here."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest -p no:langsmith_plugin -p no:randomly")
    return pytester
