"""Values the fixtures cannot express: what the EFF3xx/EFF4xx/EFF5xx messages say.

Every expected figure is derived here by hand from the formulas in the language
sketch, not read back from the implementation.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import effspec
from effspec.rules import rule_for

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "rules"
EXAMPLES = ROOT / "examples"
MY_CODES = [f"EFF{n}" for n in (301, 302, 303, 304, 401, 402, 403, 404, 501, 502, 503, 504)]

# One dense GPT-style model used throughout (Example C): L = 24, d = 2048, H = 16,
# Q = 128, f = 8192 (gelu), V = 50257, s = 2048, multiply-add = 2 FLOP.
_MODEL = ("model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  "
          "d_ff = 8192  vocab = 50257 }")


def _run(name: str, devices: int, batch: int, seq: int = 2048, timing: str = "timing { step_time = 4.0 s }",
         extra: str = "", model: str = _MODEL, dtype: str = "bf16", parallelism: bool = True) -> str:
    par = f"parallelism {{ dp = {devices}  micro_batch = 4 sequence }}" if parallelism else ""
    return f"""
run {name} {{
  {model}
  convention {{ preset = palm }}
  work {{ seq_len = {seq} token/sequence  global_batch = {batch} sequence }}
  {par}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = {devices} device  dtype = {dtype}  peak = catalog }}
  {timing}
  {extra}
}}
"""


def _diags(text: str, code: str):
    return [d for d in effspec.check_text("eff 1\n" + text).diagnostics if d.code == code]


def _file_diags(path: Path, code: str):
    return [d for d in effspec.load(path).diagnostics if d.code == code]


# ---------------------------------------------------------------------------- scaling


def test_eff301_states_the_change_in_global_tokens_and_calls_it_weak():
    # 512 x 2048 = 1,048,576 valid tokens against 256 x 2048 = 524,288: +100 %.
    # Per device: 1,048,576 / 16 = 65,536 = 524,288 / 8, so this is weak scaling.
    text = _run("base_8", 8, 256) + _run("dp_16", 16, 512) + \
        "scaling s { kind = strong  baseline = base_8  runs = [dp_16] }\n"
    [d] = _diags(text, "EFF301")
    assert "1,048,576 valid tokens per step" in d.message
    assert "524,288" in d.message
    assert "(+100 %)" in d.message
    assert "stayed at 65,536" in d.message and "this is weak scaling" in d.message
    assert "`kind = weak`" in d.help
    assert d.severity == "error"


def test_eff301_neither_strong_nor_weak_with_both_percentages():
    # dp_32: 384 x 2048 = 786,432 tokens: 786,432 / 524,288 - 1 = +50 %; per device
    #   786,432 / 32 = 24,576 against 65,536: neither.
    # dp_16: 524,288 - 10,486 padded = 513,802: -10,486 / 524,288 = -2.00004 % -> "-2 %".
    [d32, d16] = _file_diags(FIXTURES / "EFF301" / "fail_neither_strong_nor_weak.eff", "EFF301")
    assert "`dp_32`" in d32.message and "(+50 %)" in d32.message
    assert "65,536 → 24,576" in d32.message and "neither strong nor weak" in d32.message
    assert "`dp_16`" in d16.message and "(-2 %)" in d16.message
    assert "neither strong nor weak" in d16.message


def test_eff301_within_half_a_percent_is_fixed_work():
    # 1,573 padded tokens: 1,573 / 524,288 = 0.300 % < 0.5 %.
    assert _file_diags(FIXTURES / "EFF301" / "pass_same_global_work.eff", "EFF301") == []
    # 2,700 padded tokens: 2,700 / 524,288 = 0.515 % > 0.5 %: flagged, and per
    # device 521,588 / 64 = 8,149.8 is not 65,536 either.
    text = _run("base_8", 8, 256) + _run("dp_64", 64, 256).replace(
        "global_batch = 256 sequence", "global_batch = 256 sequence  padded_tokens = 2700 token") + \
        "scaling s { kind = strong  baseline = base_8  runs = [dp_64] }\n"
    [d] = _diags(text, "EFF301")
    assert "(-0.515 %)" in d.message


def test_eff302_states_the_change_in_per_device_tokens():
    # 64 devices, 8 unavailable: 2048 x 2048 = 4,194,304 tokens over 56 active devices
    # = 74,898.3 per device, against 256 x 2048 / 8 = 65,536: 64/56 - 1 = +14.3 %.
    [d] = _file_diags(FIXTURES / "EFF302" / "fail_unavailable_devices.eff", "EFF302")
    assert "(+14.3 %)" in d.message and "65,536" in d.message
    # To hold per-device work: 65,536 x 56 = 3,670,016 valid tokens per step.
    assert "3,670,016 valid tokens per step on its 56 devices" in d.help


def test_eff302_says_strong_when_global_work_is_fixed():
    # 256 x 2048 on 8 and on 64 devices: per device 65,536 -> 8,192 = -87.5 %.
    text = _run("base_8", 8, 256) + _run("dp_64", 64, 256, timing="timing { step_time = 0.6 s }") + \
        "scaling s { kind = weak  baseline = base_8  runs = [dp_64] }\n"
    [d] = _diags(text, "EFF302")
    assert "(-87.5 %)" in d.message and "this is strong scaling" in d.message
    assert d.help == "write `kind = strong` for `s`"


def test_eff303_names_each_difference_with_both_values():
    [d] = _file_diags(FIXTURES / "EFF303" / "fail_wider_model_and_fp8.eff", "EFF303")
    for difference in ("model.d_model 2048 → 4096", "model.heads 16 → 32", "model.d_ff 8192 → 16,384",
                       "hardware.dtype bf16 → fp8"):
        assert difference in d.message
    # kv_heads defaults to heads: 16 and 32, a real difference in the K/V projections.
    assert "model.kv_heads 16 → 32" in d.message
    # head_dim = d_model / heads = 2048 / 16 = 4096 / 32 = 128: unchanged, not named.
    assert "head_dim" not in d.message
    assert "larger (or cheaper) GEMMs" in d.message
    assert d.severity == "warning"


def test_eff303_names_seq_len_with_units():
    [d] = _file_diags(FIXTURES / "EFF303" / "fail_seq_len_in_second_run.eff", "EFF303")
    assert "`long_32`" in d.message
    assert "work.seq_len 2048 token/sequence → 4096 token/sequence" in d.message


def test_eff304_points_at_the_name_in_the_runs_list():
    path = FIXTURES / "EFF304" / "fail_compared_run_without_layout.eff"
    [d] = _file_diags(path, "EFF304")
    line = path.read_text().splitlines()[d.span.line - 1]
    assert line[d.span.column - 1 : d.span.end_column - 1] == "scaled_64"
    assert "`scaled_64`" in d.message and "parallelism" in d.help


# ---------------------------------------------------------------------------- time attribution


def test_example_b_complement_fallacy():
    # `claim breakdown.exposed_comm = 100 % - mfu` with `claim mfu = 61 %`: 100 - 61 = 39 %.
    [d] = _file_diags(EXAMPLES / "example_b_vendor_claim.eff", "EFF401")
    source = (EXAMPLES / "example_b_vendor_claim.eff").read_text().splitlines()
    assert source[d.span.line - 1][d.span.column - 1 :].startswith("100 % - mfu")
    assert "= 39 %" in d.message and "not a partition" in d.message
    assert "unclassified" in d.help and d.severity == "error"


def test_eff401_numeric_complement_of_the_reconstructed_mfu():
    # MFU = flops_per_token x tokens / (step x peak):
    #   forward per token = 24 x (2·2048·(3·2048) + 2·2048·2048 + 2·2·2048·2048 + 2·2·2048·8192)
    #                       + 2·2048·50257 = 3,024,424,960; x 3 = 9,073,274,880 FLOP/token.
    #   x 524,288 tokens / (0.605 s x 64 x 312e12 FLOP/s) = 0.393771 -> 100 % - 39.38 % = 60.62 %.
    flops_per_token = 3 * (24 * (2 * 2048 * 3 * 2048 + 2 * 2048 * 2048 + 4 * 2048 * 2048 + 4 * 2048 * 8192)
                           + 2 * 2048 * 50257)
    assert flops_per_token == 9_073_274_880
    mfu = flops_per_token * 524_288 / (0.605 * 64 * 312e12)
    assert mfu == pytest.approx(0.393771, abs=1e-6)
    diags = _file_diags(FIXTURES / "EFF401" / "fail_numeric_complement.eff", "EFF401")
    numeric = [d for d in diags if "`breakdown.imbalance`" in d.message]
    assert len(numeric) == 1
    assert "= 61 % equals 100 % − MFU (reconstructed 39.38 %)" in numeric[0].message


def test_example_c_reconciles_and_has_no_eff402():
    # 43 + 9 + 14 + 10 + 8 + 7 + 4 + 5 = 100 %.
    assert _file_diags(EXAMPLES / "example_c_scaling.eff", "EFF402") == []
    assert _file_diags(EXAMPLES / "example_c_scaling.eff", "EFF403") == []
    # The model-compute share 43 % is above MFU 39.38 %: no EFF404.
    assert _file_diags(EXAMPLES / "example_c_scaling.eff", "EFF404") == []


def test_eff402_says_overlap_or_missing_time():
    # 43 + 9 + 26 + 10 + 8 + 7 + 4 + 5 = 112 %.
    [over] = _file_diags(FIXTURES / "EFF402" / "fail_overlap_counted_twice.eff", "EFF402")
    assert "sums to 112 %" in over.message and "12 percentage points too many" in over.message
    assert "counted twice" in over.message
    # 43 + 14 + 10 + 7 + 5 = 79 %: 21 points missing.
    [under] = _file_diags(FIXTURES / "EFF402" / "fail_time_missing.eff", "EFF402")
    assert "sums to 79 %" in under.message and "21 percentage points of the step are missing" in under.message
    assert "21 %" in under.help and "unclassified" in under.help


def test_eff402_seconds_are_divided_by_the_step_or_refused():
    over_step, no_step = _file_diags(FIXTURES / "EFF402" / "fail_seconds.eff", "EFF402")
    # 0.30 + 0.15 + 0.05 + 0.03 = 0.53 s of a 0.5 s step = 106 %.
    assert "sums to 106 % of the step (0.53 s of a 0.5 s step)" in over_step.message
    assert "step time is unknown" in no_step.message
    # In file order: bubble comes first in the file, so it is named first.
    assert no_step.message.index("`bubble = 0.05 s`") < no_step.message.index("`model_compute = 0.30 s`")


def test_eff403_help_gives_the_remainder():
    # 43 + 9 + 14 + 10 + 8 + 7 + 4 = 95 %: unclassified would hold 5 %.
    [d] = _file_diags(FIXTURES / "EFF403" / "fail_no_unclassified.eff", "EFF403")
    assert "100 % − the declared sum = 5 %" in d.help
    assert d.severity == "warning"


def test_eff404_states_both_figures():
    reconstructed, claimed, seconds = _file_diags(FIXTURES / "EFF404" / "fail_share_below_mfu.eff", "EFF404")
    # MFU 0.393771 (see above) over a 38.8 % share: 0.393771 / 0.388 = 1.01487 -> 101.5 %.
    assert "38.8 %" in reconstructed.message and "reconstructed MFU is 39.38 %" in reconstructed.message
    assert "101.5 %" in reconstructed.message
    # Claimed 52 % over a 40 % share: 130 %.
    assert "claimed MFU is 52 %" in claimed.message and "130 %" in claimed.message
    # 0.2 s of a 0.5 s step = 40 %; MFU at 0.5 s: 0.393771 x 0.605 / 0.5 = 0.476463 -> 47.65 %.
    assert "0.2 s = 40 %" in seconds.message and "47.65 %" in seconds.message


def test_eff404_allows_the_rounding_of_a_whole_percent_share():
    # 39 % as written may be 39.49 %; MFU 39.38 % is within it.
    assert _file_diags(FIXTURES / "EFF404" / "pass_share_covers_mfu.eff", "EFF404") == []


# ---------------------------------------------------------------------------- sampling


def test_eff501_counts_the_samples_and_notes_a_slow_first_step():
    from_csv, inline = _file_diags(FIXTURES / "EFF501" / "fail_no_warmup.eff", "EFF501")
    assert "12 samples" in from_csv.message and "11 samples" in inline.message
    # steps.csv: first 9.81 s; the median of the other 11 (sorted: 3.98 3.99 4.00 4.00 4.01
    # 4.01 4.02 4.02 4.03 4.05 5.20) is the 6th, 4.01 s: 9.81 / 4.01 = 2.4.
    assert from_csv.notes == ("the first sample (9.81 s) is 2.4× the median of the others (4.01 s)",)
    assert inline.notes == ()


def test_eff502_states_how_many_samples():
    diags = _file_diags(FIXTURES / "EFF502" / "fail_few_samples.eff", "EFF502")
    messages = [d.message for d in diags]
    assert "has only 5 `step_time` samples" in messages[0]
    assert "single value (4.0 s)" in messages[1]
    assert "keeps only 8 `step_time` samples after warm-up (12 given, 4 excluded)" in messages[2]
    assert "keeps only 1 `step_time` sample after warm-up (4 given, 3 excluded)" in messages[3]


def test_example_c_gets_eff502_for_both_runs():
    counts = sorted(re.search(r"only (\d+)", d.message).group(1)
                    for d in _file_diags(EXAMPLES / "example_c_scaling.eff", "EFF502"))
    assert counts == ["5", "6"]


def test_eff503_states_share_steps_and_predicted_vs_actual():
    # Example C scaled_64: sorted 0.60 0.60 0.60 0.61 0.62 0.97 -> median (0.60 + 0.61) / 2
    # = 0.605 s; threshold 1.5 x 0.605 = 0.9075 s; one stall, 0.97 / 4.00 = 24.25 %;
    # predicted 6 x 0.605 = 3.63 s, actual 4.00 s: 4.00 / 3.63 - 1 = +10.19 %.
    [d] = _file_diags(EXAMPLES / "example_c_scaling.eff", "EFF503")
    assert "`scaled_64`" in d.message
    assert "1 of 6 steps is slower than 1.5 × the median (0.9075 s)" in d.message
    assert "holds 24.25 % of the summed time" in d.message
    assert "the median predicts 3.63 s for the 6 steps (6 × 0.605 s), the actual sum is 4 s (+10.2 %)" in d.message
    assert "statistic = mean" in d.help


def test_eff503_fires_on_completion_excess_without_stalls():
    # 6 x 1.0 s and 5 x 1.4 s: median 1.0 s, no step above 1.5 s; predicted 11 s,
    # actual 6 + 7 = 13 s: +18.2 %.  The caret is on `statistic = median`.
    path = FIXTURES / "EFF503" / "fail_tail_dominates.eff"
    _, d = _file_diags(path, "EFF503")
    assert "5 of 11 are slower than the median" in d.message
    assert "predicts 11 s" in d.message and "actual sum is 13 s (+18.2 %)" in d.message
    assert path.read_text().splitlines()[d.span.line - 1][d.span.column - 1 :].startswith("median")


def test_eff504_example_c_has_no_boundary():
    runs = sorted(re.search(r"run `(\w+)`", d.message).group(1)
                  for d in _file_diags(EXAMPLES / "example_c_scaling.eff", "EFF504"))
    assert runs == ["base_8", "scaled_64"]


# ---------------------------------------------------------------------------- rule pages


def _doc_blocks(code: str) -> tuple[str, str]:
    doc = inspect.getdoc(type(rule_for(code)))
    example = doc.split("## Example", 1)[1].split("## Use instead", 1)[0]
    instead = doc.split("## Use instead", 1)[1]
    [bad] = re.findall(r"```eff\n(.*?)```", example, re.S)
    [good] = re.findall(r"```eff\n(.*?)```", instead, re.S)
    return bad, good


@pytest.mark.parametrize("code", MY_CODES)
def test_rule_page_examples_trigger_and_fix(code):
    rule = rule_for(code)
    assert rule is not None and rule.name and rule.nodes
    doc = inspect.getdoc(type(rule))
    for section in ("What it does", "Why is this bad?", "Example", "Use instead"):
        assert f"## {section}" in doc
    bad, good = _doc_blocks(code)
    bad_result, good_result = effspec.check_text(bad), effspec.check_text(good)
    # Complete, compilable specs: no front-end diagnostics.
    assert not [d for d in bad_result.diagnostics + good_result.diagnostics if d.code < "EFF100"]
    assert any(d.code == code for d in bad_result.diagnostics)
    assert not any(d.code == code for d in good_result.diagnostics)


def test_eff404_zero_share_is_reported_without_dividing_by_zero():
    # Claimed MFU 40 % against a 0 % model-compute share (0 % + 0.5 % rounding < 40 %).
    text = _run("r", 64, 256, timing="", extra=(
        "claim mfu = 40 %\n  breakdown { model_compute = 0 %  exposed_comm = 90 %  unclassified = 10 % }"))
    [d] = _diags(text, "EFF404")
    assert "`model_compute` is 0 % of the step" in d.message and "claimed MFU is 40 %" in d.message
    assert "no time is left" in d.message
