"""Hybrid stacks (issue 28, "Layer types and patterns"): Mamba-2 and Gated DeltaNet layers beside attention,
a per-layer pattern in the three published forms, and their FLOPs and parameters.

Every expected figure is derived by hand below, as multiply-adds (MACs) per token turned into FLOPs at the
end (FLOPs = 2 × 3 × MACs: a multiply-add is 2 FLOPs and training is 3 × the forward pass).  The counting
is the framework's that publishes these models' TFLOP/s: Megatron-LM's ``num_floating_point_operations``
(megatron/training/training.py, NVIDIA/Megatron-LM at 001b00c2734d8f0fad096fe48a382fedf755d321), which
Megatron-Bridge's performance tables print; `preset = megatron_lm` is its convention (causal attention,
logits counted, embedding lookup and MoE router not).  Where a test re-derives Megatron's own closed form
(``hybrid_flops`` for Nemotron-H, the gated_delta_net branch of ``transformer_flops`` for Qwen3-Next), it
is written the way that file writes it, so the two counts meet from different directions.

Printed figures: the stored Megatron-Bridge performance summaries (docs/performance-summary.md of
NVIDIA-NeMo/Megatron-Bridge at df0289c180dd20ff26933455c7a0a11084f6a36f: 25.09, 25.11 and 26.02 containers)
have no Nemotron-H, Qwen3-Next or Mamba-2 row, and no other stored source prints a FLOP/token or TFLOP/s
figure for these shapes; the tests check the hand counts and the parameter counts the models are named by.

Shapes:
- Nemotron-H 8B and 56B: Megatron-Bridge src/megatron/bridge/models/nemotronh/nemotron_h_provider.py
  (NemotronHModelProvider8B / 56B; base: mamba_num_groups 8, mamba_head_dim 64, num_query_groups 8,
  squared-ReLU MLP), HF nvidia/Nemotron-H-8B-Base-8K (transformers NemotronHConfig defaults: 32 heads of 128,
  8 KV heads, ssm_state_size 128, mamba_num_heads 128, conv_kernel 4, chunk_size 128, vocab 131072, untied).
- Qwen3-Next-80B-A3B: transformers src/transformers/models/qwen3_next/configuration_qwen3_next.py at
  008e574391258935f3ecc3035c882e73bbcac419 (its defaults are the 80B-A3B's): 48 layers, d 2048, 16 heads of 256,
  2 KV heads, gated attention, linear 16 key heads / 32 value heads of 128, conv 4, 512 experts of 512, top 10,
  one shared expert of 512, full_attention_interval 4, vocab 151936, untied.
- Mamba-2 2.7B: state-spaces/mamba2-2.7b config (d_model 2560, n_layer 64, vocab 50277, tied) with mamba_ssm's Mamba2 defaults (d_state 128, d_conv 4, expand 2, headdim 64, ngroups 1,
  chunk_size 256); mamba_ssm pads the vocabulary to pad_vocab_size_multiple 16: 50288.
"""

from __future__ import annotations

import json

import pytest

from effspec import check_text


def compiled(text: str):
    result = check_text(text)
    front = [f"{d.code} {d.span.line}:{d.span.column} {d.message}" for d in result.diagnostics if d.code < "EFF100"]
    assert not front, front
    return result


def run_of(text: str, run: str = "r"):
    return compiled(text).evaluation.runs[run]


def spec(model: str, seq_len: int, convention: str = "preset = megatron_lm", run: str = "r") -> str:
    return f"""eff 1
run {run} {{
  model {{ {model} }}
  convention {{ {convention} }}
  work {{ seq_len = {seq_len} token/sequence  global_batch = 16 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 16 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = 2 s  warmup = 0 step  boundary = "barrier" }}
}}
"""


def diagnostics(text: str) -> list[tuple[str, int, int, str]]:
    return [(d.code, d.span.line, d.span.column, d.message) for d in check_text(text).diagnostics if d.code < "EFF100"]


# ---------------------------------------------------------------------------- Nemotron-H 8B

NH8_PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
NEMOTRON_H_8B = (f'kind = hybrid  layers = 52  d_model = 4096  vocab = 131072  heads = 32  kv_heads = 8  head_dim = 128  '
                 f'ffn = relu  d_ff = 21504  pattern = "{NH8_PATTERN}"  '
                 f'mamba2 {{ state_size = 128  heads = 128  head_dim = 64  groups = 8  conv_kernel = 4  chunk_size = 128 }}')


def test_nemotron_h_8b_pattern_counts():
    # 52 letters: 24 M (Mamba-2), 4 * (attention), 24 - (squared-ReLU MLP), as Megatron-Bridge prints it.
    assert len(NH8_PATTERN) == 52 and NH8_PATTERN.count("M") == 24 and NH8_PATTERN.count("*") == 4
    rr = run_of(spec(NEMOTRON_H_8B, 8192))
    layout = rr.shape.hybrid.layout
    assert (layout.mamba2, layout.attention, layout.mlp, layout.moe) == (24, 4, 24, 0)


def test_nemotron_h_8b_flops_per_token():
    d, s = 4096, 8192
    d_in, N, G, Hm = 128 * 64, 128, 8, 128           # d_in = 8192 = 2·d
    mamba = (d * (2 * d_in + 2 * G * N + Hm)        # in_proj: 4096·18,560         = 76,021,760
             + 3.5 * d_in * N                       # SSD scan, 7·d_in·N FLOPs     =  3,670,016 MACs
             + d_in * d)                            # out_proj: 8192·4096          = 33,554,432
    assert mamba == 113_246_208
    attention = (d * (32 * 128 + 2 * 8 * 128)       # q, k, v: 4096·6144           = 25,165,824
                 + 32 * 128 * d                     # o                            = 16,777,216
                 + 32 * (128 + 128) * (s // 2))     # QKᵀ and ·V, causal: s/2 keys = 33,554,432
    assert attention == 75_497_472
    mlp = 2 * d * 21504                             # up and down (squared ReLU)   = 176,160,768
    logits = d * 131072                             #                              = 536,870,912
    macs = 24 * mamba + 4 * attention + 24 * mlp + logits
    assert macs == 7_784_628_224
    expected = 6 * macs                             # 46,707,769,344 FLOP/token
    assert expected == 46_707_769_344
    rr = run_of(spec(NEMOTRON_H_8B, s))
    assert rr.metrics["flops_per_token"].value == expected
    names = [i.name for i in rr.metrics["flops_per_token"].inputs]
    assert "model.pattern" in names and "model.mamba2.state_size" in names and "model.mamba2.groups" in names
    terms = {n: v for n, _, v in rr.flop_count.terms}
    assert terms["mamba_scan"] == 24 * 2 * 3.5 * d_in * N and terms["mamba_out_proj"] == 24 * 2 * d_in * d
    assert terms["attention_scores"] == 4 * 2 * 32 * 256 * (s // 2) and terms["ffn"] == 24 * 2 * mlp


def test_nemotron_h_8b_matches_megatron_hybrid_flops_as_written():
    """Megatron-LM's hybrid_flops, written out as training.py writes it (batch 1, per token = ÷ s)."""
    h, s, B = 4096, 8192, 1
    p = 128 * 32 / h                                                     # kv_channels·heads / hidden = 1
    attn = 4 * B * s * h * p * (h + h * (8 / 32) + s / 2)                # attn_layer_flops
    mlp = 4 * (21504 / h) * 1.0 * B * s * h ** 2                         # mlp_layer_flops, expansion f/h
    d_in = 2 * h
    mamba = (2 * B * s * h * (2 * d_in + 2 * 8 * 128 + 128) + 7 * B * s * d_in * 128
             + 2 * B * s * d_in * h)                                     # mamba_layer_flops
    logits = 2 * B * s * h * 131072
    megatron = 3 * (4 * attn + 24 * mlp + 24 * mamba + logits) / s
    assert megatron == 46_707_769_344
    assert run_of(spec(NEMOTRON_H_8B, s)).metrics["flops_per_token"].value == megatron


def test_nemotron_h_8b_parameters():
    d, d_in, N, G, Hm, K = 4096, 8192, 128, 8, 128, 4
    mamba = d * (2 * d_in + 2 * G * N + Hm) + K * (d_in + 2 * G * N) + d_in * d   # 76,021,760 + 40,960 + 33,554,432
    attention = d * (32 * 128 + 2 * 8 * 128) + 32 * 128 * d                         # 41,943,040
    mlp = 2 * d * 21504                                                              # 176,160,768
    embeddings = 2 * 131072 * d                                                      # untied: 1,073,741,824
    total = 24 * mamba + 4 * attention + 24 * mlp + embeddings
    assert total == 8_100_184_064    # "8B"; the norms, A, D and dt biases (a few million) are not counted
    assert run_of(spec(NEMOTRON_H_8B, 8192)).params_from_shape == total


def test_nemotron_h_hf_layer_types_form_is_the_same_stack():
    # transformers' NemotronHConfig._pattern_to_list: M -> linear_attention, * -> full_attention, - -> mlp, E -> moe.
    names = {"M": "linear_attention", "*": "full_attention", "-": "mlp"}
    listed = "[" + ", ".join(names[c] for c in NH8_PATTERN) + "]"
    as_list = NEMOTRON_H_8B.replace(f'pattern = "{NH8_PATTERN}"', f"layer_types = {listed}")
    a, b = run_of(spec(NEMOTRON_H_8B, 8192)), run_of(spec(as_list, 8192))
    assert a.metrics["flops_per_token"].value == b.metrics["flops_per_token"].value == 46_707_769_344
    assert a.params_from_shape == b.params_from_shape


# ---------------------------------------------------------------------------- Nemotron-H 56B

NH56_PATTERN = ("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
                "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-")
NEMOTRON_H_56B = (f'kind = hybrid  layers = 118  d_model = 8192  vocab = 131072  heads = 64  kv_heads = 8  '
                  f'ffn = relu  d_ff = 32768  pattern = "{NH56_PATTERN}"  '
                  f'mamba2 {{ state_size = 256  heads = 256  head_dim = 64  groups = 8  conv_kernel = 4  chunk_size = 128 }}')


def test_nemotron_h_56b_flops_per_token():
    d, s = 8192, 8192
    assert (len(NH56_PATTERN), NH56_PATTERN.count("M"), NH56_PATTERN.count("*")) == (118, 54, 10)
    d_in, N, G, Hm = 256 * 64, 256, 8, 256          # d_in = 16,384 = 2·d
    mamba = d * (2 * d_in + 2 * G * N + Hm) + 3.5 * d_in * N + d_in * d
    #      = 8192·37,120 + 14,680,064 + 134,217,728 = 304,087,040 + 14,680,064 + 134,217,728
    assert mamba == 452_984_832
    Q = d // 64                                     # head_dim = d/H = 128 (Megatron's kv_channels default)
    attention = d * (64 * Q + 2 * 8 * Q) + 64 * Q * d + 64 * 2 * Q * (s // 2)
    #          = 8192·10,240 + 67,108,864 + 67,108,864
    assert attention == 218_103_808
    mlp = 2 * d * 32768                             # 536,870,912
    macs = 54 * mamba + 10 * attention + 54 * mlp + d * 131072
    assert macs == 56_706_990_080
    assert 6 * macs == 340_241_940_480              # 340.2 GFLOP/token (6 × 56.7 G)
    assert run_of(spec(NEMOTRON_H_56B, s)).metrics["flops_per_token"].value == 340_241_940_480


# ---------------------------------------------------------------------------- MoE letters: Nemotron 3 Nano

NANO3_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
NEMOTRON_3_NANO = (f'kind = hybrid  layers = 52  d_model = 2688  vocab = 131072  heads = 32  kv_heads = 2  head_dim = 128  '
                   f'ffn = relu  experts = 128  top_k = 6  shared_experts = 2  d_ff_expert = 1856  '
                   f'pattern = "{NANO3_PATTERN}"  '
                   f'mamba2 {{ state_size = 128  heads = 64  head_dim = 64  groups = 8 }}')


def test_nemotron_3_nano_moe_letters():
    """Megatron-Bridge's Nemotron3NanoProvider: E letters are MoE FFNs (128 experts of 1856, top 6, a shared
    expert of 3712 = 2 experts' width, squared ReLU)."""
    assert (NANO3_PATTERN.count("M"), NANO3_PATTERN.count("E"), NANO3_PATTERN.count("*")) == (23, 23, 6)
    d, s = 2688, 8192
    d_in = 64 * 64                                  # 4096: here heads·head_dim is not 2·d (Megatron takes 5376)
    mamba = d * (2 * d_in + 2 * 8 * 128 + 64) + 3.5 * d_in * 128 + d_in * d
    #     = 2688·10,304 + 1,835,008 + 11,010,048
    assert mamba == 40_542_208
    attention = d * (32 * 128 + 2 * 2 * 128) + 32 * 128 * d + 32 * 256 * (s // 2)   # 12,386,304 + 11,010,048 + 33,554,432
    moe = (6 + 2) * 2 * d * 1856                    # 6 routed + 2 shared-expert widths, two matmuls each
    macs = 23 * mamba + 6 * attention + 23 * moe + d * 131072
    assert macs == 3_462_422_528 and 6 * macs == 20_774_535_168
    rr = run_of(spec(NEMOTRON_3_NANO, s))
    assert (rr.shape.hybrid.layout.moe, rr.shape.hybrid.layout.mlp) == (23, 0)
    assert rr.metrics["flops_per_token"].value == 20_774_535_168
    # 23 Mamba-2 (38,731,776 each, with conv1d), 6 attention (23,396,352), 23 MoE of 130 experts + the router
    # (130·2·2688·1856 + 2688·128 = 1,297,465,344), and 2·131072·2688 embeddings: 31.58e9, the "30B" (31.6B).
    assert rr.params_from_shape == 23 * 38_731_776 + 6 * 23_396_352 + 23 * 1_297_465_344 + 2 * 131072 * 2688
    assert rr.params_from_shape == 31_577_554_944


# ---------------------------------------------------------------------------- Qwen3-Next-80B-A3B

QWEN3_NEXT = ("kind = hybrid  layers = 48  d_model = 2048  vocab = 151936  heads = 16  kv_heads = 2  head_dim = 256  "
              "attention_gate = true  ffn = swiglu  experts = 512  top_k = 10  shared_experts = 1  d_ff_expert = 512  "
              "full_attention_interval = 4  "
              "gated_deltanet { key_heads = 16  value_heads = 32  key_head_dim = 128  value_head_dim = 128  conv_kernel = 4 }")


def test_qwen3_next_stack_from_full_attention_interval():
    # HF: layer i is full_attention where (i + 1) % 4 == 0: 12 attention layers, 36 Gated DeltaNet; all 48 MoE.
    layout = run_of(spec(QWEN3_NEXT, 4096)).shape.hybrid.layout
    assert (layout.attention, layout.gated_deltanet, layout.moe, layout.mlp) == (12, 36, 48, 0)
    assert layout.letters == "GEGEGE*E" * 12


def test_qwen3_next_80b_a3b_flops_per_token():
    d, s = 2048, 4096
    kd, vd = 16 * 128, 32 * 128                     # key dim 2048, value dim 4096
    gdn = (d * (2 * kd + 2 * vd + 2 * 32)           # in_proj q, k, v, z, β, α: 2048·12,352 = 25,296,896
           + 4 * (2 * kd + vd)                      # causal conv over q, k, v                 =     32,768
           + 4 * 32 * 128 * 128                     # delta rule, 4 state products per head    =  2,097,152
           + vd * d)                                # out_proj                                 =  8,388,608
    assert gdn == 35_815_424
    attention = (d * (16 * 256 + 2 * 2 * 256)       # q, k, v: 2048·5120                      = 10,485,760
                 + d * 16 * 256                     # the output gate (Qwen3-Next's gated attention) 8,388,608
                 + 16 * 256 * d                     # o                                        =  8,388,608
                 + 16 * (256 + 256) * (s // 2))     # causal QKᵀ and ·V                        = 16,777,216
    assert attention == 44_040_192
    moe = (10 + 1) * 3 * d * 512                    # 10 routed + 1 shared SwiGLU expert       = 34,603,008
    logits = d * 151936                             #                                          = 311,164,928
    macs = 36 * gdn + 12 * attention + 48 * moe + logits
    assert macs == 3_789_946_880
    expected = 6 * macs                             # 22,739,681,280 FLOP/token (router not counted)
    assert run_of(spec(QWEN3_NEXT, s)).metrics["flops_per_token"].value == expected == 22_739_681_280


def test_qwen3_next_matches_megatron_transformer_flops_as_written():
    """transformer_flops' gated_delta_net branch (linear_attention_freq = 4), per token."""
    h, s, f3 = 2048, 4096, 3 * 2
    q, kv = 256 * 16, 256 * 2
    standard = f3 * (h * (q + kv + kv + q) + q * s / 2 * 2 + q * h)     # qkv + gate, core attention, out proj
    qk_dim, v_dim = 128 * 16, 128 * 32
    linear = f3 * (h * (2 * qk_dim + 2 * v_dim + 2 * 32) + 4 * (2 * qk_dim + v_dim) + 32 * 128 ** 2 * 4 + h * v_dim)
    pattern = [0 if (i + 1) % 4 == 0 else 1 for i in range(48)]
    mlp = f3 * h * ((512 * 10 * 3) * 48 + (512 * 3) * 48)
    logit = f3 * h * 151936
    megatron = mlp + linear * sum(pattern) + standard * (48 - sum(pattern)) + logit
    assert megatron == 22_739_681_280
    assert run_of(spec(QWEN3_NEXT, s)).metrics["flops_per_token"].value == megatron


def test_qwen3_next_parameters_total_and_active():
    d = 2048
    gdn = d * (2 * 2048 + 2 * 4096 + 64) + 4 * (2 * 2048 + 4096) + 4096 * d      # 33,718,272
    attention = d * (16 * 256 + 2 * 2 * 256) + d * 16 * 256 + 16 * 256 * d       # 27,262,976 (with the gate)
    expert = 3 * d * 512                                                         # 3,145,728
    router = d * 512                                                             # 1,048,576
    embeddings = 2 * 151936 * d                                                  # untied: 622,329,856
    total = 36 * gdn + 12 * attention + 48 * ((512 + 1) * expert + router) + embeddings
    assert total == 79_674_081_280                                               # "80B"
    active = 36 * gdn + 12 * attention + 48 * ((10 + 1) * expert + router) + embeddings
    assert active == 3_874_619_392                                               # "A3B" (3.9 G with embeddings)
    text = spec(QWEN3_NEXT + "  params = 79.67 Gparam  active_params = 3.87 Gparam", 4096)
    result = check_text(text)
    assert result.evaluation.runs["r"].params_from_shape == total
    assert not [d for d in result.diagnostics if d.code == "EFF105"]


def test_qwen3_next_layer_types_list_is_the_same_stack():
    listed = "[" + ", ".join("full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(48)) + "]"
    as_list = QWEN3_NEXT.replace("full_attention_interval = 4", f"layer_types = {listed}")
    assert (run_of(spec(as_list, 4096)).metrics["flops_per_token"].value
            == run_of(spec(QWEN3_NEXT, 4096)).metrics["flops_per_token"].value)


# ---------------------------------------------------------------------------- Mamba-2 2.7B

MAMBA2_27B = ('kind = hybrid  layers = 64  d_model = 2560  vocab = 50288  tied_embeddings = true  pattern = "'
              + "M" * 64 + '"  mamba2 { state_size = 128  head_dim = 64  expand = 2  chunk_size = 256 }')


@pytest.mark.parametrize("seq_len", [2048, 8192])
def test_mamba2_27b_flops_per_token_do_not_grow_with_s(seq_len):
    d, d_in, N = 2560, 5120, 128                    # heads = expand·d / head_dim = 2·2560/64 = 80
    layer = d * (2 * d_in + 2 * 1 * N + 80) + 3.5 * d_in * N + d_in * d
    #     = 2560·10,576 + 2,293,760 + 13,107,200 = 27,074,560 + 2,293,760 + 13,107,200
    assert layer == 42_475_520
    macs = 64 * layer + d * 50288                   # 2,718,433,280 + the tied output head 128,737,280
    assert 6 * macs == 17_083_023_360               # 17.08 GFLOP/token at any s: no attention layer
    assert run_of(spec(MAMBA2_27B, seq_len)).metrics["flops_per_token"].value == 17_083_023_360


def test_mamba2_27b_parameters():
    layer = 2560 * (2 * 5120 + 2 * 128 + 80) + 4 * (5120 + 2 * 128) + 5120 * 2560   # 27,074,560 + 21,504 + 13,107,200
    total = 64 * layer + 50288 * 2560                                               # tied embedding: 128,737,280
    assert total == 2_701_746_176                                                   # "2.7b"
    assert run_of(spec(MAMBA2_27B, 2048)).params_from_shape == total


# ---------------------------------------------------------------------------- knobs on a hybrid stack

def test_recompute_and_attention_knobs_apply_to_the_attention_layers_only():
    base = run_of(spec(NEMOTRON_H_8B, 8192))
    full = run_of(spec(NEMOTRON_H_8B, 8192, "preset = megatron_lm  attention = full"))
    # full attention doubles the score term of the 4 attention layers: + 6 × 4 × 33,554,432
    assert full.metrics["flops_per_token"].value - base.metrics["flops_per_token"].value == 6 * 4 * 33_554_432
    selective = run_of(spec(NEMOTRON_H_8B, 8192, "preset = megatron_lm  recompute = selective"))
    # selective recomputation re-runs the scores once (forward only): + 2 × 4 × 33,554,432
    assert selective.flop_count.recompute == 2 * 4 * 33_554_432
    whole = run_of(spec(NEMOTRON_H_8B, 8192, "preset = megatron_lm  recompute = full"))
    assert whole.flop_count.recompute == 2 * (7_784_628_224 - 536_870_912)   # every layer, not the logits


def test_closed_form_presets_fall_back_to_the_terms():
    # megatron_lm_2023's closed form knows no Mamba layer: the hybrid is counted term by term (full attention).
    rr = run_of(spec(NEMOTRON_H_8B, 8192, "preset = megatron_lm_2023"))
    assert rr.metrics["flops_per_token"].value == 46_707_769_344 + 6 * 4 * 33_554_432


def test_hybrid_round_trips_through_the_ir_json(tmp_path):
    from effspec.front import ir

    result = compiled(spec(NEMOTRON_H_8B, 8192))
    doc = ir.to_json(result.spec)
    model = doc["runs"][0]["blocks"][0]
    assert model["name"] == "model" and [b["name"] for b in model["blocks"]] == ["mamba2"]
    assert "blocks" not in doc["runs"][0]["blocks"][1]     # a block without blocks keeps the old JSON form
    from effspec.api import check_ir

    again = check_ir(json.loads(json.dumps(doc)), file="nemotron.json", folder=str(tmp_path))
    assert [d.code for d in again.diagnostics if d.code < "EFF100"] == []
    assert again.evaluation.runs["r"].metrics["flops_per_token"].value == 46_707_769_344


# ---------------------------------------------------------------------------- bad input

def test_unknown_pattern_letter_is_eff003_at_its_column():
    text = spec(NEMOTRON_H_8B.replace(NH8_PATTERN, "M-M-X" + NH8_PATTERN[5:]), 8192)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "pattern" in ln)
    column = text.splitlines()[line - 1].index('"M-M-X') + 1 + 4 + 1   # the quote, then "M-M-", then X
    found = diagnostics(text)
    assert [(c, ln, col) for c, ln, col, _ in found] == [("EFF003", line, column)]
    assert "`X` at position 5 of `pattern`" in found[0][3]


def test_pattern_length_must_equal_layers():
    found = diagnostics(spec(NEMOTRON_H_8B.replace("layers = 52", "layers = 50"), 8192))
    assert [(c, m) for c, _, _, m in found] == [("EFF003", "`pattern` names 52 layers; `layers` = 50")]
    assert found[0][1:3] == (3, spec(NEMOTRON_H_8B, 1).splitlines()[2].index('"M-M') + 1)


def test_layer_types_length_and_names_are_checked():
    bad = QWEN3_NEXT.replace("full_attention_interval = 4", "layer_types = [linear_attention, full_attn]")
    found = diagnostics(spec(bad, 4096))
    assert [c for c, *_ in found] == ["EFF003"] and "`full_attn` is not a layer type" in found[0][3]
    short = QWEN3_NEXT.replace("full_attention_interval = 4", "layer_types = [linear_attention, full_attention]")
    found = diagnostics(spec(short, 4096))
    assert [m for *_, m in found] == ["`layer_types` names 2 layers; `layers` = 48"]


def test_stack_needs_its_mixer_blocks_and_keys():
    no_block = NEMOTRON_H_8B.split("  mamba2 {")[0]
    found = diagnostics(spec(no_block, 8192))
    assert [m for *_, m in found] == ["the stack has mamba2 layers and `model` has no `mamba2` block"]
    no_mixer = QWEN3_NEXT.split("  gated_deltanet {")[0]
    found = diagnostics(spec(no_mixer, 4096))
    assert [m.split(",")[0] for *_, m in found] == [
        "`linear_attention` in `full_attention_interval` means the model's linear mixer"]
    no_heads = NEMOTRON_H_8B.replace("heads = 32  kv_heads = 8  head_dim = 128  ", "")
    assert [m for *_, m in diagnostics(spec(no_heads, 8192))] == [
        "`model` is missing `heads` for the layers its stack names"]


def test_pattern_forms_belong_to_hybrid_models_and_one_at_a_time():
    dense = ('kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 100  '
             'pattern = "M*"')
    assert [m for *_, m in diagnostics(spec(dense, 128))] == [
        "`pattern` describes a hybrid stack; this model is `dense_transformer`"]
    both = NEMOTRON_H_8B + "  full_attention_interval = 4"
    assert [m for *_, m in diagnostics(spec(both, 8192))] == [
        "`full_attention_interval` and `pattern` both describe the stack"]
    missing = NEMOTRON_H_8B.replace(f'pattern = "{NH8_PATTERN}"', "")
    assert [m.split(":")[0] for *_, m in diagnostics(spec(missing, 8192))] == [
        "`model` (kind = hybrid) is missing its stack"]


def test_unknown_model_block_and_mixer_keys():
    typo = NEMOTRON_H_8B.replace("mamba2 {", "mamba {")
    found = diagnostics(spec(typo, 8192))
    assert ("EFF002", "unknown block `mamba` in `model`") in [(c, m) for c, _, _, m in found]
    stray = NEMOTRON_H_8B.replace("state_size = 128  heads", "state_size = 128  key_heads = 4  heads")
    found = diagnostics(spec(stray, 8192))
    assert [(c, m) for c, _, _, m in found] == [("EFF002", "unknown key `key_heads` in `mamba2`")]
    outside = NEMOTRON_H_8B.replace("vocab = 131072", "vocab = 131072  state_size = 128")
    found = check_text(spec(outside, 8192)).diagnostics
    assert [(d.code, d.help) for d in found if d.code == "EFF002"] == [("EFF002", "`state_size` belongs in `mamba2` { … }")]


def test_explain_pages_for_the_layer_kinds():
    from conftest import cli

    for topic, words in (("mamba2", "3.5·m·d_in·N"), ("gated_deltanet", "4·m·H_v·D_k·D_v"),
                         ("hybrid", "full_attention_interval"), ("attention", "attention_gate")):
        done = cli("explain", topic)
        assert done.returncode == 0 and words in done.stdout, topic
        assert "001b00c2734d8f0fad096fe48a382fedf755d321" in done.stdout, topic
    done = cli("explain", "mamba3")
    assert done.returncode != 0 and "`mamba2`" in done.stderr


def test_the_example_counts_nemotron_h_56b_as_its_header_says():
    from pathlib import Path

    import effspec

    path = Path(__file__).resolve().parents[2] / "examples" / "nemotron_h_56b.eff"
    result = effspec.load(path)
    run = result.evaluation.runs["nemotron_h_56b"]
    assert run.metrics["flops_per_token"].value == 6 * 56_706_990_080 == 340_241_940_480
    # 54 * 438,386,688 + 10 * 150,994,944 + 54 * 536,870,912 + 2 * 131072 * 8192
    assert run.params_from_shape == 54 * 438_386_688 + 10 * 150_994_944 + 54 * 536_870_912 + 2 * 131072 * 8192
    assert run.params_from_shape == 56_321_343_488
    assert not [d for d in result.diagnostics if d.severity in ("error", "warning")]


# ---------------------------------------------------------------------------- every layer kind (effspec.front.mixers)
# Each module of compiler/front/mixers/ is a layer kind (CONTRIBUTING.md, "Add a layer kind"); these hold every
# one found to what the language derives from it, so a new kind is checked with nothing listed here.


def _kinds() -> list[str]:
    from effspec.front.mixers import all_mixers

    return list(all_mixers())


def test_mamba2_and_gated_deltanet_are_layer_kinds_in_that_order():
    assert _kinds()[:2] == ["mamba2", "gated_deltanet"]


@pytest.mark.parametrize("name", _kinds())
def test_a_layer_kind_is_in_the_vocabulary(name: str):
    from effspec.front import keys, layers
    from effspec.front.mixers import all_mixers

    kind = all_mixers()[name]
    assert kind.name == name and kind.symbol.startswith("L_") and kind.model and kind.keys
    assert name in keys.MODEL_BLOCKS and name in keys.HYBRID_BLOCKS and name in layers.MIXERS
    assert keys.BLOCKS[name] == {k.name: k for k in kind.keys}
    assert keys.REQUIRED[name] == kind.required and set(kind.required) <= set(keys.BLOCKS[name])
    assert set(kind.defaults) <= set(keys.BLOCKS[name]) - set(kind.required)
    for written in (name, *kind.aliases):
        assert layers.LAYER_TYPES[written] == name
    if kind.letter is not None:
        assert len(kind.letter) == 1 and layers.PATTERN_LETTERS[kind.letter] == name
        assert f"{kind.letter} {name}, " in keys.BLOCKS["model"]["pattern"].doc
    assert len(set(layers.PATTERN_LETTERS)) == len(layers.PATTERN_LETTERS)
    assert layers.page(name) == kind.page and kind.page.startswith(f"{name} {{")


@pytest.mark.parametrize("name", _kinds())
def test_a_layer_kind_block_outside_a_hybrid_model_is_eff003(name: str):
    from effspec.front.mixers import all_mixers

    kind = all_mixers()[name]
    sizes = "  ".join(f"{k} = 8" for k in kind.required)
    text = spec(f"kind = dense_transformer  layers = 2  d_model = 256  heads = 4  ffn = gelu  d_ff = 1024  vocab = 1000  "
                f"{name} {{ {sizes} }}", 128)
    assert [(c, m) for c, _, _, m in diagnostics(text)] == [
        ("EFF003", f"a `{name}` block is a layer of a hybrid stack; this model is `dense_transformer`")]


@pytest.mark.parametrize("name", _kinds())
def test_a_stack_of_a_kind_without_its_block_is_eff003(name: str):
    text = spec(f"kind = hybrid  layers = 2  d_model = 256  heads = 4  ffn = gelu  d_ff = 1024  vocab = 1000  "
                f"layer_types = [{name}, mlp]", 128)
    assert [(c, m) for c, _, _, m in diagnostics(text)] == [
        ("EFF003", f"the stack has {name} layers and `model` has no `{name}` block")]
