"""EFF601: a claim disagrees with the reconstruction."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import metric_value, percent
from effspec.rules import AuditContext, Rule


def shown(value: float, unit: str) -> str:
    """A figure as prose reads it; whole token counts get thousands separators."""
    if unit.startswith("token") and abs(value) >= 1e4:
        value = float(round(value))
    return metric_value(value, unit)


def basis_text(basis: str) -> str:
    """Where a reconstruction comes from, in words."""
    return "the declared inputs" if basis == "inputs" else f"{basis}, since the inputs give no step time"


class EFF601(Rule):
    """## What it does

    Flags a `claim` whose value differs from the figure the compiler
    reconstructs, by more than the claim's stated precision (half a unit in its
    last written digit) widened by 1 % relative. The reconstruction comes from
    the declared inputs where they suffice; otherwise the claim is checked
    against the run's other claims (a claimed MFU against the MFU a claimed
    throughput gives under the declared, or assumed, convention). For an MFU, it
    also shows the MFU under every standard convention, and for an HFU the HFU
    (the recomputation that ran counted, padding included), so the reader sees
    whether any of them reproduces the claim.

    ## Why is this bad?

    A headline figure that its own inputs do not reproduce is either a typo, a
    different convention or peak than the one stated, or a figure measured on
    another run. Whichever it is, a reader cannot use it: comparing it with
    another paper compares numbers with different meanings. When no standard
    convention reproduces it either, the claim needs an explanation before it
    is cited.

    ## Example

    ```eff
    eff 1

    run llm3b {
      model { kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }
      convention { preset = palm  attention = causal }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = [1.11, 1.10, 1.12, 1.10, 1.11] s  warmup = 0 step  boundary = "optimizer step" }
      claim mfu        = 52 % from paper "Table 2"
      claim throughput = 1.89e6 token/s from paper "Table 2"
    }
    ```

    ## Use instead

    Claim what the inputs give, or correct the input the claim disagrees with:

    ```eff
    eff 1

    run llm3b {
      model { kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }
      convention { preset = palm  attention = causal }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = [1.11, 1.10, 1.12, 1.10, 1.11] s  warmup = 0 step  boundary = "optimizer step" }
      claim mfu        = 48 % from paper "Table 2"
      claim throughput = 1.89e6 token/s from paper "Table 2"
    }
    ```
    """

    code = "EFF601"
    title = "claim disagrees with the reconstruction"
    severity = "error"
    name = "claim-mismatch"
    nodes = ("run.claim",)

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None:
                continue
            for cr in result.claims.values():
                if cr.status != "mismatch" or cr.claimed is None or cr.reconstructed is None:
                    continue
                claim = cr.claim
                claimed, rebuilt = shown(cr.claimed, cr.unit), shown(cr.reconstructed, cr.unit)
                rel = (cr.claimed - cr.reconstructed) / cr.reconstructed if cr.reconstructed else float("inf")
                tolerance = f" (tolerance ±{shown(cr.tolerance, cr.unit)})" if cr.tolerance is not None else ""
                notes = []
                if claim.name in ("mfu", "hfu") and result.conventions:
                    notes.append(self._presets_note(result, cr.claimed, cr.tolerance or 0.0, claim.name))
                metric = result.figure(claim.name)
                if metric is not None and metric.assumed:
                    notes.append("the reconstruction rests on assumed values (see the derivation); declare them to firm it up")
                against = "another claim" if cr.basis != "inputs" else "the declared inputs"
                yield self.diag(
                    claim.value_span,
                    f"claim `{claim.written}` = {claimed} disagrees with {rebuilt} reconstructed from "
                    f"{basis_text(cr.basis)} ({rel * 100:+.1f} %){tolerance}",
                    "correct the claim or the input it disagrees with; if the source counted differently, declare "
                    "that (a `convention`, the `peak` it used) so the reconstruction follows it",
                    label=f"reconstructed from {against}: {rebuilt}",
                    notes=tuple(notes),
                )

    @staticmethod
    def _presets_note(result, claimed: float, tolerance: float, metric: str = "mfu") -> str:
        """The claimed metric under every standard preset: MFU for an MFU claim, HFU (the
        recomputation that ran, padding included) for an HFU claim."""
        name = metric.upper()
        rows = [(label, row[metric]) for label, row in result.conventions.items()
                if label != "declared" and row.get(metric) is not None]
        if not rows:
            return f"{name} under the standard presets is not recoverable (no step time)"
        shown = ", ".join(f"{label} {percent(v)}" for label, v in rows)
        hits = [label for label, v in rows if abs(v - claimed) <= tolerance]
        verdict = (f"{' and '.join(hits)} reproduce{'s' if len(hits) == 1 else ''} the claim"
                   if hits else "none reproduces the claim")
        return f"{name} under each standard preset: {shown}; {verdict}"
