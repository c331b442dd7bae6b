"""EFF503: a median step time that hides the stalls dominating completion time."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.display import percent, quantity, sig
from effspec.engine.stats import STALL_FACTOR
from effspec.rules import AuditContext, Rule
from effspec.rules.sampling import sampled_runs

# Stall steps holding at least this share of the summed time dominate it.
STALL_SHARE_LIMIT = 0.10
# The actual sum exceeding count × median by more than this means the median
# predicts the run's completion time badly.
COMPLETION_EXCESS_LIMIT = 0.10


class EFF503(Rule):
    """The statistic hides stalls.

    ## What it does
    For a run whose step time is the median of its samples (the default),
    flags samples whose tail dominates completion time: steps slower than
    1.5 × the median hold at least 10 % of the summed step time, or the summed
    time exceeds what the median predicts (number of steps × median) by more
    than 10 %.  The message gives the stall share, the number of stall steps,
    and the predicted and actual times.

    ## Why is this bad?
    The median is robust by design: it ignores a few slow steps.  But the job
    finishes after the sum of all its steps, slow ones included.  When rare
    stalls (a slow node, a checkpoint, a collective that times out and retries)
    hold a tenth of the time, every rate built on the median step (valid
    tokens per second, MFU) overstates what the run delivered, and the stalls,
    often the most useful finding, disappear from the report.

    ## Example
    ```eff
    eff 1

    run scaled_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing {
        step_time = [0.61, 0.60, 0.62, 0.60, 0.97, 0.60, 0.61, 0.60, 0.62, 0.60, 1.40, 0.61] s
        warmup    = 0 step
        boundary  = "optimizer step end, after cuda synchronize and a barrier"
      }
    }
    ```

    ## Use instead
    Report the mean, which tracks completion time (or give both and explain the
    stalls):
    ```eff
    eff 1

    run scaled_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing {
        step_time = [0.61, 0.60, 0.62, 0.60, 0.97, 0.60, 0.61, 0.60, 0.62, 0.60, 1.40, 0.61] s
        warmup    = 0 step
        boundary  = "optimizer step end, after cuda synchronize and a barrier"
        statistic = mean        # steps 5 and 11 are checkpoint stalls
      }
    }
    ```
    """

    code = "EFF503"
    title = "the statistic hides stalls"
    severity = "warning"
    name = "median-hides-stalls"
    nodes = ("run.timing.step_time", "run.timing.statistic")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run, timing, entry, _samples in sampled_runs(ctx):
            result = ctx.evaluation.runs.get(run.id)
            stats = getattr(result, "step_stats", None)
            if stats is None or stats.count < 2:
                continue
            statistic = timing.get("statistic")
            if statistic is not None and statistic.value == "mean":
                continue  # the mean already carries the stalls into the step time
            excess = stats.total_time / stats.predicted_time - 1.0 if stats.predicted_time > 0 else 0.0
            if stats.stall_time_share < STALL_SHARE_LIMIT and excess <= COMPLETION_EXCESS_LIMIT:
                continue
            span = statistic.value_span if statistic is not None else entry.span
            threshold = f"{sig(STALL_FACTOR)} × the median ({quantity(stats.stall_threshold, 's')})"
            if stats.stall_steps:
                verb, hold = ("is", "holds") if stats.stall_steps == 1 else ("are", "hold")
                tail = (f"{stats.stall_steps} of {stats.count} steps {verb} slower than {threshold} and {hold} "
                        f"{percent(stats.stall_time_share)} of the summed time")
            else:
                kept = stats.kept  # after warm-up, less implausible samples (EFF505)
                slower = sum(1 for v in kept if v > stats.median)
                tail = (f"no step is slower than {threshold}, but {slower} of {stats.count} are slower than the "
                        "median")
            yield self.diag(
                span,
                f"the median step time of run `{run.id}` hides stalls: {tail}; "
                f"the median predicts {quantity(stats.predicted_time, 's')} for the {stats.count} steps "
                f"({stats.count} × {quantity(stats.median, 's')}), the actual sum is "
                f"{quantity(stats.total_time, 's')} ({'+' if excess >= 0 else ''}{sig(excess * 100, 3)} %)",
                "write `statistic = mean` (it tracks completion time), or report the median and the mean side by "
                "side and say what the slow steps were",
                label=f"stalls hold {percent(stats.stall_time_share)} of the time",
                notes=(f"median {quantity(stats.median, 's')}, mean {quantity(stats.mean, 's')}, "
                       f"p95 {quantity(stats.p95, 's')}, max {quantity(stats.max, 's')}",),
            )
