"""Project test configuration.

Virtual time is installed once, before any test measures time, as the plugin does
under ``--chaos`` (see harness/_plumbing/clock.py for why it is installed once per process).
"""

from __future__ import annotations

import pytest
from toolchaos._plumbing import clock as _clock


def pytest_configure(config: pytest.Config) -> None:
    _clock.install()
    # pytester drops, at the end of each test, the modules first imported during it, but the package
    # ``toolchaos`` (imported above) keeps the names it loaded lazily: a later test's inner session
    # would mix two copies of a module (``expected a FakeTool, got FakeTool``), so a test would pass
    # or fail by what ran before it. Loaded here, before any pytester exists, they are shared by all.
    import toolchaos

    for name in toolchaos.__all__:
        getattr(toolchaos, name)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Inner sessions without hypothesis's and langsmith's plugins: they cost seconds per session here."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest -p no:langsmith_plugin -p no:randomly")
    return pytester
