"""First contact (issue 31): page 1 is the verdict, the cards never contradict, `check` shows what passed.

The verdict sentences are derived here from the figures of each example, which the rest of the suite derives
by hand (tests/report/test_report.py): example B's 39.8 % MFU against the declared 624 TFLOP/s, and 79.6 % against the
dense 312 TFLOP/s (39.8 % x 624 / 312); Megatron GPT-3's 44.12 % MFU counts full recomputation.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import re

import pytest
from conftest import cli

import effspec
from effspec.report import render
from effspec.report.claim_summary import claim_lines

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))


def _squeeze(text: str) -> str:
    """Text with every space and line break removed, so PDF line wrapping cannot split a match."""
    return re.sub(r"\s+", "", text)


@pytest.fixture(scope="module")
def page_one(render_cache):
    """{example name: the text of page 1 of its PDF}: ``render(effspec.load(path), "pdf")``, from the session's
    render cache (tests/rendering.py), which the other report modules read too."""
    from pypdf import PdfReader
    from rendering import reports

    return {name: PdfReader(io.BytesIO(pdf)).pages[0].extract_text() or ""
            for name, pdf in reports(render_cache, EXAMPLES, "pdf").items()}


def _check(*argv: str) -> tuple[int, str, str]:
    done = cli("check", "--no-cache", *argv, env={**os.environ, "NO_COLOR": "1"})
    return done.returncode, done.stdout, done.stderr


# --- page 1 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_page_one_of_every_example_says_for_each_claim_whether_it_holds_and_on_what_basis(page_one, path):
    text = _squeeze(page_one[path.name])
    result = effspec.load(path)
    leads = claim_lines(result)
    assert leads, "every example has a run"
    summary = text.index(_squeeze("1 Summary"))
    for lead in leads:
        sentence = _squeeze(lead.sentence.replace("`", ""))
        assert sentence in text, lead.sentence
        assert text.index(sentence) > summary  # the summary opens with it, before the cards
        for claim in lead.claims:  # each claim is named in its run's sentence, with its verdict and basis
            assert f" {claim.claimed} " in lead.sentence, (claim.claim, lead.sentence)
            words = {"consistent": ("holds", "agree"), "mismatch": ("is not supported",),
                     "unrecoverable": ("cannot be checked",)}[claim.status]
            assert any(w in lead.sentence for w in words)
            if claim.basis_kind == "claim":  # the claim it rests on is named, and agreement is not measurement
                assert claim.basis in lead.sentence
                assert claim.status != "consistent" or "not with measurements" in lead.sentence
            else:
                assert claim.status == "unrecoverable" or claim.basis in lead.sentence
    # a reviewer who reads only page 1 learns every verdict before the findings count and the cards
    counts = text.index("Findings:", summary)
    assert all(text.index(_squeeze(lead.sentence.replace("`", ""))) < counts for lead in leads)


def test_example_b_verdict_names_the_sparse_peak_and_the_dense_figure():
    # 39.8 % against 624 TFLOP/s (declared, the 2:4-sparse figure); against the dense 312 TFLOP/s it is twice that
    lead = claim_lines(effspec.load(ROOT / "examples" / "example_b_vendor_claim.eff"))[0]
    assert lead.sentence == (
        "Run `vendor_claim`: the claimed 61 % MFU is not supported: claim `throughput` (line 30) implies 39.8 % "
        "against the declared peak, which is the 2:4-sparse figure (EFF202); against the dense BF16 peak it is "
        "79.6 %; the claimed 780,000 token/s cannot be checked: missing `timing.step_time`; the claimed 39 % "
        "exposed comm share cannot be checked: missing `breakdown`.")
    mfu, throughput, comm = lead.claims
    assert (mfu.status, mfu.basis_kind, mfu.reconstructed, mfu.corrected) == (
        "mismatch", "claim", "39.8 %", "79.6 % against the dense BF16 peak")
    assert (throughput.status, throughput.missing) == ("unrecoverable", "`timing.step_time`")
    assert comm.missing == "`breakdown`"


def test_a_claim_checked_against_another_claim_agrees_with_it_not_with_measurements():
    # Llama 3 Table 4: the MFU is implied by the TFLOP/s claim (no step time): 430e12 / 989.4e12 = 43.46 %
    lead = claim_lines(effspec.load(ROOT / "examples" / "llama3_405b_table4.eff"))[0]
    tflops, mfu = lead.claims
    assert tflops.status == "unrecoverable"
    assert (mfu.status, mfu.basis_kind, mfu.reconstructed) == ("consistent", "claim", "43.46 %")
    assert mfu.verdict == "agrees with claim `achieved_flops_per_device` (line 65), not with measurements"
    assert mfu.verdict_label == "agrees with a claim"
    assert lead.sentence.endswith("the claimed 43 % MFU agrees with the 43.46 % that claim `achieved_flops_per_device` "
                                  "(line 65) implies, not with measurements.")
    assert "holds" not in lead.sentence


def test_the_basis_is_measured_when_the_step_times_are_samples():
    # example A: 64 measured step times (a CSV column); 47.12 % MFU against the claimed 52 %
    lead = claim_lines(effspec.load(ROOT / "examples" / "example_a_measured.eff"))[0]
    assert lead.sentence.startswith("Run `llm3b_64`: the claimed 52 % MFU is not supported: the measured inputs "
                                    "give 47.12 %")
    assert {c.basis for c in lead.claims} == {"the measured inputs"}


def test_a_run_without_claims_says_so_and_gives_its_figures():
    # example C: no run claim; base_8's MFU and rate are reconstructed from its inputs
    leads = claim_lines(effspec.load(ROOT / "examples" / "example_c_scaling.eff"))
    assert [lead.owner for lead in leads] == ["base_8", "scaled_64"]
    assert leads[0].sentence.startswith("Run `base_8` makes no claim to check; the declared inputs give MFU ")
    assert leads[0].claims == ()


# --- the cards ----------------------------------------------------------------------------------------------


def _headline(path: str, run: int = 0):
    from effspec.report.sections import build

    return {h.label: h for h in build(effspec.load(ROOT / "examples" / path)).runs[run].headline}


def test_a_claimed_rate_that_implies_the_other_cards_is_shown_as_claimed_not_unrecoverable():
    cards = _headline("example_b_vendor_claim.eff")
    rate, step = cards["Valid tokens/s"], cards["Step time"]
    assert (rate.value, rate.status) == ("780,000 token/s", "claimed")
    assert "the figures marked implied rest on it" in rate.note
    assert rate.claimed == "780,000 token/s claimed: cannot be checked"
    assert (step.status, step.note) == ("implied", "implied by claim `throughput` (line 30)")
    assert "not recoverable" not in {h.status for h in cards.values()}


def test_an_mfu_card_checked_against_a_claim_says_so():
    cards = _headline("llama3_405b_table4.eff")
    # a card is narrow: it names the claim's line, and the note beneath names the claim
    assert cards["MFU"].claimed == "43 % claimed: agrees with the claim at line 65, not with measurements"
    assert cards["MFU"].note.startswith("implied by claim `achieved_flops_per_device` (line 65)")


def test_an_mfu_that_counts_recomputation_is_marked_hfu_like_with_the_figure_without_it():
    # Megatron GPT-3 175B (l=96, h=12288, s=2048, V=51200, d_ff=4h), preset megatron (recompute full counted):
    # forward per token: layers Lf = 96·(24h² + 4sh) = 357,556,027,392, logits G = 2hV = 1,258,291,200;
    # counted 4·Lf + 3·G (the recomputed forward), without it 3·(Lf + G): ratio 0.750658…
    lf, g = 96 * (24 * 12288**2 + 4 * 2048 * 12288), 2 * 12288 * 51200
    ratio = 3 * (lf + g) / (4 * lf + 3 * g)
    result = effspec.load(ROOT / "examples" / "megatron_gpt3_175b.eff")
    mfu = json.loads(render(result, "json"))["runs"]["megatron_gpt3_175b"]["metrics"]["mfu"]["value"]
    expected = f"{mfu * ratio * 100:.4g} %"
    assert expected == "33.12 %"
    card = _headline("megatron_gpt3_175b.eff")["MFU"]
    assert card.status == "hfu-like"
    assert card.corrected == f"{expected} without recomputation (EFF102)"
    assert "counts recomputation (EFF102)" in card.note
    line = next(c for c in claim_lines(result)[0].claims if c.metric == "mfu")
    assert line.hfu_like == expected
    assert f"it counts recomputation, so it is HFU-like: {expected} without it (EFF102)" in line.sentence


# --- effspec check ------------------------------------------------------------------------------------------


def test_check_text_ends_with_a_claims_summary_and_quiet_omits_it():
    spec = str(ROOT / "examples" / "example_b_vendor_claim.eff")
    code, out, _ = _check(spec)
    assert code == 1
    tail = out.rstrip("\n").split("\n\n")[-2:]
    claims, counts = tail
    assert counts == f"{spec}: 3 errors, 2 warnings, 1 info"
    assert claims.splitlines() == [
        "claims:",
        f"  NOT SUPPORTED      {spec}:29 vendor_claim.mfu = 61 %: 39.8 % implied by claim `throughput` (line 30); "
        "79.6 % against the dense BF16 peak",
        f"  CANNOT BE CHECKED  {spec}:30 vendor_claim.throughput = 780,000 token/s: missing `timing.step_time`",
        f"  CANNOT BE CHECKED  {spec}:31 vendor_claim.breakdown.exposed_comm = 39 %: missing `breakdown`",
    ]
    _, quiet, _ = _check("--quiet", spec)
    assert "claims:" not in quiet and "NOT SUPPORTED" not in quiet


def test_check_text_shows_claims_that_hold():
    # Mixtral 8x7B: 40.43 % MFU and 321,153 token/s from the inputs, both within the claims' rounding
    spec = str(ROOT / "examples" / "moe_declared_rate.eff")
    _, out, _ = _check(spec)
    assert f"  HOLDS  {spec}:73 mixtral_8x7b_64gpu.mfu = 40 %: 40.43 % from the declared inputs" in out.splitlines()
    assert any(line.startswith(f"  HOLDS  {spec}:74 mixtral_8x7b_64gpu.throughput = 321,000 token/s: 321,153 token/s")
               for line in out.splitlines())


def test_a_spec_without_claims_has_no_claims_summary():
    _, out, _ = _check(str(ROOT / "examples" / "straggler_ranks.eff"))
    assert "claims:" not in out


# --- messages -----------------------------------------------------------------------------------------------


def test_an_unknown_unit_on_a_key_that_takes_a_rate_names_the_keys_unit_in_the_help():
    text = "eff 1\nrun a {\n  work {\n    seq_len = 2048 tokens\n    global_batch = 8 sequence\n  }\n}\n"
    d = next(d for d in effspec.check_text(text).diagnostics if d.code == "EFF001")
    assert d.help == "write `token/sequence`, the unit `seq_len` takes"
    # the same word with the denominator written keeps it: only the first word is fixed
    d = next(d for d in effspec.check_text(text.replace("tokens", "tokens/sequence")).diagnostics
             if d.code == "EFF001")
    assert d.help == "write `token`"


def test_another_spelling_of_a_per_device_token_rate_points_at_the_per_device_metric_not_at_the_total():
    text = ('eff 1\nrun a {\n  hardware { accelerator = "H100-SXM5-80GB"  count = 8 device  dtype = bf16  peak = catalog }\n'
            '  claim tokens_per_gpu = 3000 token/s\n}\n')
    d = next(d for d in effspec.check_text(text).diagnostics if d.code == "EFF002")
    metric, form = ("claim tokens_per_second_per_device = 3000 token/s",
                    "claim throughput = 3000 token/s/device * hardware.count")
    assert d.help == f"one device's token rate is `{metric}`; the run's total is `{form}`"
    assert "did you mean" not in d.help and not d.fixes  # `tokens_per_second` would claim one device's rate
    # both forms it names compile: one device's 3000 token/s, and 3000 x 8 = 24,000 token/s for the run
    for written, key, value in ((metric, "tokens_per_second_per_device", 3000), (form, "valid_tokens_per_second", 24000)):
        fixed = effspec.check_text(text.replace("claim tokens_per_gpu = 3000 token/s", written))
        assert not [d for d in fixed.diagnostics if d.code.startswith("EFF0")]
        assert fixed.evaluation.runs["a"].claims[key].claimed == value


def test_every_runs_declared_inputs_are_one_table_and_identifiers_wrap_only_at_separators():
    # Llama 3's runs are claims-only (their inputs were a run-on paragraph); example A's is measured: one layout
    for name in ("llama3_405b_table4.eff", "example_a_measured.eff"):
        html = render(effspec.load(ROOT / "examples" / name), "html").decode("utf-8")
        inputs = html[html.index('<section id="inputs">'):html.index('<section id="convention">')]
        assert inputs.count('<table class="inputs two-up">') == 1  # the first run's; later like runs say what differs
        assert '<p class="inline-list">' not in inputs
        # an identifier in a cell carries break opportunities at its separators, none inside a word
        assert "<code>model.<wbr>kind</code>" in inputs and "<code>work.<wbr>seq_<wbr>len</code>" in inputs
        assert not re.search(r"<code>[^<]*[A-Za-z]<wbr>[A-Za-z]", inputs)
    # a preset's name in the convention table ("megatron_deepspeed_pre37 / 1" was broken mid-word)
    text = (ROOT / "examples" / "megatron_gpt3_175b.eff").read_text(encoding="utf-8")
    text = text.replace("preset = megatron ", "preset = megatron_deepspeed_pre371 ")
    html = render(effspec.check_text(text, "bloom.eff"), "html").decode("utf-8")
    presets = html[html.index('<section id="convention">'):html.index('<section id="derivations">')]
    assert "megatron_<wbr>deepspeed_<wbr>pre371" in presets and "megatron_deepspeed_pre371" not in presets
