"""EFF502: too few step-time samples to report a spread."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.engine.stats import MIN_SAMPLES
from effspec.rules import AuditContext, Rule
from effspec.rules.sampling import sampled_runs


class EFF502(Rule):
    """Too few step samples to report a spread.

    ## What it does
    Flags a run whose `timing.step_time` leaves fewer than 10 samples after
    warm-up, including a single value.  A step time derived from `throughput`
    or achieved FLOP/s has no samples and is not flagged.

    ## Why is this bad?
    A step time is a distribution, not a number: steps vary with data, with
    collectives, with the other jobs on the network.  With a handful of samples
    neither a spread (5th to 95th percentile) nor a confidence interval of the
    median can be given, so a reader cannot tell a 3 % improvement from noise,
    nor see whether a rare slow step was in the window at all.

    ## Example
    ```eff
    eff 1

    run measured {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing {
        step_time = [4.02, 4.00, 4.05, 3.99, 4.01] s
        warmup    = 0 step
        boundary  = "optimizer step end, after cuda synchronize"
      }
    }
    ```

    ## Use instead
    Give at least 10 steady-state samples (a CSV column is easiest):
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
        boundary  = "optimizer step end, after cuda synchronize"
      }
    }
    ```
    """

    code = "EFF502"
    title = "too few step samples to report a spread"
    severity = "warning"
    name = "too-few-step-samples"
    nodes = ("run.timing.step_time", "run.timing.warmup")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run, _timing, entry, samples in sampled_runs(ctx):
            rows = len(samples.values)
            result = ctx.evaluation.runs.get(run.id)
            stats = getattr(result, "step_stats", None)
            if stats is None:
                continue  # warm-up excludes every sample: the evaluator reports that (EFF011)
            kept = stats.count
            if kept >= MIN_SAMPLES:
                continue
            excluded = rows - kept
            help_ = (f"give at least {MIN_SAMPLES} per-step samples after warm-up, e.g. "
                     "`step_time = file \"steps.csv\" column \"step_seconds\"`")
            if rows == 1:
                message = (f"`step_time` of run `{run.id}` is a single value ({entry.text}): no spread or "
                           "confidence interval can be reported, and slow steps cannot be seen")
            else:
                noun = "sample" if kept == 1 else "samples"
                have = (f"run `{run.id}` keeps only {kept} `step_time` {noun} after warm-up ({rows} given, "
                        f"{excluded} excluded)" if excluded else f"run `{run.id}` has only {kept} `step_time` samples")
                message = (f"{have}: a spread (p5-p95, a confidence interval of the median) needs at least "
                           f"{MIN_SAMPLES}")
            yield self.diag(entry.value_span, message, help_,
                            label=f"{kept} sample{'s' if kept != 1 else ''}")
