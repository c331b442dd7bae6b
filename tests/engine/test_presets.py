"""Framework presets: each one reproduces one framework's FLOP formula at one commit.

For every preset, the test writes the upstream formula out by hand (plain
arithmetic, transcribed from the file and commit named in the docstring) on a
fixed shape, and compares it with effspec's flops_per_token under that preset.
Where the framework counts something the shape has no word for (the weights of
norm layers, which effspec never counts), the difference is computed by hand
too and asserted exactly, so the test says what the preset leaves out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from effspec import check_text
from effspec.engine import flops
from effspec.front import keys, presets


def fpt(model: str, preset: str, seq: int, extra: str = "", run: str = "r") -> float:
    text = f"""eff 1
run {run} {{
  model {{ {model} }}
  convention {{ preset = {preset} }}
  work {{ seq_len = {seq} token/sequence  global_batch = 8 sequence }}
  {extra}
}}
"""
    result = check_text(text)
    front = [f"{d.code} {d.message}" for d in result.diagnostics if d.code < "EFF100"]
    assert not front, front
    return result.evaluation.runs[run]


def value(rr, name="flops_per_token"):
    return rr.metrics[name].value


# A Llama-style dense model: GQA, SwiGLU, untied embeddings, head_dim = d / H.
L, d, H, G, Q, f, V, s = 4, 1024, 16, 4, 64, 2816, 32000, 2048
DENSE = (f"kind = dense_transformer  layers = {L}  d_model = {d}  heads = {H}  kv_heads = {G}  ffn = swiglu  d_ff = {f}  "
         f"vocab = {V}")
ATTN_W = d * H * Q + 2 * d * G * Q + H * Q * d      # attention weights per layer: 2,621,440
FFN_W = 3 * d * f                                   # SwiGLU weights per layer: 8,650,752

# A GPT-2-style model: MHA, GELU 4d, tied embeddings (nanoGPT, MPT).
GL, Gd, GH, GV, Gs = 4, 768, 12, 50304, 1024
GPT = f"kind = dense_transformer  layers = {GL}  d_model = {Gd}  heads = {GH}  ffn = gelu  d_ff = {4 * Gd}  vocab = {GV}  tied_embeddings = true"

# An MoE model: 1 dense layer then 3 MoE layers of 8 experts (top 2) plus 1 shared expert.
E, K, S, FE = 8, 2, 1, 704
MOE = (f"kind = moe_transformer  layers = {L}  d_model = {d}  heads = {H}  kv_heads = {G}  ffn = swiglu  d_ff = {f}  "
       f"vocab = {V}  moe_layers = 3  experts = {E}  top_k = {K}  shared_experts = {S}  d_ff_expert = {FE}")


def test_every_preset_has_a_test_and_a_note():
    tested = {"nanogpt", "torchtitan", "megatron_lm", "megatron_lm_2024", "megatron_lm_2023", "maxtext", "maxtext_pre1988",
              "llm_foundry", "olmo_core", "olmo_core_pre511", "gpt_neox", "nemo", "nemo_pre14424", "megatron_deepspeed",
              "megatron_deepspeed_pre371", "torchtitan_pre280", "automodel", "automodel_pre3091"}  # the last three: test_quirk_presets.py
    assert set(flops.FRAMEWORK_PRESETS) == tested
    assert flops.STANDARD_PRESETS == ("palm", "megatron", "kaplan", "chinchilla")   # gap.py and EFF601 compare these
    for preset in tested:
        entry = presets.by_name(preset)
        assert "@" in entry.upstream and ".py" in entry.upstream, preset   # names the upstream file and commit
        assert entry.upstream in flops.PRESET_NOTES[preset]


def test_one_table_feeds_the_language_the_engine_and_explain():
    """compiler/front/presets.py is the only list: keys, flops, explain and the reference read it."""
    names = tuple(p.name for p in presets.PRESETS)
    assert keys.PRESETS == (*names, "custom") == keys.BLOCKS["convention"]["preset"].choices
    assert tuple(flops.PRESETS) == names and flops.PRESET_NAMES == keys.PRESETS
    for p in presets.PRESETS:
        assert flops.PRESETS[p.name] == dict(p.knobs)
        assert p.upstream in presets.page(p.name) and f"`{p.name}`" in presets.reference_table()
    reference = (Path(__file__).resolve().parents[2] / "spec" / "language.md").read_text(encoding="utf-8")
    assert presets.reference_table() in reference
    # Every knob a framework preset sets is one the key table accepts.
    for p in presets.PRESETS:
        for knob, value in presets.expanded(p).items():
            assert value in keys.BLOCKS["convention"][knob].choices, (p.name, knob, value)


def test_nanogpt():
    """karpathy/nanoGPT@3adf61e model.py L289-303: flops_per_token = 6*N + 12*L*H*Q*T, N =
    get_num_params() (every parameter but the position table; wte is tied to lm_head), T = block_size."""
    norms = (2 * GL + 1) * Gd                                   # ln_1, ln_2 per block, ln_f (bias=False)
    N = GL * (12 * Gd * Gd) + norms + GV * Gd                   # c_attn 3d², c_proj d², c_fc 4d², c_proj 4d²; wte
    upstream = 6 * N + 12 * GL * GH * (Gd // GH) * Gs
    rr = fpt(GPT, "nanogpt", Gs)
    assert value(rr) == upstream - 6 * norms                    # effspec does not count norm weights


def test_torchtitan_dense():
    """pytorch/torchtitan@b5bcd76 torchtitan/models/utils.py get_dense_model_nparams_and_flops:
    6 * (nparams - nparams_embedding) + 6 * n_layers * n_heads * head_dims * seq_len, head_dims = qk + v."""
    norms = (2 * L + 1) * d                                     # attention_norm, ffn_norm per layer, final norm
    nparams = L * (ATTN_W + FFN_W) + norms + V * d + V * d      # tok_embeddings and output (untied)
    upstream = 6 * (nparams - V * d) + 6 * L * H * (Q + Q) * s
    assert value(fpt(DENSE, "torchtitan", s)) == upstream - 6 * norms


def test_torchtitan_moe():
    """The same file, get_moe_model_nparams_and_flops: router + shared experts + routed experts × top_k // E."""
    norms = (2 * L + 1) * d
    dense = L * ATTN_W + 1 * FFN_W + norms + 2 * V * d          # everything outside moe.* (embedding included)
    router, shared, routed = 3 * d * E, 3 * S * 3 * d * FE, 3 * E * 3 * d * FE   # three MoE layers
    active = router + shared + routed * K // E
    upstream = 6 * (dense - V * d + active) + 6 * L * H * (Q + Q) * s
    assert value(fpt(MOE, "torchtitan", s)) == upstream - 6 * norms


def test_megatron_lm_moe():
    """NVIDIA/Megatron-LM@d98e8a6 megatron/training/training.py num_floating_point_operations
    (transformer_flops): 3 × 2 × (MLP: d·(f·3·L_dense + f_e·k·3·L_moe + f_shared·3·L_moe)
    + L·(d·(HQ + 2GQ) + HQ·d) + d·V) per token, + 3 × 2 × HQ/2 × 2 per s² per layer (causal); no router."""
    per_token = 6 * d * (f * 3 * 1 + FE * K * 3 * 3 + (S * FE) * 3 * 3) + 6 * L * (d * (H * Q + 2 * G * Q) + H * Q * d) + 6 * d * V
    core = 6 * (H * Q) / 2 * 2 * s * L                          # seqlen_squared_sum / tokens = s
    assert value(fpt(MOE, "megatron_lm", s)) == per_token + core


def test_megatron_lm_mla_and_mtp_on_deepseek_v3():
    """The same function's MLA branch (q_lora, kv_lora, RoPE key, output) and MTP (one more MoE layer,
    a 2h² projection, 3h norm 'FLOPs', logits × 2).  Megatron counts q and kv norms as q_lora_rank and
    kv_lora_rank multiply-adds per layer (the `+ 1`), and the MTP norms as 3h: effspec counts no norms."""
    model = ("kind = moe_transformer  layers = 61  d_model = 7168  heads = 128  q_lora_rank = 1536  kv_lora_rank = 512  "
             "qk_nope_head_dim = 128  qk_rope_head_dim = 64  v_head_dim = 128  ffn = swiglu  d_ff = 18432  moe_layers = 58  "
             "experts = 256  top_k = 8  shared_experts = 1  d_ff_expert = 2048  vocab = 129280  mtp_depth = 1")
    h, n, rq, rkv, qk, rope, v, seq = 7168, 128, 1536, 512, 128, 64, 128, 4096
    layers, moe_layers, dense_layers = 61 + 1, 58 + 1, 3                 # the MTP layer is MoE, like the last one
    attn = (rq * (h + n * (qk + rope) + 1) + rkv * (h + n * (qk + v) + 1) + h * rope + n * v * h)
    mlp = h * (18432 * 3 * dense_layers + 2048 * 8 * 3 * moe_layers + 2048 * 3 * moe_layers)
    mtp = 1 * (3 * h + 2 * h * h)
    per_token = 6 * (mlp + attn * layers + mtp + h * 129280 * (1 + 1))
    core = 6 * (n * (qk + rope) / 2 + n * v / 2) * seq * layers
    upstream = per_token + core
    rr = fpt(model, "megatron_lm", seq)
    assert value(rr) == pytest.approx(upstream - 6 * layers * (rq + rkv) - 6 * 3 * h, rel=1e-15)


def test_megatron_lm_2024():
    """NVIDIA/Megatron-LM@8873b55d6a^ (from e116d81ed7, 2024-03-25): 12·B·s·L·h²·((1 + G/H + s/h)·HQ/h
    + (f/h)·k·g + (f_shared/h)·g + V/(2·L·h)), g = 3/2 for SwiGLU, k = 1 for a dense model."""
    upstream = 12 * L * d * d * ((1 + G / H + s / d) * (H * Q / d) + (f / d) * 1 * 1.5 + V / (2 * L * d))
    assert value(fpt(DENSE, "megatron_lm_2024", s)) == pytest.approx(upstream, rel=1e-14)


def test_megatron_lm_2023():
    """NVIDIA/Megatron-LM@2748e7c7d4 megatron/training.py: 60·B·s·L·h²·(1 + G/5H + s/5h + V/10Lh)
    (until 9677b3bbc2): the FFN is taken as GELU 4h whatever the model's is, so this SwiGLU model is undercounted."""
    upstream = 60 * L * d * d * (1 + G / (5 * H) + s / (5 * d) + V / (10 * L * d))
    assert value(fpt(DENSE, "megatron_lm_2023", s)) == pytest.approx(upstream, rel=1e-14)


def maxtext_dense(attention_per_token: float) -> float:
    """AI-Hypercomputer/maxtext calculate_tflops_training_per_device, generic decoder, per token:
    ((ffn + qkv + projection) × L + embedding) × 3 + attention × L × 3."""
    ffn = 2 * f * d * 2 + 2 * f * d                  # ffn1 over mlp_activations ("silu", "linear"), ffn2
    qkv = 2 * d * (H + 2 * G) * Q
    projection = 2 * d * H * Q
    embedding = 2 * d * V                            # the unembedding only
    return ((ffn + qkv + projection) * L + embedding) * 3 + attention_per_token * L * 3


def test_maxtext():
    """maxtext@e591f30 src/maxtext/utils/maxtext_utils.py: causal = noncausal / 2, noncausal = 4·s²·H·Q per sequence."""
    assert value(fpt(DENSE, "maxtext", s)) == maxtext_dense(4 * s * H * Q / 2)


def test_maxtext_pre1988():
    """maxtext@33339821e MaxText/maxtext_utils.py (before PR #1988): attention 4·s²·H·Q per sequence, not halved."""
    assert value(fpt(DENSE, "maxtext_pre1988", s)) == maxtext_dense(4 * s * H * Q)


def test_maxtext_local_global_attention():
    """maxtext@e591f30 calculate_mixed_attention_model_tflops_training_per_device (Gemma 3, pattern 6):
    L // 6 global layers at 2·T²·H·Q, the rest local at 4·(T·W − W²/2)·H·Q, per sequence."""
    T, W, layers = 4096, 1024, 6
    model = DENSE.replace(f"layers = {L}", f"layers = {layers}") + f"  sliding_window = {W} token  sliding_layers = 5"
    ffn, qkv, proj = 3 * 2 * f * d, 2 * d * (H + 2 * G) * Q, 2 * d * H * Q
    attention = (1 * 2 * T * T * H * Q + 5 * 4 * (T * W - 0.5 * W * W) * H * Q) / T   # per token
    upstream = ((ffn + qkv + proj) * layers + 2 * d * V) * 3 + attention * 3
    assert value(fpt(model, "maxtext", T)) == upstream


def test_maxtext_moe():
    """maxtext@e591f30, generic MoE decoder: gate 2·d·E + top_k × ffn(moe_mlp_dim), every layer MoE."""
    model = MOE.replace("moe_layers = 3  ", "").replace(f"shared_experts = {S}  ", "")
    gate = 2 * d * E
    ffn = gate + K * (2 * FE * d * 2 + 2 * FE * d)
    upstream = ((ffn + 2 * d * (H + 2 * G) * Q + 2 * d * H * Q) * L + 2 * d * V) * 3 + 2 * s * H * Q * L * 3
    assert value(fpt(model, "maxtext", s)) == upstream


def test_llm_foundry():
    """mosaicml/llm-foundry@8c8dd48 modeling_mpt.py flops_per_batch: (2·N·msl + L·2·2·d·msl²)·3·bs, N =
    mpt_get_active_params (all parameters; wte subtracted only when untied, so the tied matrix counts once)."""
    norms = (2 * GL + 1) * Gd                               # MPT LayerNorms, no_bias: weights only
    N = GL * 12 * Gd * Gd + norms + GV * Gd
    upstream = (2 * N * Gs + GL * 2 * 2 * Gd * Gs * Gs) * 3 / Gs
    assert value(fpt(GPT, "llm_foundry", Gs)) == upstream - 6 * norms


def test_olmo_core_bottom_up():
    """allenai/OLMo-core@fa6c501 (since dc84ab401, PR #511): per block 6 × attention parameters
    + 12·H·head_dim·min(window, s) + 6 × feed-forward parameters, plus 6 × lm_head parameters (its norm included)."""
    W = 1024
    attention = 6 * ATTN_W + 12 * H * Q * min(W, s)
    upstream = L * (attention + 6 * FFN_W) + 6 * (d + d * V)
    assert value(fpt(DENSE + f"  sliding_window = {W} token", "olmo_core", s)) == upstream - 6 * d


def test_olmo_core_pre511():
    """allenai/OLMo-core@dc84ab401^ (the same at 2f253f81) src/olmo_core/nn/transformer/model.py
    Transformer.num_flops_per_token: 6·num_non_embedding_params + 12·n·h·q·t, q = d // n_heads,
    num_non_embedding_params = every parameter but embeddings.weight (Q, K, V, out, SwiGLU, RMSNorm weights,
    final norm, output)."""
    norms = (2 * L + 1) * d
    num_params = d * V + L * (d * d + 2 * d * G * (d // H) + d * d + 3 * d * f + 2 * d) + d + d * V
    upstream = 6 * (num_params - d * V) + 12 * L * H * (d // H) * s
    assert value(fpt(DENSE, "olmo_core_pre511", s)) == upstream - 6 * norms
    # A sliding window changes nothing before PR #511: every layer at s.
    assert value(fpt(DENSE + "  sliding_window = 512 token", "olmo_core_pre511", s)) == upstream - 6 * norms


def test_gpt_neox_mfu_and_hfu():
    """EleutherAI/gpt-neox@ea7aefd megatron/logging.py: MFU 24·3·B·s·L·h²·(1 + s/6h + V/16Lh)
    (get_forward_backward_flops), HFU the same with 4 when activation checkpointing ran (get_actual_flops).
    The formula knows neither GQA nor SwiGLU."""
    mfu_per_token = 24 * 3 * L * d * d * (1 + s / (6 * d) + V / (16 * L * d))
    hfu_per_token = 24 * 4 * L * d * d * (1 + s / (6 * d) + V / (16 * L * d))
    rr = fpt(DENSE, "gpt_neox", s, extra="parallelism { recompute = full }")
    assert value(rr) == pytest.approx(mfu_per_token, rel=1e-14)
    tokens = s * 8
    assert value(rr, "executed_flops_per_step") == pytest.approx(hfu_per_token * tokens, rel=1e-14)


def test_nemo_llama3():
    """NVIDIA/NeMo@8cfedd7 nemo/utils/flops_formulas.py llama3: B·s·L·h²·(12 + 12·G/H + 18·f/h
    + (12·s/h)·0.5 + 6·V/(L·h)), V = LLM_VOCAB_SIZE_MAP["llama3"] = 128256."""
    model = DENSE.replace(f"vocab = {V}", "vocab = 128256")
    upstream = L * d * d * (12 + 12 * G / H + 18 * f / d + (12 * s / d) * 0.5 + 6 * 128256 / (L * d))
    assert value(fpt(model, "nemo", s)) == pytest.approx(upstream, rel=1e-14)


def test_nemo_pre14424():
    """NVIDIA/NeMo@6251117f4c^ (before PR #14424): the same with 12·s/h, not halved."""
    model = DENSE.replace(f"vocab = {V}", "vocab = 128256")
    upstream = L * d * d * (12 + 12 * G / H + 18 * f / d + 12 * s / d + 6 * 128256 / (L * d))
    assert value(fpt(model, "nemo_pre14424", s)) == pytest.approx(upstream, rel=1e-14)


def test_megatron_deepspeed():
    """microsoft/Megatron-DeepSpeed@f4157be megatron/utils.py throughput_calculator (since PR #371):
    fwd MACs = L·(1 + 2 // gqa + 1)·h² + L·2·head_dim·H·s + L·3·f·h·topk + V·h per token,
    gqa = H // G; × 3, + fwd once more with full recomputation; × 2.  With H/G = 4, 2 // 4 = 0: K and V uncounted."""
    fwd = L * (1 + 2 // (H // G) + 1) * d * d + L * 2 * (d // H) * H * s + L * 3 * f * d * 1 + V * d
    assert value(fpt(DENSE, "megatron_deepspeed", s)) == 2 * 3 * fwd
    assert value(fpt(DENSE, "megatron_deepspeed", s, extra="parallelism { recompute = full }")) == 2 * (3 * fwd + fwd)
    selective = fpt(DENSE, "megatron_deepspeed", s, extra="parallelism { recompute = selective }")
    assert value(selective) == 2 * (3 * fwd + L * 2 * (d // H) * H * s)


def test_megatron_deepspeed_moe():
    """The same function with MoE: one ffn_hidden_size, ffn_gemm_macs = B·L·3·f·h·s·topk on every layer (the
    dense layer included); no shared experts, no router.  The experts here are as wide as the dense FFN."""
    model = MOE.replace(f"d_ff_expert = {FE}", f"d_ff_expert = {f}")
    fwd = L * (1 + 2 // (H // G) + 1) * d * d + L * 2 * (d // H) * H * s + L * 3 * f * d * K + V * d
    assert value(fpt(model, "megatron_deepspeed", s)) == 2 * 3 * fwd


def test_megatron_deepspeed_pre371():
    """microsoft/Megatron-DeepSpeed@cc3a94c megatron/utils.py throughput_calculator: 24·f·B·s·L·h²·(1 + s/6h
    + V/16Lh), f = 4 when checkpoint_activations or (since b91bfd4d) recompute_granularity is selective or full,
    else 3."""
    bracket = 1 + s / (6 * d) + V / (16 * L * d)
    assert value(fpt(DENSE, "megatron_deepspeed_pre371", s)) == pytest.approx(24 * 3 * L * d * d * bracket, rel=1e-14)
    for ran in ("selective", "full"):
        rr = fpt(DENSE, "megatron_deepspeed_pre371", s, extra=f"parallelism {{ recompute = {ran} }}")
        assert value(rr) == pytest.approx(24 * 4 * L * d * d * bracket, rel=1e-14), ran


def test_framework_presets_leave_the_convention_table_as_it_was():
    rr = fpt(DENSE, "torchtitan", s)
    assert list(rr.conventions) == ["declared", "palm", "megatron", "kaplan", "chinchilla"]
    assert rr.conventions["declared"]["preset"] == "torchtitan"
