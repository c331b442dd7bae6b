"""The numbers-only gap search (issue 29) gives what the full evaluation gives.

engine.gap re-evaluates each candidate change of a mismatching run inside
``display.numbers_only()``: no derivation text is printed, only the numbers are
kept. ``gap.NUMBERS_ONLY = False`` forces the old path (each re-evaluation in
full, text and all); these tests compare the two on seeded generated specs and
on the examples, and compare the text, JSON and SARIF output byte for byte.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest

import effspec
from effspec import display
from effspec.engine import gap

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from gap_bench import digests  # noqa: E402
from gen import generate_spec  # noqa: E402


def _varied(seed: int) -> str:
    """A generated 4-run spec whose claims are each moved by a seeded factor: some land on a
    candidate's figure (megatron's MFU is 4/3 of palm's here), most on none; throughput too."""
    rng = random.Random(seed)
    text = generate_spec(4, seed=seed, mismatch=rng.random() < 0.5)

    def mfu(m: re.Match[str]) -> str:
        return f"claim mfu        = {rng.choice((30, 36, 45, 48, 59, 60, 66, 90))} %"

    def throughput(m: re.Match[str]) -> str:
        return f"claim throughput = {float(m[1]) * rng.choice((1, 0.5, 2, 8, 1 / 8, 1.3)):.3g}"

    text = re.sub(r"claim mfu        = \d+ %", mfu, text)
    return re.sub(r"claim throughput = ([0-9.e+]+)", throughput, text)


def _search(text: str, numbers_only: bool, monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], object]:
    monkeypatch.setattr(gap, "NUMBERS_ONLY", numbers_only)
    result = effspec.check_text(text, "varied.eff")
    out: dict[tuple[str, str], object] = {}
    for rid, run in result.evaluation.runs.items():
        for name, cr in run.claims.items():
            out[rid, name] = (cr.status, cr.reconstructed, cr.searched, dict(cr.by_preset),
                              [(e.change, e.value, e.candidate) for e in cr.explanations])
    return out


@pytest.mark.parametrize("seed", range(12))
def test_numbers_only_search_finds_what_the_full_evaluation_finds(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _varied(seed)
    fast, full = _search(text, True, monkeypatch), _search(text, False, monkeypatch)
    assert fast == full
    # The corpus exercises the search: mismatches searched, and some reproduced by a change.
    searched = [v for v in fast.values() if v[2]]
    assert searched


def test_the_varied_corpus_has_explained_and_unexplained_mismatches(monkeypatch: pytest.MonkeyPatch) -> None:
    found = [v for s in range(12) for v in _search(_varied(s), True, monkeypatch).values() if v[2]]
    assert any(v[4] for v in found) and any(not v[4] for v in found)
    # 60 % against a palm MFU of ~45 %: megatron counts 4/3 of palm's FLOPs here (the generator's note),
    # so some 60 % claim is reproduced by `preset = megatron`.
    assert any(any(c == "preset = megatron" for c, _, _ in v[4]) for v in found)


def test_examples_search_the_same_numbers_only(monkeypatch: pytest.MonkeyPatch) -> None:
    for path in sorted((ROOT / "examples").glob("*.eff")):
        text = path.read_text(encoding="utf-8")
        results = []
        for numbers_only in (True, False):
            monkeypatch.setattr(gap, "NUMBERS_ONLY", numbers_only)
            r = effspec.check_text(text, path.name, str(path.parent))
            results.append({(rid, n): (cr.explanations, cr.by_preset, cr.searched)
                            for rid, run in r.evaluation.runs.items() for n, cr in run.claims.items()})
        assert results[0] == results[1], path.name


def test_output_is_byte_identical_to_the_full_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text, JSON and SARIF of every example and of 20 mismatching and 20 clean generated specs, numbers-only
    against the full path. (When the change was made, both also equalled the digests of the code before it,
    benchmarks/gap_bench.py --digests on 6e7f82f; a stored digest would change with every new rule's SARIF entry.)"""
    monkeypatch.setattr(gap, "NUMBERS_ONLY", False)
    full = digests()
    monkeypatch.setattr(gap, "NUMBERS_ONLY", True)
    fast = digests()
    assert len(fast) == 3 * (len(list((ROOT / "examples").glob("*.eff"))) + 40)
    assert fast == full


def test_numbers_only_prints_nothing_and_restores_the_text() -> None:
    # 137.7e12 FLOP/s reads "137.7 TFLOP/s" (quantity: the T prefix, 4 significant digits).
    assert display.quantity(137.7e12, "FLOP/s") == "137.7 TFLOP/s"
    with display.numbers_only():
        assert display.quantity(137.7e12, "FLOP/s") == ""
        assert display.exact_operands([(1.0, "s"), (2.0, "s")], lambda x: x[0] + x[1], (3.0, "s")) == ["", ""]
    assert display.quantity(137.7e12, "FLOP/s") == "137.7 TFLOP/s"
    with pytest.raises(ZeroDivisionError), display.numbers_only():
        1 / 0  # noqa: B018
    assert display.percent(0.5) == "50 %"


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = gap.reevaluate
    monkeypatch.setattr(gap, "reevaluate", lambda run, *rest: calls.append(run.id) or real(run, *rest))
    return calls


def test_generated_mismatches_are_searched_from_numbers_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """gap.Figures follows the evaluation for a run with samples, a catalog peak and literal claims:
    no candidate of the generated corpus is re-evaluated in full."""
    calls = _counted(monkeypatch)
    result = effspec.check_text(generate_spec(4, seed=3, mismatch=True), "m.eff")
    mismatched = [cr for run in result.evaluation.runs.values() for cr in run.claims.values() if cr.status == "mismatch"]
    assert len(mismatched) == 4 and all(cr.searched for cr in mismatched)
    assert calls == []


IMPLIED = """eff 1
run r {
  model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
  convention { preset = palm }
  work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
  hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
  claim throughput = 1.24e5 token/s
  claim mfu = 60 %
}
"""


def test_a_step_implied_by_a_claim_takes_the_full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """No timing: the MFU is checked against the step the claimed throughput implies (check_claims),
    which Figures does not follow, so each candidate is re-evaluated in full, with the same result."""
    calls = _counted(monkeypatch)
    fast = _search(IMPLIED, True, monkeypatch)
    assert fast["r", "mfu"][0] == "mismatch" and fast["r", "mfu"][2]  # searched
    assert calls and set(calls) == {"r"}
    assert fast == _search(IMPLIED, False, monkeypatch)


def _claims(result: effspec.Result) -> dict[tuple[str, str], object]:
    return {(rid, n): (cr.status, cr.reconstructed, cr.searched, dict(cr.by_preset), cr.explanations)
            for rid, run in result.evaluation.runs.items() for n, cr in run.claims.items()}


def test_an_unchanged_run_keeps_its_search_across_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The language server's incremental parser hands an unchanged run back as the same IR object: its
    search is remembered (gap._memo), and only the edited run is searched again, with the output of a
    fresh check."""
    from effspec.lsp.incremental import IncrementalParser
    from effspec.report.text import text as text_output

    gap.clear_memo()
    text = generate_spec(4, seed=5, mismatch=True)
    parser = IncrementalParser()
    effspec.check_text(text, "m.eff", parse=parser.parse, memo=parser.memo)
    calls: list[str] = []
    real = gap.candidate_values
    monkeypatch.setattr(gap, "candidate_values", lambda run, *rest: calls.append(run.id) or real(run, *rest))
    claim = "claim mfu        = 60 %"
    assert text.count(claim) == 4
    edited = text.replace(claim, "claim mfu        = 61 %", 1)  # the first run's claim only
    again = effspec.check_text(edited, "m.eff", parse=parser.parse, memo=parser.memo)
    first = next(iter(again.evaluation.runs))
    assert calls and set(calls) == {first}
    fresh = effspec.check_text(edited, "m.eff")
    assert _claims(again) == _claims(fresh)
    assert text_output(again) == text_output(fresh)


def test_an_unchanged_run_keeps_its_intervals_and_sensitivities_across_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the search: an unchanged run's intervals and "consistent if … were" changes are remembered
    (intervals.MEMO), only the edited run's are computed again, and the output is a fresh check's, the
    notes that print them included."""
    from effspec.engine import intervals
    from effspec.lsp.incremental import IncrementalParser
    from effspec.report.text import result_json
    from effspec.report.text import text as text_output

    gap.clear_memo()
    text = generate_spec(4, seed=5, mismatch=True)
    parser = IncrementalParser()
    first_check = effspec.check_text(text, "m.eff", parse=parser.parse, memo=parser.memo)
    result_json(first_check)  # every interval computed (JSON shows them all)
    calls: list[str] = []
    real = intervals.Evaluator.figures
    monkeypatch.setattr(intervals.Evaluator, "figures", lambda self, run: calls.append(run.id) or real(self, run))
    edited = text.replace("claim mfu        = 60 %", "claim mfu        = 61 %", 1)
    again = effspec.check_text(edited, "m.eff", parse=parser.parse, memo=parser.memo)
    again_text, again_json = text_output(again), result_json(again)  # the text first: it shows only the intervals
    first = next(iter(again.evaluation.runs))                        # a verdict needed, JSON forces the rest
    assert calls and set(calls) == {first}
    monkeypatch.setattr(intervals.Evaluator, "figures", real)
    fresh = effspec.check_text(edited, "m.eff")
    assert again_text == text_output(fresh)
    assert again_json == result_json(fresh)
    assert any("consistent if" in note for d in again.diagnostics if d.code == "EFF601" for note in d.notes)


_MODEL = ("kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  kv_heads = 4  ffn = swiglu  "
          "d_ff = 5632  vocab = 32000")
_HW = 'hardware { accelerator = "H100-SXM5-80GB"  count = 16 device  dtype = bf16  peak = catalog }'
_STEPS = 'timing { step_time = [1.00, 1.02, 0.98, 1.01, 1.00] s  warmup = 0 step  boundary = "optimizer step" }'
_CLAIMS = ("claim mfu = 31 %\n  claim hfu = 36 %\n  claim throughput = 600000 token/s\n"
           "  claim achieved_flops_per_device = 400 TFLOP/s\n  claim step_time = 0.9 s\n"
           "  claim flops_per_token = 9 GFLOP/token\n  claim model_flops_per_step = 4.6 PFLOP")


def _variant(model: str = _MODEL, convention: str = "preset = palm  attention = causal", work: str = "",
             parallelism: str = "dp = 16", hardware: str = _HW, timing: str = _STEPS) -> str:
    return f'''eff 1
run r {{
  model {{ {model} }}
  convention {{ {convention} }}
  work {{ seq_len = 4096 token/sequence  global_batch = 128 sequence {work} }}
  parallelism {{ {parallelism} }}
  {hardware}
  {timing}
  {_CLAIMS}
}}
'''


@pytest.mark.parametrize("text", [
    _variant(),
    _variant(convention="preset = palm  attention = causal  padding = included", work="padded_tokens = 40000 token"),
    _variant(work="executed_flops = 5 PFLOP"),
    _variant(parallelism="dp = 16  recompute = selective", convention="preset = megatron_lm"),
    _variant(model="kind = custom  flops_per_token = 8 GFLOP/token"),
    _variant(timing='timing { throughput = 500000 token/s  boundary = "optimizer step" }'),
    _variant(timing='timing { achieved_flops_per_device = 300 TFLOP/s  boundary = "optimizer step" }'),
    # a sample faster than the peak allows (0.01 s): the evaluation leaves it out (EFF505), the fast path defers
    _variant(timing='timing { step_time = [1.00, 0.01, 0.98, 1.01, 1.00] s  warmup = 0 step  boundary = "optimizer step" }'),
    _variant(timing='timing { step_time = [3.0, 1.00, 1.02, 0.98, 1.01, 1.00] s  warmup = 1 step  statistic = mean  '
                    'boundary = "optimizer step" }'),
    _variant(hardware=_HW + '\n  hardware { accelerator = "A100-SXM4-80GB"  count = 8 device  dtype = bf16  peak = catalog }'),
    _variant(hardware='hardware { accelerator = "H100-SXM5-80GB"  count = 16 device  unavailable = 2 device  dtype = fp8  '
                      'peak = catalog }'),
    _variant(model=_MODEL + "  sliding_window = 1024 token  mtp_depth = 1  head_dim = 256"),
])
def test_the_numbers_only_figures_follow_the_evaluation(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each claimable figure the fast path computes, on the evaluation's branches (padding counted, a declared
    executed count, recomputation that ran, a custom count, a throughput or FLOP/s instead of samples, an
    implausible sample, a warm-up with the mean, two pools, unavailable devices, windows, MTP and a head size):
    the search's findings equal the full re-evaluation's."""
    gap.clear_memo()
    fast = _search(text, True, monkeypatch)
    assert any(v[0] == "mismatch" for v in fast.values())
    assert fast == _search(text, False, monkeypatch)
