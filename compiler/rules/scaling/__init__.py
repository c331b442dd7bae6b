"""Rules of the scaling family, and the series walk they share.

EFF301 and EFF302 read the same thing: each compared run of a `scaling` of
one kind against its baseline, as the engine evaluated them
(:class:`effspec.engine.scaling.ScalingRun`).  :func:`comparisons` yields those
pairs once, with the span a finding points at; the wording helpers keep the
two rules' messages in one voice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from effspec.diagnostics import Span
from effspec.display import sig
from effspec.engine.scaling import ScalingRun
from effspec.front.ir import Scaling
from effspec.rules import AuditContext

# Relative change in work per step (global or per device) above which the work
# is not "fixed". 0.5 % tolerates rounding in a declared batch, never a changed batch.
WORK_TOLERANCE = 0.005


@dataclass(frozen=True)
class Comparison:
    """One compared run of a scaling series, against the series' baseline."""

    scaling: Scaling
    base: ScalingRun
    run: ScalingRun
    span: Span  # the `per_device` or `kind` value (else the scaling's name): what the finding questions


def comparisons(ctx: AuditContext, kind: str) -> Iterator[Comparison]:
    """Every (baseline, run) pair of the scalings declared `kind = <kind>`, in declaration order."""
    for scaling in ctx.spec.scalings:
        if scaling.kind != kind:
            continue
        result = ctx.evaluation.scalings.get(scaling.id)
        base = result.baseline if result is not None else None
        if result is None or base is None:
            continue
        entry = (scaling.get("per_device") if kind == "weak" else None) or scaling.get("kind")
        span = entry.value_span if entry is not None else scaling.name_span
        for run in result.runs:
            yield Comparison(scaling, base, run, span)


def change(after: float | None, before: float | None) -> float | None:
    """The relative change ``after / before - 1``, or None when either is unknown (or the base is 0)."""
    if after is None or not before:
        return None
    return after / before - 1.0


def fixed(after: float | None, before: float | None, tolerance: float = WORK_TOLERANCE) -> bool:
    """Both known and within ``tolerance`` of each other."""
    moved = change(after, before)
    return moved is not None and abs(moved) <= tolerance


def signed_percent(relative: float) -> str:
    """A relative change as a finding prints it: ``+12.5 %``, ``-3.12 %``."""
    return f"{'+' if relative > 0 else ''}{sig(relative * 100, 3)} %"


def tokens(value: float) -> str:
    """A token count as prose reads it: ``524,288``."""
    return f"{value:,.0f}" if value == int(value) else sig(value)
