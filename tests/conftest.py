"""Shared pytest configuration: the fuzz tally printed at the end of a run.

The fuzz tests count every input they feed to the pipeline and every
exception that escaped it; the summary line makes the CI figure visible
without `-rP` or `-s`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass
class FuzzTally:
    inputs: int = 0
    uncaught: int = 0


_TALLY = pytest.StashKey[FuzzTally]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TALLY] = FuzzTally()


@pytest.fixture(scope="session")
def fuzz_tally(pytestconfig: pytest.Config) -> FuzzTally:
    """The run's counter of fuzz inputs and uncaught exceptions."""
    return pytestconfig.stash[_TALLY]


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    tally = config.stash.get(_TALLY, None)
    if tally is not None and tally.inputs:
        terminalreporter.write_line(f"fuzz: {tally.inputs} inputs, {tally.uncaught} uncaught exceptions")
