"""Severity overrides and suppressions: line and file pragmas, and [tool.effspec]."""

from __future__ import annotations

from pathlib import Path

from effspec import check_text, load

# Two findings on this spec, on separate lines: EFF504 (no boundary, at
# `step_time` on line 7) and EFF502 (only 3 samples, same key).  EFF101 would
# fire without the convention; the peak on line 6 is the TF32 figure (EFF201).
SPEC = """eff 1
run r {
  model { kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }
  convention { preset = palm }
  work { seq_len = 128 token/sequence  global_batch = 8 sequence }
  hardware { accelerator = "A100-SXM4-80GB"  count = 8 device  dtype = bf16  peak = 156 TFLOP/s }
  timing { step_time = [0.5, 0.52, 0.49] s  warmup = 0 step }
}
"""


def codes(result):
    return sorted((d.code, d.severity) for d in result.diagnostics)


def test_baseline_findings():
    assert codes(check_text(SPEC)) == [("EFF201", "error"), ("EFF502", "warning"), ("EFF504", "warning")]


def test_line_pragma_drops_only_the_named_code_on_that_line():
    text = SPEC.replace("warmup = 0 step }", "warmup = 0 step }  # effspec: ignore[EFF504]")
    assert codes(check_text(text)) == [("EFF201", "error"), ("EFF502", "warning")]


def test_bare_line_pragma_drops_every_finding_on_the_line():
    text = SPEC.replace("warmup = 0 step }", "warmup = 0 step }  # effspec: ignore")
    assert codes(check_text(text)) == [("EFF201", "error")]


def test_line_pragma_does_not_reach_other_lines():
    text = SPEC.replace("peak = 156 TFLOP/s }", "peak = 156 TFLOP/s }  # effspec: ignore[EFF504]")
    assert codes(check_text(text)) == [("EFF201", "error"), ("EFF502", "warning"), ("EFF504", "warning")]


def test_file_pragma_and_severity_override():
    text = "# effspec: file-ignore[EFF502]\n# effspec: severity[EFF201]=warning\n" + SPEC
    assert codes(check_text(text)) == [("EFF201", "warning"), ("EFF504", "warning")]


def test_front_end_errors_cannot_be_suppressed():
    text = SPEC.replace("ffn = gelu", "ffn = gelo") + "# effspec: file-ignore[EFF003]\n"
    assert ("EFF003", "error") in codes(check_text(text))


def test_pyproject_settings_apply_to_specs_below_it(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.effspec]\nignore = ["EFF504"]\nseverity = { EFF502 = "info" }\n')
    (tmp_path / "paper").mkdir()
    spec = tmp_path / "paper" / "run.eff"
    spec.write_text(SPEC)
    assert codes(load(spec)) == [("EFF201", "error"), ("EFF502", "info")]


def test_pyproject_without_tool_section_changes_nothing(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    spec = tmp_path / "run.eff"
    spec.write_text(SPEC)
    assert codes(load(spec)) == [("EFF201", "error"), ("EFF502", "warning"), ("EFF504", "warning")]
