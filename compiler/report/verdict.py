"""Page 1 as the verdict: which headline figures rest on an input a finding calls wrong,
and the figure effspec gives instead.

A peak that EFF201 (another datatype's), EFF202 (the 2:4-sparse figure on dense work),
EFF203 (off the catalog row of the run's own datatype and sparsity by more than 1 %) or
EFF204 (a whole pool's figure) calls wrong moves every figure divided by the aggregate
peak (MFU, HFU) by the ratio of the declared aggregate peak to the corrected one.
Example B: 39.8 % against the declared 624 TFLOP/s, 79.6 % against the dense 312 TFLOP/s.
EFF203's corrected figure is against the catalog row it names (the H100 PCIe 756 TFLOP/s
written for an SXM part: MFU × 756 / 989.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from effspec.engine.peaks import PeakReading, dtype_name, peak_readings
from effspec.engine.results import Evaluation, Pool
from effspec.front.ir import Spec

if TYPE_CHECKING:
    from effspec import Result

# The findings that call a declared peak wrong, and the figures that divide by it.
WRONG_PEAK = ("EFF201", "EFF202", "EFF203", "EFF204")
PEAK_FIGURES = ("mfu", "hfu")


@dataclass(frozen=True)
class Correction:
    """The peak-based figures of one run, recomputed against the catalog's peak."""

    code: str  # the finding that calls the peak wrong
    line: int | None  # where that peak is written
    factor: float  # declared aggregate peak / corrected aggregate peak: multiply MFU by it
    against: str  # "the dense BF16 peak"


@dataclass(frozen=True)
class _Audited:
    spec: Spec
    evaluation: Evaluation


def _flagged(reading: PeakReading, code: str) -> bool:
    if code == "EFF202":
        return reading.sparse_for_dense is not None
    if code == "EFF201":
        return reading.wrong_dtype
    if code == "EFF203":
        return reading.disagrees
    return reading.looks_aggregate


def peak_corrections(result: Result) -> dict[str, Correction]:
    """{run id: Correction} for each run whose peak a finding of ``result`` calls wrong."""
    ev, spec = cast("Evaluation | None", result.evaluation), cast("Spec | None", result.spec)
    findings = [(d.code, d.span.line) for d in result.diagnostics if d.code in WRONG_PEAK and d.span]
    if ev is None or spec is None or not findings:
        return {}
    per_run: dict[str, list[tuple[Pool, float, str, int]]] = {}
    for run, reading in peak_readings(_Audited(spec, ev)):
        line = reading.entry.value_span.line if reading.entry.value_span else reading.entry.span.line
        code = next((c for c, at in findings if at == line and _flagged(reading, c)), None)
        if code is None or reading.own is None:
            continue
        per_run.setdefault(run.id, []).append((reading.pool, reading.own.flops, code, line))
    out: dict[str, Correction] = {}
    for run_id, fixes in per_run.items():
        rr = ev.runs[run_id]
        fixed = {id(pool): flops for pool, flops, _, _ in fixes}
        declared = sum(p.active * p.peak for p in rr.pools if p.peak is not None)
        corrected = sum(p.active * fixed.get(id(p), p.peak) for p in rr.pools if p.peak is not None)
        if declared <= 0 or corrected <= 0:
            continue
        pool, _, code, line = fixes[0]
        out[run_id] = Correction(code, line, declared / corrected, _against(code, pool))
    return out


def _against(code: str, pool: Pool) -> str:
    """What the corrected figure divides by, in words."""
    if code == "EFF204":
        return "the per-device peak"
    if code == "EFF203":
        return f"the catalog's {pool.sparsity} {dtype_name(pool.dtype)} peak"
    return f"the {'dense ' if code == 'EFF202' else ''}{dtype_name(pool.dtype)} peak"
