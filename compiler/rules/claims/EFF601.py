"""EFF601: a claim disagrees with the reconstruction."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import metric_value, percent
from effspec.engine.flops import STANDARD_PRESETS
from effspec.rules import AuditContext, Rule


def _relative(rel: float) -> str:
    """The claim's distance from the reconstruction: ``+8.1 %``; ``×1.3e300`` beyond 10,000 %."""
    if abs(rel) < 100:
        return f"{rel * 100:+.1f} %"
    return f"×{rel + 1:.3g}"


def shown(value: float, unit: str) -> str:
    """A figure as prose reads it; whole token counts get thousands separators."""
    if unit.startswith("token") and abs(value) >= 1e4:
        value = float(round(value))
    return metric_value(value, unit)


def basis_text(basis: str) -> str:
    """Where a reconstruction comes from, in words."""
    return "the declared inputs" if basis == "inputs" else f"{basis}, since the inputs give no step time"


MAX_GAP_NOTES = 6


def gap_notes(cr, skip_standard_presets: bool) -> list[str]:
    """The single changes that reproduce a mismatched claim (engine.gap), one note each, most plausible
    first, each saying which kind of cause it is. Where a known cause reproduces the claim, the changes
    that only happen to hit the number are counted, not listed."""
    from effspec.engine.gap import KINDS

    hits = [e for e in cr.explanations
            if not (skip_standard_presets and e.candidate == "preset" and e.change.removeprefix("preset = ") in STANDARD_PRESETS)]
    known = [e for e in hits if e.kind != "coincidence"]
    coincidences = len(hits) - len(known) if known else 0
    # Presets that give the same figure (many framework presets agree on a shape) share one note.
    grouped: dict[tuple[str, str, str, str], list[str]] = {}
    for e in known or hits:
        value = shown(e.value, cr.unit)
        if e.candidate == "preset":
            grouped.setdefault(("preset", value, e.kind, e.candidate), []).append(e.change.removeprefix("preset = "))
        else:
            grouped.setdefault((e.change, value, e.kind, e.candidate), []).append(e.change)
    notes = []
    for (kind, value, why, candidate), changes in list(grouped.items())[:MAX_GAP_NOTES]:
        if kind == "preset":
            change = "if preset = " + " or ".join(changes)
        elif candidate == "framework_version":  # "reproduced under megatron_lm's formula before …"
            change = "under " + changes[0]
        else:
            change = "if " + changes[0]
        notes.append(f"reproduced {change}: {value} ({KINDS[why]})")
    if len(grouped) > MAX_GAP_NOTES:
        notes.append(f"… and {len(grouped) - MAX_GAP_NOTES} more single changes (see `explanations` in the JSON)")
    if coincidences:
        notes.append(f"{coincidences} other single change{'s' if coincidences > 1 else ''} also reach{'' if coincidences > 1 else 'es'} "
                     "the figure, by a numeric fit only (see `explanations` in the JSON)")
    if not cr.searched:
        notes.append("the single changes that could explain the gap were not searched: this spec's search budget "
                     "is spent on the runs before this one")
    elif not cr.explanations:
        notes.append("no single change of the convention, the model's attention, windows, experts, MTP module or head size, "
                     "the peak, the padding, the warm-up, the step statistic or the device count reproduces the claim")
    return notes


def uncertainty_notes(cr, metric) -> list[str]:
    """The reconstruction's interval, where its inputs are not exact, and the sensitivity of the verdict."""
    from effspec.engine import intervals, sensitivity

    notes = []
    fi = metric.interval if metric is not None else None
    if fi is not None and fi.contributions and cr.tolerance is not None and cr.claimed is not None:
        notes.append(f"the claim's tolerance {intervals.bounds_text(cr.claimed - cr.tolerance, cr.claimed + cr.tolerance, cr.unit)} "
                     f"does not reach the reconstruction's interval: " + intervals.formation(fi, cr.claim.name, cr.unit))
    flip = sensitivity.note(cr)
    if flip:
        notes.append(flip)
    return notes


class EFF601(Rule):
    """## What it does

    Flags a `claim` whose value differs from the figure the compiler
    reconstructs, by more than the claim's stated precision (half a unit in its
    last written digit) widened by 1 % relative. The reconstruction comes from
    the declared inputs where they suffice; otherwise the claim is checked
    against the run's other claims (a claimed MFU against the MFU a claimed
    throughput gives under the declared, or assumed, convention). For an MFU
    (or an HFU), it also shows the MFU (or HFU) under every standard
    convention, so the reader sees whether any of them reproduces the claim.

    It then explains the gap: each single change of the declared inputs or the
    convention that would reproduce the claim within its tolerance is a note
    ("reproduced if kv_heads = heads (GQA ignored): 52.64 % (a known
    convention difference)"). The changes tried are the run's framework's
    other version presets (an imported claim: "reproduced under megatron_lm's
    formula 2024-03-25 to 2025-03-06 (preset = megatron_lm_2024)"), every
    other preset, attention full or causal, logits and embeddings in or out,
    recomputation counted (or, for HFU, run), GQA ignored, MLA counted as
    plain MHA, the MTP modules counted or not, sliding windows counted or
    ignored, `head_dim = d_model // heads`, every other catalog peak of the
    accelerator (named by its own datatype and sparsity: the dense FP8 peak,
    not a sparse BF16 twin of the same number), the peak the run's framework
    hard-codes in its MFU (under `preset = nanogpt`, nanoGPT's 312 TFLOP/s and
    nanochat's 989 TFLOP/s, named as such), padding counted, warm-up steps
    kept, mean against median, and a figure off by the device count (per
    device against aggregate). They are ranked by plausibility, and each note
    says its kind: the framework at another version or a framework quirk,
    then a known convention difference or input error, then a numeric fit
    only, which is counted rather than listed where a known cause reproduces
    the claim. A framework preset (`torchtitan`, `megatron_lm`, …) is listed
    only where no standard preset reproduces the claim, and presets that give
    the same figure share one note ("reproduced if preset = nanogpt or
    torchtitan: 53 %"). A scaling's claim (`claim efficiency = …` in a `scaling`) is
    checked the same way against the series' final point, or the run it names
    with `[RUN]`.

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
        yield from self._runs(ctx)
        yield from self._scalings(ctx)

    def _scalings(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for scaling in ctx.spec.scalings:
            result = ctx.evaluation.scalings.get(scaling.id)
            if result is None:
                continue
            for key, cr in result.claims.items():
                if cr.status != "mismatch" or cr.claimed is None or cr.reconstructed is None:
                    continue
                claim = cr.claim
                fmt = (lambda v: f"{v:.4g}") if claim.name.endswith("speedup") else (lambda v: shown(v, ""))
                claimed, rebuilt = fmt(cr.claimed), fmt(cr.reconstructed)
                rel = (cr.claimed - cr.reconstructed) / cr.reconstructed if cr.reconstructed else float("inf")
                which = ("the final point of the series, " if claim.point is None else "") + cr.basis
                notes = [f"{claim.name.replace('_', ' ')} = {result.final_point.metrics[claim.name].substituted}"]  \
                    if claim.point is None and result.final_point is not None and claim.name in result.final_point.metrics \
                    else []
                point = (next((r for r in result.runs if r.run_id == claim.point), None) if claim.point is not None
                         else result.final_point)
                notes += uncertainty_notes(cr, point.metrics.get(claim.name) if point is not None else None)
                if claim.point is None:
                    notes.append("an unqualified scaling claim is checked at the series' final point (the compared run "
                                 "with the most devices); write `claim " + claim.written + "[RUN] = …` for another point")
                yield self.diag(
                    claim.value_span,
                    f"claim `{key}` = {claimed} disagrees with {rebuilt} reconstructed for {which} "
                    f"({_relative(rel)}) (tolerance ±{fmt(cr.tolerance)})",
                    "correct the claim, or the step times and device counts it disagrees with; if the source measured "
                    "another pair of runs, name the run with `[RUN]`",
                    label=f"reconstructed: {rebuilt}",
                    notes=tuple(notes),
                )

    def _runs(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None:
                continue
            for cr in result.claims.values():
                if cr.status != "mismatch" or cr.claimed is None or cr.reconstructed is None:
                    continue
                claim = cr.claim
                if claim.name in ("mfu", "hfu") and cr.claimed > 1:  # impossible whatever it is compared with: EFF604's
                    continue
                claimed, rebuilt = shown(cr.claimed, cr.unit), shown(cr.reconstructed, cr.unit)
                rel = (cr.claimed - cr.reconstructed) / cr.reconstructed if cr.reconstructed else float("inf")
                tolerance = f" (tolerance ±{shown(cr.tolerance, cr.unit)})" if cr.tolerance is not None else ""
                notes = []
                table = False
                if claim.name == "mfu" and result.conventions:
                    notes.append(self._presets_note(result, cr.claimed, cr.tolerance or 0.0))
                    table = True
                elif claim.name == "hfu" and cr.by_preset:
                    notes.append(self._hfu_presets_note(cr))
                    table = True
                metric = result.figure(claim.name)
                notes += uncertainty_notes(cr, metric)
                notes += gap_notes(cr, skip_standard_presets=table)
                if metric is not None and metric.assumed:
                    notes.append("the reconstruction rests on assumed values (see the derivation); declare them to firm it up")
                against = "another claim" if cr.basis != "inputs" else "the declared inputs"
                yield self.diag(
                    claim.value_span,
                    f"claim `{claim.written}` = {claimed} disagrees with {rebuilt} reconstructed from "
                    f"{basis_text(cr.basis)} ({_relative(rel)}){tolerance}",
                    "correct the claim or the input it disagrees with; if the source counted differently, declare "
                    "that (a `convention`, the `peak` it used) so the reconstruction follows it",
                    label=f"reconstructed from {against}: {rebuilt}",
                    notes=tuple(notes),
                )

    @staticmethod
    def _hfu_presets_note(cr) -> str:
        """An HFU claim is explained with HFU figures: each preset's numerator, with the recomputation that ran."""
        rows = sorted(cr.by_preset.items(), key=lambda kv: STANDARD_PRESETS.index(kv[0]))
        shown_rows = ", ".join(f"{label} {percent(v)}" for label, v in rows)
        hits = [label for label, v in rows if abs(v - cr.claimed) <= (cr.tolerance or 0.0)]
        verdict = (f"{' and '.join(hits)} reproduce{'s' if len(hits) == 1 else ''} the claim"
                   if hits else "none reproduces the claim")
        return f"HFU under each standard preset: {shown_rows}; {verdict}"

    @staticmethod
    def _presets_note(result, claimed: float, tolerance: float) -> str:
        rows = [(label, row["mfu"]) for label, row in result.conventions.items()
                if label != "declared" and row.get("mfu") is not None]
        if not rows:
            return "MFU under the standard presets is not recoverable (no step time)"
        shown = ", ".join(f"{label} {percent(v)}" for label, v in rows)
        hits = [label for label, v in rows if abs(v - claimed) <= tolerance]
        verdict = (f"{' and '.join(hits)} reproduce{'s' if len(hits) == 1 else ''} the claim"
                   if hits else "none reproduces the claim")
        return f"MFU under each standard preset: {shown}; {verdict}"
