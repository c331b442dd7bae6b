"""LoRA fine-tuning: the adapters' FLOPs, and the frozen base's backward (`model { lora { … } }`).

A LoRA run trains low-rank adapters beside frozen weights (Hu et al. 2021, "LoRA: Low-Rank Adaptation of
Large Language Models", sec. 4.1): each adapted matmul W (in × out) gains A (in × r) and B (r × out), so per
token the adapters cost m·r·(in + out) forward. The frozen base still runs forward, and its backward still
computes the activation gradients that reach the adapters below it, but not its weight gradients:

- a frozen weight matmul counts forward × (1 + backward/2) (`frozen_wgrad = excluded`, the default: the
  backward's two halves are the activation and the weight gradients), or forward × (1 + backward) as in full
  fine-tuning (`frozen_wgrad = counted`);
- the attention scores have no weights: their backward is counted whole;
- the adapters train: forward × (1 + backward), unless `adapters = excluded` (Megatron-Bridge's count).

Targets: q, k, v, o (the attention projections, in = d and out = H·Q, G·Q, G·Q; o: H·Q → d), gate, up
(d → f) and down (f → d) of every dense FFN and of every active expert (top_k + shared; all experts under
`moe = all`). An MTP module's block is not adapted. Terms without weights are those named
`attention_scores*`; every other term is a frozen matmul.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from effspec.engine.flops import FlopCount, Knobs, Shape
    from effspec.front.ir import Block


@dataclass(frozen=True)
class Lora:
    rank: int
    targets: tuple[str, ...]


def lora_of(block: Block | None) -> Lora | None:
    """The `model.lora` block's rank and targets, or None (no block, or one the front end rejected)."""
    if block is None:
        return None
    rank, targets = block.integer("rank"), block.value("targets")
    if rank is None or not isinstance(targets, tuple) or not targets:
        return None
    return Lora(rank, tuple(str(t) for t in targets))


def adapter_macs(shape: Shape, lora: Lora, moe: str = "active") -> float:
    """Multiply-adds per token of every adapter, forward, for the whole model: r·Σ (in + out); in an MoE layer
    each active expert (top_k + shared; every expert under `moe = all`) has its own FFN adapters."""
    d, H, Q, G = shape.d_model, shape.heads, shape.head_dim, shape.kv_heads
    attention = {"q": d + H * Q, "k": d + G * Q, "v": d + G * Q, "o": H * Q + d}
    per_layer = sum(attention.get(t, 0.0) for t in lora.targets)
    ffn = [t for t in lora.targets if t in ("up", "down") or (t == "gate" and shape.ffn_matmuls == 3)]
    experts = (shape.experts if moe == "all" else shape.top_k) + shape.shared_experts
    dense_layers = shape.layers - shape.moe_layers
    return lora.rank * (shape.layers * per_layer + dense_layers * len(ffn) * (d + shape.d_ff)
                        + shape.moe_layers * experts * len(ffn) * (d + shape.d_ff_expert))


def applied(count: FlopCount, shape: Shape, knobs: Knobs) -> FlopCount:
    """The count of a LoRA run: the adapters added as a term, and the frozen base's backward as the knobs say."""
    lora = shape.lora
    assert lora is not None
    macs = adapter_macs(shape, lora, knobs.moe)
    adapters = knobs.multiply_add * macs if knobs.adapters == "counted" else 0.0
    b = knobs.backward
    weightless = sum(v for name, _, v in count.terms if name.startswith("attention_scores"))
    if knobs.frozen_wgrad == "counted":
        training = count.training + adapters * (1 + b)
    else:
        training = (count.forward - weightless) * (1 + b / 2) + weightless * (1 + b) + adapters * (1 + b)
    formula = (f"m·r·Σ (in + out) over {', '.join(lora.targets)}, r = {lora.rank}"
               if knobs.adapters == "counted" else "excluded")
    terms = (*count.terms, ("lora_adapters", formula, adapters))
    return dataclasses.replace(count, terms=terms, forward=count.forward + adapters, training=training,
                               total=training + count.recompute + count.extra)
