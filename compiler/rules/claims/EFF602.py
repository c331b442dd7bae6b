"""EFF602: a claim not recoverable from the declared inputs."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.front.expr import refs_in
from effspec.rules import AuditContext, Rule
from effspec.rules.claims.EFF601 import shown


class EFF602(Rule):
    """## What it does

    Flags a `claim` that can be checked neither against the declared inputs
    nor against the run's other claims, and names the inputs that are missing.
    A claim that served as the basis for checking another one (a throughput
    from which the MFU claim is checked) says so.

    ## Why is this bad?

    An unchecked claim is repeated on the strength of the source alone. Naming
    what is missing turns "we could not verify it" into a concrete request: the
    step time, the global batch, the peak. Often one line from the paper's
    appendix is enough to make the figure checkable, or to show that it is not.

    ## Example

    ```eff
    eff 1

    run blog_post {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 32000 }
      convention { preset = palm }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = catalog }
      claim throughput = 390000 token/s from paper "Figure 2"
    }
    ```

    ## Use instead

    Declare what the claim rests on (here the batch and the measured step time):

    ```eff
    eff 1

    run blog_post {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = catalog }
      timing { step_time = 5.38 s from paper "Appendix B"  warmup = 0 step  boundary = "optimizer step" }
      claim throughput = 390000 token/s from paper "Figure 2"
    }
    ```
    """

    code = "EFF602"
    title = "claim not recoverable from the declared inputs"
    severity = "warning"
    name = "claim-unrecoverable"
    nodes = ("run.claim",)

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        yield from self._runs(ctx)
        for scaling in ctx.spec.scalings:
            result = ctx.evaluation.scalings.get(scaling.id)
            for key, cr in getattr(result, "claims", {}).items():
                if cr.status != "unrecoverable" or cr.claimed is None:
                    continue
                missing = ", ".join(" or ".join(f"`{alt}`" for alt in m.split(" or ")) for m in cr.missing) \
                    or "the step times of the compared runs"
                value = f"{cr.claimed:.4g}" if cr.claim.name.endswith("speedup") else shown(cr.claimed, "")
                yield self.diag(
                    cr.claim.name_span,
                    f"claim `{key}` = {value} of scaling `{scaling.id}` cannot be checked: missing {missing}",
                    f"declare {missing} (with `from` and its source), or mark the figure as unverified where you cite it",
                    label="not recoverable",
                )

    def _runs(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None:
                continue
            # In the order the metrics were implied: a set would make `used[0]`,
            # and so the note, differ between runs (hash seeds).
            bases = list(dict.fromkeys(m.basis for m in result.implied.values()))
            for cr in result.claims.values():
                if cr.status != "unrecoverable":
                    continue
                claim = cr.claim
                refs = {r.dotted for r in refs_in(claim.expr)}
                # `breakdown.x = 100 % - mfu` is the complement fallacy, which
                # EFF401 reports with the reason; a second finding adds nothing.
                if claim.name.startswith("breakdown.") and refs & {"mfu", "hfu"}:
                    continue
                missing = ", ".join(" or ".join(f"`{alt}`" for alt in m.split(" or ")) for m in cr.missing) \
                    or "the inputs of this metric"
                value = f" = {shown(cr.claimed, cr.unit)}" if cr.claimed is not None else ""
                notes = []
                used = [b for b in bases if f"`{claim.written}`" in b]
                if used:
                    others = sorted({c.claim.name for c in result.claims.values() if c.basis in used})
                    if others:
                        notes.append(f"it is the basis on which {', '.join(f'`{o}`' for o in others)} "
                                     f"{'is' if len(others) == 1 else 'are'} checked ({used[0]})")
                if cr.claimed is None:
                    message = f"claim `{claim.written}` cannot be evaluated: it refers to {missing}, which the run does not give"
                else:
                    message = f"claim `{claim.written}`{value} cannot be checked: missing {missing}"
                yield self.diag(
                    claim.name_span,
                    message,
                    f"declare {missing} (with `from` and its source), or mark the figure as unverified where you cite it",
                    label="not recoverable",
                    notes=tuple(notes),
                )
