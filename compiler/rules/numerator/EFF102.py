"""EFF102: recomputation counted in the MFU numerator."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import percent, quantity
from effspec.engine import flops
from effspec.rules import AuditContext, Rule


class EFF102(Rule):
    """## What it does

    Flags a `convention` whose numerator counts activation recomputation:
    `recompute = selective`, `full` or a share (`75 %`), written out or
    inherited from a preset (`megatron`), or `recompute = executed` (the
    `megatron_deepspeed` presets) when `parallelism.recompute` says some ran.
    It shows the FLOPs per token with and without the recomputed forward pass,
    and the MFU the run has once recomputation is left out.

    ## Why is this bad?

    Recomputation is work the hardware does to save memory, not work the model
    needs. MFU is defined so that it does not reward it: a run that turns on full
    recomputation does about a third more FLOPs per token for the same tokens
    per second, and a numerator that counts them reports that waste as
    utilization. Such a figure is a hardware FLOPs utilization (HFU), and
    comparing it with another paper's MFU overstates the run by up to 33 %.
    Megatron-LM's 2021 formula (eq. 3) counts full recomputation this way.

    ## Example

    ```eff
    eff 1

    run gpt_13b {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 50257 }
      convention { preset = megatron }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      parallelism { dp = 32  tp = 8  micro_batch = 1 sequence  recompute = full }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = catalog }
      timing { throughput = 390000 token/s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    Keep recomputation out of the numerator and declare what ran in
    `parallelism.recompute`, where it feeds HFU:

    ```eff
    eff 1

    run gpt_13b {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 50257 }
      convention { preset = megatron  recompute = excluded }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      parallelism { dp = 32  tp = 8  micro_batch = 1 sequence  recompute = full }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = catalog }
      timing { throughput = 390000 token/s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF102"
    title = "recomputation counted in the MFU numerator"
    severity = "warning"
    name = "recompute-in-mfu-numerator"
    nodes = ("run.convention.recompute", "run.convention.preset")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None or result.knobs.counted_recompute in ("excluded", "none", 0.0) or result.shape is None:
                continue
            convention = run.block("convention")
            if convention is None:  # the assumed palm never counts recomputation
                continue
            knobs = result.knobs
            mode = flops.recompute_text(knobs.recompute)
            counted_mode = flops.recompute_text(knobs.counted_recompute)
            written = convention.get("recompute")
            if written is not None:
                span, origin = written.value_span, f"`recompute = {mode}`"
            else:
                preset = convention.get("preset")
                span = preset.value_span if preset is not None else convention.span
                origin = f"the `{knobs.preset}` preset (recompute = {mode})"
            if knobs.recompute == "executed":
                origin += f", which counts the `parallelism.recompute = {counted_mode}` that ran"
            work = run.block("work")
            seq_len = work.number("seq_len") if work is not None else None
            both = flops.with_and_without_recompute(result.shape, knobs, seq_len)
            if both is None:
                continue
            counted, without = both
            share = counted.recompute / without.total
            notes = [f"FLOPs per token: {quantity(counted.total, 'FLOP/token')} as counted, "
                     f"{quantity(without.total, 'FLOP/token')} without the recomputed forward pass (+{percent(share)})"]
            mfu = result.figure("mfu")
            tokens = result.metrics.get("valid_tokens_per_step")
            peak = result.metrics.get("aggregate_peak")
            step = result.figure("step_time")
            if mfu is not None and tokens is not None and peak is not None and step is not None:
                assert work is not None  # valid tokens per step come from `work`
                padded = float(work.number("padded_tokens", 0)) if knobs.padding == "included" else 0.0
                plain = without.total * (tokens.value + padded) / (step.value * peak.value)
                where = "" if mfu.basis == "inputs" else f" (step time implied by {mfu.basis})"
                notes.append(f"MFU{where}: {percent(mfu.value)} as counted (HFU-like); without recomputation "
                             f"{quantity(without.total, 'FLOP/token')} × {quantity(tokens.value + padded, 'token')} / "
                             f"({quantity(step.value, 's')} × {quantity(peak.value, 'FLOP/s')}) = {percent(plain)}")
            yield self.diag(
                span,
                f"the MFU numerator counts {counted_mode} recomputation through {origin}: "
                f"+{percent(share)} FLOPs per token, so the figure is HFU-like, not MFU",
                "write `recompute = excluded` in the `convention` block; declare the recomputation that ran as "
                "`parallelism.recompute`, which HFU counts",
                label=f"counts {counted_mode} recomputation",
                notes=tuple(notes),
            )
