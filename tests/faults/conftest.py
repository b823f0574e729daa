"""Fault tests: a real process, server or disk fails in the middle of a call, and the test checks
what deskmcp kept. Each test also records what it measured through `fault_figures` (for example
the seconds until the next call succeeded, or how many mails went out), which `bench/faults.py`
collects into its table; a plain test run keeps them in memory only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.faults import FaultFigures


@pytest.fixture
def fault_figures(request: pytest.FixtureRequest) -> Iterator[FaultFigures]:
    figures = FaultFigures(request.node.nodeid)
    yield figures
    figures.write()
