"""EFF104: MoE FLOPs counted over all experts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import percent, quantity
from effspec.engine import flops
from effspec.rules import AuditContext, Rule


class EFF104(Rule):
    """## What it does

    Flags `convention.moe = all` on a mixture-of-experts model: the numerator
    charges every token for the feed-forward work of all experts of each MoE
    layer, although the router sends it to `top_k` of them (plus the shared
    experts). It names the active-expert count and shows the FLOPs per token,
    and the MFU, counted over the active experts.

    ## Why is this bad?

    A token passes through `top_k + shared_experts` expert FFNs, not through all
    of them. With 64 experts and top-2 routing, counting all experts multiplies
    the MoE FFN term by 32; the MFU that results can exceed 100 % (the example below reports 382 % for a run at 41 %) and says
    nothing about how well the hardware was used. The model FLOPs of an MoE are
    those of its active parameters, plus the router.

    ## Example

    ```eff
    eff 1

    run moe_8x {
      model {
        kind = moe_transformer  layers = 24  d_model = 2048  heads = 16  ffn = swiglu
        d_ff_expert = 1408  experts = 64  top_k = 2  shared_experts = 1  vocab = 50304
      }
      convention { preset = palm  moe = all }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.75 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run moe_8x {
      model {
        kind = moe_transformer  layers = 24  d_model = 2048  heads = 16  ffn = swiglu
        d_ff_expert = 1408  experts = 64  top_k = 2  shared_experts = 1  vocab = 50304
      }
      convention { preset = palm  moe = active }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.75 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF104"
    title = "MoE FLOPs counted over all experts"
    severity = "error"
    name = "moe-all-experts-counted"
    nodes = ("run.convention.moe", "run.model.experts", "run.model.top_k")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            convention = run.block("convention")
            entry = convention.get("moe") if convention is not None else None
            shape = result.shape if result is not None else None
            if entry is None or entry.value != "all" or result is None or shape is None or shape.moe_layers == 0 or shape.experts == 0:
                continue
            work = run.block("work")
            seq_len = work.number("seq_len") if work is not None else None
            all_count = flops.count(shape, result.knobs, seq_len)
            active_count = flops.count(shape, dataclasses.replace(result.knobs, moe="active"), seq_len)
            if all_count is None or active_count is None:
                continue
            active = shape.top_k + shape.shared_experts
            counted = shape.experts + shape.shared_experts
            notes = [f"FLOPs per token: {quantity(all_count.total, 'FLOP/token')} over all experts, "
                     f"{quantity(active_count.total, 'FLOP/token')} over the active ones plus the router "
                     f"(×{all_count.total / active_count.total:.3g})"]
            mfu = result.figure("mfu")
            if mfu is not None:
                notes.append(f"MFU: {percent(mfu.value)} over all experts, "
                             f"{percent(mfu.value * active_count.total / all_count.total)} over the active experts")
            yield self.diag(
                entry.value_span,
                f"`moe = all` counts {counted} expert FFNs per token in each of the {shape.moe_layers} MoE layers; "
                f"a token runs {active} (top_k {shape.top_k} + {shape.shared_experts} shared)",
                "write `moe = active` (the default): each token counts top_k + shared_experts expert FFNs and the router",
                label=f"{counted} experts counted, {active} active",
                notes=tuple(notes),
            )
