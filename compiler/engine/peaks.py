"""What a declared per-device peak is, read against the peak catalog.

The denominator rules (EFF201-EFF204, EFF207-EFF209) flag a peak from these
readings, and the report recomputes the figures a flagged peak moves from the
same readings, so both read one definition.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from effspec.engine import catalog
from effspec.engine.results import Evaluation, Pool
from effspec.front.ir import Entry, Run, Spec


class Audited(Protocol):
    """A checked spec and its evaluation (the rules' AuditContext is one)."""

    @property
    def spec(self) -> Spec: ...

    @property
    def evaluation(self) -> Evaluation: ...


# Vendors quote int8 in TOPS; where an int8 figure coincides with a float one
# (A100: 624 TOPS int8 = 624 TFLOP/s sparse BF16) the float reading is the one
# a FLOP/s denominator was taken from.
_FLOAT_FIRST = {"bf16": 0, "fp16": 0, "fp8": 1, "tf32": 2, "fp32": 3, "nvfp4": 4, "mxfp4": 4, "fp6": 5, "int8": 9}
_DTYPE_NAMES = {"bf16": "BF16", "fp16": "FP16", "fp8": "FP8", "tf32": "TF32", "fp32": "FP32", "int8": "INT8",
                "nvfp4": "NVFP4", "mxfp4": "MXFP4", "fp6": "FP6"}
# The block-scaled 4-bit formats, and the 8- and 6-bit ones that share the FP8 tensor-core rate on the parts
# that list FP4 (EFF208 and EFF209 own a peak of one family written for a run of the other).
FP4 = ("nvfp4", "mxfp4")
FP8_FAMILY = ("fp8", "fp6")


def dtype_name(dtype: str) -> str:
    return _DTYPE_NAMES.get(dtype, dtype)


# BF16 and FP16 share one tensor-core rate on every catalogued part, and so do NVFP4 and MXFP4 on the parts
# that list them; FP6 runs at the FP8 rate there.
_TWINS = {"bf16": ("fp16",), "fp16": ("bf16",), "nvfp4": ("mxfp4",), "mxfp4": ("nvfp4",), "fp8": ("fp6",),
          "fp6": ("fp8",)}


def worth_naming(rows: Iterable[catalog.PeakRow], dtype: str) -> tuple[catalog.PeakRow, ...]:
    """Coinciding rows worth a note: not the run's twin (FP16 for BF16, MXFP4 for NVFP4, FP6 for FP8), which has
    the same figure."""
    return tuple(r for r in rows if r.dtype not in _TWINS.get(dtype, ()))


def other_family(dtype: str, rows: Iterable[catalog.PeakRow]) -> tuple[catalog.PeakRow, ...]:
    """The rows of ``rows`` from the other side of the FP4/FP8 line than ``dtype`` (EFF208, EFF209), or ()."""
    if dtype in FP4:
        return tuple(r for r in rows if r.dtype in FP8_FAMILY)
    if dtype == "fp8":
        return tuple(r for r in rows if r.dtype in FP4)
    return ()


def row_kind(row: catalog.PeakRow) -> str:
    """`2:4-sparse BF16 figure` or `dense TF32 figure`, as a datasheet column reads."""
    kind = "2:4-sparse" if row.sparsity == "sparse" else "dense"
    return f"{kind} {dtype_name(row.dtype)} figure"


def row_name(row: catalog.PeakRow) -> str:
    """The column and its value: `dense INT8 figure (624 TOPS)`."""
    unit = "TOPS" if row.dtype == "int8" else "TFLOP/s"
    return f"{row_kind(row)} ({row.flops / 1e12:g} {unit})"


# No accelerator's datasheet spans a factor of ten between its own dtype's
# figures and a plausible per-device peak; above it the figure is a pool's.
AGGREGATE_FACTOR = 10.0


@dataclass(frozen=True)
class PeakReading:
    """What a declared per-device peak is, read against the catalog."""

    pool: Pool
    entry: Entry  # of `peak`
    own: catalog.PeakRow | None  # the catalog row for the run's dtype and sparsity
    same_dtype: tuple[catalog.PeakRow, ...]  # rows of the run's dtype matching the figure
    other_dtype: tuple[catalog.PeakRow, ...]  # rows of other dtypes matching it, floats first
    other_pool: catalog.PeakRow | None = None  # the figure of another pool's accelerator (EFF204)

    @property
    def peak(self) -> float:
        """The declared per-device peak: readings are made only of pools with one."""
        assert self.pool.peak is not None
        return self.pool.peak

    @property
    def wrong_dtype(self) -> bool:
        """EFF201: the figure is another datatype's, and none of the run's own (an FP8 figure for FP4 work,
        or an FP4 one for FP8 work, is EFF208's and EFF209's)."""
        return not self.same_dtype and bool(self.other_dtype) and self.fp4_fp8_swap is None

    @property
    def fp4_fp8_swap(self) -> catalog.PeakRow | None:
        """EFF208, EFF209: the row of the other side of the FP4/FP8 line the figure is (dense first), when it is
        none of the run's own."""
        if self.same_dtype:
            return None
        rows = sorted(other_family(self.pool.dtype, self.other_dtype), key=lambda r: r.sparsity != "dense")
        return rows[0] if rows else None

    @property
    def sparse_for_dense(self) -> catalog.PeakRow | None:
        """EFF202: the run's dtype's 2:4-sparse figure on a dense run."""
        if self.pool.sparsity != "dense":
            return None
        return next((r for r in self.same_dtype if r.sparsity == "sparse"), None)

    @property
    def looks_aggregate(self) -> bool:
        """EFF204: more than 10x the per-device figure, so likely a whole pool's peak."""
        return self.own is not None and self.peak > AGGREGATE_FACTOR * self.own.flops

    @property
    def disagrees(self) -> bool:
        """EFF203: off the catalog row by more than 1 %, and not explained by 201, 202 or 204."""
        if self.own is None or self.wrong_dtype or self.fp4_fp8_swap is not None or self.sparse_for_dense is not None:
            return False
        if self.looks_aggregate or self.other_pool is not None:
            return False
        return abs(self.peak - self.own.flops) > 0.01 * self.own.flops


def peak_readings(audited: Audited) -> Iterator[tuple[Run, PeakReading]]:
    """Every hardware pool whose `peak` is written as a quantity on a catalogued accelerator."""
    for run in audited.spec.runs:
        result = audited.evaluation.runs.get(run.id)
        if result is None:
            continue
        for pool in result.pools:
            entry = pool.block.get("peak")
            if entry is None or entry.value == "catalog" or pool.peak is None or not pool.accelerator:
                continue
            if catalog.canonical_accelerator(pool.accelerator) is None:
                continue
            matches = catalog.identify(pool.accelerator, pool.peak)
            same = tuple(r for r in matches if r.dtype == pool.dtype)
            other = tuple(sorted((r for r in matches if r.dtype != pool.dtype),
                                 key=lambda r: (_FLOAT_FIRST.get(r.dtype, 5), r.sparsity != "dense")))
            yield run, PeakReading(pool, entry, catalog.lookup(pool.accelerator, pool.dtype, pool.sparsity), same, other,
                                   None if same or other else _other_pool_row(pool, result.pools))


def _other_pool_row(pool: Pool, pools: Iterable[Pool]) -> catalog.PeakRow | None:
    """In a mixed run, the same-dtype row of another pool's accelerator that the figure equals
    (``pool`` has a declared peak on a catalogued accelerator: :func:`peak_readings` reads only those)."""
    if pool.accelerator is None or pool.peak is None:
        return None
    own_id, peak = catalog.canonical_accelerator(pool.accelerator), pool.peak
    for other in pools:
        other_id = catalog.canonical_accelerator(other.accelerator) if other.accelerator else None
        if other_id is None or other_id == own_id:
            continue
        row = catalog.lookup(other_id, pool.dtype, pool.sparsity)
        if row is not None and abs(row.flops - peak) <= 0.01 * row.flops:
            return row
    return None
