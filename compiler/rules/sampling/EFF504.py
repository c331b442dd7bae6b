"""EFF504: step-time samples without a declared synchronization boundary."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.rules import AuditContext, Rule
from effspec.rules.sampling import sampled_runs


class EFF504(Rule):
    """Synchronization boundary undeclared.

    ## What it does
    Flags a run whose `timing.step_time` gives more than one sample (a list or
    a CSV column) but does not declare `boundary`: where a step starts and
    ends, and how the timer was synchronized.

    ## Why is this bad?
    Accelerators run asynchronously from the host.  A timer read on the host
    without a device synchronization measures how fast kernels were queued,
    not how fast they ran; without a barrier, each rank times its own view and
    the slowest rank's wait lands in the next step.  Whether the interval ends
    at the optimizer step, includes the data-loader wait, or the logging, moves
    a step time by several percent, and per-step samples scatter for reasons
    that have nothing to do with training.

    ## Example
    ```eff
    eff 1

    run measured {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing {
        step_time = [4.02, 4.00, 4.05, 3.99, 4.01, 4.03, 4.00, 4.02, 3.98, 4.01, 4.00, 4.04] s
        warmup    = 0 step
      }
    }
    ```

    ## Use instead
    ```eff
    eff 1

    run measured {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing {
        step_time = [4.02, 4.00, 4.05, 3.99, 4.01, 4.03, 4.00, 4.02, 3.98, 4.01, 4.00, 4.04] s
        warmup    = 0 step
        boundary  = "optimizer step end to optimizer step end, after cuda synchronize and a barrier, on rank 0"
      }
    }
    ```
    """

    code = "EFF504"
    title = "synchronization boundary undeclared"
    severity = "warning"
    name = "step-boundary-undeclared"
    nodes = ("run.timing.step_time", "run.timing.boundary")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run, timing, entry, samples in sampled_runs(ctx):
            if timing.get("boundary") is not None:
                continue
            count = len(samples.values)
            if count <= 1:
                continue  # a single quoted figure: EFF502 already asks for the samples
            yield self.diag(
                entry.span,
                f"`step_time` of run `{run.id}` has {count} samples but no `boundary`: where a step starts and "
                "ends, and whether the timer waited for the device (synchronize) and for all ranks (barrier), "
                "is unknown",
                'write e.g. `boundary = "optimizer step end, after cuda synchronize and a barrier"`, saying what '
                "your timer measured",
                label="no `boundary` declared",
            )
