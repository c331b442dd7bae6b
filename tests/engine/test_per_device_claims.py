"""Per-device and repeated claims (issue 28).

`tokens_per_second_per_device` and `flops_per_device` are claimable, each with the written precision of
the per-device figure; the same metric may be claimed again from another source, and each claim is checked.

The figures are Megatron-Bridge's, docs/performance-summary-archive.md, "26.04 NeMo Container",
LLAMA3_70B, DGX-GB200 NVFP4 (NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a):
64 GPUs, GBS 256, seq 8192, 4898 tokens/s/GPU, 2201 model TFLOP/s/GPU.
"""

from __future__ import annotations

import json

import pytest

from effspec import check_text

HEAD = """eff 1

run r {
  model { kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8  ffn = swiglu  d_ff = 28672  vocab = 128256 }
  convention { preset = nemo }
  work { seq_len = 8192 token/sequence  global_batch = 256 sequence }
  hardware { accelerator = "GB200"  count = 64 device  dtype = nvfp4  peak = catalog }
"""
# NeMo llama3, causal: 80·8192²·(12 + 12/8 + 18·28672/8192 + 6 + 6·128256/(80·8192)) = 449,222,541,312 FLOP/token
PER_TOKEN = 449_222_541_312
TOKENS = 8192 * 256  # 2,097,152 per step


def run(body: str, timing: str = "  timing { throughput = 4898 token/s/device * 64 device }\n"):
    result = check_text(HEAD + timing + body + "}\n")
    return result, result.evaluation.runs["r"]


def test_tokens_per_second_per_device_is_checked_with_its_own_precision():
    # 4898 token/s per device, ±0.5 (its last digit) + 1 % = ±49.48 token/s
    _, rr = run('  claim tokens_per_second_per_device = 4898 token/s from paper "Megatron-Bridge 26.04"\n')
    cr = rr.claims["tokens_per_second_per_device"]
    assert cr.reconstructed == pytest.approx(4898, rel=1e-12) and cr.status == "consistent"
    assert cr.tolerance == pytest.approx(0.5 + 48.98)
    # 4950 is 52 token/s off: outside ±49.5 (written 4950: ±0.5 + 49.5 = 50) → a mismatch
    _, rr = run('  claim tokens_per_second_per_device = 4950 token/s from paper "x"\n')
    assert rr.claims["tokens_per_second_per_device"].status == "mismatch"
    # written per device, the same figure: `token/s/device`
    _, rr = run('  claim throughput_per_device = 4898 token/s/device from paper "x"\n')
    assert rr.claims["tokens_per_second_per_device"].claimed == 4898
    assert rr.claims["tokens_per_second_per_device"].status == "consistent"


def test_flops_per_device_is_one_devices_share_of_a_steps_model_flops():
    # 449,222,541,312 × 2,097,152 / 64 = 449,222,541,312 × 32,768 = 14,720,124,233,711,616 FLOP = 14.72 PFLOP
    expect = PER_TOKEN * TOKENS / 64
    assert expect == 14_720_124_233_711_616
    _, rr = run('  claim flops_per_device = 14.72 PFLOP from log "maxtext.log:12"\n', timing="")
    cr = rr.claims["flops_per_device"]
    assert cr.reconstructed == expect and cr.status == "consistent"
    assert cr.tolerance == pytest.approx(0.005e15 + 0.01 * 14.72e15)
    _, rr = run('  claim flops_per_device = 13.5 PFLOP/device from log "x"\n', timing="")
    assert rr.claims["flops_per_device"].status == "mismatch"  # 13.5 is 8.3 % low


def test_a_per_device_token_rate_implies_the_step_when_timing_is_absent():
    # step = 2,097,152 / (4898 × 64) = 6.690 s; model TFLOP/s per device = 449.22 G × 4898 = 2200.29
    result, rr = run('  claim tokens_per_second_per_device = 4898 token/s from paper "Megatron-Bridge 26.04"\n'
                     '  claim tflops_per_device = 2201 TFLOP/s from paper "Megatron-Bridge 26.04"\n', timing="")
    assert rr.implied["step_time"].value == pytest.approx(TOKENS / (4898 * 64), rel=1e-12)
    cr = rr.claims["achieved_flops_per_device"]
    assert cr.reconstructed == pytest.approx(PER_TOKEN * 4898, rel=1e-12) and cr.status == "consistent"


def test_the_same_metric_claimed_from_two_sources_is_checked_twice():
    # A table prints 4898 tokens/s/GPU and the text "about 4.9k": both hold. A third source says 5200: it does not.
    body = ('  claim tokens_per_second_per_device = 4898 token/s from paper "Megatron-Bridge 26.04, table"\n'
            '  claim tokens_per_second_per_device = 4.9e3 token/s from paper "release blog, text"\n'
            '  claim tokens_per_second_per_device = 5200 token/s from paper "a slide"\n')
    result, rr = run(body)
    assert not [d for d in result.diagnostics if d.code == "EFF003"]
    keys = list(rr.claims)
    assert keys == ["tokens_per_second_per_device", "tokens_per_second_per_device#2", "tokens_per_second_per_device#3"]
    assert [rr.claims[k].status for k in keys] == ["consistent", "consistent", "mismatch"]
    # 4.9e3: ±50 (its last digit) + 49 (1 %)
    assert rr.claims[keys[1]].tolerance == pytest.approx(50 + 49)
    # each claim is in the JSON output, under its own key
    from effspec.report.text import run_json
    out = run_json(rr)["claims"]
    assert list(out) == ["tokens_per_second_per_device", "tokens_per_second_per_device#2",
                         "tokens_per_second_per_device#3"]
    json.dumps(out)


def test_a_repeat_from_the_same_source_or_none_is_still_eff003():
    for second in ('from paper "Megatron-Bridge 26.04, table"', ""):
        body = ('  claim tokens_per_second_per_device = 4898 token/s from paper "Megatron-Bridge 26.04, table"\n'
                f"  claim tokens_per_second_per_device = 4900 token/s {second}\n")
        result = check_text(HEAD + "  timing { throughput = 4898 token/s/device * 64 device }\n" + body + "}\n")
        found = [d for d in result.diagnostics if d.code == "EFF003"]
        assert len(found) == 1 and found[0].span.line == 10 and "claimed twice" in found[0].message
        assert "the first claim is on line 9" in found[0].help
