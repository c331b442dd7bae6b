"""Fixes that keep a spec's meaning, and the findings around them (issue 26 item 10, issue 31).

A safe fix (`effspec check --fix`, `effspec fmt`, the editor's preferred quick
fix, SARIF's fix objects: one table, effspec.rules.fixes) is offered only when
the fixed text, checked again, has no new finding.  The specs below are small
enough to reason about by hand; the figures in the comments are derived there.
"""

from __future__ import annotations

import re

import effspec

# llm3b-like run: 64 H100s, a 2.56e9-parameter dense model, 4096 x 512 tokens per 1.108 s step.
RUN = """eff 1

run r {{
  model {{ kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }}
  convention {{ preset = palm  attention = causal }}
  work {{ seq_len = 4096 token/sequence  global_batch = 512 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog }}
{timing}
{claims}
}}
"""
TIMING = '  timing { step_time = [1.11, 1.10, 1.12, 1.10, 1.11] s  warmup = 0 step  boundary = "optimizer step" }'


def codes(text: str) -> list[str]:
    return [d.code for d in effspec.check_text(text, "spec.eff").diagnostics]


def test_a_bare_mfu_above_one_is_eff604_alone():
    """`claim mfu = 27` reads as 2700 %: impossible (EFF604).  EFF601 said the same again, with a
    meaningless "(tolerance ±77 %)" (half the last digit of 27 as a ratio, 0.5, plus 1 % of 27)."""
    found = effspec.check_text(RUN.format(timing=TIMING, claims="  claim mfu = 27"), "spec.eff").diagnostics
    assert "EFF604" in [d.code for d in found]
    assert "EFF601" not in [d.code for d in found]
    (eff604,) = [d for d in found if d.code == "EFF604"]
    assert "2700 %" in eff604.message and "did you mean `27 %`?" in eff604.message


def test_a_possible_mfu_that_disagrees_is_still_eff601():
    """The same run claiming 30 % (the inputs give about 48 %) is EFF601, and not EFF604."""
    found = codes(RUN.format(timing=TIMING, claims="  claim mfu = 30 %"))
    assert "EFF601" in found and "EFF604" not in found


def test_eff603_help_reads_as_a_sentence():
    """Without timing, the token rate is implied by the claimed TFLOP/s per device: the help names that claim
    as the figure's basis, in a sentence ("the figure implied by claim `…` (line 9) is …")."""
    text = RUN.format(timing="", claims="  claim mfu = 40 %\n  claim tflops_per_device = 395.8 TFLOP/s")
    (eff603,) = [d for d in effspec.check_text(text, "spec.eff").diagnostics if d.code == "EFF603"]
    assert re.match(r"state the valid tokens per second beside the MFU: the figure implied by claim "
                    r"`tflops_per_device` \(line 10\) is [0-9,]+ token/s, e\.g\. `claim throughput = [0-9]+ token/s",
                    eff603.help), eff603.help
    assert "the implied by" not in eff603.help


def test_eff603_help_for_a_reconstructed_rate():
    text = RUN.format(timing=TIMING, claims="  claim mfu = 48 %")
    (eff603,) = [d for d in effspec.check_text(text, "spec.eff").diagnostics if d.code == "EFF603"]
    assert eff603.help.startswith("state the valid tokens per second beside the MFU: the figure reconstructed "
                                  "from the inputs is "), eff603.help
