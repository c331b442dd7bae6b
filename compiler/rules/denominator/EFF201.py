"""EFF201: a peak for another datatype or instruction path than the run's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from effspec.diagnostics import Diagnostic, Fix
from effspec.display import quantity
from effspec.engine import catalog
from effspec.engine.results import Pool
from effspec.front.ir import Entry, Run
from effspec.rules import AuditContext, Rule
from effspec.rules.fixes import value_fix

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


def worth_naming(rows, dtype: str) -> tuple[catalog.PeakRow, ...]:
    """Coinciding rows worth a note: not the run's twin (FP16 for BF16, MXFP4 for NVFP4, FP6 for FP8), which has
    the same figure."""
    return tuple(r for r in rows if r.dtype not in _TWINS.get(dtype, ()))


def other_family(dtype: str, rows) -> tuple[catalog.PeakRow, ...]:
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


def peak_readings(ctx: AuditContext) -> Iterable[tuple[Run, PeakReading]]:
    """Every hardware pool whose `peak` is written as a quantity on a catalogued accelerator."""
    for run in ctx.spec.runs:
        result = ctx.evaluation.runs.get(run.id)
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


def _other_pool_row(pool, pools) -> catalog.PeakRow | None:
    """In a mixed run, the same-dtype row of another pool's accelerator that the figure equals."""
    own_id = catalog.canonical_accelerator(pool.accelerator)
    for other in pools:
        other_id = catalog.canonical_accelerator(other.accelerator) if other.accelerator else None
        if other_id is None or other_id == own_id:
            continue
        row = catalog.lookup(other_id, pool.dtype, pool.sparsity)
        if row is not None and abs(row.flops - pool.peak) <= 0.01 * row.flops:
            return row
    return None


def catalog_help(reading: PeakReading) -> str:
    own = reading.own
    if own is None:
        return "use the peak of the run's datatype and sparsity, and cite it with `from datasheet \"…\"`"
    return (f"write `peak = catalog`, or `peak = {own.flops / 1e12:g} TFLOP/s from datasheet \"…\"` "
            f"(the {own.sparsity} {dtype_name(own.dtype)} figure for {own.accelerator})")


def catalog_fix(ctx: AuditContext, reading: PeakReading) -> tuple[Fix, ...]:
    """`peak = catalog` in place of the figure and its source: unsafe, as it changes the denominator
    (`effspec check --fix --unsafe-fixes`; an editor's quick fix)."""
    own = reading.own
    if own is None:
        return ()
    fix = value_fix(ctx.lines, reading.entry.value_span, "catalog",
                    f"Write `peak = catalog` (the {own.sparsity} {dtype_name(own.dtype)} figure, "
                    f"{own.flops / 1e12:g} TFLOP/s)")
    return (replace(fix, preferred=False),) if fix is not None else ()


def mfu_note(result, factor: float, what: str) -> tuple[str, ...]:
    """How the run's MFU moves when the peak is corrected by ``factor`` (declared / correct)."""
    mfu = result.figure("mfu") if result is not None else None
    if mfu is None:
        return ()
    where = "" if mfu.basis == "inputs" else f" (step time implied by {mfu.basis})"
    return (f"MFU{where}: {mfu.value * 100:.4g} % against the declared peak, "
            f"{mfu.value * factor * 100:.4g} % against {what}",)


class EFF201(Rule):
    """## What it does

    Reads a declared per-device `peak` against the catalog of the declared
    accelerator and flags it when the figure is the peak of another datatype
    or instruction path (TF32, FP8, FP32, INT8) and not one of the run's own
    `dtype`: for example the TF32 figure in the denominator of a BF16 run, or
    the BF16 figure in the denominator of an FP8 run.

    `effspec check --fix --unsafe-fixes` replaces the figure and its `from`
    with `peak = catalog` (unsafe: it changes the denominator).

    ## Why is this bad?

    Tensor cores run each datatype at its own rate: on an H100 SXM the dense
    figures are 494.7 (TF32), 989.4 (BF16) and 1978.9 (FP8) TFLOP/s. A
    denominator taken from the wrong column moves MFU by a factor of two per
    step: a TF32 peak doubles a BF16 run's MFU, a BF16 peak doubles an FP8 run's
    MFU. The resulting figure matches no published number and cannot be
    compared with any run that used the right column.

    ## Example

    ```eff
    eff 1

    run bf16_run {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = 156 TFLOP/s from datasheet "A100 TF32" }
      timing { step_time = 4.0 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run bf16_run {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF201"
    title = "peak for another datatype or instruction path"
    severity = "error"
    name = "peak-of-another-dtype"
    nodes = ("run.hardware.peak", "run.hardware.dtype")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run, reading in peak_readings(ctx):
            if not reading.wrong_dtype:
                continue
            pool, row = reading.pool, reading.other_dtype[0]
            own = reading.own
            dtype = dtype_name(pool.dtype) + (" (dtype not declared: bf16 assumed)" if pool.dtype_assumed else "")
            correct = (f"; the {own.sparsity} {dtype_name(own.dtype)} peak is {quantity(own.flops, 'FLOP/s')}"
                       if own is not None else "")
            notes = []
            also = worth_naming(reading.other_dtype[1:], pool.dtype)
            if also:
                notes.append("the figure also equals the " + ", ".join(row_name(r) for r in also))
            if own is not None:
                result = ctx.evaluation.runs.get(run.id)
                notes += mfu_note(result, reading.peak / own.flops, f"the {dtype_name(own.dtype)} peak")
            yield self.diag(
                reading.entry.value_span,
                f"the peak {quantity(reading.peak, 'FLOP/s')} is the {row_kind(row)} for {row.accelerator}, "
                f"but the run computes in {dtype}{correct}",
                catalog_help(reading),
                label=row_kind(row),
                notes=tuple(notes),
                fixes=catalog_fix(ctx, reading),
            )
