"""EFF205: a parallel layout that does not multiply to the device count."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.rules import AuditContext, Rule

DEGREES = ("tp", "cp", "pp", "dp")


class EFF205(Rule):
    """## What it does

    Multiplies the declared parallel degrees, `tp × cp × pp × dp` (each
    defaulting to 1; expert parallelism is carved out of the data-parallel
    ranks, so `ep` is not a factor), and compares the product with the devices
    the `hardware` blocks declare: all of them, or those left after
    `unavailable`. A mismatch is flagged at the `parallelism` block.

    ## Why is this bad?

    Every rank runs on one device, so the layout and the device count are two
    statements of the same number. When they disagree, one of them is wrong,
    and both feed the figures: the device count sets the MFU denominator, and
    the layout sets the local GEMM shapes and the per-device work that scaling
    comparisons rest on. A transcription slip in a table (a DP or CP degree from
    another row) is the usual cause, and it silently halves or doubles the
    per-device figures.

    ## Example

    ```eff
    eff 1

    run long_context {
      model { kind = dense_transformer  layers = 32  d_model = 4096  heads = 32  ffn = swiglu  d_ff = 11008  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 32768 token/sequence  global_batch = 64 sequence }
      parallelism { tp = 8  cp = 4  pp = 2  dp = 4 }
      hardware { accelerator = "H100-SXM5-80GB"  count = 512 device  dtype = bf16  peak = catalog }
      timing { step_time = 9.5 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run long_context {
      model { kind = dense_transformer  layers = 32  d_model = 4096  heads = 32  ffn = swiglu  d_ff = 11008  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 32768 token/sequence  global_batch = 64 sequence }
      parallelism { tp = 8  cp = 4  pp = 2  dp = 8 }
      hardware { accelerator = "H100-SXM5-80GB"  count = 512 device  dtype = bf16  peak = catalog }
      timing { step_time = 9.5 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF205"
    title = "parallel layout does not multiply to the device count"
    severity = "warning"
    name = "layout-does-not-match-devices"
    nodes = ("run.parallelism", "run.hardware.count")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            par = run.block("parallelism")
            pools = run.blocks_named("hardware")
            if par is None or not pools or not any(par.get(k) for k in DEGREES):
                continue
            degrees = {k: int(par.number(k, 1)) for k in DEGREES}
            ranks = 1
            for v in degrees.values():
                ranks *= v
            total = sum(float(p.number("count", 0)) for p in pools)
            active = total - sum(float(p.number("unavailable", 0)) for p in pools)
            if ranks in (total, active) or total == 0:
                continue
            layout = " × ".join(f"{k} {v:,}" for k, v in degrees.items())
            devices = f"{total:,.0f} devices" + (f" ({active:,.0f} available)" if active != total else "")
            fix = active if active != total else total
            dp = degrees["dp"] * fix / ranks
            hint = (f"`dp = {dp:,.0f}` would match" if dp == int(dp) and dp >= 1
                    else "check each degree against the source")
            yield self.diag(
                par.span,
                f"the parallel layout {layout} = {ranks:,} ranks, but the run declares {devices}",
                f"one of the two is wrong: correct the degree or the `count` ({hint}); per-device figures and GEMM shapes depend on both",
                label=f"{ranks:,} ranks",
            )
