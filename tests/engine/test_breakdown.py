"""Wall-time reconciliation: shares and seconds, the sum, the remainder, and the MFU check."""

from __future__ import annotations

from pathlib import Path

import pytest

import effspec
from effspec.report.text import result_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_example_c_breakdown_reconciles():
    result = effspec.load(EXAMPLES / "example_c_scaling.eff")
    rec = result.evaluation.runs["scaled_64"].breakdown
    # 43 + 9 + 14 + 10 + 8 + 7 + 4 + 5 = 100 %
    assert rec.total == pytest.approx(1.00)
    assert rec.remainder == pytest.approx(0.0, abs=1e-12) and rec.reconciles
    assert rec.has_unclassified and rec.unclassified == pytest.approx(0.05)
    # seconds of the 0.605 s median step: model_compute 0.43 × 0.605 = 0.26015 s
    assert rec.rows[0].seconds == pytest.approx(0.26015)
    # MFU by hand: flops/token (megatron knobs, recompute excluded)
    #   qkv 24·2·2048·6144 = 603,979,776; out 24·2·2048·2048 = 201,326,592;
    #   scores 24·2·2·2048·2048 = 402,653,184; ffn 24·2·2·2048·8192 = 1,610,612,736;
    #   logits 2·2048·50257 = 205,852,672; forward 3,024,424,960; × 3 = 9,073,274,880
    fpt = 3 * (603_979_776 + 201_326_592 + 402_653_184 + 1_610_612_736 + 205_852_672)
    mfu = fpt * 2048 * 256 / (0.605 * 64 * 312e12)  # = 0.39377
    assert result.evaluation.runs["scaled_64"].metrics["mfu"].value == pytest.approx(mfu)
    # compute-interval efficiency = MFU / model_compute share = 0.39377 / 0.43 = 0.9157
    assert rec.compute_interval_efficiency.value == pytest.approx(mfu / 0.43)
    assert rec.mfu_required_share == pytest.approx(mfu) and rec.consistent_with_mfu is True
    table = {row["category"]: row for row in rec.table()}
    assert table["sum"]["share"] == pytest.approx(1.0) and table["sum"]["seconds"] == pytest.approx(0.605)
    js = result_json(result)["runs"]["scaled_64"]["breakdown"]
    assert js["reconciles"] is True and js["compute_interval_efficiency"]["value"] == pytest.approx(mfu / 0.43)


RUN = '''eff 1
run r {{
  model {{ kind = custom  flops_per_token = {fpt} FLOP/token }}
  convention {{ preset = palm }}
  work {{ valid_tokens = 1000000 token }}
  hardware {{ accelerator = "TestGPU"  count = 10 device  dtype = bf16  peak = 100 TFLOP/s }}
  timing {{ step_time = [2.0] s  warmup = 0 step }}
  breakdown {{ {breakdown} }}
}}
'''


def rec_of(fpt: str, breakdown: str):
    result = effspec.check_text(RUN.format(fpt=fpt, breakdown=breakdown), "t.eff")
    return result, result.evaluation.runs["r"].breakdown


def test_seconds_and_shares_mix_and_leave_a_remainder():
    # step 2.0 s: 1.0 s → 0.50; 25 %; 0.3 s → 0.15; 0.1 s → 0.05; sum 0.95, remainder 0.05 = 0.1 s
    _, rec = rec_of("6e9", "model_compute = 1.0 s  exposed_comm = 25 %  bubble = 0.3 s  unclassified = 0.1 s")
    assert [r.category for r in rec.rows] == ["model_compute", "exposed_comm", "bubble", "unclassified"]
    assert [r.share for r in rec.rows] == pytest.approx([0.5, 0.25, 0.15, 0.05])
    assert [r.seconds for r in rec.rows] == pytest.approx([1.0, 0.5, 0.3, 0.1])
    assert rec.total == pytest.approx(0.95)
    assert rec.remainder == pytest.approx(0.05) and rec.remainder_seconds == pytest.approx(0.1)
    assert not rec.reconciles  # |0.05| > 0.01: EFF402's evidence
    assert rec.unclassified == pytest.approx(0.10)  # declared 0.05 + the unaccounted 0.05


def test_overlap_counted_twice_gives_negative_remainder():
    _, rec = rec_of("6e9", "model_compute = 70 %  exposed_comm = 40 %")
    assert rec.total == pytest.approx(1.10) and rec.remainder == pytest.approx(-0.10)
    assert not rec.reconciles and not rec.has_unclassified and rec.unclassified == 0.0


def test_model_compute_below_what_mfu_requires():
    # MFU = 1.2e9 FLOP/token × 1e6 token / (2.0 s × 10 × 1e14 FLOP/s) = 1.2e15 / 2e15 = 0.60
    # model_compute 50 % < 60 %: compute-interval efficiency 0.60 / 0.50 = 1.2 > 1 (EFF404's evidence)
    _, rec = rec_of("1.2e9", "model_compute = 50 %  exposed_comm = 45 %  unclassified = 5 %")
    assert rec.compute_interval_efficiency.value == pytest.approx(1.2)
    assert rec.mfu_required_share == pytest.approx(0.60)
    assert rec.consistent_with_mfu is False
