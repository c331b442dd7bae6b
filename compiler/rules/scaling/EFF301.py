"""EFF301: a strong-scaling comparison whose global work per step changed."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.rules import AuditContext, Rule
from effspec.rules.scaling import WORK_TOLERANCE, change, comparisons, fixed, signed_percent, tokens


class EFF301(Rule):
    """Strong scaling with changed global work.

    ## What it does
    Compares the global valid tokens per optimizer step of every run in a
    `scaling` of `kind = strong` with its baseline's, and flags a run whose
    global work differs by more than 0.5 %.  The message gives the change in
    percent and says what the comparison is instead: weak scaling when the valid
    tokens per device stayed constant, neither when both changed.

    ## Why is this bad?
    Strong-scaling efficiency is speedup / (device ratio), and the speedup is a
    ratio of step times.  It only means "the same job finished faster" when each
    step does the same useful work.  If the larger run also takes a larger
    global batch, its steps do more work and the ratio of step times no longer
    measures anything: doubling the batch with the devices can show a perfect
    "strong-scaling efficiency" while every step takes as long as before.

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

    run big_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 2048 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.4 s }
    }

    scaling dp {
      kind     = strong     # the global batch grew 8x with the devices
      baseline = base_8
      runs     = [big_64]
    }
    ```

    ## Use instead
    Keep the global batch of the baseline in every compared run (or call the
    comparison `kind = weak` when the per-device work was held instead):
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

    run big_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.6 s }
    }

    scaling dp {
      kind     = strong
      baseline = base_8
      runs     = [big_64]
    }
    ```
    """

    code = "EFF301"
    title = "strong scaling with changed global work"
    severity = "error"
    name = "strong-scaling-changed-global-work"
    nodes = ("scaling.kind", "scaling.runs", "run.work", "run.hardware.count")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for c in comparisons(ctx, "strong"):
            scaling, base, run = c.scaling, c.base, c.run
            moved = change(run.valid_tokens_per_step, base.valid_tokens_per_step)
            if moved is None or abs(moved) <= WORK_TOLERANCE:
                continue
            assert run.valid_tokens_per_step is not None and base.valid_tokens_per_step  # change() compared them
            if fixed(run.tokens_per_device, base.tokens_per_device):
                assert run.tokens_per_device is not None  # fixed() compared it
                what = (f"the valid tokens per device stayed at {tokens(run.tokens_per_device)}, "
                        "so this is weak scaling")
                help_ = (f"write `kind = weak` for `{scaling.id}`, or give `{run.run_id}` the baseline's global "
                         f"work ({tokens(base.valid_tokens_per_step)} valid tokens per step) to measure strong scaling")
            else:
                per_device = (f"{tokens(base.tokens_per_device)} → {tokens(run.tokens_per_device)}"
                              if base.tokens_per_device and run.tokens_per_device else "unknown")
                what = (f"the valid tokens per device changed too ({per_device}), "
                        "so this is neither strong nor weak scaling")
                help_ = (f"give `{run.run_id}` the baseline's global work "
                         f"({tokens(base.valid_tokens_per_step)} valid tokens per step: the same `seq_len` × "
                         "`global_batch` − padded − dropped) for strong scaling, or the baseline's work per "
                         "device for weak scaling")
            yield self.diag(
                c.span,
                f"`{scaling.id}` is declared strong scaling, but run `{run.run_id}` does "
                f"{tokens(run.valid_tokens_per_step)} valid tokens per step, the baseline "
                f"`{base.run_id}` {tokens(base.valid_tokens_per_step)} "
                f"({signed_percent(moved)}): global work is not fixed; {what}",
                help_,
                label=f"global work changed by {signed_percent(moved)} in `{run.run_id}`",
                notes=("strong-scaling efficiency = speedup / (run devices / baseline devices) compares step "
                       "times, which is meaningful only when every step does the same global work",),
            )
