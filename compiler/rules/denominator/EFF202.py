"""EFF202: the 2:4-sparse peak used for dense work."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import quantity
from effspec.engine.peaks import dtype_name, peak_readings, row_name, worth_naming
from effspec.rules import AuditContext, Rule
from effspec.rules.denominator.EFF201 import catalog_fix, catalog_help, mfu_note


class EFF202(Rule):
    """## What it does

    Flags a declared per-device `peak` that equals the 2:4 structured-sparsity
    figure of the run's own datatype on the declared accelerator, while the run
    does dense work (`sparsity = dense`, the default).

    `effspec check --fix --unsafe-fixes` replaces the figure and its `from`
    with `peak = catalog` (unsafe: it changes the denominator).

    ## Why is this bad?

    Datasheets print two numbers per datatype: the dense peak and, since the
    A100, a figure twice as large that only 2:4 structured-sparse matrices can
    reach (A100 BF16: 312 vs 624 TFLOP/s; H100 SXM BF16: 989.4 vs 1979). LLM
    training is dense. Dividing by the sparse figure halves every MFU, so a run
    at 48 % reports 24 %; a vendor who does it to a competitor's run makes it
    look half as efficient, and a reader comparing with a paper that used the
    dense figure is off by 2x.

    ## Example

    ```eff
    eff 1

    run vendor {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = 624 TFLOP/s from paper "footnote 3" }
      timing { throughput = 390000 token/s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run vendor {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = 312 TFLOP/s from datasheet "A100 datasheet, dense BF16" }
      timing { throughput = 390000 token/s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF202"
    title = "sparse (2:4) peak used for dense work"
    severity = "error"
    name = "sparse-peak-for-dense-work"
    nodes = ("run.hardware.peak", "run.hardware.sparsity")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run, reading in peak_readings(ctx):
            row = reading.sparse_for_dense
            if row is None:
                continue
            pool, own = reading.pool, reading.own
            dtype = dtype_name(pool.dtype)
            dense = f"; dense {dtype} is {quantity(own.flops, 'FLOP/s')}" if own is not None else ""
            notes: list[str] = []
            if own is not None:
                notes += mfu_note(ctx.evaluation.runs.get(run.id), reading.peak / own.flops, f"the dense {dtype} peak")
            also = worth_naming(reading.other_dtype, pool.dtype)
            if also:
                notes.append("the figure also equals the " + ", ".join(row_name(r) for r in also)
                             + f" of {row.accelerator}, which does not apply to {dtype} work either")
            written = "" if pool.block.get("sparsity") is not None else " (`sparsity` not written: dense)"
            yield self.diag(
                reading.entry.value_span,
                f"the peak {quantity(reading.peak, 'FLOP/s')} is the 2:4-sparse {dtype} figure for {row.accelerator}, "
                f"but the run does dense work{written}{dense}",
                catalog_help(reading),
                label=f"2:4-sparse figure for {row.accelerator}{dense}",
                notes=tuple(notes),
                fixes=catalog_fix(ctx, reading),
            )
