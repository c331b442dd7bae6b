"""EFF505: a step-time sample faster than the hardware's peak allows, excluded."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.display import quantity
from effspec.engine.results import ImplausibleSample
from effspec.front.ir import Samples
from effspec.rules import AuditContext, Rule
from effspec.rules.sampling import sampled_runs

LISTED = 5  # samples named in the message; the rest are counted


def _where(s: ImplausibleSample, samples: Samples) -> str:
    """`sample 3 (line 9)` or `sample 14 (steps.csv line 15)`: the position in the samples, 1-based, and the line."""
    if s.line is None:
        return f"sample {s.index + 1}"
    return f"sample {s.index + 1} ({f'`{samples.file}` ' if samples.origin == 'file' and samples.file else ''}line {s.line})"


class EFF505(Rule):
    """Step-time sample faster than the peak allows.

    ## What it does
    Flags each step-time sample (after warm-up) shorter than the step's FLOPs
    need at the hardware's peak: the executed FLOPs per step (or the model
    FLOPs per step, when those are fewer: the least work the step did) over
    the sample would exceed the aggregate peak.  Such a sample is left out
    before the statistics (median, mean, spread, confidence interval); the
    finding names it, its line, and how far above the peak it would be.
    Only when the median sample is within the peak: when the typical step
    beats the peak too, the peak or the FLOP count is wrong (EFF604), not
    the samples, and none is left out.

    ## Why is this bad?
    No device runs above its peak: a step that short did not do the step's
    work.  It is a timer read before the device finished (no synchronize), a
    logging line from a skipped or partial step, a unit slip in one row, or
    a sample from another job.  Kept, it pulls the mean down and the claimed
    MFU up; with few samples it can move the median too.

    ## Example
    ```eff
    eff 1

    run measured {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing {
        step_time = [4.02, 4.00, 4.05, 0.40, 4.01, 4.03, 4.00, 4.02, 3.98, 4.01, 4.00, 4.04] s
        warmup    = 0 step
        boundary  = "optimizer step end, after cuda synchronize and a barrier"
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
        step_time = [4.02, 4.00, 4.05, 4.01, 4.03, 4.00, 4.02, 3.98, 4.01, 4.00, 4.04] s
        warmup    = 0 step
        boundary  = "optimizer step end, after cuda synchronize and a barrier"
      }
    }
    ```
    """

    code = "EFF505"
    title = "step-time sample faster than the peak allows"
    severity = "warning"
    name = "step-sample-above-peak"
    nodes = ("run.timing.step_time", "run.hardware.peak")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run, _timing, entry, samples in sampled_runs(ctx):
            result = ctx.evaluation.runs.get(run.id)
            found = result.implausible if result is not None else ()
            if not found or result is None:
                continue
            work, peak = result.metrics[found[0].work], result.metrics["aggregate_peak"]
            fastest = work.value / peak.value
            named = ", ".join(f"{_where(s, samples)} {quantity(s.value, 's')} ({s.utilization:.2g}× the peak)"
                              for s in found[:LISTED])
            more = f", and {len(found) - LISTED:,} more" if len(found) > LISTED else ""
            left = result.step_stats.count if result.step_stats is not None else 0
            yield self.diag(
                entry.value_span,
                f"`step_time` of run `{run.id}`: {len(found):,} sample{'s' if len(found) != 1 else ''} faster than the "
                f"hardware's peak allows, excluded before the statistics: {named}{more}",
                f"a step needs at least {quantity(fastest, 's')} ({work.name} {quantity(work.value, 'FLOP')} at "
                f"{quantity(peak.value, 'FLOP/s')}); check the timer (a synchronize before reading it), partial or "
                "skipped steps, and the units of those rows",
                label=f"{len(found):,} implausible sample{'s' if len(found) != 1 else ''}",
                notes=(f"{left:,} sample{'s' if left != 1 else ''} left after warm-up" if left else
                       "no sample is left: the step time is not reconstructed",),
            )
