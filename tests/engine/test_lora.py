"""LoRA fine-tuning (issue 28): `model { lora { rank  targets } }` counts the adapters' FLOPs and the frozen
base's backward (activation gradients only), `frozen_wgrad` says whether the frozen weight gradients count,
`adapters` whether the adapters' own matmuls do.

Adapters follow Hu et al. 2021 (LoRA, sec. 4.1): W (in × out) gains A (in × r) and B (r × out).
"""

from __future__ import annotations

import pytest

from effspec import check_text

SMALL = """eff 1

run r {{
  model {{
    kind = dense_transformer  layers = 2  d_model = 64  heads = 4  head_dim = 16  kv_heads = 2  ffn = swiglu  d_ff = 128  vocab = 100
    {lora}
  }}
  convention {{ preset = palm {knobs} }}
  work {{ seq_len = 32 token/sequence  global_batch = 8 sequence }}
}}
"""
LORA = "lora { rank = 4  targets = [q, v, down] }"


def fpt(lora: str = LORA, knobs: str = "") -> float:
    result = check_text(SMALL.format(lora=lora, knobs=knobs))
    assert not [d for d in result.diagnostics if d.code < "EFF100"], result.diagnostics
    return result.evaluation.runs["r"].metrics["flops_per_token"].value


# Forward per token, per layer (m = 2): q, k, v 2·64·(64 + 2·32) = 16,384; output 2·64·64 = 8,192;
# scores (palm: full) 2·2·32·4·16 = 8,192; SwiGLU 3·2·64·128 = 49,152: 81,920 per layer, 163,840 for two;
# logits 2·64·100 = 12,800. Forward 176,640, of which the scores (no weights) 16,384 and frozen matmuls 160,256.
# Adapters, r = 4: q 4·(64 + 64) = 512, v 4·(64 + 32) = 384, down 4·(128 + 64) = 768 multiply-adds per layer:
# 1,664 × 2 layers × m = 6,656 FLOPs forward.
FULL = 176_640 * 3  # full fine-tuning: forward × (1 + backward) = 529,920


def test_lora_hand_count():
    # frozen × (1 + 2/2) + scores × 3 + adapters × 3 = 320,512 + 49,152 + 19,968 = 389,632
    assert fpt(lora="") == FULL
    assert fpt() == 160_256 * 2 + 16_384 * 3 + 6_656 * 3 == 389_632


def test_frozen_weight_gradients_counted():
    # the frozen base as in full fine-tuning, plus the adapters: 529,920 + 19,968 = 549,888
    assert fpt(knobs="frozen_wgrad = counted") == FULL + 6_656 * 3 == 549_888


def test_adapters_excluded():
    # Megatron-Bridge's count: the frozen base's forward and activation gradients, the scores whole: 369,664
    assert fpt(knobs="adapters = excluded") == 160_256 * 2 + 16_384 * 3 == 369_664


def test_lora_on_every_target_of_an_moe_layer_counts_the_active_experts():
    moe = SMALL.replace("kind = dense_transformer", "kind = moe_transformer  experts = 8  top_k = 2  d_ff_expert = 32")
    result = check_text(moe.format(lora="lora { rank = 4  targets = [gate, up, down] }", knobs=""))
    rr = result.evaluation.runs["r"]
    # per MoE layer: 2 active experts × 3 targets × 4·(64 + 32) = 2,304 multiply-adds; × 2 layers × m = 9,216
    adapters = 9_216
    # base: 163,840 − 2·49,152 (dense FFN) + 2 layers·2 experts·3·2·64·32 (49,152) + router 2·2·64·8 (2,048)
    base_forward = 163_840 - 2 * 49_152 + 2 * 2 * 3 * 2 * 64 * 32 + 2 * 2 * 64 * 8 + 12_800
    scores = 16_384
    assert rr.metrics["flops_per_token"].value == (base_forward - scores) * 2 + scores * 3 + adapters * 3


def test_lora_targets_the_shape_has():
    gelu = SMALL.replace("ffn = swiglu", "ffn = gelu")
    result = check_text(gelu.format(lora="lora { rank = 4  targets = [up, gate] }", knobs=""))
    found = [d for d in result.diagnostics if d.code == "EFF003"]
    assert len(found) == 1 and "`gate` is not a matmul of a `gelu` FFN" in found[0].message
    for bad, message in (("targets = [q, qq]", "`targets` takes"), ("targets = [q, q]", "listed twice"),
                         ("targets = q", "is a list")):
        result = check_text(SMALL.format(lora=f"lora {{ rank = 4  {bad} }}", knobs=""))
        found = [d for d in result.diagnostics if d.code == "EFF003"]
        assert found and message in found[0].message and found[0].span.line == 6, (bad, found)
    result = check_text(SMALL.format(lora="lora { targets = [q] }", knobs=""))
    assert any(d.code == "EFF003" and "`rank`" in d.message for d in result.diagnostics)


# Megatron-Bridge docs/performance-summary-archive.md, "26.06 NeMo Container", "LoRA Performance", Model
# LLAMA3_70B, row "DGX-GB200 | 8 | FP8 | 32 | 1 | 4096 | 1 | 2 | 1 | 20 | n/a | 6206 | 1731"
# (NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a). Its count,
# src/megatron/bridge/training/utils/flop_utils.py (same commit), LoRA branch: the frozen model's llama3 count
# × 2/3 (forward and activation gradients, no weight gradients, no adapters) plus 12·L·d·Σ s_i² over the
# packed sequences' sub-sequences, which depends on the SQuAD data. The recipe's LoRA (peft/lora.py):
# dim 32 on linear_qkv, linear_proj, linear_fc1, linear_fc2.
MB_LORA = """eff 1

run gb200 {
  model {
    kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8  ffn = swiglu  d_ff = 28672  vocab = 128256
    lora { rank = 32  targets = [q, k, v, o, gate, up, down] }
  }
  convention { preset = nemo  attention = excluded  adapters = excluded }
  work { seq_len = 4096 token/sequence  global_batch = 32 sequence }
  parallelism { tp = 1  pp = 2  dp = 4  micro_batch = 1 sequence }
  hardware { accelerator = "GB200"  count = 8 device  dtype = fp8  peak = catalog }
  claim tokens_per_second_per_device = 6206 token/s from paper "Megatron-Bridge performance summary 26.06, LoRA"
  claim tflops_per_device = 1731 TFLOP/s from paper "Megatron-Bridge performance summary 26.06, LoRA"
}
"""


def test_megatron_bridge_lora_row():
    L, d, G, H, f, V = 80, 8192, 8, 64, 28672, 128256
    # frozen: L·d²·(12 + 12·G/H + 18·f/d + 6·V/(L·d)) × 2/3 = 5,368,709,120 × 77.67421875 × 2/3
    frozen = L * d * d * (12 + 12 * G / H + 18 * f / d + 6 * V / (L * d)) * 2 / 3
    assert round(frozen) == 278_006_857_728
    # × 6206 tokens/s/GPU = 1725.3 TFLOP/s; the printed 1731 also holds the packed sub-sequences' attention,
    # 1731e12 / 6206 − 278.007e9 = 0.917e9 FLOP/token (0.33 %), inside the claim's 1 % (+ half its last digit).
    assert round(frozen * 6206 / 1e12, 1) == 1725.3
    assert 0 < 1731e12 / 6206 - frozen < 0.01 * 1731e12 / 6206
    result = check_text(MB_LORA)
    rr = result.evaluation.runs["gb200"]
    assert rr.metrics["flops_per_token"].value == pytest.approx(frozen, rel=1e-15)
    cr = rr.claims["achieved_flops_per_device"]
    assert cr.reconstructed == pytest.approx(frozen * 6206, rel=1e-12) and cr.status == "consistent"
    # The adapters (r = 32) Megatron-Bridge leaves out: per layer 32·(q, o: 2·(8192 + 8192) + k, v: 2·(8192 + 1024)
    # + gate, up, down: 3·(8192 + 28672)) = 32·(32,768 + 18,432 + 110,592) = 5,177,344 multiply-adds;
    # × 80 layers × m 2 × (1 + backward) 3 = 2,485,125,120 FLOP/token (0.89 %).
    counted = check_text(MB_LORA.replace("  adapters = excluded", "")).evaluation.runs["gb200"]
    assert counted.metrics["flops_per_token"].value == frozen + 5_177_344 * 80 * 2 * 3 == 280_491_982_848


def test_lora_on_a_hybrid_stack_is_refused_not_silently_ignored():
    """The adapters are counted on dense and MoE stacks; on a hybrid one the block had no effect at all. Now it is
    EFF003 at the block, and the help names the term that can carry a hand count."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "examples" / "nemotron_h_56b.eff").read_text(encoding="utf-8")
    at = text.index("  model {") + len("  model {")
    line = text[:at].count("\n") + 2  # the block goes on the line after `model {`
    result = check_text(text[:at] + "\n    lora { rank = 16  targets = [up, down] }" + text[at:])
    (d,) = [d for d in result.diagnostics if d.code == "EFF003"]
    assert d.span.line == line and d.span.column == 5 and "not counted on a hybrid stack" in d.message
    assert "extra_flops_per_token" in d.help
