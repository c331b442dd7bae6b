"""EFF208: an FP4 run measured against an FP8 peak."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import quantity
from effspec.engine.peaks import FP4, dtype_name, peak_readings, row_kind, row_name, worth_naming
from effspec.rules import AuditContext, Rule
from effspec.rules.denominator.EFF201 import catalog_fix, catalog_help, mfu_note


class EFF208(Rule):
    """## What it does

    Flags a run whose matmuls are block-scaled 4-bit (`dtype = nvfp4` or
    `dtype = mxfp4`) while its written per-device `peak` is an FP8 (or FP6)
    figure of the declared accelerator, and none of the FP4 figures: the
    5 PFLOP/s dense FP8 figure of a GB200 in the denominator of an NVFP4 run
    whose own dense peak is 10 PFLOP/s.

    `effspec check --fix --unsafe-fixes` replaces the figure and its `from`
    with `peak = catalog` (unsafe: it changes the denominator).

    ## Why is this bad?

    On the Blackwell parts the FP4 tensor-core rate is twice the FP8 rate
    (B200, GB200), or three times it dense (B300, GB300: 13.5 and 15 against
    4.5 and 5 PFLOP/s). Until FP4 could be declared, an NVFP4 row had to be
    written as FP8, and its MFU came out two or three times what the FP4
    peak gives, with nothing saying so; a reader comparing it with an FP8
    run's MFU compares two different denominators.

    ## Example

    ```eff
    eff 1

    run nvfp4 {
      model { kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8  ffn = swiglu  d_ff = 28672  vocab = 128256 }
      convention { preset = nemo }
      work { seq_len = 8192 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "GB200"  count = 64 device  dtype = nvfp4  peak = 5000 TFLOP/s from datasheet "GB200 FP8" }
      timing { throughput = 313472 token/s }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run nvfp4 {
      model { kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8  ffn = swiglu  d_ff = 28672  vocab = 128256 }
      convention { preset = nemo }
      work { seq_len = 8192 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "GB200"  count = 64 device  dtype = nvfp4  peak = catalog }
      timing { throughput = 313472 token/s }
    }
    ```
    """

    code = "EFF208"
    title = "FP4 run measured against an FP8 peak"
    severity = "error"
    name = "fp4-run-fp8-peak"
    nodes = ("run.hardware.peak", "run.hardware.dtype")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run, reading in peak_readings(ctx):
            row = reading.fp4_fp8_swap
            pool = reading.pool
            if row is None or pool.dtype not in FP4:
                continue
            own = reading.own
            dtype = dtype_name(pool.dtype)
            correct = f"; the {own.sparsity} {dtype} peak is {quantity(own.flops, 'FLOP/s')}" if own is not None else ""
            notes: list[str] = []
            if own is not None:
                notes += mfu_note(ctx.evaluation.runs.get(run.id), reading.peak / own.flops, f"the {dtype} peak")
            also = worth_naming(tuple(r for r in reading.other_dtype if r != row), pool.dtype)
            if also:
                notes.append("the figure also equals the " + ", ".join(row_name(r) for r in also))
            yield self.diag(
                reading.entry.value_span,
                f"the peak {quantity(reading.peak, 'FLOP/s')} is the {row_kind(row)} for {row.accelerator}, "
                f"but the run's matmuls are {dtype}{correct}",
                catalog_help(reading),
                label=row_kind(row),
                notes=tuple(notes),
                fixes=catalog_fix(ctx, reading),
            )
