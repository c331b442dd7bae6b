"""Fixes that keep a spec's meaning, and the findings around them (issue 26 item 10, issue 31).

A safe fix (`effspec check --fix`, `effspec fmt`, the editor's preferred quick
fix, SARIF's fix objects: one table, effspec.rules.fixes) is offered only when
the fixed text, checked again, has no new finding.  The specs below are small
enough to reason about by hand; the figures in the comments are derived there.
"""

from __future__ import annotations

import re
from collections import Counter

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


# --- a safe fix never changes meaning (issue 26, item 10) -------------------------------------------------------

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from conftest import cli as run_effspec  # noqa: E402

from effspec.cli.fix import fix_text  # noqa: E402
from effspec.fmt import format_text, ir_signature  # noqa: E402
from effspec.rules.fixes import vet  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# The spec: three unit spellings, each EFF001.  `GFLOPs` is read by the parser's help as a rate
# (`GFLOP/s`), which after `/token` is FLOP/(token*s): EFF010, as `flops_per_token` is in FLOP/token.  `tokens`
# is read as `token`, EFF010 again, as `seq_len` is in token/sequence.  `TFLOPS` is `TFLOP/s`, the peak's unit.
THREE = """eff 1

run units {
  model { kind = custom  flops_per_token = 6 GFLOPs/token }
  convention { preset = palm }
  work { seq_len = 2048 tokens  global_batch = 510 sequence }
  hardware { accelerator = "H100-SXM5-80GB"  count = 1 device  dtype = bf16  peak = 989.4 TFLOPS from datasheet "H100 SXM, dense BF16" }
  timing { step_time = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1] s  warmup = 0 step  boundary = "optimizer step" }
}
"""


def recheck(text: str):
    return effspec.check_text(text, "spec.eff").diagnostics


def offers_of(text: str):
    result = effspec.check_text(text, "spec.eff")
    return {(o.diag.span.line, o.fix.new_text): o.fix.safe for o in vet(result.diagnostics, text, recheck, result.spec)}


def test_gflops_per_token_is_fixed_as_a_count_never_a_rate():
    offered = offers_of(THREE)
    assert offered[(4, "GFLOP")] is True  # `6 GFLOP/token`
    assert (4, "GFLOP/s") not in offered  # refuted: EFF010 on the fixed value
    fixed = fix_text(THREE, "spec.eff", None, {}).text
    assert "flops_per_token = 6 GFLOP/token }" in fixed and "GFLOP/s" not in fixed
    # the IR: 6e9 FLOP per token, as the hand-written spelling
    by_hand = THREE.replace("6 GFLOPs/token", "6 GFLOP/token").replace("2048 tokens", "2048 token/sequence") \
        .replace("TFLOPS", "TFLOP/s")
    assert ir_signature(fix_text(THREE, "spec.eff", None, {}, unsafe=True).text) == ir_signature(by_hand)


def test_seq_len_in_tokens_gets_the_key_unit_and_only_as_an_unsafe_fix():
    offered = offers_of(THREE)
    assert (6, "token") not in offered  # `2048 token` is EFF010: `seq_len` takes token/sequence
    assert offered[(6, "token/sequence")] is False  # it adds a denominator the author did not write
    fixed = fix_text(THREE, "spec.eff", None, {}).text
    assert "seq_len = 2048 tokens " in fixed  # left as written by the safe fixes
    assert "seq_len = 2048 token/sequence " in fix_text(THREE, "spec.eff", None, {}, unsafe=True).text


def test_fixed_count_matches_what_was_shown_and_names_the_held_back_fix(tmp_path):
    spec = tmp_path / "spec.eff"
    spec.write_text(THREE, encoding="utf-8")
    shown = run_effspec("check", "spec.eff", cwd=tmp_path)
    assert "spec.eff: 3 errors" in shown.stdout
    assert shown.stderr.splitlines() == [
        "[*] 2 fixable with --fix", "(1 hidden fix can be enabled with --unsafe-fixes)",
        "  spec.eff:6:25 EFF001: Write `token/sequence`, the unit `seq_len` takes"]
    proc = run_effspec("check", "--fix", "spec.eff", cwd=tmp_path)
    assert proc.stderr.splitlines() == [
        "Fixed 2 errors",
        "  spec.eff:4:46 EFF001: Write `GFLOP` (a count of FLOPs: `flops_per_token` is in `FLOP/token`)",
        "  spec.eff:7:91 EFF001: Write `TFLOP/s`",
        "(1 hidden fix can be enabled with --unsafe-fixes)",
        "  spec.eff:6:25 EFF001: Write `token/sequence`, the unit `seq_len` takes"]
    # 3 shown - 2 fixed = the 1 error the check after the fix shows, and no new one
    assert "spec.eff: 1 error" in proc.stdout and proc.stdout.count("error[") == 1
    assert "error[EFF001]: unknown unit `tokens`" in proc.stdout


def test_a_table_safe_fix_that_brings_a_new_finding_is_held_back_and_says_why(tmp_path):
    """`claim mfu = 27` -> `27 %` is the table's safe fix, but these inputs give 48.11 %: the fixed claim would be
    EFF601.  So `--fix` alone does not make it, and the hidden fix names the finding it brings."""
    spec = tmp_path / "spec.eff"
    spec.write_text(RUN.format(timing=TIMING, claims="  claim mfu = 27"), encoding="utf-8")
    proc = run_effspec("check", "--fix", "spec.eff", cwd=tmp_path)
    assert proc.stderr.splitlines() == [
        "(1 hidden fix can be enabled with --unsafe-fixes)",
        "  spec.eff:9:15 EFF604: Write `27 %` (a bare ratio above 1 reads as 2700 %); not safe: it brings EFF601 on line 9"]
    assert spec.read_text(encoding="utf-8").endswith("  claim mfu = 27\n}\n")
    # a claim the inputs agree with: the fix is proven, and made
    spec.write_text(RUN.format(timing=TIMING, claims="  claim mfu = 48.1"), encoding="utf-8")
    proc = run_effspec("check", "--fix", "spec.eff", cwd=tmp_path)
    assert proc.stderr.splitlines()[:2] == ["Fixed 1 error", "  spec.eff:9:15 EFF604: Write `48.1 %` (a bare ratio "
                                            "above 1 reads as 4810 %)"], proc.stderr
    assert spec.read_text(encoding="utf-8").endswith("  claim mfu = 48.1 %\n}\n")


def test_fmt_keeps_the_meaning_of_gflops_per_token_and_leaves_what_it_cannot_prove():
    only_gflops = THREE.replace("2048 tokens", "2048 token/sequence")
    out = format_text(only_gflops)
    assert out.text is not None and "flops_per_token = 6 GFLOP/token" in out.text
    assert ir_signature(out.text) == ir_signature(only_gflops.replace("GFLOPs", "GFLOP").replace("TFLOPS", "TFLOP/s"))
    refused = format_text(THREE)  # `tokens` has no safe fix: fmt stops at the errors, it does not guess
    assert refused.text is None and [d.code for d in refused.diagnostics] == ["EFF001"] * 3


def test_the_editor_and_sarif_offer_the_vetted_fixes():
    pytest.importorskip("lsprotocol")
    from lsprotocol import types as T

    from effspec.lsp.analysis import analyze
    from effspec.lsp.features import code_actions
    from effspec.report.sarif import sarif_log

    a = analyze("untitled:three.eff", THREE)
    everything = T.Range(start=T.Position(line=0, character=0), end=T.Position(line=20, character=0))
    actions = {(x.edit.changes[a.uri][0].range.start.line, x.edit.changes[a.uri][0].new_text): x.is_preferred
               for x in code_actions(a, everything)}
    assert actions == {(3, "GFLOP"): True, (5, "token/sequence"): False, (6, "TFLOP/s"): True}
    result = effspec.check_text(THREE, "three.eff")
    fixes = {(f["artifactChanges"][0]["replacements"][0]["deletedRegion"]["startLine"],
              f["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"]): f["properties"]["effspec/safe"]
             for res in sarif_log([result])["runs"][0]["results"] for f in res.get("fixes", ())}
    assert fixes == {(4, "GFLOP"): True, (6, "token/sequence"): False, (7, "TFLOP/s"): True}


# --- every safe fix of the table, on generated specs -------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

EXAMPLES = ROOT / "examples"
# The small examples (deepseek_v3 and straggler_ranks take ~1 s a check: left out to keep the property quick).
SPECS = {p.name: p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.eff"))
         if p.name not in ("deepseek_v3.eff", "straggler_ranks.eff")}
# A canonical unit -> spellings the fix table corrects (EFF001 "unknown unit" with "write `…`").
SPELLINGS = {
    "TFLOP/s": ["TFLOPS", "TFLOPs", "tflops"], "GFLOP/token": ["GFLOPs/token"], "FLOP/token": ["FLOPs/token"],
    "token/sequence": ["tokens/sequence"], "sequence": ["sequences"], "device": ["GPUs", "devices"],
    "token/s": ["tokens/s"], "token": ["tokens"],
}  # (`steps` and `params` are keys too: the parser reads `20 steps` as a value and a key, not a unit to fix)
_VALUE_UNIT = re.compile(r"(?<==)(\s*[0-9][0-9_.eE+]*\s+)(" + "|".join(
    re.escape(u) for u in sorted(SPELLINGS, key=len, reverse=True)) + r")(?=[\s}])")
_RATIO_CLAIM = re.compile(r"(claim\s+[mh]fu\s*=\s*[0-9][0-9.]*) %")


def _sites(text: str) -> list[tuple[int, int, str, list[str]]]:
    """(start, end, canonical, the wrong spellings) of each unit after a number, and each ratio claim's ` %`."""
    out = []
    for m in _VALUE_UNIT.finditer(text):
        if "#" not in text[text.rfind("\n", 0, m.start()) + 1:m.start()]:
            out.append((m.start(2), m.end(2), m.group(2), SPELLINGS[m.group(2)]))
    for m in _RATIO_CLAIM.finditer(text):
        out.append((m.end(1), m.end(), " %", [""]))
    return sorted(out)


@st.composite
def misspelled(draw):
    """An example spec with up to four of its units (or ratio claims' `%`) written wrong: (name, the valid text,
    the broken text, the broken sites as (start in the broken text, canonical, wrong))."""
    name = draw(st.sampled_from(sorted(SPECS)))
    text = SPECS[name]
    sites = _sites(text)
    picked = sorted(draw(st.sets(st.sampled_from(range(len(sites))), min_size=1, max_size=4)))
    broken, shift, where = text, 0, []
    for k in picked:
        start, end, canonical, wrongs = sites[k]
        wrong = draw(st.sampled_from(wrongs))
        broken = broken[:start + shift] + wrong + broken[end + shift:]
        where.append((start + shift, canonical, wrong))
        shift += len(wrong) - (end - start)
    return name, text, broken, where


def _each_site_restored_or_left(valid: str, broken: str, where, fixed: str) -> list[int]:
    """``fixed`` is ``broken`` with each site either back to its canonical unit or as written, and nothing else
    changed; returns the lines of the sites left."""
    pattern, at = [], 0
    for start, canonical, wrong in where:
        pattern += [re.escape(broken[at:start]), f"({re.escape(canonical)}|{re.escape(wrong)})"]
        at = start + len(wrong)
    pattern.append(re.escape(broken[at:]))
    m = re.fullmatch("".join(pattern), fixed, re.DOTALL)
    assert m is not None, "a fix wrote something other than the canonical unit"
    return [broken.count("\n", 0, start) + 1 for (start, canonical, wrong), got in zip(where, m.groups(), strict=True)
            if got == wrong and canonical != wrong]


@settings(max_examples=20, derandomize=True, deadline=None, database=None)
@given(case=misspelled())
def test_every_safe_fix_keeps_the_meaning_of_generated_specs(case):
    """`check --fix` (the safe fixes only) on an example with units misspelled: each fix writes the unit the
    example had, so the IR is the example's, or leaves the spelling (held back); and no finding appears that the
    example does not have, but on a line whose fix was held back."""
    name, valid, broken, where = case
    folder = str(EXAMPLES)
    fixed = fix_text(broken, name, folder, {}).text
    left = _each_site_restored_or_left(valid, broken, where, fixed)
    if not left:
        assert fixed == valid
        assert ir_signature(fixed, folder) == ir_signature(valid, folder)
    known = Counter((d.code, d.span.line if d.span else 0) for d in effspec.check_text(valid, name, folder).diagnostics)
    for d in effspec.check_text(fixed, name, folder).diagnostics:
        line = d.span.line if d.span else 0
        assert known[(d.code, line)] > 0 or line in left, (d.code, line, d.message, left)


@settings(max_examples=20, derandomize=True, deadline=None, database=None)
@given(case=misspelled())
def test_fmt_of_generated_specs_means_what_the_example_means(case):
    """`effspec fmt` on the same inputs: it formats only when it can fix every unit safely, and then its output
    compiles to the example's IR (with the ratio claims' `%` as the broken text has them: fmt fixes only syntax)."""
    name, valid, broken, where = case
    out = format_text(broken)
    if out.text is None:
        assert out.diagnostics and all(d.code == "EFF001" for d in out.diagnostics)
        return
    only_ratios = broken
    for start, canonical, wrong in reversed(where):
        if canonical != " %":
            only_ratios = only_ratios[:start] + canonical + only_ratios[start + len(wrong):]
    folder = str(EXAMPLES)
    assert ir_signature(out.text, folder) == ir_signature(only_ratios, folder)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_unit_of_an_example_misspelled_at_once(name):
    """Each example with every unit site written wrong (the first wrong spelling): `check --fix` restores every one
    to the example's unit (so the property above cannot pass by fixing nothing), and the IR is the example's."""
    valid = SPECS[name]
    sites = [s for s in _sites(valid) if s[2] != " %"]
    if not sites:
        pytest.skip("no unit written after a number")
    broken, where, shift = valid, [], 0
    for start, end, canonical, wrongs in sites:
        broken = broken[:start + shift] + wrongs[0] + broken[end + shift:]
        where.append((start + shift, canonical, wrongs[0]))
        shift += len(wrongs[0]) - (end - start)
    fixed = fix_text(broken, name, str(EXAMPLES), {}).text
    assert _each_site_restored_or_left(valid, broken, where, fixed) == []
    assert fixed == valid and ir_signature(fixed, str(EXAMPLES)) == ir_signature(valid, str(EXAMPLES))


def test_fix_diff_names_the_held_back_fix_too(tmp_path):
    """`--fix --diff` writes nothing and no check follows it: the hint still names the fix it leaves."""
    spec = tmp_path / "spec.eff"
    spec.write_text(THREE, encoding="utf-8")
    proc = run_effspec("check", "--fix", "--diff", "spec.eff", cwd=tmp_path)
    assert proc.returncode == 1 and "+  model { kind = custom  flops_per_token = 6 GFLOP/token }" in proc.stdout
    assert proc.stderr.splitlines() == [
        "Would fix 2 errors",
        "  spec.eff:4:46 EFF001: Write `GFLOP` (a count of FLOPs: `flops_per_token` is in `FLOP/token`)",
        "  spec.eff:7:91 EFF001: Write `TFLOP/s`",
        "(1 hidden fix can be enabled with --unsafe-fixes)",
        "  spec.eff:6:25 EFF001: Write `token/sequence`, the unit `seq_len` takes"]
    assert spec.read_text(encoding="utf-8") == THREE
