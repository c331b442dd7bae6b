"""The metrics engine, checked against arithmetic done by hand in each test and
against figures published with their sources.  m = 2 FLOP per multiply-add."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli as run_effspec

from effspec import check_text, load

ROOT = Path(__file__).resolve().parents[2]


def spec(model: str, convention: str = "preset = palm", work: str = "seq_len = 1024 token/sequence  global_batch = 64 sequence",
         hardware: str = 'accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = catalog',
         timing: str = "step_time = 2 s  warmup = 0 step  boundary = \"barrier\"", extra: str = "") -> str:
    return f"""eff 1
run r {{
  model {{ {model} }}
  convention {{ {convention} }}
  work {{ {work} }}
  hardware {{ {hardware} }}
  timing {{ {timing} }}
  {extra}
}}
"""


def metrics(text: str, run: str = "r"):
    result = check_text(text)
    front = [d for d in result.diagnostics if d.code < "EFF100"]
    assert not front, front
    return result.evaluation.runs[run]


def value(rr, name):
    return rr.metrics[name].value


# ---------------------------------------------------------------------------- FLOPs per token

GQA_SWIGLU = "kind = dense_transformer  layers = 4  d_model = 512  heads = 8  kv_heads = 2  ffn = swiglu  d_ff = 1376  vocab = 32000"


def test_gqa_swiglu_palm_causal():
    rr = metrics(spec(GQA_SWIGLU, "preset = palm  attention = causal"))
    m, L, d, H, Q, G, f, V, s = 2, 4, 512, 8, 64, 2, 1376, 32000, 1024
    qkv = m * d * (H * Q + 2 * G * Q)          # 2*512*(512+256)  = 786,432
    out = m * H * Q * d                          # 2*512*512        = 524,288
    attn = m * s * H * Q                         # causal: 2*1024*512 = 1,048,576
    ffn = 3 * m * d * f                          # 3*2*512*1376     = 4,227,072
    logits = m * d * V                           # 2*512*32000      = 32,768,000
    forward = L * (qkv + out + attn + ffn) + logits
    assert forward == 4 * 6_586_368 + 32_768_000
    assert value(rr, "flops_per_token") == 3 * forward  # backward = 2 x forward
    tokens = 1024 * 64
    assert value(rr, "valid_tokens_per_step") == tokens
    assert value(rr, "model_flops_per_step") == 3 * forward * tokens
    peak = 8 * 989.4e12
    assert value(rr, "aggregate_peak") == pytest.approx(peak)
    assert value(rr, "mfu") == pytest.approx(3 * forward * tokens / (2 * peak))
    assert value(rr, "valid_tokens_per_second") == tokens / 2


def test_mqa_with_explicit_head_dim():
    model = "kind = dense_transformer  layers = 2  d_model = 1024  heads = 8  head_dim = 256  kv_heads = 1  ffn = gelu  d_ff = 4096  vocab = 50000"
    rr = metrics(spec(model, "preset = palm"))  # attention full
    m, L, d, H, Q, G, f, V, s = 2, 2, 1024, 8, 256, 1, 4096, 50000, 1024
    # head_dim*heads = 2048 != d_model: projections are d x 2048 (Q), d x 256 (K, V each)
    qkv = m * d * (H * Q + 2 * G * Q)            # 2*1024*(2048+512) = 5,242,880
    out = m * H * Q * d                            # 2*2048*1024       = 4,194,304
    attn = 2 * m * s * H * Q                       # full: 4*1024*2048 = 8,388,608
    ffn = 2 * m * d * f                            # 2*2*1024*4096     = 16,777,216
    forward = L * (qkv + out + attn + ffn) + m * d * V
    assert value(rr, "flops_per_token") == 3 * forward


MOE = ("kind = moe_transformer  layers = 4  d_model = 256  heads = 4  ffn = swiglu  d_ff = 1024  vocab = 1000  "
       "experts = 8  top_k = 2  shared_experts = 1  d_ff_expert = 512  moe_layers = 2")


def test_moe_counts_active_experts_and_router():
    rr = metrics(spec(MOE, "preset = kaplan"))  # attention, logits, embeddings excluded
    m, d, Q, H = 2, 256, 64, 4
    qkv = m * d * (H * Q + 2 * H * Q)            # MHA: 2*256*768 = 393,216
    out = m * H * Q * d                            # 131,072
    dense_ffn = 3 * m * d * 1024                   # 1,572,864
    expert = 3 * m * d * 512                       # 786,432
    moe_ffn = (2 + 1) * expert + m * d * 8         # 2,359,296 + router 4,096
    forward = 4 * (qkv + out) + 2 * dense_ffn + 2 * moe_ffn
    assert value(rr, "flops_per_token") == 3 * forward


def test_moe_all_experts_counts_every_expert():
    rr = metrics(spec(MOE, "preset = kaplan  moe = all"))
    m, d = 2, 256
    qkv, out = m * d * 768, m * 256 * d
    forward = 4 * (qkv + out) + 2 * (3 * m * d * 1024) + 2 * (8 + 1) * (3 * m * d * 512)
    assert value(rr, "flops_per_token") == 3 * forward


def test_presets_expand_knob_by_knob():
    model = "kind = dense_transformer  layers = 2  d_model = 128  heads = 2  ffn = gelu  d_ff = 512  vocab = 1000"
    m, L, d, H, Q, f, V, s = 2, 2, 128, 2, 64, 512, 1000, 1024
    per_layer = m * d * 3 * d + m * d * d + 2 * m * d * f      # 98,304 + 32,768 + 262,144 = 393,216
    attn_full = 2 * m * s * H * Q                               # 524,288
    logits = embed = m * d * V                                  # 256,000
    expected = {
        "palm": 3 * (L * (per_layer + attn_full) + logits),
        "megatron": 3 * (L * (per_layer + attn_full) + logits) + L * (per_layer + attn_full),  # + full recompute
        "kaplan": 3 * (L * per_layer),
        "chinchilla": 3 * (L * (per_layer + attn_full) + logits + embed),
    }
    for preset, fpt in expected.items():
        rr = metrics(spec(model, f"preset = {preset}"))
        assert value(rr, "flops_per_token") == fpt, preset
        # The side-by-side table agrees with each preset run on its own.
        assert rr.conventions[preset]["flops_per_token"] == fpt
    rr = metrics(spec(model, "preset = custom  attention = causal  logits = excluded  embeddings = excluded  recompute = excluded  multiply_add = 1 FLOP  backward = 2"))
    assert value(rr, "flops_per_token") == 3 * L * (per_layer + attn_full / 2) / 2


def test_megatron_preset_equals_equation_3():
    """Narayanan et al. 2021, eq. 3: 96·B·s·l·h²·(1 + s/6h + V/16lh) per step."""
    model = "kind = dense_transformer  layers = 96  d_model = 12288  heads = 96  ffn = gelu  d_ff = 49152  vocab = 51200"
    rr = metrics(spec(model, "preset = megatron", work="seq_len = 2048 token/sequence  global_batch = 1536 sequence"))
    B, s, l, h, V = 1536, 2048, 96, 12288, 51200
    eq3 = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert value(rr, "model_flops_per_step") == pytest.approx(eq3, rel=1e-12)


def test_recomputation_in_numerator_and_in_hfu():
    model = "kind = dense_transformer  layers = 2  d_model = 128  heads = 2  ffn = gelu  d_ff = 512  vocab = 1000"
    m, L, d, H, Q, f, V, s = 2, 2, 128, 2, 64, 512, 1000, 1024
    per_layer = m * d * 3 * d + m * d * d + 2 * m * d * f
    attn = 2 * m * s * H * Q
    training = 3 * (L * (per_layer + attn) + m * d * V)
    tokens = 1024 * 64
    # Numerator: selective adds one forward of the attention scores; full one forward of every layer.
    sel = metrics(spec(model, "preset = palm  recompute = selective"))
    assert value(sel, "flops_per_token") == training + L * attn
    full = metrics(spec(model, "preset = palm  recompute = full"))
    assert value(full, "flops_per_token") == training + L * (per_layer + attn)
    # HFU counts what parallelism.recompute says ran, whatever the numerator.
    ran = metrics(spec(model, "preset = palm", extra="parallelism { dp = 8  recompute = full }"))
    assert value(ran, "flops_per_token") == training
    assert value(ran, "executed_flops_per_step") == (training + L * (per_layer + attn)) * tokens
    assert value(ran, "hfu") / value(ran, "mfu") == pytest.approx((training + L * (per_layer + attn)) / training)


def test_padding_excluded_vs_included():
    model = "kind = dense_transformer  layers = 2  d_model = 128  heads = 2  ffn = gelu  d_ff = 512  vocab = 1000"
    work = "seq_len = 1024 token/sequence  global_batch = 64 sequence  padded_tokens = 4096 token  dropped_tokens = 1024 token"
    excluded = metrics(spec(model, "preset = palm", work=work))
    valid = 1024 * 64 - 4096 - 1024                       # 60,416
    fpt = value(excluded, "flops_per_token")
    assert value(excluded, "valid_tokens_per_step") == valid
    assert value(excluded, "model_flops_per_step") == fpt * valid
    assert value(excluded, "executed_flops_per_step") == fpt * (valid + 4096)   # padding executes, dropped does not
    assert value(excluded, "valid_tokens_per_second") == valid / 2
    included = metrics(spec(model, "preset = palm  padding = included", work=work))
    assert value(included, "model_flops_per_step") == fpt * (valid + 4096)
    assert value(included, "mfu") / value(excluded, "mfu") == pytest.approx((valid + 4096) / valid)


def test_heterogeneous_pool_with_unavailable_devices():
    text = f"""eff 1
run r {{
  model {{ {GQA_SWIGLU} }}
  convention {{ preset = palm }}
  work {{ seq_len = 1024 token/sequence  global_batch = 64 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 64 device  unavailable = 8 device  dtype = bf16  peak = catalog }}
  hardware {{ accelerator = "A100-SXM4-80GB"  count = 32 device  dtype = bf16  peak = 312 TFLOP/s from datasheet "A100 datasheet" }}
  timing {{ step_time = 1.5 s  warmup = 0 step  boundary = "barrier" }}
}}
"""
    rr = metrics(text)
    aggregate = (64 - 8) * 989.4e12 + 32 * 312e12      # 5.54064e16 + 9.984e15 = 6.53904e16 FLOP/s
    assert value(rr, "aggregate_peak") == pytest.approx(aggregate)
    assert value(rr, "mfu") == pytest.approx(value(rr, "model_flops_per_step") / (1.5 * aggregate))
    assert value(rr, "achieved_flops_per_device") == pytest.approx(value(rr, "model_flops_per_step") / (1.5 * 88))


def test_custom_model_declares_flops_per_token():
    rr = metrics(spec("kind = custom  flops_per_token = 12 GFLOP/token", "preset = palm"))
    assert value(rr, "flops_per_token") == 12e9
    assert value(rr, "model_flops_per_step") == 12e9 * 65536


def test_params_from_shape():
    rr = metrics(spec(GQA_SWIGLU + "  tied_embeddings = true"))
    d, H, Q, G, f, V, L = 512, 8, 64, 2, 1376, 32000, 4
    per_layer = d * (H * Q + 2 * G * Q) + H * Q * d + 3 * d * f
    assert rr.params_from_shape == L * per_layer + V * d


def test_step_time_statistic_after_warmup():
    rr = metrics(spec(GQA_SWIGLU, timing='step_time = [9.0, 8.0, 2.0, 2.2, 1.9, 2.1, 5.0] s  warmup = 2 step  statistic = median  boundary = "b"'))
    assert value(rr, "step_time") == 2.1          # median of 2.0, 2.2, 1.9, 2.1, 5.0
    rr = metrics(spec(GQA_SWIGLU, timing='step_time = [9.0, 8.0, 2.0, 2.2, 1.9, 2.1, 5.0] s  warmup = 2 step  statistic = mean  boundary = "b"'))
    assert value(rr, "step_time") == pytest.approx((2.0 + 2.2 + 1.9 + 2.1 + 5.0) / 5)


def test_step_time_from_throughput():
    rr = metrics(spec(GQA_SWIGLU, timing="throughput = 32768 token/s"))
    assert value(rr, "step_time") == 65536 / 32768
    assert value(rr, "valid_tokens_per_second") == 32768


def test_achieved_flops_per_device_gives_step_time():
    """A paper's "X TFLOP/s per GPU" under its convention pins the step time."""
    rr = metrics(spec(GQA_SWIGLU, timing="achieved_flops_per_device = 400 TFLOP/s from paper \"Table 1\""))
    step = value(rr, "model_flops_per_step") / (400e12 * 8)
    assert value(rr, "step_time") == pytest.approx(step)
    assert value(rr, "mfu") == pytest.approx(400 / 989.4)
    assert value(rr, "achieved_flops_per_device") == pytest.approx(400e12)


def test_measured_peak_gives_second_mfu():
    rr = metrics(spec(GQA_SWIGLU, hardware='accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = catalog  measured_peak = 700 TFLOP/s from measured "GEMM"'))
    assert value(rr, "mfu_measured_peak") == pytest.approx(value(rr, "mfu") * 989.4 / 700)


def test_calendar_efficiency_and_goodput():
    rr = metrics(spec(GQA_SWIGLU, extra="calendar { wall_clock = 10 h  steps = 15000 step  repeated_tokens = 65536000 token }"))
    assert value(rr, "calendar_efficiency") == pytest.approx(15000 * 2 / 36000)          # 0.8333
    assert value(rr, "goodput") == pytest.approx((15000 * 65536 - 65536000) / 36000)     # 25,486.2 token/s


# ---------------------------------------------------------------------------- claims


def test_claim_tolerance_is_half_a_unit_plus_one_percent():
    from effspec.diagnostics import Span
    from effspec.engine.claims import tolerance
    from effspec.front.ir import Number

    span = Span(1, 1, 1, 1)
    assert tolerance(Number(52, "%", "52", span), 0.52) == pytest.approx(0.005 + 0.0052)
    assert tolerance(Number(2.0e6, "token/s", "2.0e6", span), 2.0e6) == pytest.approx(0.05e6 + 0.02e6)
    assert tolerance(Number(0.605, "s", "0.605", span), 0.605) == pytest.approx(0.0005 + 0.00605)


def test_claims_consistent_and_mismatch():
    mfu = value(metrics(spec(GQA_SWIGLU)), "mfu")
    shown = round(mfu * 100, 1)
    rr = metrics(spec(GQA_SWIGLU, extra=f"claim mfu = {shown} %  claim throughput = 40000 token/s"))
    assert rr.claims["mfu"].status == "consistent"
    assert rr.claims["valid_tokens_per_second"].status == "mismatch"       # reconstructed 32,768
    assert rr.claims["valid_tokens_per_second"].reconstructed == 32768


def test_example_a_matches_the_contract_figures():
    rr = load(ROOT / "examples" / "example_a_measured.eff").evaluation.runs["llm3b_64"]
    # 16.12 GFLOP/token × 2,035,712 token / (1.1001 s × 64 × 989.4 TFLOP/s)
    assert value(rr, "valid_tokens_per_step") == 4096 * 512 - 61440
    assert value(rr, "mfu") == pytest.approx(0.4712, abs=5e-5)
    assert rr.claims["mfu"].status == "mismatch"
    assert rr.step_stats.warmup_excluded == 20 and rr.step_stats.count == 500


def test_example_b_implies_mfu_per_preset_and_mfu_claim_mismatches():
    proc = run_effspec("check", str(ROOT / "examples" / "example_b_vendor_claim.eff"),
                           "--format", "json")
    (doc,) = json.loads(proc.stdout)
    run = doc["runs"]["vendor_claim"]
    tokens = 2048 * 1024
    step = tokens / 780000                                    # implied by the claimed throughput: 2.6887 s
    assert run["implied"]["step_time"]["value"] == pytest.approx(step)
    peak = 256 * 624e12                                       # as declared (the sparse figure)
    for preset, row in run["conventions"].items():
        assert row["mfu"] == pytest.approx(row["flops_per_token"] * tokens / (step * peak)), preset
        assert row["basis"].startswith("claim `throughput`")
    assert set(run["conventions"]) >= {"palm", "megatron", "kaplan", "chinchilla"}
    assert run["claims"]["mfu"]["status"] == "mismatch"
    assert run["claims"]["mfu"]["reconstructed"] == pytest.approx(run["conventions"]["palm"]["mfu"])  # palm assumed


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.eff")), ids=lambda p: p.name)
def test_every_example_metric_has_formula_and_inputs(path):
    proc = run_effspec("check", str(path), "--format", "json")
    (doc,) = json.loads(proc.stdout)
    assert doc["runs"]
    for run in doc["runs"].values():
        assert run["metrics"]
        for name, metric in run["metrics"].items():
            assert metric["formula"] and metric["inputs"], name
            assert metric["unit"] in ("FLOP", "FLOP/token", "FLOP/s", "token", "token/s", "s", ""), name


# ---------------------------------------------------------------------------- published figures

GPT3_175B = "kind = dense_transformer  layers = 96  d_model = 12288  heads = 96  ffn = gelu  d_ff = 49152  vocab = 51200"


def test_megatron_lm_readme_gpt3_175b():
    """Megatron-LM README (NVIDIA/Megatron-LM, 2021-2022, "GPT-3 175B on 1024 A100"): global batch 1536,
    about 32 s per iteration, 138 TFLOP/s per GPU, computed with eq. 3 of Narayanan et al. 2021."""
    text = spec(GPT3_175B, "preset = megatron",
                work="seq_len = 2048 token/sequence  global_batch = 1536 sequence",
                hardware='accelerator = "A100-SXM4-80GB"  count = 1024 device  dtype = bf16  peak = catalog',
                timing='step_time = 32 s from paper "Megatron-LM README"',
                extra="claim achieved_flops_per_device = 138 TFLOP/s from paper \"Megatron-LM README\"")
    rr = metrics(text)
    # 4.511e18 FLOP / (32 s × 1024) = 137.7 TFLOP/s; "44 % of theoretical peak" = 137.7/312
    assert value(rr, "achieved_flops_per_device") == pytest.approx(137.7e12, rel=1e-3)
    assert rr.claims["achieved_flops_per_device"].status == "consistent"
    assert value(rr, "mfu") == pytest.approx(0.4413, abs=1e-3)


def test_bloom_176b():
    """BLOOM-176B (BigScience, 2022): 384 A100 80GB, TP4 PP12 DP8, global batch 2048 × 2048 tokens,
    about 105 s per iteration, "149-150 TFLOP/s per GPU", counted with recomputation (8N-like)."""
    model = "kind = dense_transformer  layers = 70  d_model = 14336  heads = 112  ffn = gelu  d_ff = 57344  vocab = 250880"
    text = spec(model, "preset = megatron",
                work="seq_len = 2048 token/sequence  global_batch = 2048 sequence",
                hardware='accelerator = "A100-SXM4-80GB"  count = 384 device  dtype = bf16  peak = catalog',
                timing='step_time = 105 s from paper "BLOOM training chronicles"',
                extra='claim achieved_flops_per_device = 149 TFLOP/s from paper "BLOOM"')
    rr = metrics(text)
    # Per token: 96·l·h²·(1 + s/6h + V/16lh) = 1.4356e12; × 4,194,304 tokens / (105 s × 384) = 149.3 TFLOP/s
    per_token = 96 * 70 * 14336**2 * (1 + 2048 / (6 * 14336) + 250880 / (16 * 70 * 14336))
    assert value(rr, "flops_per_token") == pytest.approx(per_token, rel=1e-12)
    assert value(rr, "achieved_flops_per_device") == pytest.approx(149.3e12, rel=1e-3)
    assert rr.claims["achieved_flops_per_device"].status == "consistent"
    # Plain 8N with N = 176.2e9 gives 146.6 TFLOP/s: within the claim's tolerance only under eq. 3.
    assert pytest.approx(146.6e12, rel=1e-3) == 8 * 176.2e9 * 2048 * 2048 / (105 * 384)


LLAMA3_405B = "kind = dense_transformer  layers = 126  d_model = 16384  heads = 128  kv_heads = 8  ffn = swiglu  d_ff = 53248  vocab = 128000"


@pytest.mark.parametrize("gpus,tflops,mfu", [(8192, 430, 43), (16384, 400, 41), (16384, 380, 38)])
def test_llama3_table4_claims_are_consistent_with_each_other(gpus, tflops, mfu):
    """The Llama 3 Herd of Models (2024), Table 4: TFLOP/s per GPU beside BF16 MFU on H100 80GB.
    Neither the peak nor the FLOP formula is stated, so the claims are checked against each other:
    430/989.4 = 43.46 %, 400/989.4 = 40.43 %, 380/989.4 = 38.41 %."""
    text = spec(LLAMA3_405B, "preset = palm", work="seq_len = 8192 token/sequence  global_batch = 2048 sequence",
                hardware=f'accelerator = "H100-SXM5-80GB"  count = {gpus} device  dtype = bf16  peak = catalog',
                timing='boundary = "n/a"',
                extra=f'claim achieved_flops_per_device = {tflops} TFLOP/s from paper "Table 4"  claim mfu = {mfu} % from paper "Table 4"')
    rr = metrics(text)
    claim = rr.claims["mfu"]
    assert claim.status == "consistent"
    assert claim.reconstructed == pytest.approx(tflops / 989.4)
    assert claim.basis.startswith("claim `achieved_flops_per_device`")


def test_every_device_unavailable_leaves_mfu_unrecoverable_not_a_crash():
    text = spec(GQA_SWIGLU, hardware='accelerator = "H100-SXM5-80GB"  count = 8 device  unavailable = 8 device  dtype = bf16  peak = catalog')
    rr = check_text(text).evaluation.runs["r"]
    assert "aggregate_peak" not in rr.metrics and "mfu" not in rr.metrics
    assert rr.missing["aggregate_peak"] == ("hardware: every device is unavailable",)


def test_padding_beyond_the_batch_is_eff011_at_the_key():
    text = spec(GQA_SWIGLU, work="seq_len = 128 token/sequence  global_batch = 8 sequence  padded_tokens = 2000 token")
    (d,) = [d for d in check_text(text).diagnostics if d.code == "EFF011"]
    assert (d.span.line, d.span.column) == (5, 67) and "-976" in d.message   # 128 × 8 − 2000


def test_convention_without_preset_must_write_every_knob():
    text = spec(GQA_SWIGLU, "attention = causal  logits = included")
    (d,) = [d for d in check_text(text).diagnostics if d.code == "EFF003"]
    assert (d.span.line, d.span.column) == (4, 3)
    assert "`embeddings`" in d.message and "`recompute`" in d.message and "`attention`" not in d.message
    full = spec(GQA_SWIGLU, "attention = causal  logits = included  embeddings = excluded  recompute = excluded")
    assert not [d for d in check_text(full).diagnostics if d.code == "EFF003"]
