"""The v1 vocabulary: every block, every key, its kind, unit and allowed values.

This table drives EFF002 (unknown name), EFF003 (bad value, missing key),
EFF010 (wrong dimension) and EFF011 (out of range) in one place, and the
language reference in spec/ documents it key by key.
"""

from __future__ import annotations

from effspec.front import mixers, presets
from effspec.front.keyspec import Key as Key  # re-exported: the key type lives in effspec.front.keyspec
from effspec.front.keyspec import e, i, q

PROVENANCE_KINDS = ("measured", "datasheet", "paper", "profiler", "log", "estimate", "assumed")


# The convention presets, from their one table (effspec.front.presets), then `custom`.
PRESETS = presets.names()

DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32", "int8", "nvfp4", "mxfp4", "fp6")
BREAKDOWN_CATEGORIES = (
    "model_compute", "extra_compute", "exposed_comm", "bubble",
    "imbalance", "host_input", "checkpoint", "unclassified",
)

_share = dict(alt_units=("s",), maximum=None)
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")

BLOCKS: dict[str, dict[str, Key]] = {
    "run": {
        "title": Key("title", "string", doc="a one-line description of the run"),
        "source": Key("source", "string", doc="where the figures come from"),
    },
    "model": {k.name: k for k in (
        e("kind", ("dense_transformer", "moe_transformer", "hybrid", "custom"),
          "the architecture family; `hybrid`: a stack of mixed layers (`pattern`, `layer_types` or `full_attention_interval`)"),
        i("layers", "transformer blocks (L)", positive=True, maximum=1e5),
        i("d_model", "hidden size (d)", positive=True, maximum=1e7),
        i("heads", "query heads (H)", positive=True, maximum=1e5),
        i("head_dim", "per-head size (Q); default d_model / heads", positive=True, maximum=1e6),
        i("kv_heads", "key/value heads (G); default heads; 1 is MQA", positive=True, maximum=1e5),
        e("ffn", ("gelu", "relu", "swiglu", "geglu"), "the feed-forward form: two or three matmuls"),
        i("d_ff", "feed-forward inner size (f)", positive=True, maximum=1e8),
        i("vocab", "vocabulary size (V)", positive=True, maximum=1e8),
        Key("tied_embeddings", "bool", doc="input and output embeddings share one matrix"),
        q("params", "param", "declared parameter count, checked against the shape", positive=True, maximum=1e16),
        q("active_params", "param", "parameters active per token (MoE), checked against the shape", positive=True, maximum=1e16),
        i("experts", "routed experts per MoE layer", positive=True, maximum=1e6),
        i("top_k", "routed experts active per token", positive=True, maximum=1e6),
        i("shared_experts", "always-active experts per MoE layer", maximum=1e6),
        i("d_ff_expert", "feed-forward size of one expert; default d_ff", positive=True, maximum=1e8),
        i("moe_layers", "how many layers are MoE (the rest are dense, with d_ff); default all", maximum=1e5),
        i("q_lora_rank", "MLA: query compression rank; 0 or absent: queries projected directly", maximum=1e7),
        i("kv_lora_rank", "MLA: key-value compression rank; writing it makes the attention MLA", positive=True, maximum=1e7),
        i("qk_nope_head_dim", "MLA: per-head query/key size without rotary embedding", positive=True, maximum=1e6),
        i("qk_rope_head_dim", "MLA: per-head size of the decoupled rotary query/key", maximum=1e6),
        i("v_head_dim", "MLA: per-head value size", positive=True, maximum=1e6),
        i("mtp_depth", "multi-token prediction modules (DeepSeek-V3 sec. 2.2); default 0", maximum=1000),
        q("sliding_window", "token", "sliding-window attention: the keys one query may see (W)", positive=True, maximum=1e9),
        i("sliding_layers", "layers that use the sliding window; default all layers", maximum=1e5),
        Key("pattern", "pattern", doc="hybrid: the stack as a hybrid_override_pattern string, one letter a layer: "
            + "".join(f"{m.letter} {m.name}, " for m in mixers.all_mixers().values() if m.letter)
            + "* attention, - dense MLP, E MoE (Megatron-LM's Symbols)"),
        Key("layer_types", "names", doc="hybrid: the stack as a list of layer types (HF `layer_types`), one a layer"),
        i("full_attention_interval", "hybrid: every n-th layer is full attention, the others the linear mixer "
          "(Qwen3-Next)", positive=True, maximum=1e5),
        Key("attention_gate", "bool", doc="attention layers gate their output with a projection of size H·Q "
            "(Qwen3-Next's gated attention)"),
        q("extra_flops_per_token", "FLOP/token", "training FLOPs per token the shape cannot express, added as its own term",
          positive=True, maximum=1e20),
        q("flops_per_token", "FLOP/token", "kind = custom: training FLOPs per token, given directly", positive=True, maximum=1e20),
    )},
    # The blocks of the layer kinds of a hybrid stack (`mamba2 { … }`, `gated_deltanet { … }`): effspec.front.mixers.
    **{m.name: {k.name: k for k in m.keys} for m in mixers.all_mixers().values()},
    # `model { … lora { rank = 16  targets = [q, k, v, o, gate, up, down] } }`: LoRA adapters, a block inside `model`.
    "lora": {k.name: k for k in (
        i("rank", "the adapters' rank (r): each adapted W (in × out) gains A (in × r) and B (r × out)", positive=True,
          maximum=1e6),
        Key("targets", "words", choices=LORA_TARGETS,
            doc="the adapted matmuls: q, k, v, o (attention), gate, up, down (FFN; gate only in a gated FFN)"),
    )},
    "convention": {k.name: k for k in (
        e("preset", PRESETS, "a named counting convention: a paper's, or a framework's at one commit"),
        q("multiply_add", "FLOP", "FLOPs per multiply-accumulate (2; fvcore counts 1)", positive=True, maximum=16),
        e("attention", ("full", "causal", "excluded"), "how the score and weighted-sum matmuls count"),
        e("logits", ("included", "excluded"), "the output projection to the vocabulary"),
        e("embeddings", ("included", "excluded"), "the input embedding counted as a matmul"),
        Key("backward", "quantity", unit="", doc="backward cost as a multiple of the forward", minimum=0, maximum=10),
        Key("recompute", "enum", choices=("excluded", "none", "selective", "full", "executed"), maximum=1, shares=True,
            doc="recomputation counted in the numerator: a mode, `executed` (what parallelism.recompute says ran), "
                "or a share of the forward pass"),
        e("padding", ("excluded", "included"), "padded tokens counted as work"),
        e("optimizer", ("excluded",), "optimizer FLOPs are never model FLOPs"),
        e("moe", ("active", "all"), "MoE experts counted: the active ones, or all"),
        e("windows", ("counted", "ignored"), "a sliding window counted, or every layer counted as full-length attention"),
        e("router", ("counted", "excluded"), "the MoE router matmul (m·d·experts per MoE layer) counted"),
        e("formula", ("shape", "eq3", "megatron_lm_2023", "megatron_deepspeed_2024"),
          "term by term from the shape, or a framework's closed form (section 6)"),
        e("head_dim", ("declared", "d_model_over_heads"),
          "the per-head size the count uses: the model's, or d_model // heads (a framework quirk, section 6)"),
        e("frozen_wgrad", ("excluded", "counted"),
          "with `lora`: the frozen base's weight-gradient matmuls counted (as full fine-tuning) or not"),
        e("adapters", ("counted", "excluded"), "with `lora`: the adapters' own matmuls counted or not"),
    )},
    "work": {k.name: k for k in (
        q("seq_len", "token/sequence", "tokens per sequence (s)", positive=True, maximum=1e9),
        q("global_batch", "sequence", "sequences per optimizer step", positive=True, maximum=1e12),
        q("valid_tokens", "token", "useful tokens per step; default seq_len*global_batch - padded - dropped", maximum=1e15),
        q("padded_tokens", "token", "padding tokens per step", maximum=1e15),
        q("dropped_tokens", "token", "tokens dropped per step (capacity, truncation)", maximum=1e15),
        q("executed_flops", "FLOP", "executed FLOPs per step from a hardware counter", positive=True),
    )},
    "parallelism": {k.name: k for k in (
        i("dp", "data-parallel degree", positive=True, maximum=1e7),
        i("tp", "tensor-parallel degree", positive=True, maximum=1e5),
        i("pp", "pipeline stages", positive=True, maximum=1e5),
        i("cp", "context-parallel degree", positive=True, maximum=1e5),
        i("ep", "expert-parallel degree", positive=True, maximum=1e6),
        q("micro_batch", "sequence", "sequences per micro-batch per data-parallel rank", positive=True, maximum=1e9),
        Key("recompute", "enum", choices=("none", "selective", "full"), maximum=1, shares=True,
            doc="activation recomputation that actually ran: a mode, or the share of the forward pass recomputed"),
    )},
    "hardware": {k.name: k for k in (
        Key("accelerator", "string", doc="the device, e.g. \"H100-SXM5-80GB\""),
        q("count", "device", "devices in this pool", positive=True, maximum=1e8, whole=True),
        q("unavailable", "device", "devices of this pool that did no work (failed, drained)", maximum=1e8, whole=True),
        e("dtype", DTYPES, "the datatype of the model matmuls"),
        e("sparsity", ("dense", "sparse"), "dense work, or 2:4 structured sparsity"),
        Key("peak", "peak", unit="FLOP/s", doc="per-device peak: a quantity, or `catalog`", positive=True, maximum=1e20),
        q("measured_peak", "FLOP/s", "a measured per-device reference (e.g. a large GEMM)", positive=True, maximum=1e20),
        q("power_cap", "W", "a power limit below the datasheet's", positive=True, maximum=1e6),
    )},
    "timing": {k.name: k for k in (
        Key("step_time", "samples", unit="s", doc="seconds per step: one value, a list, or a CSV column", positive=True, maximum=1e7),
        q("throughput", "token/s", "valid tokens per second, where a source gives a rate", positive=True, maximum=1e15),
        q("achieved_flops_per_device", "FLOP/s", "model FLOP/s per device as a paper states it, under the declared convention",
          positive=True, maximum=1e20),
        q("warmup", "step", "leading samples excluded as warm-up", maximum=1e9, whole=True),
        Key("boundary", "string", doc="where a step starts and ends, and how it was synchronized"),
        e("statistic", ("median", "mean"), "how samples become one step time"),
    )},
    "breakdown": {name: Key(name, "quantity", unit="", alt_units=("s",), doc=f"time in {name.replace('_', ' ')}")
                  for name in BREAKDOWN_CATEGORIES},
    "ranks": {
        "samples": Key("samples", "file", doc="CSV: rank, node, step, compute, comm, stall (seconds)"),
        "alpha": q("alpha", "", "the diagnosis' false-positive rate on balanced tables (default 1 %)", positive=True,
                   maximum=0.5),
    },
    "calendar": {k.name: k for k in (
        q("wall_clock", "s", "calendar time of the whole job", positive=True, maximum=1e10),
        q("steps", "step", "optimizer steps completed", positive=True, maximum=1e12, whole=True),
        q("lost_time", "s", "time lost to failures and restarts", maximum=1e10),
        q("checkpoint_time", "s", "time spent writing checkpoints outside steps", maximum=1e10),
        i("interruptions", "how many times the job stopped", maximum=1e9),
        q("repeated_tokens", "token", "tokens replayed after rollbacks", maximum=1e20),
    )},
    "target": {k.name: k for k in (
        Key("metric", "string", doc="the quality metric, e.g. \"validation loss\""),
        Key("value", "quantity", unit="", doc="the target value of the metric", minimum=-1e30),
        q("reached_at", "step", "the step at which the target was first reached", positive=True, maximum=1e12),
    )},
    "scaling": {
        "kind": e("kind", ("strong", "weak"), "strong: global work fixed; weak: per-device work fixed"),
        "baseline": Key("baseline", "run", doc="the run others are compared with"),
        "runs": Key("runs", "runs", doc="the runs compared with the baseline"),
        "per_device": e("per_device", ("tokens", "flops"),
                        "weak scaling: what each device's work holds fixed; flops when the model grows with the devices"),
    },
}

# Blocks inside `model` (the layer kinds of a hybrid stack), one each; their keys are above.
MODEL_BLOCKS = (*mixers.all_mixers(), "lora")
# The mixers of a hybrid stack (`kind = hybrid` only); `lora` goes with any shape.
HYBRID_BLOCKS = tuple(mixers.all_mixers())

RUN_BLOCKS = ("model", "convention", "work", "parallelism", "hardware", "timing", "breakdown", "ranks", "calendar", "target")
REPEATABLE_BLOCKS = ("hardware",)

REQUIRED: dict[str, tuple[str, ...]] = {
    "hardware": ("accelerator", "count"),
    "scaling": ("kind", "baseline", "runs"),
    "ranks": ("samples",),
    "target": ("metric", "value", "reached_at"),
    **{m.name: m.required for m in mixers.all_mixers().values()},
    "lora": ("rank", "targets"),
}

# Metrics a `claim` may name, with the unit its value must have.
CLAIMABLE: dict[str, str] = {
    "flops_per_token": "FLOP/token",
    "model_flops_per_step": "FLOP",
    "executed_flops_per_step": "FLOP",
    "valid_tokens_per_step": "token",
    "step_time": "s",
    "valid_tokens_per_second": "token/s",
    "tokens_per_second_per_device": "token/s",
    "achieved_flops_per_device": "FLOP/s",
    "flops_per_device": "FLOP",
    "aggregate_flops": "FLOP/s",
    "aggregate_peak": "FLOP/s",
    "mfu": "",
    "hfu": "",
    "mfu_measured_peak": "",
    "speedup": "",
    "strong_scaling_efficiency": "",
    "weak_scaling_efficiency": "",
    "goodput": "token/s",
    "calendar_efficiency": "",
}
# Metrics a `claim` inside a `scaling` may name (ratios). `efficiency` is the kind's own.
SCALING_CLAIMABLE = ("speedup", "strong_scaling_efficiency", "weak_scaling_efficiency", "time_to_target_speedup")
SCALING_CLAIM_ALIASES = {"efficiency": {"strong": "strong_scaling_efficiency", "weak": "weak_scaling_efficiency"}}
CLAIM_ALIASES = {
    "throughput": "valid_tokens_per_second",
    "tokens_per_second": "valid_tokens_per_second",
    "tflops_per_device": "achieved_flops_per_device",
    "throughput_per_device": "tokens_per_second_per_device",
}
# Per-device metrics: one device's share, whose value may also be written per device (`4898 token/s/device`,
# `2201 TFLOP/s/device`, `1.2 PFLOP/device`); the written precision is the per-device figure's own.
PER_DEVICE_CLAIMS = ("tokens_per_second_per_device", "achieved_flops_per_device", "flops_per_device")
