"""Framework quirk presets (issue 28): a framework's count at a version a later commit fixed, so that a row
printed before the fix is reproduced without declaring a wrong input.

- `torchtitan_pre280`: until pytorch/torchtitan@0c6ca903ff ("exclude embedding in MFU computation", PR #280,
  2024-04-26), train.py passed get_num_params(model) -- every parameter, the token embedding included -- to
  get_num_flop_per_token: 6·N + 12·L·H·Q·s (torchtitan/utils.py at 528cab939, 2024-04-16).
- `automodel_pre3091`: until NVIDIA-NeMo/Automodel@6e5d52b5b ("use GPT-OSS head dimension in FLOPs
  accounting", PR #3091, 2026-07-15), gpt_oss_flops took kv_channels = hidden_size // num_attention_heads
  (nemo_automodel/components/utils/flops_utils.py): 2880 // 64 = 45 for GPT-OSS, whose head_dim is 64.
"""

from __future__ import annotations

import pytest

from effspec import check_text
from effspec.front import presets

# torchtitan docs/performance.md as added on 2024-04-16 (pytorch/torchtitan@528cab939adeb4d42f6d0d308ead2495cd082594):
# "64 A100 (80GB)", FSDP2, local batch 2, WPS per GPU and MFU against 312 TFLOP/s; train_configs/llama_13b.toml
# seq_len = 4096, the llama 2 tokenizer (32000). Rows: 13B, no AC: 2162 WPS, 61.1 %; 70B, full AC: 353 WPS, 50.5 %.
TT = """eff 1

run r {{
  model {{ {model} }}
  convention {{ preset = {preset} }}
  work {{ seq_len = 4096 token/sequence  global_batch = 128 sequence }}
  hardware {{ accelerator = "A100-SXM4-80GB"  count = 64 device  dtype = bf16  peak = catalog }}
  claim tokens_per_second_per_device = {wps} token/s from paper "torchtitan docs/performance.md (2024-04-16)"
  claim mfu = {mfu} % from paper "torchtitan docs/performance.md (2024-04-16)"
}}
"""
TT13 = "kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = swiglu  d_ff = 13824  vocab = 32000"
TT70 = ("kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8  ffn = swiglu  d_ff = 28672  "
        "vocab = 32000")


def tt(model: str, preset: str, wps: int, mfu: str):
    result = check_text(TT.format(model=model, preset=preset, wps=wps, mfu=mfu))
    return result, result.evaluation.runs["r"]


def test_torchtitan_pre280_counts_the_embedding_and_reproduces_the_april_2024_rows():
    # 13B: N = 40·(4·5120² + 3·5120·13824) + 2·32000·5120 = 40·317,194,240 + 327,680,000 = 13,015,449,600
    #      6·N + 12·40·40·128·4096 = 78,092,697,600 + 10,066,329,600 = 88,159,027,200 FLOP/token
    n13 = 40 * (4 * 5120**2 + 3 * 5120 * 13824) + 2 * 32000 * 5120
    assert n13 == 13_015_449_600 and 6 * n13 + 12 * 40 * 40 * 128 * 4096 == 88_159_027_200
    _, rr = tt(TT13, "torchtitan_pre280", 2162, "61.1")
    assert rr.metrics["flops_per_token"].value == 88_159_027_200
    # MFU = 88,159,027,200 × 2162 / 312e12 = 61.09 % (printed 61.1 %)
    assert rr.claims["mfu"].reconstructed == pytest.approx(88_159_027_200 * 2162 / 312e12, rel=1e-12)
    assert round(rr.claims["mfu"].reconstructed * 100, 2) == 61.09 and rr.claims["mfu"].status == "consistent"
    # 70B: attention weights 8192·(8192 + 2·1024) + 8192² = 150,994,944, SwiGLU 3·8192·28672 = 704,643,072 per layer;
    #      N = 80·855,638,016 + 2·32000·8192 = 68,975,329,280; 6·N + 12·80·64·128·4096 = 446,064,230,400
    n70 = 80 * (8192 * (8192 + 2 * 1024) + 8192**2 + 3 * 8192 * 28672) + 2 * 32000 * 8192
    assert 6 * n70 + 12 * 80 * 64 * 128 * 4096 == 446_064_230_400
    _, rr = tt(TT70, "torchtitan_pre280", 353, "50.5")
    assert rr.metrics["flops_per_token"].value == 446_064_230_400
    assert round(rr.claims["mfu"].reconstructed * 100, 2) == 50.47 and rr.claims["mfu"].status == "consistent"


def test_todays_torchtitan_preset_does_not_reproduce_the_april_2024_13b_row():
    # Without the embedding: 88,159,027,200 − 6·32000·5120 = 87,175,987,200 → 60.41 %, outside 61.1 % ± 0.661 %
    result, rr = tt(TT13, "torchtitan", 2162, "61.1")
    assert rr.metrics["flops_per_token"].value == 88_159_027_200 - 6 * 32000 * 5120
    assert round(rr.claims["mfu"].reconstructed * 100, 2) == 60.41 and rr.claims["mfu"].status == "mismatch"
    assert "EFF601" in [d.code for d in result.diagnostics]


# NeMo AutoModel docs/performance-summary.mdx (NVIDIA-NeMo/Automodel@cb9765441, 2026-06-12, before the fix),
# "Pre-Training Performance", DGX-H100 BF16: "GPT-OSS 20B | 8 | 256 | 2 | 2 | 16 | 4096 | 1 | 1 | 1 | - | - | 8 |
# TE + DeepEP + FlexAttn | 10.04 | 279 | 13,058". GPT-OSS 20B (its HF config): 24 layers, hidden 2880, 64 heads of 64,
# 8 KV heads, 32 experts of 2880, top 4, vocab 201088, a 128-token window on every other layer.
GPT_OSS = """eff 1

run r {{
  model {{ kind = moe_transformer  layers = 24  d_model = 2880  heads = 64  head_dim = 64  kv_heads = 8  ffn = swiglu
          experts = 32  top_k = 4  d_ff_expert = 2880  vocab = 201088  sliding_window = 128 token  sliding_layers = 12 }}
  convention {{ preset = {preset} }}
  work {{ seq_len = 4096 token/sequence  global_batch = 256 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = catalog }}
  claim tokens_per_second_per_device = 13058 token/s from paper "NeMo AutoModel performance summary (2026-06)"
  claim tflops_per_device = 279 TFLOP/s from paper "NeMo AutoModel performance summary (2026-06)"
}}
"""


def upstream_gpt_oss(Q: int) -> float:
    """gpt_oss_flops per token, transcribed: per layer 6·(s·d·Q·(H + 2G) + s·d·Q·H + H·nz·Q·2), nz = s(s+1)/2 on
    even layers and W(W+1)/2 + (s − W)·W on odd ones; 6·s·k·(2·d·f + f·d) per layer; 6·s·d·V; over s."""
    s, d, H, G, L, f, k, V, W = 4096, 2880, 64, 8, 24, 2880, 4, 201088, 128
    total = 0.0
    for i in range(L):
        nz = s * (s + 1) / 2 if i % 2 == 0 else W * (W + 1) / 2 + (s - W) * W
        total += 6 * (s * d * Q * (H + 2 * G) + s * d * Q * H + H * nz * Q * 2)
        total += 6 * (s * k * d * f * 2 + s * k * f * d)
    return (total + 6 * s * d * V) / s


def test_automodel_pre3091_reproduces_the_printed_gpt_oss_tflops():
    assert 2880 // 64 == 45
    before, after = upstream_gpt_oss(45), upstream_gpt_oss(64)
    assert before == 21_396_724_560 and after == 22_912_164_864
    assert round(before * 13058 / 1e12, 1) == 279.4  # printed: 279
    assert round(1 - before / after, 3) == 0.066  # "7 % low"
    # effspec counts causal keys as s/2 (there (s+1)/2) and a window's as W·(1 − W/2s) (there + W/2s): per token
    # 6·H·Q on each of the 12 full layers and 6·H·Q·W/s on each of the 12 windowed ones, Q = 45:
    # 12·17,280 + 12·17,280·128/4096 = 207,360 + 6,480 = 213,840 FLOP/token fewer.
    _, rr = check_and_run(GPT_OSS.format(preset="automodel_pre3091"))
    assert rr.metrics["flops_per_token"].value == pytest.approx(before - 213_840, rel=1e-15)
    assert rr.claims["achieved_flops_per_device"].status == "consistent"
    assert rr.knobs.head_dim == "d_model_over_heads"


def test_the_fixed_automodel_preset_counts_head_dim_64_and_misses_the_old_row():
    # Q = 64: 22,912,164,864 − (12·6·64·64 + 12·6·64·64·128/4096) = 22,912,164,864 − 304,128 FLOP/token,
    # 299.2 TFLOP/s against the printed 279: 7 % off, a mismatch.
    _, rr = check_and_run(GPT_OSS.format(preset="automodel"))
    assert rr.metrics["flops_per_token"].value == pytest.approx(upstream_gpt_oss(64) - 304_128, rel=1e-15)
    assert rr.claims["achieved_flops_per_device"].status == "mismatch"


def test_the_head_dim_knob_can_be_written_and_is_the_quirk():
    text = GPT_OSS.format(preset="automodel").replace("preset = automodel", "preset = automodel  head_dim = d_model_over_heads")
    _, rr = check_and_run(text)
    assert rr.knobs.origin["head_dim"] == "written"
    assert rr.metrics["flops_per_token"].value == pytest.approx(upstream_gpt_oss(45) - 213_840, rel=1e-15)


def test_quirk_presets_carry_their_fix_commit():
    for name, until, commit in (("torchtitan_pre280", "2024-04-26", "pytorch/torchtitan@0c6ca903ff"),
                                ("automodel_pre3091", "2026-07-15", "NVIDIA-NeMo/Automodel@6e5d52b5b")):
        p = presets.by_name(name)
        assert p is not None and p.until == until and p.until_commit.startswith(commit) and p.quirk
        assert f"quirk until {until}" in p.note
        page = presets.page(name)
        assert page is not None and f"Quirk (until {until}, fixed by {commit}" in page
    assert [p.name for p in presets.family("automodel")] == ["automodel", "automodel_pre3091"]


def check_and_run(text: str):
    result = check_text(text)
    assert not [d for d in result.diagnostics if d.code < "EFF100"], result.diagnostics
    return result, result.evaluation.runs["r"]
