"""EFF302: a weak-scaling comparison whose work per device changed."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.display import sig
from effspec.rules import AuditContext, Rule

# Relative change in valid tokens per device above which per-device work is not "fixed".
WORK_TOLERANCE = 0.005


def tokens(value: float) -> str:
    """A token count as prose reads it: ``8,192``."""
    return f"{value:,.0f}" if value == int(value) else sig(value)


class EFF302(Rule):
    """Weak scaling with changed per-device work.

    ## What it does
    Compares the valid tokens per step per active device of every run in a
    `scaling` of `kind = weak` with its baseline's, and flags a run whose
    per-device work differs by more than 0.5 %, with the change in percent.

    ## Why is this bad?
    Weak-scaling efficiency divides the model FLOP/s each device achieves in the
    larger run by the baseline's.  That ratio isolates the cost of adding devices
    only while each device is handed the same work.  Give each device more tokens
    and its matrix multiplications grow and fixed costs amortize, so the ratio
    rises for reasons that have nothing to do with scaling; give it fewer and
    the ratio falls the same way.  When the global batch stayed fixed instead,
    the comparison is strong scaling.

    ## Example
    ```eff
    eff 1

    run base_8 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 8  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s }
    }

    run wide_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }   # 16 sequences per device, not 32
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 2.3 s }
    }

    scaling dp {
      kind     = weak
      baseline = base_8
      runs     = [wide_64]
    }
    ```

    ## Use instead
    Grow the global batch with the devices, so that each device does the
    baseline's work:
    ```eff
    eff 1

    run base_8 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 8  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s }
    }

    run wide_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 2048 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.4 s }
    }

    scaling dp {
      kind     = weak
      baseline = base_8
      runs     = [wide_64]
    }
    ```
    """

    code = "EFF302"
    title = "weak scaling with changed per-device work"
    severity = "error"
    name = "weak-scaling-changed-per-device-work"
    nodes = ("scaling.kind", "scaling.runs", "run.work", "run.hardware.count")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for scaling in ctx.spec.scalings:
            if scaling.kind != "weak":
                continue
            result = ctx.evaluation.scalings.get(scaling.id)
            base = result.baseline if result is not None else None
            if result is None or base is None or not base.tokens_per_device:
                continue
            kind_entry = scaling.get("kind")
            span = kind_entry.value_span if kind_entry is not None else scaling.name_span
            for run in result.runs:
                if run.tokens_per_device is None:
                    continue
                change = run.tokens_per_device / base.tokens_per_device - 1.0
                if abs(change) <= WORK_TOLERANCE:
                    continue
                shown = f"{'+' if change > 0 else ''}{sig(change * 100, 3)} %"
                global_fixed = (base.valid_tokens_per_step and run.valid_tokens_per_step is not None
                                and abs(run.valid_tokens_per_step / base.valid_tokens_per_step - 1.0) <= WORK_TOLERANCE)
                what = ("the global work stayed fixed, so this is strong scaling" if global_fixed
                        else "weak-scaling efficiency would mix the scaling cost with the change in work per device")
                target_batch = base.tokens_per_device * run.devices
                help_ = (f"write `kind = strong` for `{scaling.id}`" if global_fixed else
                         f"give `{run.run_id}` {tokens(base.tokens_per_device)} valid tokens per device, i.e. "
                         f"{tokens(target_batch)} valid tokens per step on its {sig(run.devices)} devices")
                yield self.diag(
                    span,
                    f"`{scaling.id}` is declared weak scaling, but run `{run.run_id}` does "
                    f"{tokens(run.tokens_per_device)} valid tokens per device per step, the baseline `{base.run_id}` "
                    f"{tokens(base.tokens_per_device)} ({shown}): per-device work is not fixed; {what}",
                    help_,
                    label=f"per-device work changed by {shown} in `{run.run_id}`",
                    notes=("weak-scaling efficiency = run achieved FLOP/s per device / baseline achieved FLOP/s per "
                           "device, meaningful only when every device does the same work per step",),
                )
