"""Rules of the sampling family."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from effspec.front.ir import Block, Entry, Run, Samples

if TYPE_CHECKING:
    from effspec.rules import AuditContext


def sampled_runs(ctx: AuditContext) -> Iterator[tuple[Run, Block, Entry, Samples]]:
    """(run, its timing block, its step_time entry, the entry's samples) for every
    run whose step time is given as samples (a list or a CSV column), not derived
    from a rate."""
    for run in ctx.spec.runs:
        timing = run.block("timing")
        entry = timing.get("step_time") if timing is not None else None
        if timing is not None and entry is not None and isinstance(entry.value, Samples):
            yield run, timing, entry, entry.value
