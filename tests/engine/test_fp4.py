"""FP4 (issue 28): `dtype = nvfp4 | mxfp4 | fp6`, the Blackwell FP4 catalog rows, and a published NVFP4 row.

The rows come from NVIDIA's system specification pages (the figures are per system and "with
sparsity" unless a dense figure is printed; per GPU = system / GPUs, dense = sparse / 2 where
only the sparse figure is printed):

- HGX B200: FP4 Tensor Core 144 PFLOPS, FP8/FP6 72 PFLOPS, 8 GPUs -> 18 / 9 sparse per GPU.
- GB200 NVL72: FP4 1,440 PFLOPS, FP8/FP6 720 PFLOPS, 72 GPUs -> 20 / 10 sparse per GPU.
- HGX B300: FP4 144 PFLOPS sparse | 108 PFLOPS dense, FP8/FP6 72 PFLOPS, 8 GPUs -> 18 | 13.5.
- GB300 NVL72: FP4 1,440 PFLOPS sparse | 1,080 PFLOPS dense, FP8/FP6 720 PFLOPS, 72 GPUs -> 20 | 15.
"""

from __future__ import annotations

import pytest

from effspec import check_text
from effspec.engine import catalog

# (accelerator, dtype, sparsity, TFLOP/s per GPU, words the citation must contain)
FP4_ROWS = [
    ("B200", "nvfp4", "dense", 144_000 / 8 / 2, "FP4 Tensor Core 144 PFLOPS"),
    ("B200", "nvfp4", "sparse", 144_000 / 8, "with sparsity"),
    ("B200", "mxfp4", "dense", 144_000 / 8 / 2, "HGX B200"),
    ("B200", "fp6", "dense", 72_000 / 8 / 2, "FP8/FP6 Tensor Core 72 PFLOPS"),
    ("GB200", "nvfp4", "dense", 1_440_000 / 72 / 2, "FP4 Tensor Core 1,440 PFLOPS"),
    ("GB200", "mxfp4", "sparse", 1_440_000 / 72, "GB200 NVL72"),
    ("GB200", "fp6", "sparse", 720_000 / 72, "FP8/FP6 Tensor Core 720 PFLOPS"),
    ("B300", "nvfp4", "dense", 108_000 / 8, "108 PFLOPS without"),
    ("B300", "nvfp4", "sparse", 144_000 / 8, "HGX B300"),
    ("B300", "fp6", "dense", 72_000 / 8 / 2, "FP8/FP6"),
    ("GB300", "nvfp4", "dense", 1_080_000 / 72, "1,080 PFLOPS without"),
    ("GB300", "mxfp4", "sparse", 1_440_000 / 72, "GB300 NVL72"),
    ("GB300", "fp6", "dense", 720_000 / 72 / 2, "FP8/FP6"),
]


@pytest.mark.parametrize(("acc", "dtype", "sparsity", "tflops", "cited"), FP4_ROWS)
def test_fp4_rows(acc: str, dtype: str, sparsity: str, tflops: float, cited: str) -> None:
    row = catalog.lookup(acc, dtype, sparsity)
    assert row is not None and row.accelerator == acc
    assert row.flops == tflops * 1e12
    assert cited in row.citation and row.url and row.url.startswith("https://www.nvidia.com/")


def test_fp4_is_twice_fp8_on_blackwell_and_three_times_dense_on_ultra() -> None:
    for acc, ratio in (("B200", 2.0), ("GB200", 2.0), ("B300", 3.0), ("GB300", 3.0)):
        fp4, fp8 = catalog.lookup(acc, "nvfp4"), catalog.lookup(acc, "fp8")
        assert fp4 is not None and fp8 is not None
        assert fp4.flops / fp8.flops == ratio
        assert catalog.lookup(acc, "mxfp4").flops == fp4.flops  # one FP4 column for both formats
    # Hopper has no FP4 tensor cores: no row, rather than a guess.
    assert catalog.lookup("H100-SXM5", "nvfp4") is None and catalog.lookup("H200-SXM", "fp6") is None


# Megatron-Bridge, docs/performance-summary-archive.md, "26.04 NeMo Container", Pre-Training, Model LLAMA3_70B,
# row "DGX-GB200 | 64 | NVFP4 | 256 | 1 | 8192 | 0 | 2 | 4 | 1 | 5 | n/a | 4898 | 2201"
# (NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a): 64 GPUs, GBS 256, MBS 1, seq 8192,
# TP 2, PP 4, 4898 tokens/s/GPU, 2201 model TFLOP/s/GPU. Llama 3 70B: 80 layers, d 8192, 64 heads, 8 KV heads,
# SwiGLU 28672, vocab 128256.
NVFP4_ROW = """eff 1

run gb200 {
  title = "Llama 3 70B pre-training, NVFP4, 64 GB200 (Megatron-Bridge 26.04)"
  model { kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8  ffn = swiglu  d_ff = 28672  vocab = 128256 }
  convention { preset = nemo }
  work { seq_len = 8192 token/sequence  global_batch = 256 sequence }
  parallelism { tp = 2  pp = 4  dp = 8  micro_batch = 1 sequence }
  hardware { accelerator = "GB200"  count = 64 device  dtype = DTYPE  peak = catalog }
  timing { throughput = 4898 token/s/device * 64 device }
  claim tflops_per_device = 2201 TFLOP/s from paper "Megatron-Bridge performance summary, 26.04, LLAMA3_70B DGX-GB200 NVFP4"
}
"""


def test_nvfp4_gb200_row_reproduces_its_mfu() -> None:
    L, d, H, G, f, V, s = 80, 8192, 64, 8, 28672, 128256, 8192
    # NeMo's llama3 formula per token (causal): L·d²·(12 + 12·G/H + 18·f/d + 6·s/d + 6·V/(L·d))
    #   = 80·8192²·(12 + 1.5 + 63 + 6 + 1.17421875) = 5,368,709,120 · 83.67421875 = 449,222,541,312 FLOP/token
    per_token = L * d * d * (12 + 12 * G / H + 18 * f / d + 6 * s / d + 6 * V / (L * d))
    assert per_token == 449_222_541_312
    # Model TFLOP/s/GPU = per_token × 4898 tokens/s/GPU = 2200.29 TFLOP/s (printed: 2201)
    achieved = per_token * 4898
    assert round(achieved / 1e12) == 2200
    # MFU against the dense NVFP4 peak of a GB200, 1,440 PFLOPS / 72 / 2 = 10 PFLOP/s: 22.00 %;
    # against its dense FP8 peak (5 PFLOP/s), what declaring the row fp8 gave: 44.01 %.
    mfu_fp4, mfu_fp8 = achieved / 10e15, achieved / 5e15
    assert round(mfu_fp4 * 100, 2) == 22.00 and round(mfu_fp8 * 100, 2) == 44.01
    # The published TFLOP/s/GPU is reproduced (2201 / 2200.29 = 1.0003), and so is its MFU.
    assert abs(2201e12 / achieved - 1) < 5e-4
    result = check_text(NVFP4_ROW.replace("DTYPE", "nvfp4"))
    assert [d.code for d in result.diagnostics] == []
    run = result.evaluation.runs["gb200"]
    assert run.metrics["flops_per_token"].value == per_token
    assert run.metrics["aggregate_peak"].value == 64 * 10e15
    assert run.metrics["mfu"].value == pytest.approx(mfu_fp4, rel=1e-12)
    assert run.claims["achieved_flops_per_device"].status == "consistent"


def test_the_same_row_declared_fp8_is_flagged() -> None:
    """The workaround before FP4 was a datatype: `dtype = fp8`, MFU against the FP8 peak, 44 %."""
    result = check_text(NVFP4_ROW.replace("DTYPE", "fp8"))
    found = [d for d in result.diagnostics if d.code == "EFF209"]
    assert len(found) == 1 and "its title says NVFP4" in found[0].message
    assert found[0].span.line == 9 and "10 PFLOP/s dense" in found[0].message
    assert found[0].notes == ("MFU: 44.01 % against the declared peak, 22 % against the dense NVFP4 peak (10 PFLOP/s)",)
    assert result.evaluation.runs["gb200"].metrics["mfu"].value == pytest.approx(2 * 0.2200292007346176, rel=1e-12)


def test_fp8_peak_written_for_nvfp4_is_eff208_not_eff201() -> None:
    text = NVFP4_ROW.replace("DTYPE", "nvfp4").replace("peak = catalog", 'peak = 5000 TFLOP/s from datasheet "FP8"')
    codes = [d.code for d in check_text(text).diagnostics]
    assert codes == ["EFF208"]
