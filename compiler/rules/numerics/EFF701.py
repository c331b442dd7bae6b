"""EFF701: numerics changed between compared runs without a time-to-target."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.rules import AuditContext, Rule


def _numerics(run) -> tuple[tuple[str, ...], float]:
    """The run's matmul dtypes (bf16 where undeclared) and its multiply-add FLOPs."""
    dtypes = tuple(sorted({hw.value("dtype", "bf16") for hw in run.blocks_named("hardware")}))
    convention = run.block("convention")
    multiply_add = float(convention.value("multiply_add", 2.0)) if convention is not None else 2.0
    return dtypes, multiply_add


class EFF701(Rule):
    """## What it does

    Flags a `scaling` comparison whose runs differ in numerics (the matmul
    `hardware.dtype`, or `convention.multiply_add`) when the runs do not both
    declare a `target` block, the quality target and the step at which each run
    reached it.

    ## Why is this bad?

    Moving from BF16 to FP8 can double the peak and shorten the step, but lower
    precision can also slow convergence, so more steps are needed to reach the
    same loss. A speedup or scaling efficiency per step then overstates the
    gain; only time-to-target (step time × steps to reach the same quality)
    compares the runs fairly. A changed multiply-add count changes what a FLOP
    is, so the efficiencies of the two runs are not even in the same unit.

    ## Example

    ```eff
    eff 1

    run bf16_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = [0.42, 0.41, 0.42, 0.43, 0.42] s  warmup = 0 step  boundary = "optimizer step" }
    }

    run fp8_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = fp8  peak = catalog }
      timing { step_time = [0.30, 0.29, 0.30, 0.31, 0.30] s  warmup = 0 step  boundary = "optimizer step" }
    }

    scaling bf16_to_fp8 { kind = strong  baseline = bf16_64  runs = [fp8_64] }
    ```

    ## Use instead

    Declare the quality target each run reached, so time-to-target is compared:

    ```eff
    eff 1

    run bf16_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = [0.42, 0.41, 0.42, 0.43, 0.42] s  warmup = 0 step  boundary = "optimizer step" }
      target { metric = "validation loss"  value = 2.85  reached_at = 20000 step }
    }

    run fp8_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = fp8  peak = catalog }
      timing { step_time = [0.30, 0.29, 0.30, 0.31, 0.30] s  warmup = 0 step  boundary = "optimizer step" }
      target { metric = "validation loss"  value = 2.85  reached_at = 21500 step }
    }

    scaling bf16_to_fp8 { kind = strong  baseline = bf16_64  runs = [fp8_64] }
    ```
    """

    code = "EFF701"
    title = "numerics changed between compared runs without a time-to-target"
    severity = "warning"
    name = "numerics-changed-without-target"
    nodes = ("scaling", "run.hardware.dtype", "run.convention.multiply_add", "run.target")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for scaling in ctx.spec.scalings:
            base = ctx.spec.run(scaling.baseline) if scaling.baseline else None
            if base is None:
                continue
            base_dtypes, base_ma = _numerics(base)
            for run_id in scaling.runs:
                run = ctx.spec.run(run_id)
                if run is None or run is base:
                    continue
                dtypes, ma = _numerics(run)
                changes = []
                span = None
                if dtypes != base_dtypes:
                    changes.append(f"dtype {'/'.join(base_dtypes)} → {'/'.join(dtypes)}")
                    dtype = next((d for h in run.blocks_named("hardware") if (d := h.get("dtype")) is not None), None)
                    span = dtype.value_span if dtype is not None else None
                if ma != base_ma:
                    changes.append(f"multiply_add {base_ma:g} → {ma:g} FLOP")
                    convention = run.block("convention")
                    entry = convention.get("multiply_add") if convention is not None else None
                    span = span or (entry.value_span if entry is not None else None)
                if not changes:
                    continue
                lacking = [r.id for r in (base, run) if r.block("target") is None]
                if not lacking:
                    continue
                entry = scaling.get("runs")
                yield self.diag(
                    span or (entry.value_span if entry is not None else scaling.name_span),
                    f"scaling `{scaling.id}` compares `{run.id}` with `{base.id}` across changed numerics "
                    f"({'; '.join(changes)}), but {' and '.join(f'`{r}`' for r in lacking)} "
                    f"declare{'s' if len(lacking) == 1 else ''} no time-to-target",
                    "add `target { metric = \"validation loss\"  value = …  reached_at = … step }` to both runs, "
                    "so the comparison is time to the same quality, not time per step",
                    label="numerics differ from the baseline",
                )
