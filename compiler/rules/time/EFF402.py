"""EFF402: a breakdown that does not reconcile with the step time."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic, Span
from effspec.display import percent, quantity, sig
from effspec.front.ir import Block
from effspec.rules import AuditContext, Rule

# |sum − 100 %| above one percentage point is a real gap, not rounding of
# eight shares each written to a whole percent.
RECONCILE_TOLERANCE = 0.01


def keyword_span(block: Block) -> Span:
    """The span of the block's name (`breakdown`), not the whole multi-line block."""
    s = block.span
    return Span(s.line, s.column, s.line, s.column + len(block.name))


class EFF402(Rule):
    """Breakdown does not reconcile with the step time.

    ## What it does
    Sums the shares of a run's `breakdown` (entries in seconds are divided by
    the run's step time) and flags a sum more than 1 percentage point away from
    100 %.  Above 100 %, overlapped time is counted twice; below, time is
    missing.  It also flags entries given in seconds when the run's step time is
    unknown, since they cannot then be reconciled at all.

    ## Why is this bad?
    A time breakdown is an attribution of one elapsed interval: every second of
    the step belongs to exactly one category.  A sum above 100 % means some
    time, typically communication that overlaps compute, was counted in two
    categories; a sum below 100 % means part of the step is unexplained and the
    other shares look more complete than they are.  Either way the shares
    cannot be compared with each other or with the step time.

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
        exposed_comm  = 30 %     # all communication, including what overlaps compute
        bubble        = 10 %
        host_input    = 7 %
        unclassified  = 5 %
      }
    }
    ```

    ## Use instead
    Count only the communication that is not hidden under compute, and keep
    the unexplained rest in `unclassified`, so the shares sum to 100 %:
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

    code = "EFF402"
    title = "breakdown does not reconcile with the step time"
    severity = "error"
    name = "breakdown-not-reconciled"
    nodes = ("run.breakdown", "run.timing.step_time")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            block = run.block("breakdown")
            rec = getattr(result, "breakdown", None)
            if block is None or rec is None:
                continue
            if rec.unconverted:
                in_file_order = sorted(rec.unconverted, key=lambda e: (e.span.line, e.span.column))
                first = in_file_order[0]
                names = ", ".join(f"`{e.key} = {e.text}`" for e in in_file_order)
                yield self.diag(
                    first.span,
                    f"the breakdown of run `{run.id}` cannot be reconciled: {names} "
                    f"{'is' if len(rec.unconverted) == 1 else 'are'} in seconds, but the run's step time is unknown, "
                    "so no share of the step can be computed",
                    "declare `timing { step_time = … }` (or `throughput`), or write every breakdown entry as a "
                    "share of the step in `%`",
                    label="seconds of an unknown step",
                )
                continue
            if not rec.rows or abs(rec.total - 1.0) <= RECONCILE_TOLERANCE:
                continue
            gap_points = abs(rec.remainder) * 100
            seconds = ""
            if rec.step_time is not None and any(r.entry.unit == "s" for r in rec.rows):
                seconds = f" ({quantity(rec.total * rec.step_time, 's')} of a {quantity(rec.step_time, 's')} step)"
            if rec.total > 1.0:
                what = (f"{sig(gap_points, 3)} percentage points too many: overlapped time (e.g. communication "
                        "hidden under compute) is counted twice")
                help_ = ("count each interval of the step once: put only exposed (non-overlapped) communication "
                         "in `exposed_comm`, and lower the shares until they sum to 100 %")
            else:
                what = f"{sig(gap_points, 3)} percentage points of the step are missing"
                help_ = (f"add the missing {sig(gap_points, 3)} % to `unclassified` (or to the category it belongs "
                         "to) so that the shares sum to 100 %")
            yield self.diag(
                keyword_span(block),
                f"the breakdown of run `{run.id}` sums to {percent(rec.total)} of the step{seconds}, not 100 %: {what}",
                help_,
                label=f"sums to {percent(rec.total)}",
                notes=("shares: " + ", ".join(
                    f"{r.category} {percent(r.share)}" + (f" ({r.entry.text})" if r.entry.unit == "s" else "")
                    for r in rec.rows),),
            )
