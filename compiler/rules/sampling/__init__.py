"""Rules of the sampling family."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.front.ir import Block, Entry, Run, Samples


def sampled_runs(ctx) -> Iterator[tuple[Run, Block, Entry]]:
    """(run, its timing block, its step_time entry) for every run whose step
    time is given as samples (a list or a CSV column), not derived from a rate."""
    for run in ctx.spec.runs:
        timing = run.block("timing")
        entry = timing.get("step_time") if timing is not None else None
        if entry is not None and isinstance(entry.value, Samples):
            yield run, timing, entry
