"""The `TODO` placeholder: EFF040 on the value, with a help line saying what the key takes.

`effspec import` writes `TODO` wherever a log is silent; these tests pin the
front end's side of it: the code, the position, the message and the help for
each kind of key, that a placeholder never reaches evaluation, and that it is
not also reported as a missing required key.
"""

from __future__ import annotations

from effspec import check_text

PLACEHOLDER_SPEC = """eff 1

run r {
  model { kind = dense_transformer  layers = TODO  d_model = 768  heads = 12  ffn = gelu  d_ff = 3072  vocab = 50304 }
  hardware { accelerator = TODO  count = 8 device  dtype = TODO  peak = TODO }
}
"""


def test_todo_is_eff040_on_the_placeholder_with_what_the_key_takes() -> None:
    result = check_text(PLACEHOLDER_SPEC)
    diags = [(d.code, d.span.line, d.span.column, d.message) for d in result.diagnostics]
    assert diags == [
        ("EFF040", 4, 46, "`model.layers` is left to fill in: transformer blocks (L)"),
        ("EFF040", 5, 28, "`hardware.accelerator` is left to fill in"),
        ("EFF040", 5, 60, "`hardware.dtype` is left to fill in: the datatype of the model matmuls"),
        ("EFF040", 5, 73, "`hardware.peak` is left to fill in: per-device peak: a quantity, or `catalog`"),
    ]
    helps = {d.message.split("`")[1]: d.help for d in result.diagnostics}
    assert helps["model.layers"].startswith("replace `TODO` with a whole number")
    assert helps["hardware.accelerator"].startswith('replace `TODO` with a "string": the device, e.g. "H100-SXM5-80GB"')
    assert "`bf16`, `fp16`, `fp8`, `tf32`, `fp32`, `int8`, `nvfp4`, `mxfp4`, `fp6`" in helps["hardware.dtype"]
    assert "a quantity in `FLOP/s` (e.g. `989.4 TFLOP/s`), or `catalog`" in helps["hardware.peak"]
    assert result.evaluation is None  # a spec with a placeholder is never evaluated


def test_todo_in_a_required_key_is_not_also_a_missing_key() -> None:
    result = check_text('eff 1\nrun r { hardware { accelerator = "A100-SXM4-40GB"  count = TODO } }\n')
    assert [d.code for d in result.diagnostics] == ["EFF040"]


def test_a_string_that_says_todo_is_a_string() -> None:
    result = check_text('eff 1\nrun r { hardware { accelerator = "TODO"  count = 8 device } }\n')
    assert "EFF040" not in {d.code for d in result.diagnostics}
