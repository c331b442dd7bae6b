"""EFF404: a model-compute share below what the MFU requires."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.display import percent
from effspec.rules import AuditContext, Rule


def written_half_unit(text: str) -> float:
    """Half a unit in the last written digit of a `%` share, as a ratio (`43 %` -> 0.005).

    A share written to whole percent may be 0.5 points higher than written; a
    finding must not rest on that rounding.  Other forms get no allowance.
    """
    number, _, unit = text.strip().partition(" ")
    number = number.replace("_", "")
    if unit.strip() != "%" or not number.replace(".", "", 1).isdigit():
        return 0.0
    decimals = len(number.split(".")[1]) if "." in number else 0
    return 0.5 * 10.0 ** -decimals / 100


class EFF404(Rule):
    """Breakdown inconsistent with MFU.

    ## What it does
    Compares the `model_compute` share of a run's `breakdown` with the run's
    MFU (reconstructed from the inputs, else implied by its claims, else
    claimed) and flags a share below the MFU, beyond the rounding of the share
    as written.

    ## Why is this bad?
    MFU = model-compute share of the step × the efficiency of the compute
    interval (model FLOPs over peak FLOPs during the time spent computing).
    That efficiency cannot exceed 100 %, so the share of the step spent in
    model compute must be at least the MFU.  A smaller share means the
    breakdown, the MFU, or both are wrong: the peak, the convention or the step
    time behind the MFU, or the trace behind the share.

    ## Example
    ```eff
    eff 1

    run scaled_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      claim mfu = 48 %
      breakdown {
        model_compute = 30 %
        extra_compute = 20 %
        exposed_comm  = 25 %
        bubble        = 10 %
        host_input    = 10 %
        unclassified  = 5 %
      }
    }
    ```

    ## Use instead
    A model-compute share at least as large as the MFU (here 48 % / 55 % = an
    87 % efficient compute interval):
    ```eff
    eff 1

    run scaled_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      claim mfu = 48 %
      breakdown {
        model_compute = 55 %
        extra_compute = 5 %
        exposed_comm  = 20 %
        bubble        = 10 %
        host_input    = 5 %
        unclassified  = 5 %
      }
    }
    ```
    """

    code = "EFF404"
    title = "breakdown inconsistent with MFU"
    severity = "error"
    name = "breakdown-below-mfu"
    nodes = ("run.breakdown.model_compute", "run.claim.mfu")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            rec = getattr(result, "breakdown", None)
            if rec is None:
                continue
            row = next((r for r in rec.rows if r.category == "model_compute"), None)
            if row is None:
                continue
            allowance = written_half_unit(row.entry.text) if row.entry.unit != "s" else 0.0
            # The first MFU (reconstructed or implied, then claimed) the share cannot carry.
            mfu, source = next(((v, src) for v, src in self._mfus(result) if row.share + allowance < v), (None, ""))
            if mfu is None:
                continue
            shown = row.entry.text if row.entry.unit != "s" else f"{row.entry.text} = {percent(row.share)}"
            implied = (f"the compute interval would run at {percent(mfu / row.share)} of peak, and it cannot "
                       "exceed 100 %" if row.share > 0 else "no time is left for the model FLOPs the MFU counts")
            yield self.diag(
                row.entry.span,
                f"`model_compute` is {shown} of the step of run `{run.id}`, but the {source} MFU is {percent(mfu)}: "
                f"{implied} (MFU = model-compute share × compute-interval efficiency)",
                f"the model-compute share must be at least the MFU ({percent(mfu)}): re-measure it from the trace, "
                "or check what the MFU rests on (peak, convention, step time)",
                label=f"below the MFU of {percent(mfu)}",
            )

    @staticmethod
    def _mfus(result) -> list[tuple[float, str]]:
        """The run's MFU figures: from its inputs (or implied by its claims), and as claimed."""
        out = []
        metric = result.metrics.get("mfu")
        if metric is not None:
            out.append((metric.value, "reconstructed"))
        elif result.implied.get("mfu") is not None:
            out.append((result.implied["mfu"].value, "implied"))
        claim = result.claims.get("mfu")
        if claim is not None and claim.claimed is not None:
            out.append((claim.claimed, "claimed"))
        return out
