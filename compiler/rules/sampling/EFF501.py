"""EFF501: step-time samples without a declared warm-up exclusion."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.rules import AuditContext, Rule
from effspec.rules.sampling import sampled_runs


class EFF501(Rule):
    """Warm-up exclusion undeclared.

    ## What it does
    Flags a run whose `timing.step_time` gives more than one sample (a list or a
    CSV column) but does not declare `warmup`.  All samples are then used.

    ## Why is this bad?
    The first steps of a training job are not steady state: graph compilation,
    autotuning, allocator growth, data-loader start-up and cache warm-up make
    them slower, often by far.  Whether they were excluded changes the median
    little and the mean a lot, and a reader cannot know which was done.
    Declaring `warmup`, even as `0 step` when the log already starts after
    warm-up, says what the figure rests on.

    ## Example
    ```eff
    eff 1

    run measured {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing {
        step_time = [9.8, 5.2, 4.02, 4.00, 4.05, 3.99, 4.01, 4.03, 4.00, 4.02, 3.98, 4.01, 4.00] s
        boundary  = "optimizer step end, after cuda synchronize"
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
        step_time = [9.8, 5.2, 4.02, 4.00, 4.05, 3.99, 4.01, 4.03, 4.00, 4.02, 3.98, 4.01, 4.00] s
        warmup    = 2 step          # compilation and autotuning
        boundary  = "optimizer step end, after cuda synchronize"
      }
    }
    ```
    """

    code = "EFF501"
    title = "warm-up exclusion undeclared"
    severity = "warning"
    name = "warmup-undeclared"
    nodes = ("run.timing.step_time", "run.timing.warmup")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run, timing, entry, samples in sampled_runs(ctx):
            if timing.get("warmup") is not None:
                continue
            count = len(samples.values)
            if count <= 1:
                continue
            first = samples.values[0]
            rest = sorted(samples.values[1:])
            typical = rest[len(rest) // 2]
            note = (f"the first sample ({first:g} s) is {first / typical:.2g}× the median of the others ({typical:g} s)"
                    if typical > 0 and first > 1.2 * typical else "")
            yield self.diag(
                entry.span,
                f"`step_time` of run `{run.id}` has {count} samples but `warmup` is not declared: all {count} are "
                "used, including the first steps (compilation, autotuning, allocator and cache warm-up)",
                "write `warmup = N step` with the number of leading samples to exclude, or `warmup = 0 step` "
                "if the samples start after warm-up",
                label="no `warmup` declared",
                notes=(note,) if note else (),
            )
