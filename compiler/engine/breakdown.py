"""Wall-time reconciliation: the `breakdown` block as a table that must sum to
the step, with an explicit unclassified remainder; and the `calendar` block as
a table that must fit in the wall clock.

Shares and seconds mix freely: seconds are divided by the step time (the
declared or implied ``step_time``), shares multiplied by it.  The evidence
behind EFF402 (sum ≠ 100 %), EFF403 (no explicit unclassified) and EFF404
(MFU needs a larger model-compute share than declared: the compute-interval
efficiency MFU / model_compute exceeds 100 %) is on :class:`Reconciliation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from effspec.diagnostics import Diagnostic
from effspec.display import metric_value, quantity
from effspec.engine.results import Input, Metric, RunResult
from effspec.front.ir import Entry
from effspec.front.keys import BREAKDOWN_CATEGORIES

RECONCILE_TOLERANCE = 0.01  # |sum - 100 %| above this is EFF402


@dataclass(frozen=True)
class Row:
    category: str
    share: float  # of the step
    seconds: float | None
    entry: Entry


@dataclass
class Reconciliation:
    rows: list[Row]
    unconverted: list[Entry]  # given in seconds, but the step time is unknown
    step_time: float | None
    total: float  # sum of the declared shares
    has_unclassified: bool
    compute_interval_efficiency: Metric | None

    @property
    def remainder(self) -> float:
        """1 − the declared sum: time no category accounts for (negative: counted twice)."""
        return 1.0 - self.total

    @property
    def remainder_seconds(self) -> float | None:
        return self.remainder * self.step_time if self.step_time is not None else None

    @property
    def reconciles(self) -> bool:
        """The declared shares sum to 100 % within RECONCILE_TOLERANCE (EFF402 when not)."""
        return abs(self.remainder) <= RECONCILE_TOLERANCE

    @property
    def unclassified(self) -> float:
        """The declared unclassified share plus whatever the sum leaves unaccounted (never below 0)."""
        return max(0.0, (self.share("unclassified") or 0.0) + self.remainder)

    @property
    def mfu_required_share(self) -> float | None:
        """The smallest model-compute share the run's MFU allows: MFU itself (at 100 % efficiency while computing)."""
        cie = self.compute_interval_efficiency
        value = cie.inputs[0].value if cie is not None else None  # its first input is the MFU
        assert value is None or isinstance(value, (int, float))
        return value

    @property
    def consistent_with_mfu(self) -> bool | None:
        """False when MFU / model_compute exceeds 1 (EFF404); None when either is unknown."""
        cie = self.compute_interval_efficiency
        return None if cie is None else cie.value <= 1.0 + RECONCILE_TOLERANCE

    def table(self) -> list[dict[str, object]]:
        """The reconciled table: declared rows, their sum, and the remainder, in shares and seconds."""
        step = self.step_time
        out: list[dict[str, object]] = [
            {"category": r.category, "share": r.share, "seconds": r.seconds, "written": r.entry.text} for r in self.rows]
        out.append({"category": "sum", "share": self.total, "seconds": self.total * step if step is not None else None,
                    "written": ""})
        out.append({"category": "remainder", "share": self.remainder, "seconds": self.remainder_seconds, "written": ""})
        return out

    def share(self, category: str) -> float | None:
        return next((r.share for r in self.rows if r.category == category), None)

    def share_metric(self, category: str) -> Metric | None:
        row = next((r for r in self.rows if r.category == category), None)
        if row is None:
            return None
        return Metric(f"breakdown.{category}", row.share, "", f"breakdown.{category} (declared share of the step)",
                      metric_value(row.share, ""), (Input(f"breakdown.{category}", row.entry.text, "",
                                                          row.entry.provenance.kind, row.entry.provenance.citation,
                                                          row.entry.span),))


def reconcile(result: RunResult) -> Reconciliation | None:
    block = result.run.block("breakdown")
    if block is None:
        return None
    step = result.figure("step_time")
    rows, unconverted = [], []
    for category in BREAKDOWN_CATEGORIES:
        entry = block.get(category)
        if entry is None:
            continue
        assert isinstance(entry.value, (int, float))  # a quantity key
        if entry.unit == "s":
            if step is None:
                unconverted.append(entry)
                continue
            rows.append(Row(category, entry.value / step.value, entry.value, entry))
        else:
            rows.append(Row(category, entry.value, entry.value * step.value if step else None, entry))
    total = sum(r.share for r in rows)
    cie = None
    mfu = result.metrics.get("mfu")
    compute = next((r for r in rows if r.category == "model_compute"), None)
    v = mfu.value / compute.share if mfu is not None and compute is not None and compute.share > 0 else math.inf
    if mfu is not None and compute is not None and math.isfinite(v):  # a subnormal share gives no efficiency
        cie = Metric("compute_interval_efficiency", v, "", "mfu / breakdown.model_compute",
                     f"{metric_value(mfu.value, '')} / {metric_value(compute.share, '')} = {metric_value(v, '')}",
                     (mfu.as_input(), Input("breakdown.model_compute", compute.share, "", compute.entry.provenance.kind,
                                            compute.entry.provenance.citation, compute.entry.span)), mfu.assumed)
    return Reconciliation(rows, unconverted, step.value if step else None, total,
                          block.get("unclassified") is not None, cie)


@dataclass(frozen=True)
class CalendarRow:
    category: str  # productive_steps | lost_time | checkpoint_time | unclassified
    seconds: float
    share: float  # of the wall clock
    formula: str


@dataclass(frozen=True)
class CalendarTable:
    """Where the wall clock went: steady-state steps, lost time, checkpoints, and the rest."""

    wall_clock: float
    rows: tuple[CalendarRow, ...]
    declared_sum: float  # productive + lost + checkpoint seconds
    overrun: float  # declared_sum − wall_clock when positive: the parts exceed the wall clock
    interruptions: int | None

    @property
    def unclassified(self) -> float:
        return max(0.0, self.wall_clock - self.declared_sum)

    def to_json(self) -> dict[str, object]:
        return {"wall_clock": self.wall_clock, "declared_sum": self.declared_sum, "overrun": self.overrun,
                "unclassified": self.unclassified, "interruptions": self.interruptions,
                "rows": [{"category": r.category, "seconds": r.seconds, "share": r.share, "formula": r.formula}
                         for r in self.rows]}


def calendar_table(result: RunResult, diags: list[Diagnostic]) -> CalendarTable | None:
    """The `calendar` block as a table; EFF011 at the block when its parts exceed the wall clock."""
    cal = result.run.block("calendar")
    wall_clock = cal.number("wall_clock") if cal is not None else None
    if cal is None or wall_clock is None:
        return None
    wall = float(wall_clock)
    step = result.metrics.get("step_time")  # as calendar_efficiency uses it: measured, not implied by a claim
    steps = cal.number("steps")
    rows = []
    if steps is not None and step is not None:
        rows.append(("productive_steps", float(steps) * step.value,
                     f"calendar.steps × step_time = {quantity(float(steps), 'step')} × {quantity(step.value, 's')}"))
    for key in ("lost_time", "checkpoint_time"):
        seconds = cal.number(key)
        if seconds is not None:
            rows.append((key, float(seconds), f"calendar.{key} (declared)"))
    declared = sum(seconds for _, seconds, _ in rows)
    overrun = max(0.0, declared - wall)
    rows.append(("unclassified", max(0.0, wall - declared),
                 "calendar.wall_clock − (" + " + ".join(name for name, _, _ in rows) + ")" if rows else "calendar.wall_clock"))
    if overrun > RECONCILE_TOLERANCE * wall:
        parts = " + ".join(f"{name} {quantity(seconds, 's')}" for name, seconds, _ in rows[:-1])
        diags.append(Diagnostic(
            "EFF011", "error", cal.span,
            f"the calendar's parts exceed its wall clock: {parts} = {quantity(declared, 's')} > "
            f"wall_clock {quantity(wall, 's')} (by {quantity(overrun, 's')})",
            "check `steps` (completed steps, not the schedule), the step time, and lost and checkpoint time "
            "counted twice; the parts must fit in `wall_clock`"))
    interruptions = cal.integer("interruptions")
    return CalendarTable(wall, tuple(CalendarRow(n, sec, sec / wall, f) for n, sec, f in rows), declared, overrun,
                         int(interruptions) if interruptions is not None else None)
