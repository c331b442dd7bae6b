"""Shared pytest configuration: the fuzz tally printed at the end of a run.

The fuzz tests count every input they feed to the pipeline and every
exception that escaped it; the summary line makes the CI figure visible
without `-rP` or `-s`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

# `effspec check`'s result cache is off for the suite (tests monkeypatch the
# pipeline in-process and would otherwise be served earlier runs' outputs);
# tests/test_result_cache.py turns it on for its own runs.
os.environ["EFFSPEC_NO_CACHE"] = "1"


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


# Under pytest-xdist (`make test` runs the files on every core) each worker counts its own
# inputs; it hands its tally to the controller when it finishes, which adds them up.
def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    tally = session.config.stash.get(_TALLY, None)
    if output is not None and tally is not None:
        output["fuzz_tally"] = (tally.inputs, tally.uncaught)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    inputs, uncaught = getattr(node, "workeroutput", {}).get("fuzz_tally", (0, 0))
    tally = node.config.stash[_TALLY]
    tally.inputs += inputs
    tally.uncaught += uncaught


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    tally = config.stash.get(_TALLY, None)
    if tally is not None and tally.inputs:
        terminalreporter.write_line(f"fuzz: {tally.inputs} inputs, {tally.uncaught} uncaught exceptions")


# `make test-fast` (pytest -m "not slow") leaves these out: whole files whose
# nature is slow (fuzzing, subprocess servers, pre-commit's own venv, Dask,
# memory and growth measurements), and every test that renders a PDF
# (WeasyPrint is most of a report's time).  `make test` runs everything.
SLOW_FILES = {
    "test_fuzz.py", "test_fmt_fuzz.py", "test_pre_commit.py", "test_traces.py", "test_bounded_cost.py",
    "test_growth.py", "test_import_weight.py", "test_lsp.py", "test_lsp_features.py", "test_lsp_incremental.py",
    "test_extreme_values.py", "test_fmt_cli.py", "test_importers.py", "test_makefile.py", "test_report.py",
    "test_injection.py", "test_failed_report_keeps_output.py", "test_untrusted_reading.py", "test_catalog_cli.py",
    "test_result_cache.py",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        if item.path.name in SLOW_FILES or "pdf" in item.name.lower():
            item.add_marker(slow)
