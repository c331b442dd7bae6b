"""Wall-time reconciliation: the `breakdown` block as a table that must sum to
the step, with an explicit unclassified remainder."""

from __future__ import annotations

from dataclasses import dataclass

from .evaluate import Input, Metric, RunResult
from .fmt import metric_value, quantity
from .ir import Entry
from .keys import BREAKDOWN_CATEGORIES

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
    if mfu is not None and compute is not None and compute.share > 0:
        v = mfu.value / compute.share
        cie = Metric("compute_interval_efficiency", v, "", "mfu / breakdown.model_compute",
                     f"{metric_value(mfu.value, '')} / {metric_value(compute.share, '')} = {metric_value(v, '')}",
                     (mfu.as_input(), Input("breakdown.model_compute", compute.share, "", compute.entry.provenance.kind,
                                            compute.entry.provenance.citation, compute.entry.span)), mfu.assumed)
    return Reconciliation(rows, unconverted, step.value if step else None, total,
                          block.get("unclassified") is not None, cie)
