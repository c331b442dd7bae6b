"""EFF201: a peak for another datatype or instruction path than the run's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from effspec.diagnostics import Diagnostic, Fix
from effspec.display import quantity
from effspec.engine.peaks import PeakReading, dtype_name, peak_readings, row_kind, row_name, worth_naming
from effspec.rules import AuditContext, Rule
from effspec.rules.fixes import value_fix


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
