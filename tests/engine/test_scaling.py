"""Scaling: speedup, strong/weak efficiency, the series, local GEMM shapes, time-to-target."""

from __future__ import annotations

from pathlib import Path

import pytest

import effspec
from effspec.report.text import result_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def check(text: str):
    result = effspec.check_text(text, "t.eff")
    assert result.evaluation is not None, [(d.code, d.message) for d in result.diagnostics]
    return result


def run(rid: str, devices: int, step: str, batch: int = 256, dtype: str = "bf16", extra: str = "",
        par: str | None = None) -> str:
    # flops_per_token fixed (custom model) so achieved FLOP/s per device is easy by hand.
    par = par or f"dp = {devices}  micro_batch = 1 sequence"
    return f'''
run {rid} {{
  model {{ kind = custom  flops_per_token = 6e9 FLOP/token }}
  convention {{ preset = palm }}
  work {{ seq_len = 2048 token/sequence  global_batch = {batch} sequence }}
  parallelism {{ {par} }}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = {devices} device  dtype = {dtype}  peak = catalog }}
  timing {{ step_time = [{step}] s  warmup = 0 step }}
  {extra}
}}'''


def test_example_c_strong_efficiency():
    result = effspec.load(EXAMPLES / "example_c_scaling.eff")
    sr = result.evaluation.scalings["dp_strong"]
    # base_8: median of [4.02, 4.00, 4.05, 3.99, 4.01] = 4.01 s
    # scaled_64: median of [0.60, 0.60, 0.60, 0.61, 0.62, 0.97] = (0.60 + 0.61) / 2 = 0.605 s
    # speedup = 4.01 / 0.605 = 6.6281; efficiency = 6.6281 / (64 / 8) = 0.8285
    assert sr.metrics["speedup"].value == pytest.approx(4.01 / 0.605)
    assert sr.metrics["strong_scaling_efficiency"].value == pytest.approx(4.01 / 0.605 / 8)
    assert round(sr.metrics["strong_scaling_efficiency"].value, 4) == 0.8285
    js = result_json(result)["scalings"]["dp_strong"]
    assert js["metrics"]["strong_scaling_efficiency"]["value"] == pytest.approx(0.82851, abs=1e-5)
    assert js["work_changes"] == []  # same global batch: 2048 × 256 = 524,288 tokens both


def test_weak_efficiency_is_achieved_flops_per_device_ratio():
    text = "eff 1\n" + run("w8", 8, "2.0", batch=64) + run("w16", 16, "2.2", batch=128) + '''
scaling weak { kind = weak  baseline = w8  runs = [w16] }
'''
    sr = check(text).evaluation.scalings["weak"]
    # w8:  6e9 × 2048 × 64  / (2.0 s × 8)  = 7.86432e14 / 16   = 4.9152e13 FLOP/s per device
    # w16: 6e9 × 2048 × 128 / (2.2 s × 16) = 1.572864e15 / 35.2 = 4.46836e13 FLOP/s per device
    # weak efficiency = 4.46836e13 / 4.9152e13 = 0.90909 (= 2.0 / 2.2: per-device work unchanged)
    assert sr.metrics["weak_scaling_efficiency"].value == pytest.approx((6e9 * 2048 * 128 / 35.2) / (6e9 * 2048 * 64 / 16))
    assert sr.metrics["weak_scaling_efficiency"].value == pytest.approx(2.0 / 2.2)
    assert sr.runs[0].tokens_per_device == sr.baseline.tokens_per_device == 2048 * 64 / 8
    assert sr.work_changes() == []


def test_three_run_series_with_incremental_efficiency():
    # Runs listed out of order: the series sorts them by devices.
    text = "eff 1\n" + run("r8", 8, "4.0") + run("r32", 32, "1.2") + run("r16", 16, "2.1") + '''
scaling s { kind = strong  baseline = r8  runs = [r32, r16] }
'''
    sr = check(text).evaluation.scalings["s"]
    assert [m.run_id for m in sr.series] == ["r8", "r16", "r32"]
    assert sr.series_baseline == "r8"
    # cumulative: r16: (4.0 / 2.1) / 2 = 0.952381; r32: (4.0 / 1.2) / 4 = 0.833333
    assert [c.efficiency for c in sr.cumulative] == pytest.approx([4.0 / 2.1 / 2, 4.0 / 1.2 / 4])
    # incremental: r8→r16 = 0.952381; r16→r32: (2.1 / 1.2) / (32 / 16) = 1.75 / 2 = 0.875
    assert [(s.from_run, s.to_run) for s in sr.incremental] == [("r8", "r16"), ("r16", "r32")]
    assert [s.efficiency for s in sr.incremental] == pytest.approx([0.952381, 0.875], abs=1e-6)
    assert [s.speedup for s in sr.incremental] == pytest.approx([4.0 / 2.1, 2.1 / 1.2])
    # The contract's metrics are the last run compared with the declared baseline (r16 here).
    assert sr.metrics["strong_scaling_efficiency"].value == pytest.approx(0.952381, abs=1e-6)


def test_series_skips_a_member_without_step_time():
    text = "eff 1\n" + run("r16", 16, "2.1") + run("r32", 32, "1.2") + '''
run r8 {
  model { kind = custom  flops_per_token = 6e9 FLOP/token }
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
}
scaling s { kind = strong  baseline = r8  runs = [r16, r32] }
'''
    sr = check(text).evaluation.scalings["s"]
    assert sr.series_baseline == "r16"  # the smallest valid member
    assert [s.efficiency for s in sr.cumulative] == pytest.approx([2.1 / 1.2 / 2])
    assert sr.runs[0].missing["speedup"] == ("run.r8.step_time",)


def test_strong_scaling_with_changed_batch_is_a_work_change():
    text = "eff 1\n" + run("a", 8, "4.0", batch=256) + run("b", 16, "2.5", batch=512) + '''
scaling s { kind = strong  baseline = a  runs = [b] }
'''
    changes = check(text).evaluation.scalings["s"].work_changes()
    # 2048 × 256 = 524,288 vs 2048 × 512 = 1,048,576 valid tokens per step
    assert [(c.run_id, c.what, c.baseline, c.run) for c in changes] == [("b", "valid_tokens_per_step", 524288.0, 1048576.0)]


GEMM_RUN = '''eff 1
run big {
  model { kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8
          ffn = swiglu  d_ff = 28672  vocab = 128256 }
  convention { preset = palm }
  work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
  parallelism { dp = 4  tp = 8  pp = 4  micro_batch = 1 sequence }
  hardware { accelerator = "H100-SXM5-80GB"  count = 128 device  dtype = bf16  peak = catalog }
  timing { step_time = [10.0] s  warmup = 0 step }
}
scaling s { kind = strong  baseline = big  runs = [big] }
'''


def test_gemm_shapes_tp8_pp4():
    sr = check(GEMM_RUN).evaluation.scalings["s"]
    g = sr.runs[0].gemms
    assert (g.tp, g.pp, g.cp, g.dp) == (8, 4, 1, 4)
    assert g.tokens_per_microbatch == 4096  # micro_batch 1 × seq_len 4096 / cp 1
    assert g.layers_per_stage == 20  # 80 / pp 4
    shapes = {x.name: (x.m, x.n, x.k, x.count, x.batch) for x in g.gemms}
    # QKV: N = (H·Q + 2·G·Q) / tp = (64·128 + 2·8·128) / 8 = (8192 + 2048) / 8 = 1280, K = d = 8192
    assert shapes["qkv"] == (4096, 1280, 8192, 1, 1)
    # output projection: row-parallel, K = H·Q / tp = 8192 / 8 = 1024, N = d
    assert shapes["attention_output"] == (4096, 8192, 1024, 1, 1)
    # SwiGLU: gate and up, N = d_ff / tp = 28672 / 8 = 3584; down: K = 3584
    assert shapes["ffn_up"] == (4096, 3584, 8192, 2, 1)
    assert shapes["ffn_down"] == (4096, 8192, 3584, 1, 1)
    # logits: vocabulary-parallel, N = 128256 / 8 = 16032
    assert shapes["logits"] == (4096, 16032, 8192, 1, 1)
    # scores: per local head (64 / 8 = 8) and sequence: (s × Q) · (Q × s)
    assert shapes["attention_scores"] == (4096, 4096, 128, 1, 8)
    assert g.notes == ()
    js = result_json(check(GEMM_RUN))["scalings"]["s"]["runs"]["big"]["gemms"]
    assert {x["name"]: [x["m"], x["n"], x["k"]] for x in js["gemms"]}["qkv"] == [4096, 1280, 8192]


def test_gemm_shapes_with_cp_and_uneven_split():
    text = GEMM_RUN.replace("dp = 4  tp = 8  pp = 4", "dp = 2  tp = 8  pp = 3  cp = 2")
    g = check(text).evaluation.scalings["s"].runs[0].gemms
    assert g.tokens_per_microbatch == 2048  # 4096 / cp 2
    assert g.layers_per_stage == pytest.approx(80 / 3)
    assert any("layers (80) is not divisible by 3" in n for n in g.notes)


def test_gemm_shapes_missing_without_parallelism():
    text = "eff 1\n" + GEMM_RUN.split("\n", 1)[1].replace("  parallelism { dp = 4  tp = 8  pp = 4  micro_batch = 1 sequence }\n", "")
    r = check(text).evaluation.scalings["s"].runs[0]
    assert r.gemms is None and r.gemms_missing == ("parallelism",)


def test_time_to_target_when_numerics_change():
    target_bf16 = 'target { metric = "validation loss"  value = 2.5  reached_at = 10000 step }'
    target_fp8 = 'target { metric = "validation loss"  value = 2.5  reached_at = 12000 step }'
    text = ("eff 1\n" + run("bf", 8, "1.0", extra=target_bf16)
            # fp8 needs an accelerator with an FP8 peak in the catalog
            + run("f8", 8, "0.7", dtype="fp8", extra=target_fp8).replace("A100-SXM4-40GB", "H100-SXM5-80GB") + '''
scaling s { kind = strong  baseline = bf  runs = [f8] }
''')
    result = check(text)
    sr = result.evaluation.scalings["s"]
    # bf: 10000 steps × 1.0 s = 10,000 s; f8: 12000 × 0.7 s = 8,400 s
    assert result.evaluation.runs["bf"].time_to_target.value == pytest.approx(10000.0)
    assert sr.runs[0].time_to_target.value == pytest.approx(8400.0)
    # per-step speedup 1.0 / 0.7 = 1.4286 overstates; time-to-target speedup = 10000 / 8400 = 1.1905
    assert sr.metrics["speedup"].value == pytest.approx(1 / 0.7)
    assert sr.metrics["time_to_target_speedup"].value == pytest.approx(10000 / 8400)
    assert [(c.what, c.baseline, c.run) for c in sr.work_changes()] == [("dtype", ("bf16",), ("fp8",))]
    js = result_json(result)
    assert js["runs"]["f8"]["time_to_target"]["value"] == pytest.approx(8400.0)


def test_time_to_target_speedup_needs_the_same_target():
    a = 'target { metric = "validation loss"  value = 2.5  reached_at = 100 step }'
    b = 'target { metric = "validation loss"  value = 2.4  reached_at = 100 step }'
    text = "eff 1\n" + run("x", 8, "1.0", extra=a) + run("y", 8, "0.9", extra=b) + '''
scaling s { kind = strong  baseline = x  runs = [y] }
'''
    r = check(text).evaluation.scalings["s"].runs[0]
    assert "time_to_target_speedup" not in r.metrics
    assert "the same target" in r.missing["time_to_target_speedup"][0]
