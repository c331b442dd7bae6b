"""Step-time samples faster than the hardware's peak allows are left out before the
statistics, with EFF505 naming each and its line (issue 27, "implausible samples").

The run: a custom model of 6e9 FLOP/token, 1,000 tokens a step (1 sequence of 1,000
tokens): 6e12 FLOP a step; 2 devices at a declared 1e12 FLOP/s: 2e12 FLOP/s.  The
fastest possible step is 6e12 / 2e12 = 3 s.
"""

from __future__ import annotations

import effspec
from effspec.report.text import result_json

SPEC = """eff 1
run r {{
  model {{ kind = custom  flops_per_token = 6e9 FLOP/token }}
  convention {{ preset = palm }}
  work {{ seq_len = 1000 token/sequence  global_batch = 1 sequence }}
  hardware {{ accelerator = "custom"  count = 2 device  dtype = bf16  peak = 1e12 FLOP/s from datasheet "test" }}
  timing {{
    step_time = {samples}
    warmup    = 1 step
    boundary  = "optimizer step end, after a synchronize"
  }}
}}
"""


def check(samples: str, tmp_path=None):
    return effspec.check_text(SPEC.format(samples=samples), file="r.eff", folder=str(tmp_path) if tmp_path else None)


def codes(result, code):
    return [d for d in result.diagnostics if d.code == code]


def test_a_sample_faster_than_the_peak_is_excluded_before_the_statistics():
    # Samples after the 1 warm-up: 4, 5, 2.5 (< 3 s: 6e12 / 2.5 = 2.4e12 FLOP/s, 1.2× the peak), 6, 4.5.
    result = check("[9.0, 4.0, 5.0, 2.5, 6.0, 4.5] s")
    rr = result.evaluation.runs["r"]
    st = rr.step_stats
    assert st.count == 4 and st.implausible_excluded == (3,)
    assert st.median == 4.75  # median of 4, 5, 6, 4.5: (4.5 + 5) / 2
    assert st.mean == 4.875  # 19.5 / 4
    assert rr.metrics["step_time"].value == 4.75
    assert "less 1 implausible (EFF505)" in rr.metrics["step_time"].substituted
    assert rr.metrics["mfu"].value == 6e12 / 4.75 / 2e12
    (d,) = codes(result, "EFF505")
    assert (d.span.line, d.severity) == (8, "warning")  # line 8: `step_time = …`
    assert "sample 4 (line 8) 2.5 s (1.2× the peak)" in d.message
    assert "a step needs at least 3 s" in d.help
    assert result_json(result)["runs"]["r"]["step_statistics"]["implausible_excluded"] == (3,)  # a tuple until json.dumps


def test_csv_samples_name_their_line(tmp_path):
    # Line 1 is the header; a blank line 4 is skipped, so the 2.9 s of sample 4 is on line 6.
    (tmp_path / "s.csv").write_text("t\n9.0\n4.0\n\n5.0\n2.9\n4.2\n", encoding="utf-8")
    result = check('file "s.csv" column "t"', tmp_path)
    (d,) = codes(result, "EFF505")
    assert "sample 4 (`s.csv` line 6) 2.9 s (1× the peak)" in d.message  # 3 / 2.9 = 1.03
    assert result.evaluation.runs["r"].step_stats.median == 4.2  # of 4.0, 5.0, 4.2


def test_nothing_is_excluded_at_the_peak_in_warm_up_or_when_the_typical_step_beats_it():
    # 3 s exactly is 100 % of the peak: possible.  The 1 s warm-up sample is already out.
    result = check("[1.0, 3.0, 4.0, 5.0] s")
    assert codes(result, "EFF505") == [] and result.evaluation.runs["r"].step_stats.implausible_excluded == ()
    # Every sample under 3 s: the median beats the peak, so the peak (or the count) is what is wrong.
    result = check("[9.0, 1.0, 1.1, 1.2, 4.0] s")
    assert codes(result, "EFF505") == []
    assert result.evaluation.runs["r"].step_stats.median == 1.15  # (1.1 + 1.2) / 2: nothing left out
