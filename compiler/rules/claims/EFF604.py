"""EFF604: an impossible figure (MFU or HFU above 100 %, HFU below MFU)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import percent, quantity
from effspec.engine import flops
from effspec.front.ir import Claim, Number
from effspec.rules import AuditContext, Rule

_LINE = re.compile(r"\(line (\d+)\)")


class EFF604(Rule):
    """## What it does

    Flags figures that cannot be true of any run:

    - an MFU or HFU above 100 %, claimed, reconstructed from the inputs, or
      implied by another claim;
    - an HFU below the MFU: the hardware cannot execute fewer FLOPs than the
      model needs.

    A claim written as a bare number above 1 (`claim mfu = 47`) is a ratio of
    47, that is 4700 %: the message asks whether `47 %` was meant, and
    `effspec check --fix` writes it.

    ## Why is this bad?

    No device exceeds its own peak, so an MFU above 100 % means the numerator
    or the denominator is wrong: an A100 peak (312 TFLOP/s) under an H100 run,
    a numerator that counts all MoE experts, a step time in the wrong unit, or
    tokens counted per device and divided by the whole cluster. HFU counts what
    actually executed (model FLOPs plus recomputation and padding), so it is
    never below MFU; when it is, the executed-FLOP counter or the numerator's
    recomputation setting is wrong. Every other figure of such a run is
    suspect until the cause is found.

    ## Example

    ```eff
    eff 1

    run h100_with_a100_peak {
      model { kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }
      convention { preset = palm  attention = causal }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = 312 TFLOP/s from paper "nanoGPT default" }
      timing { step_time = 1.1 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run h100_with_a100_peak {
      model { kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }
      convention { preset = palm  attention = causal }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 1.1 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF604"
    title = "impossible figure"
    severity = "error"
    name = "impossible-utilization"
    nodes = ("run.claim.mfu", "run.claim.hfu", "run.hardware.peak", "run.work.executed_flops")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None:
                continue
            claims = {c.name: c for c in run.claims}
            claimed = {n: cr.claimed for n, cr in result.claims.items() if cr.claimed is not None}
            for name in ("mfu", "hfu"):
                if claimed.get(name) is not None and claimed[name] > 1:
                    yield self._above_100(claims[name], name, claimed[name])
            if claimed.get("mfu") is not None and claimed.get("hfu") is not None and claimed["hfu"] < claimed["mfu"] * (1 - 1e-9):
                yield self.diag(
                    claims["hfu"].value_span,
                    f"the claimed HFU {percent(claimed['hfu'])} is below the claimed MFU {percent(claimed['mfu'])}: "
                    f"executed FLOPs cannot be fewer than model FLOPs",
                    "check which figure counts recomputation: HFU includes it, MFU never does",
                    label="HFU below MFU",
                )
            yield from self._reconstructed(run, result)

    def _above_100(self, claim: Claim, name: str, value: float) -> Diagnostic:
        expr = claim.expr
        if isinstance(expr, Number) and not expr.unit:  # `claim mfu = 47`: a ratio of 47, meant as 47 %
            return self.diag(
                claim.value_span,
                f"the claimed {name.upper()} {percent(value)} is above 100 %: `{expr.text}` is a bare ratio; "
                f"did you mean `{expr.text} %`?",
                f"write `{expr.text} %`: a number without a unit is a ratio (0.47 is 47 %), so `{expr.text}` "
                f"reads as {percent(value)}; `effspec check --fix` adds the `%`",
                label=f"reads as {percent(value)}",
            )
        return self.diag(
            claim.value_span,
            f"the claimed {name.upper()} {percent(value)} is above 100 %: no device exceeds its peak",
            "check the peak (the run's accelerator and dtype), the step time's unit, and whether the "
            "numerator counts all MoE experts or per-device tokens over the whole cluster",
            label="above 100 %",
        )

    def _reconstructed(self, run, result) -> Iterable[Diagnostic]:
        mfu, hfu = result.figure("mfu"), result.figure("hfu")
        over = [m for m in (mfu, hfu) if m is not None and m.value > 1]
        if over:
            first = over[0]
            span, culprit = self._denominator_span(run, result, first.basis)
            shown = " and ".join(f"{m.name.upper()} {percent(m.value)}" for m in over)
            where = "the declared inputs" if first.basis == "inputs" else first.basis
            notes: tuple[str, ...] = (f"{first.name} = {first.substituted}",)
            agg = result.metrics.get("aggregate_peak")
            if agg is not None and result.pools:
                notes += (f"aggregate peak {quantity(agg.value, 'FLOP/s')} over "
                          f"{sum(p.active for p in result.pools):g} devices",)
            yield self.diag(
                span,
                f"{shown} reconstructed from {where} {'is' if len(over) == 1 else 'are'} above 100 %: "
                f"no device exceeds its peak",
                f"check {culprit}; the numerator's convention (all MoE experts? recomputation?) and the step time's unit",
                label="gives a utilization above 100 %",
                notes=notes,
            )
        if mfu is not None and hfu is not None and mfu.basis == hfu.basis and hfu.value < mfu.value * (1 - 1e-9):
            work, convention = run.block("work"), run.block("convention")
            executed = work.get("executed_flops") if work is not None else None
            if executed is not None:
                span, cause = executed.value_span, "`work.executed_flops` is below the model FLOPs per step"
            else:
                entry = None
                if convention is not None:
                    entry = convention.get("recompute") or convention.get("preset")
                span = entry.value_span if entry is not None else run.name_span
                cause = (f"the numerator counts `{flops.recompute_text(result.knobs.counted_recompute)}` recomputation, but "
                         f"`parallelism.recompute` says less ran")
            model = result.metrics.get("model_flops_per_step")
            ran = result.metrics.get("executed_flops_per_step")
            notes = ()
            if model is not None and ran is not None:
                notes = (f"model FLOPs per step {quantity(model.value, 'FLOP')}, executed {quantity(ran.value, 'FLOP')}",)
            yield self.diag(
                span,
                f"HFU {percent(hfu.value)} is below MFU {percent(mfu.value)}: {cause}",
                "HFU counts what executed (model FLOPs + recomputation + padding); make the convention's `recompute` "
                "`excluded`, or correct the executed-FLOP counter",
                label="HFU below MFU",
                notes=notes,
            )

    @staticmethod
    def _denominator_span(run, result, basis: str):
        """Where to point for a figure above 100 %: the basis claim, a written peak, or the run."""
        if basis != "inputs":
            m = _LINE.search(basis)
            if m is not None:
                line = int(m.group(1))
                claim = next((c for c in run.claims if c.span.line == line), None)
                if claim is not None:
                    return claim.value_span, f"the claim `{claim.written}` the figure rests on, and the peak"
        for pool in result.pools:
            entry = pool.block.get("peak")
            if entry is not None and entry.value != "catalog":
                return entry.value_span, "the written peak (per device, for the run's accelerator and dtype)"
        timing = run.block("timing")
        step = timing.get("step_time") if timing is not None else None
        if step is not None:
            return step.value_span, "the step time and its unit"
        return run.name_span, "the peak and the step time"
