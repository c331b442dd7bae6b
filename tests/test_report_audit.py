"""Reports a reviewer can audit by hand (issue 14): statistics that follow the sample count,
page 1 as the verdict, Markdown that renders, notebooks that escape."""

from __future__ import annotations

import statistics

import effspec
from effspec.report import render
from effspec.report.context import build

RUN = """eff 1

run r {{
  model {{ kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }}
  convention {{ preset = palm }}
  work {{ seq_len = 2048 token/sequence  global_batch = 256 sequence }}
  parallelism {{ dp = 8  micro_batch = 4 sequence }}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = [{samples}] s  warmup = 0 step }}
}}
"""

SIX = [4.02, 4.00, 4.05, 3.99, 4.01, 4.03]
TWELVE = SIX + [4.00, 4.02, 3.98, 4.01, 4.00, 4.04]


def _stats_rows(samples: list[float]) -> dict[str, tuple[str, str]]:
    result = effspec.check_text(RUN.format(samples=", ".join(map(str, samples))), "s.eff")
    (run,) = build(result).runs
    return {row.label: (row.value, row.note) for row in run.step_stats}


def test_six_samples_print_no_interval_and_no_tail_percentiles_and_say_why():
    rows = _stats_rows(SIX)
    value, note = rows["median"]
    assert value == "4.015 s"  # (4.01 + 4.02) / 2
    assert "bootstrap" not in note and "6 samples after warm-up" in note and "at least 10 (EFF502)" in note
    value, note = rows["p5 / p95 / p99"]
    assert value == "—" and note.startswith("percentiles not reported: 6 samples")
    html = render(effspec.check_text(RUN.format(samples=", ".join(map(str, SIX))), "s.eff"), "html").decode()
    assert "bootstrap CI" not in html and "p95 / p99" in html and "a spread needs at least 10 (EFF502)" in html


def test_twelve_samples_print_the_interval_and_percentiles():
    rows = _stats_rows(TWELVE)
    value, note = rows["median"]
    assert value == "4.01 s" and statistics.median(TWELVE) == 4.01  # the 6th and 7th of 12 sorted are both 4.01
    assert note.startswith("95 % bootstrap CI ") and "EFF502" not in note
    value, note = rows["p5 / p95 / p99"]
    assert value.count(" s") == 3 and note == ""
