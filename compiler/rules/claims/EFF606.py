"""EFF606: the inputs cannot decide a claim."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.engine import intervals, sensitivity
from effspec.rules import AuditContext, Rule
from effspec.rules.claims.EFF601 import basis_text, shown


class EFF606(Rule):
    """## What it does

    Flags a `claim` the inputs cannot decide: it lies outside its tolerance
    (half a unit in its last written digit, widened by 1 % relative) of the
    reconstructed figure, but inside the figure's interval, which the step-time
    samples' spread (the 95 % confidence interval of their median, or of their
    mean) and the inputs' written precision or `±` give it. Where the two
    intervals do not overlap, the claim is a mismatch (EFF601); where the claim
    is within its tolerance of the point figure, it is consistent.

    The finding says how the interval was formed (each input's interval and
    the figure's range under it alone), what would decide the claim ("about 12
    more samples", "a step time to 3 significant digits"), and which input's
    smallest relative change would make it consistent ("consistent if
    step_time were 2.3 % lower, or peak 2.3 % higher").

    ## Why is this bad?

    A verdict that the measurement cannot support is no verdict: calling the
    claim wrong accuses it on the reconstruction's own noise, and calling it
    right ignores a gap larger than its stated precision. The claim needs
    better inputs before it can be cited or refuted.

    ## Example

    ```eff
    eff 1

    run llm3b {
      model { kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }
      convention { preset = palm  attention = causal }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 1.1 s  warmup = 0 step  boundary = "optimizer step" }
      claim mfu = 47 % from paper "Table 2"
    }
    ```

    ## Use instead

    Measure the step time to the precision the claim needs (here, per-step
    samples from the log, or the step time to three significant digits):

    ```eff
    eff 1

    run llm3b {
      model { kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }
      convention { preset = palm  attention = causal }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 1.13 s  warmup = 0 step  boundary = "optimizer step" }
      claim mfu = 47 % from paper "Table 2"
    }
    ```
    """

    code = "EFF606"
    title = "the inputs cannot decide a claim"
    severity = "warning"
    name = "claim-inconclusive"
    nodes = ("run.claim",)

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is not None:
                yield from self._claims(result.claims.values(), result.figure)
        for scaling in ctx.spec.scalings:
            sr = ctx.evaluation.scalings.get(scaling.id)
            if sr is not None:
                for cr in sr.claims.values():
                    point = (next((r for r in sr.runs if r.run_id == cr.claim.point), None)
                             if cr.claim.point is not None else sr.final_point)
                    yield from self._claims([cr], point.metrics.get if point is not None else lambda name: None)

    def _claims(self, claims, figure) -> Iterable[Diagnostic]:
        for cr in claims:
                if cr.status != "inconclusive" or cr.claimed is None or cr.reconstructed is None \
                        or cr.interval is None or cr.tolerance is None:
                    continue
                claim = cr.claim
                metric = figure(claim.name)
                notes = []
                if metric is not None and metric.interval is not None and metric.interval.contributions:
                    notes.append(intervals.formation(metric.interval, claim.name, cr.unit))
                flip = sensitivity.note(cr)
                if flip:
                    notes.append(flip)
                decide = f"decided by {cr.decided_by}" if cr.decided_by else "a narrower interval would decide it"
                yield self.diag(
                    claim.value_span,
                    f"claim `{claim.key}` = {shown(cr.claimed, cr.unit)} is inconclusive: outside its tolerance "
                    f"(±{shown(cr.tolerance, cr.unit)}) of the {shown(cr.reconstructed, cr.unit)} reconstructed "
                    f"{'for ' + cr.basis if cr.basis.startswith('`') else 'from ' + basis_text(cr.basis)}, but within the reconstruction's interval "
                    f"{intervals.bounds_text(cr.interval[0], cr.interval[1], cr.unit)}",
                    f"{decide}; state the inputs to the precision the claim needs, or write their `±`",
                    label=f"reconstructed: {shown(cr.reconstructed, cr.unit)} "
                          f"{intervals.bounds_text(cr.interval[0], cr.interval[1], cr.unit)}",
                    notes=tuple(notes),
                )
