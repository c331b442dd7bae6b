"""Local GEMM shapes: the matmuls one rank runs per micro-batch.

Row counts follow the tokens a rank holds: ``T = micro_batch × seq_len / cp``
(context parallelism splits each sequence).  Tensor parallelism splits the
column-parallel weights (QKV, FFN up/gate, vocabulary-parallel logits) on N
and the row-parallel ones (attention output, FFN down) on K, the Megatron
layout.  Pipeline parallelism gives each stage ``layers / pp`` layers; the
logits GEMM runs on the last stage only.  For MoE layers the expert FFN's rows
assume uniform routing: each local expert receives ``T × top_k × ep /
experts`` tokens from its expert-parallel group.  Shapes are (M, N, K):
``M × K`` activations times ``K × N`` weights, forward pass.  Uneven splits
(heads not divisible by tp, layers by pp) are listed in ``notes``.
"""

from __future__ import annotations

from dataclasses import dataclass

from effspec.engine.flops import Shape
from effspec.front.ir import Block


@dataclass(frozen=True)
class Gemm:
    name: str
    m: float
    n: float
    k: float
    count: int  # GEMMs of this shape per layer (or per step of the stage, for logits)
    batch: int = 1  # batched GEMMs (attention: one per local head and sequence)
    per: str = "layer"

    @property
    def flops(self) -> float:
        """Forward FLOPs of all GEMMs of this row, 2 per multiply-add."""
        return 2.0 * self.m * self.n * self.k * self.count * self.batch

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "m": self.m, "n": self.n, "k": self.k, "count": self.count,
                "batch": self.batch, "per": self.per}


@dataclass(frozen=True)
class LocalShapes:
    tp: int
    pp: int
    cp: int
    ep: int
    dp: int | None
    micro_batch: float
    tokens_per_microbatch: float  # T, per rank
    layers_per_stage: float
    gemms: tuple[Gemm, ...]
    notes: tuple[str, ...]

    def gemm(self, name: str) -> Gemm | None:
        return next((g for g in self.gemms if g.name == name), None)

    def to_json(self) -> dict[str, object]:
        return {"tp": self.tp, "pp": self.pp, "cp": self.cp, "ep": self.ep, "dp": self.dp,
                "micro_batch": self.micro_batch, "tokens_per_microbatch": self.tokens_per_microbatch,
                "layers_per_stage": self.layers_per_stage, "gemms": [g.to_json() for g in self.gemms],
                "notes": list(self.notes)}


def _split(total: float, parts: int, what: str, notes: list[str]) -> float:
    if parts > 1 and total % parts:
        notes.append(f"{what} ({total:g}) is not divisible by {parts}: ranks hold uneven shares")
    return total / parts


def local_shapes(shape: Shape | None, parallelism: Block | None, seq_len: float | None) -> tuple[LocalShapes | None, tuple[str, ...]]:
    """The per-rank GEMMs, or None and what is missing (shape, `parallelism`, micro_batch, seq_len)."""
    missing = []
    if shape is None:
        missing.append("model shape")
    elif shape.hybrid is not None:  # per-rank GEMMs of Mamba-2 / Gated DeltaNet layers are not modelled
        missing.append("a dense or MoE transformer shape (hybrid stacks have no per-rank GEMM table)")
    if parallelism is None:
        missing.append("parallelism")
    elif parallelism.value("micro_batch") is None:
        missing.append("parallelism.micro_batch")
    if seq_len is None:
        missing.append("work.seq_len")
    if missing:
        return None, tuple(missing)
    assert shape is not None and parallelism is not None and seq_len is not None  # else listed as missing
    degree = {k: int(parallelism.number(k, 1)) for k in ("tp", "pp", "cp", "ep")}
    tp, pp, cp, ep = degree["tp"], degree["pp"], degree["cp"], degree["ep"]
    dp = parallelism.number("dp")
    micro_batch = parallelism.number("micro_batch")
    assert micro_batch is not None  # else listed as missing
    mb = float(micro_batch)
    notes: list[str] = []
    T = mb * _split(float(seq_len), cp, "seq_len", notes)
    d, H, Q, G = float(shape.d_model), shape.heads, float(shape.head_dim), shape.kv_heads
    h_local = _split(H, tp, "heads", notes)
    g_local = G / tp if tp <= G else 1.0  # fewer KV heads than tp: each rank keeps (a copy of) one
    if tp > G:
        notes.append(f"kv_heads ({G}) < tp ({tp}): each rank holds one replicated KV head")
    elif G % tp:
        notes.append(f"kv_heads ({G}) is not divisible by tp ({tp}): ranks hold uneven shares")
    f_local = _split(float(shape.d_ff), tp, "d_ff", notes)
    layers = _split(float(shape.layers), pp, "layers", notes)
    s_keys = float(seq_len)  # with cp, each query block still attends over the whole sequence
    gemms = [
        Gemm("qkv", T, h_local * Q + 2 * g_local * Q, d, 1),
        Gemm("attention_scores", T / mb, s_keys, Q, 1, int(round(mb * h_local))),
        Gemm("attention_values", T / mb, Q, s_keys, 1, int(round(mb * h_local))),
        Gemm("attention_output", T, d, h_local * Q, 1),
    ]
    gated = shape.ffn_matmuls == 3
    if shape.moe_layers < shape.layers:
        gemms += [Gemm("ffn_up", T, f_local, d, 2 if gated else 1),
                  Gemm("ffn_down", T, d, f_local, 1)]
    if shape.moe_layers:
        if shape.experts % ep:
            notes.append(f"experts ({shape.experts}) is not divisible by ep ({ep})")
        fe = _split(float(shape.d_ff_expert), tp, "d_ff_expert", notes)
        rows = T * shape.top_k * ep / shape.experts
        gemms += [Gemm("moe_router", T, float(shape.experts), d, 1),
                  Gemm("expert_up", rows, fe, d, (2 if gated else 1) * max(1, shape.experts // ep)),
                  Gemm("expert_down", rows, d, fe, max(1, shape.experts // ep))]
        if shape.shared_experts:
            gemms += [Gemm("shared_expert_up", T, fe, d, (2 if gated else 1) * shape.shared_experts),
                      Gemm("shared_expert_down", T, d, fe, shape.shared_experts)]
        notes.append("expert rows assume uniform routing")
    vocab = _split(float(shape.vocab), tp, "vocab", notes)
    gemms.append(Gemm("logits", T, vocab, d, 1, 1, "micro-batch, last stage"))
    return LocalShapes(tp, pp, cp, ep, int(dp) if dp is not None else None, mb, T, layers, tuple(gemms), tuple(notes)), ()
