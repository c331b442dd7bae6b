"""EFF403: a breakdown without an explicit unclassified share."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic, Span
from effspec.display import sig
from effspec.rules import AuditContext, Rule


class EFF403(Rule):
    """Breakdown has no explicit unclassified share.

    ## What it does
    Flags a run's `breakdown` block that has no `unclassified` entry.

    ## Why is this bad?
    No trace explains every microsecond of a step: gaps between kernels, launch
    latency, timer boundaries and events nobody instrumented remain.  A
    breakdown without an `unclassified` share either spreads that remainder,
    silently, over the named categories, or rounds it away; either way a reader
    takes the named shares as more precise than they are, and loses the one
    figure that says how much of the step is not understood.

    ## Example
    ```eff
    eff 1

    run scaled_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.605 s }
      breakdown {
        model_compute = 55 %
        exposed_comm  = 25 %
        bubble        = 12 %
        host_input    = 8 %
      }
    }
    ```

    ## Use instead
    Keep what no category explains as its own share, even when it is small:
    ```eff
    eff 1

    run scaled_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.605 s }
      breakdown {
        model_compute = 55 %
        exposed_comm  = 23 %
        bubble        = 10 %
        host_input    = 7 %
        unclassified  = 5 %
      }
    }
    ```
    """

    code = "EFF403"
    title = "breakdown has no explicit unclassified share"
    severity = "warning"
    name = "breakdown-without-unclassified"
    nodes = ("run.breakdown",)

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run in ctx.spec.runs:
            block = run.block("breakdown")
            if block is None or block.get("unclassified") is not None:
                continue
            rec = getattr(ctx.evaluation.runs.get(run.id), "breakdown", None)
            remainder = ""
            if rec is not None and rec.rows and not rec.unconverted:
                # 100 % − the declared sum: what `unclassified` would hold if the rest is right.
                points = rec.remainder * 100
                if points >= 0.05:
                    remainder = f" (here 100 % − the declared sum = {sig(points, 3)} %)"
                elif points > -0.05:
                    remainder = " (the named shares already sum to 100 %: lower the ones that absorbed it)"
            s = block.span
            yield self.diag(
                Span(s.line, s.column, s.line, s.column + len(block.name)),
                f"the breakdown of run `{run.id}` has no `unclassified` entry: the time no category explains is "
                "hidden in the named shares or rounded away",
                f"add `unclassified = N %` with the time no category accounts for{remainder}; write "
                "`unclassified = 0 %` only if the trace really explains the whole step",
                label="no `unclassified`",
            )
