"""Section 8, wall time and calendar: the reconciled step (the declared breakdown, its sum and
remainder) and the calendar (wall clock split into steady steps, declared losses and an explicit
remainder), for each run that is not claims-only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.display import percent, quantity
from effspec.report.sections.views import MetricView, Row, metric_view
from effspec.report.words import clean

if TYPE_CHECKING:
    from effspec.engine.results import RunResult
    from effspec.report.sections.run import RunView


@dataclass(frozen=True)
class BreakdownRowView:
    category: str
    share: str
    seconds: str
    written: str
    line: int


@dataclass(frozen=True)
class BreakdownView:
    rows: tuple[BreakdownRowView, ...]
    total: str
    remainder: str
    has_unclassified: bool
    step_time: str
    unconverted: tuple[str, ...]
    compute_interval_efficiency: MetricView | None


def breakdown(rr: RunResult) -> BreakdownView | None:
    rec = rr.breakdown
    if rec is None:
        return None
    rows = tuple(BreakdownRowView(r.category, percent(r.share), quantity(r.seconds, "s") if r.seconds is not None else "—",
                                  clean(r.entry.text), r.entry.span.line) for r in rec.rows)
    cie = rec.compute_interval_efficiency
    return BreakdownView(rows, percent(rec.total), percent(rec.remainder), bool(rec.has_unclassified),
                         quantity(rec.step_time, "s") if rec.step_time is not None else "—",
                         tuple(clean(e.key) for e in rec.unconverted), metric_view(cie) if cie else None)


def _number(value: object) -> float | None:
    """A calendar figure (the schema makes each a number), or None where the spec gives none."""
    return float(value) if isinstance(value, (int, float)) else None


def calendar(rr: RunResult) -> tuple[Row, ...]:
    """Wall clock split into steady steps, declared losses and an explicit remainder."""
    cal = rr.run.block("calendar")
    if cal is None:
        return ()
    wall, steps = _number(cal.value("wall_clock")), _number(cal.value("steps"))
    step = rr.metrics.get("step_time")
    rows = []

    def share(seconds: float) -> str:
        return percent(seconds / wall) + " of wall clock" if wall else ""

    if wall is not None:
        rows.append(Row("wall clock (calendar.wall_clock)", quantity(float(wall), "s"), "100 %"))
    accounted = 0.0
    if steps is not None and step is not None:
        steady = float(steps) * step.value
        accounted += steady
        rows.append(Row("steady-state steps (calendar.steps × step_time)",
                        quantity(steady, "s"), f"{quantity(float(steps), 'step')} × {quantity(step.value, 's')}; " + share(steady)))
    for key in ("lost_time", "checkpoint_time"):
        v = _number(cal.value(key))
        if v is not None:
            accounted += float(v)
            rows.append(Row(f"calendar.{key}", quantity(float(v), "s"), share(float(v))))
    if wall is not None and steps is not None and step is not None:
        rest = float(wall) - accounted
        rows.append(Row("unclassified remainder (wall clock − the rows above)", quantity(rest, "s"), share(rest)))
    for key in ("interruptions", "repeated_tokens"):
        e = cal.get(key)
        if e is not None:
            rows.append(Row(f"calendar.{key}", clean(e.text), ""))
    return tuple(rows)


@dataclass(frozen=True)
class MeasuredRuns:
    """Sections 8 and 9 show the runs that are not claims-only, and name the others."""

    quoted: tuple[str, ...]  # the claims-only runs' ids
    runs: tuple[RunView, ...]

    @property
    def quoted_text(self) -> str:
        return ", ".join(self.quoted)

    @property
    def plural(self) -> str:
        return "s" if len(self.quoted) != 1 else ""


def measured(runs: tuple[RunView, ...]) -> MeasuredRuns:
    return MeasuredRuns(tuple(r.id for r in runs if r.claims_only), tuple(r for r in runs if not r.claims_only))
