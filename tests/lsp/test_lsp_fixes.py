"""The quick-fix table (effspec.lsp.fixes), applied to real diagnostics of the check.

Each case breaks SMALL one way, runs effspec.check_text, applies every fix
offered for the expected diagnostic, and checks the text is SMALL again with
the diagnostic gone.  No pygls needed: the server turns the same Fix objects
into code actions (tests/lsp/test_lsp.py applies one over JSON-RPC).
"""

from __future__ import annotations

import pytest

import effspec
from effspec.front import keys as K
from effspec.lsp.analysis import analyze
from effspec.lsp.fixes import fixes_for

SMALL = """eff 1
run small {
  model { kind = custom  flops_per_token = 1.2e10 FLOP/token  layers = 2 }
  convention { preset = megatron }
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  hardware { accelerator = "A100-SXM4-80GB"  count = 16 device  dtype = bf16  peak = catalog  measured_peak = 250 TFLOP/s }
  timing { step_time = [10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10] s  warmup = 0 step  statistic = median  boundary = "end" }
  claim mfu = 12.6 %
}
"""


def apply(text: str, fix) -> str:
    lines = text.split("\n")
    s = fix.span
    line = lines[s.line - 1]
    lines[s.line - 1] = line[: s.column - 1] + fix.new_text + line[s.end_column - 1:]
    return "\n".join(lines)


def fixes(text: str, code: str):
    from effspec.lsp.features import _claim_unit_at  # imports lsprotocol

    a = analyze("file:///tmp/fix.eff", text)
    unit = _claim_unit_at(a)
    diag = next(d for d in a.diagnostics if d.code == code)
    return diag, fixes_for(diag, a.source, unit)


CASES = [
    ("measured_peak = 250 TFLOP/s", "measured_peak = 250 TFLOPS", "EFF001", "TFLOP/s"),
    ("count = 16 device", "count = 16 GPUs", "EFF001", "device"),
    ("seq_len = 2048 token/sequence", "seq_len = 2048 tokens/sequence", "EFF001", "token"),
    ("statistic = median", "statistic = medain", "EFF003", "median"),
    ("preset = megatron", "preset = megatorn", "EFF003", "megatron"),
    ("layers = 2", "layer = 2", "EFF002", "layers"),
    ("claim mfu = 12.6 %", "claim mfu = 12.6", "EFF604", "12.6 %"),
]


@pytest.mark.parametrize("good, bad, code, new_text", CASES, ids=[c[1] for c in CASES])
def test_each_fix_restores_the_text(good, bad, code, new_text):
    pytest.importorskip("lsprotocol")
    assert not [d for d in effspec.check_text(SMALL).diagnostics if d.severity == "error"]
    broken = SMALL.replace(good, bad, 1)
    diag, offered = fixes(broken, code)
    assert [f.new_text for f in offered] == [new_text], diag
    fixed = apply(broken, offered[0])
    assert fixed == SMALL
    assert code not in [d.code for d in effspec.check_text(fixed).diagnostics]


def test_no_fix_where_the_help_names_no_replacement():
    pytest.importorskip("lsprotocol")
    _diag, offered = fixes(SMALL.replace("layers = 2", "zzzzqq = 2"), "EFF002")  # no close key: no guess
    assert offered == []
    # a bare ratio below 1 is a ratio (0.126 = 12.6 %): nothing to fix, and no EFF604
    assert "EFF604" not in [d.code for d in effspec.check_text(SMALL.replace("12.6 %", "0.126")).diagnostics]


def test_the_ratio_claims_are_the_unitless_claimables():
    assert {name for name, unit in K.CLAIMABLE.items() if unit == ""} >= {"mfu", "hfu"}
