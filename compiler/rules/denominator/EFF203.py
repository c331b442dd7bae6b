"""EFF203: a declared peak that disagrees with the catalog."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import quantity
from effspec.engine.peaks import dtype_name, peak_readings, row_kind
from effspec.rules import AuditContext, Rule
from effspec.rules.denominator.EFF201 import mfu_note


class EFF203(Rule):
    """## What it does

    Compares a per-device `peak` written as a quantity with the catalog row for
    the same accelerator, datatype and sparsity, and flags a difference above
    1 % that is not already explained as another datatype's figure (EFF201) or
    the sparse figure (EFF202). It names the catalog figure and its source.

    ## Why is this bad?

    MFU is a ratio to the vendor's published peak, so that runs on the same
    part can be compared. A rounded, misremembered or boost-clock figure, a
    number for a sibling part (H100 PCIe is 756 TFLOP/s BF16, the SXM part
    989.4), or a measured GEMM ceiling in the `peak` slot each shift MFU by the
    same ratio, silently. A measured ceiling is useful, but it belongs in
    `measured_peak`, where it yields `mfu_measured_peak` beside the standard MFU.

    ## Example

    ```eff
    eff 1

    run h100_run {
      model { kind = dense_transformer  layers = 32  d_model = 4096  heads = 32  ffn = swiglu  d_ff = 11008  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = 756 TFLOP/s from estimate "vendor table" }
      timing { step_time = 6.1 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run h100_run {
      model { kind = dense_transformer  layers = 32  d_model = 4096  heads = 32  ffn = swiglu  d_ff = 11008  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware {
        accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog
        measured_peak = 756 TFLOP/s from measured "8192^3 BF16 GEMM"
      }
      timing { step_time = 6.1 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF203"
    title = "declared peak disagrees with the catalog"
    severity = "warning"
    name = "peak-disagrees-with-catalog"
    nodes = ("run.hardware.peak",)

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run, reading in peak_readings(ctx):
            if not reading.disagrees:
                continue
            pool, own = reading.pool, reading.own
            assert own is not None  # a reading disagrees only with a catalog row
            diff = (reading.peak - own.flops) / own.flops
            notes = [f"catalog: {own.accelerator} {own.sparsity} {dtype_name(own.dtype)} = "
                     f"{quantity(own.flops, 'FLOP/s')} ({own.citation})"]
            if reading.same_dtype:
                notes.append(f"the figure is the {row_kind(reading.same_dtype[0])} of {own.accelerator}, "
                             f"but the run declares `sparsity = {pool.sparsity}`")
            notes += mfu_note(ctx.evaluation.runs.get(run.id), reading.peak / own.flops, "the catalog peak")
            yield self.diag(
                reading.entry.value_span,
                f"the peak {quantity(reading.peak, 'FLOP/s')} differs from the catalog's {own.sparsity} "
                f"{dtype_name(own.dtype)} figure for {own.accelerator}, {quantity(own.flops, 'FLOP/s')} ({diff * 100:+.2f} %)",
                f"write `peak = catalog`; if {quantity(reading.peak, 'FLOP/s')} is a measured ceiling, "
                f"move it to `measured_peak = {reading.peak / 1e12:g} TFLOP/s from measured \"…\"`",
                label=f"catalog: {quantity(own.flops, 'FLOP/s')}",
                notes=tuple(notes),
            )
