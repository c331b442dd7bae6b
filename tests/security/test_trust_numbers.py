"""The numbers keep the audit's promises (issue 26, items 5 and 13).

Item 5: an extreme but legal input never reaches an internal error (EFF099).
Every figure passes one finiteness boundary (effspec.engine.finite) before any
output format sees it: a figure that is not finite, or a divisor that
underflowed to zero, is EFF702 at the input it rests on; a per-rank table of
perfectly balanced ranks is a diagnosis, not NaN.  Each reproduction of the
issue is checked in every format (check: text, json, sarif; report: json,
html), then a seeded hypothesis property puts extreme values into the numeric
literals of every example and requires strict JSON and no EFF099.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from conftest import cli

import effspec
from effspec.engine.finite import divide, first_nonfinite

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))

MODEL = "model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }"
WORK = "work { seq_len = 2048 token/sequence  global_batch = 256 sequence }"


def strict(text: str) -> object:
    """JSON as a parser that refuses NaN and Infinity reads it."""
    def refuse(name: str) -> object:
        raise ValueError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


def ranks_spec(tmp_path: Path, compute: float, comm: float) -> Path:
    """Four ranks on one node, three steps, every rank the same compute and comm seconds."""
    (tmp_path / "ranks.csv").write_text("rank,node,step,compute,comm,stall\n" + "".join(
        f"{r},n0,{s},{compute},{comm},0\n" for s in (1, 2, 3) for r in range(4)), encoding="utf-8")
    path = tmp_path / "balanced.eff"
    path.write_text('eff 1\nrun a {\n  hardware { accelerator = "H100-SXM5-80GB"  count = 4 device  dtype = bf16  peak = catalog }\n'
                    '  timing { step_time = 1 s }\n  ranks { samples = file "ranks.csv" }\n}\n', encoding="utf-8")
    return path


SUBNORMAL_SCALING = f"""eff 1
run base {{
  {MODEL}
  convention {{ preset = palm }}
  {WORK}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = 1.0 s }}
}}
run big {{
  {MODEL}
  convention {{ preset = palm }}
  {WORK}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = 16 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = 5e-324 s }}
}}
scaling s {{ kind = strong  baseline = base  runs = [big] }}
"""

SUBNORMAL_PEAK = f"""eff 1
run a {{
  {MODEL}
  convention {{ preset = palm }}
  {WORK}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = 5e-324 FLOP/s }}
  timing {{ step_time = 5e-324 s }}
  claim mfu = 40 %
}}
"""


def every_format(path: Path, tmp_path: Path) -> dict[str, object]:
    """`check` in text, json and sarif and `report -o` json and html: none is an internal error,
    both JSON documents are strict; the parsed outputs by format."""
    outputs: dict[str, object] = {}
    for fmt in ("text", "json", "sarif"):
        done = cli(*["check", "--no-cache", "--format", fmt, str(path)])
        status, out = done.returncode, done.stdout
        assert status in (0, 1), (fmt, status, out)
        outputs[fmt] = out if fmt == "text" else strict(out)
    assert "[EFF099]" not in str(outputs["text"])
    assert "EFF099" not in {d["code"] for f in outputs["json"] for d in f["diagnostics"]}  # type: ignore[attr-defined]
    assert "EFF099" not in {r["ruleId"] for run in outputs["sarif"]["runs"] for r in run["results"]}  # type: ignore[index]
    for ext in ("json", "html"):
        target = tmp_path / f"out.{ext}"
        done = cli(*["report", str(path), "-o", str(target)])
        status, _ = done.returncode, done.stdout
        assert status in (0, 1) and target.exists(), ext
        body = target.read_text(encoding="utf-8")
        outputs[f"report.{ext}"] = strict(body) if ext == "json" else body
    assert "EFF099" not in {d["code"] for d in outputs["report.json"]["diagnostics"]}  # type: ignore[index]
    # `inf` only in a finding's notes (EFF702 shows the derivation that overflowed), never as a figure.
    figures = re.sub(r"note: .*?(?= · note:|</span>|</p>)", "", str(outputs["report.html"]), flags=re.DOTALL)
    assert not re.search(r"\b(nan|inf)\b", figures, re.IGNORECASE), "a figure that is not finite on the page"
    return outputs


# -- item 5: the reproductions ---------------------------------------------------------------


def test_ranks_that_all_compute_nothing_are_perfectly_balanced_not_nan(tmp_path: Path) -> None:
    # Every rank 0 s compute and 0.1 s comm: before the fix C / median(C) was 0 / 0, the
    # robust scale NaN, `check --format json` EFF099 (exit 2) and the HTML `+nan%`.
    out = every_format(ranks_spec(tmp_path, 0.0, 0.1), tmp_path)
    [file] = out["json"]  # type: ignore[misc]
    d = file["runs"]["a"]["diagnosis"]
    # No rank computes more than the typical one: excess 0, the spread of the excesses 0,
    # so the robust scale is its floor (ROBUST_SCALE_FLOOR = 1 %).
    assert d["typical_compute_excess"] == 0.0 and d["robust_scale"] == 0.01
    assert d["compute_spread"] == 0.0 and d["compute_share"] == 0.0
    assert d["family"] == "none" and d["ranks"] == []
    assert all(g["compute_excess"] == 0.0 for g in d["slowest_ranks"])
    assert "communication takes 100% of the rest" in d["reason"]
    assert out["report.json"]["runs"]["a"]["diagnosis"] == d  # type: ignore[index]
    [run] = out["sarif"]["runs"]  # type: ignore[index]
    assert {r["ruleId"] for r in run["results"]} == {"EFF101", "EFF605", "EFF502"}


def test_ranks_of_equal_positive_compute_have_zero_spread(tmp_path: Path) -> None:
    result = effspec.check_text(ranks_spec(tmp_path, 0.5, 0.1).read_text(), "t.eff", folder=str(tmp_path))
    d = result.evaluation.runs["a"].diagnosis.to_json()
    assert (d["compute_spread"], d["typical_compute_excess"], d["robust_scale"]) == (0.0, 0.0, 0.01)
    assert d["compute_share"] == pytest.approx(0.5 / 0.6)
    assert d["family"] == "none"


def test_a_subnormal_step_time_makes_no_infinite_speedup(tmp_path: Path) -> None:
    # 1.0 s / 5e-324 s overflows: the speedup, the strong efficiency and the series were
    # written as Infinity (JSON: EFF099).  Now EFF702 at `big`'s step time, line 14, column 24.
    path = tmp_path / "s.eff"
    path.write_text(SUBNORMAL_SCALING, encoding="utf-8")
    out = every_format(path, tmp_path)
    [file] = out["json"]  # type: ignore[misc]
    scaling = [d for d in file["diagnostics"] if d["code"] == "EFF702" and d["message"].startswith("scaling `s`")]
    assert [(d["line"], d["column"]) for d in scaling] == [(14, 24)]
    for figure in ("speedup[big]", "strong_scaling_efficiency[big]", "series speedup base → big"):
        assert f"`{figure}` (infinite)" in scaling[0]["message"]
    big = file["scalings"]["s"]["runs"]["big"]
    assert big["metrics"] == {} and big["missing"]["speedup"] == ["finite inputs (see EFF702)"]
    assert file["scalings"]["s"]["cumulative"] == [
        {"from": "base", "to": "big", "device_ratio": 2.0, "speedup": None, "efficiency": None}]
    assert "error[EFF702]: scaling `s`" in str(out["text"])
    [run] = out["sarif"]["runs"]  # type: ignore[index]
    assert sum(r["ruleId"] == "EFF702" for r in run["results"]) == 2  # the run's figures and the scaling's


def test_a_subnormal_peak_and_step_time_is_eff702_not_zero_division(tmp_path: Path) -> None:
    # 5e-324 s × 8 × 5e-324 FLOP/s underflows to 0: the MFU divided by it (ZeroDivisionError
    # in every format, and raised by check_text to API callers).
    result = effspec.check_text(SUBNORMAL_PEAK, "t.eff")
    [d] = [d for d in result.diagnostics if d.code == "EFF702"]
    assert (d.span.line, d.span.column) == (7, 24)  # the step time
    assert "`mfu` (infinite)" in d.message and "`hfu` (infinite)" in d.message
    run = result.evaluation.runs["a"]
    assert "mfu" in run.nonfinite and "mfu" not in run.metrics
    assert run.claims["mfu"].status == "unrecoverable"
    path = tmp_path / "p.eff"
    path.write_text(SUBNORMAL_PEAK, encoding="utf-8")
    out = every_format(path, tmp_path)
    [file] = out["json"]  # type: ignore[misc]
    assert file["runs"]["a"]["claims"]["mfu"]["status"] == "unrecoverable"


def test_divide_is_ieee_754_division() -> None:
    assert divide(6.0, 3.0) == 2.0
    assert divide(1.0, 0.0) == math.inf and divide(-1.0, 0.0) == -math.inf
    assert divide(1.0, -0.0) == -math.inf and divide(-1.0, -0.0) == math.inf
    assert math.isnan(divide(0.0, 0.0)) and math.isnan(divide(math.nan, 0.0))
    assert divide(4.9e-324, 0.0) == math.inf  # a subnormal numerator is not zero


def test_the_boundary_catches_a_figure_no_rule_foresaw(monkeypatch: pytest.MonkeyPatch) -> None:
    # A part of a run without a rule of its own (here the step statistics, made to overflow)
    # is caught by the one boundary: taken out, and EFF702 at the input it rests on.
    import dataclasses

    from effspec.engine import evaluate as evaluate_mod

    real = evaluate_mod.step_statistics
    monkeypatch.setattr(evaluate_mod, "step_statistics",
                        lambda samples, warmup: dataclasses.replace(real(samples, warmup), mean=math.inf))
    text = f'eff 1\nrun a {{\n  {WORK}\n  timing {{ step_time = [1.0, 1.1, 1.0, 1.2, 1.0] s }}\n}}\n'
    result = effspec.check_text(text, "t.eff")
    [d] = [d for d in result.diagnostics if d.code == "EFF702"]
    assert (d.span.line, d.span.column) == (4, 24) and "`step_statistics.mean` (infinite)" in d.message
    assert result.evaluation.runs["a"].step_stats is None
    from effspec.report import render

    strict(render(result, "json").decode("utf-8"))


def test_an_arithmetic_error_no_formula_foresaw_is_eff702_not_eff099(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The safety net behind the boundary: a ZeroDivisionError raised anywhere in the evaluation
    # is EFF702 at the spec's number nearest zero (here the subnormal peak, line 6), not EFF099.
    from effspec.engine import evaluate as evaluate_mod

    def divides_by_zero(run: object, result: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(evaluate_mod, "_calendar", divides_by_zero)
    result = effspec.check_text(SUBNORMAL_PEAK, "t.eff")
    [d] = [d for d in result.diagnostics if d.code == "EFF702"]
    assert (d.span.line, d.span.column) == (6, 85) and "`peak = 5e-324 FLOP/s`" in d.message
    assert "ZeroDivisionError: float division by zero" in d.message and result.evaluation is None
    path = tmp_path / "p.eff"
    path.write_text(SUBNORMAL_PEAK, encoding="utf-8")
    done = cli(*["check", "--no-cache", "--format", "json", str(path)])
    status, out = done.returncode, done.stdout
    [file] = strict(out)  # type: ignore[misc]
    assert status == 1 and [x["code"] for x in file["diagnostics"] if x["severity"] == "error"] == ["EFF702"]


def test_first_nonfinite_walks_what_an_output_reads() -> None:
    assert first_nonfinite({"a": [1.0, {"b": (2, math.nan)}]}) == ("a[1].b[1]", pytest.approx(math.nan, nan_ok=True))
    assert first_nonfinite({"a": [1.0, 2, "inf", None, True]}) is None


# -- item 5: the property over every numeric input of every example ----------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

EXTREMES = ("0", "5e-324", "1e-320", "2.2250738585072014e-308", "1e-300", "1e-30", "1e30", "1e300", "1e308",
            "1.7976931348623157e308", "-1", "-5e-324", "-1e308", "0.9999999999999999", "1.0000000000000002")
# A numeric literal outside strings and comments (strings and comments are matched, then skipped).
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])')
TEXTS = {p.name: p.read_text(encoding="utf-8") for p in EXAMPLES}
LITERALS = {name: [m.span() for m in _LITERAL.finditer(text) if m.group(0)[0].isdigit()
                   and text.count("\n", 0, m.start()) > 0]  # not the `eff 1` header
            for name, text in TEXTS.items()}
ALL_LITERALS = [(name, span) for name in sorted(LITERALS) for span in LITERALS[name]]


def test_the_sweep_sees_every_example_and_hundreds_of_literals() -> None:
    assert {name for name, _ in ALL_LITERALS} == set(TEXTS) and len(TEXTS) >= 10
    assert len(ALL_LITERALS) > 250


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(picks=st.lists(st.tuples(st.sampled_from(ALL_LITERALS), st.sampled_from(EXTREMES)), min_size=1, max_size=3))
def test_extreme_values_in_any_numeric_input_never_reach_an_internal_error(picks: list) -> None:
    name = picks[0][0][0]
    text = TEXTS[name]
    edits = {span: value for (file, span), value in picks if file == name}  # the literals of one example
    for (start, end), value in sorted(edits.items(), reverse=True):
        text = text[:start] + value + text[end:]
    done = cli("check", "--no-cache", "--format", "json", "--stdin-filename", str(ROOT / "examples" / name), "-",
               stdin=text)
    status, out = done.returncode, done.stdout
    assert status in (0, 1), out[-2000:]
    [file] = strict(out)  # type: ignore[misc]
    assert "EFF099" not in {d["code"] for d in file["diagnostics"]}


# -- item 13: very long series --------------------------------------------------------------

from effspec.report.rank_charts import timeline_drawn  # noqa: E402
from effspec.report.step_charts import MAX_SERIES_POINTS, SERIES_BUCKETS, series_drawn  # noqa: E402

STEPS = 200_000
WARMUP = 10
HTML_BOUND = 600_000  # bytes: the page of a 200,000-step run measured 405 kB (22 MB before bucketing)


def long_run(tmp_path: Path) -> tuple[Path, list[float]]:
    """A 200,000-step run: 1 s ± 1 ms steps, every 997th step a stall at 2.5 s."""
    values = [2.5 if i % 997 == 0 else 1.0 + 0.001 * ((i * 7919) % 11 - 5) / 5 for i in range(STEPS)]
    (tmp_path / "steps.csv").write_text("step,step_seconds\n" + "".join(f"{i + 1},{v}\n" for i, v in enumerate(values)),
                                        encoding="utf-8")
    path = tmp_path / "long.eff"
    path.write_text(f'eff 1\nrun long {{\n  {MODEL}\n  convention {{ preset = palm }}\n  {WORK}\n'
                    '  hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }\n'
                    f'  timing {{ step_time = file "steps.csv" column "step_seconds"  warmup = {WARMUP} step }}\n}}\n',
                    encoding="utf-8")
    return path, values


def test_a_200000_step_report_is_bounded_and_says_it_is_downsampled(tmp_path: Path) -> None:
    from effspec.report import render

    path, values = long_run(tmp_path)
    result = effspec.load(path)
    html = render(result, "html").decode("utf-8")
    assert len(html.encode("utf-8")) < HTML_BOUND
    # One marker per drawn step (at most MAX_SERIES_POINTS), plus the stall crosses and the axes' ticks.
    assert html.count("<use") < MAX_SERIES_POINTS + 600
    assert "2,000 of 200,000 steps drawn: the steps are cut into 1,000 runs of about 200 consecutive steps" in html
    assert "every statistic and the histogram use all 199,990 steps after warm-up" in html
    # The statistics are computed on every kept sample, not on the drawn ones.
    kept = sorted(values[WARMUP:])
    stats = result.evaluation.runs["long"].step_stats
    assert stats.count == 199_990 and "199990 kept" in html
    assert stats.median == (kept[99_994] + kept[99_995]) / 2
    stalls = sum(1 for i in range(WARMUP, STEPS) if i % 997 == 0)  # 2.5 s > 1.5 × median
    assert stats.stall_steps == stalls == 200
    assert f"of the {stalls} stall steps, the {stalls} drawn are marked with a cross" in html  # one per run at most


def test_min_max_bucketing_keeps_each_runs_extremes() -> None:
    values = [1.0 + (i % 13) / 100 for i in range(10_000)]
    values[4_321], values[8_765] = 9.0, 0.1  # one spike up, one down, anywhere
    drawn, buckets = series_drawn(values, warmup=0)
    assert buckets == SERIES_BUCKETS and len(drawn) <= 2 * SERIES_BUCKETS
    assert drawn == sorted(drawn) and {4_321, 8_765} <= set(drawn)
    for b in range(buckets):  # each run of 10 steps is drawn by its fastest and its slowest step
        run = values[b * 10:(b + 1) * 10]
        shown = [values[i] for i in drawn if b * 10 <= i < (b + 1) * 10]
        assert min(shown) == min(run) and max(shown) == max(run)
    assert series_drawn(values[:MAX_SERIES_POINTS], 5) == (list(range(MAX_SERIES_POINTS)), 0)  # short: every step


def test_min_max_bucketing_keeps_the_warmup_apart() -> None:
    values = [5.0] * 50 + [1.0] * 9_950  # a slow warm-up of 50 steps
    drawn, buckets = series_drawn(values, warmup=50)
    assert buckets == SERIES_BUCKETS
    # 1,000 runs × 50 / 10,000 steps = 5 runs of 10 warm-up steps, each of equal steps drawn once (its first);
    # the kept steps' 995 runs start at the warm-up's end, so no run mixes a warm-up step with a kept one.
    assert [i for i in drawn if i < 50] == [0, 10, 20, 30, 40]
    assert [i for i in drawn if i >= 50][:3] == [50, 60, 70] and len(drawn) == 1_000


def test_the_timeline_buckets_by_the_straggler_and_skips_missing_rows() -> None:
    import numpy as np

    timeline = np.full(5_000, 1.0)
    timeline[:5] = np.nan  # the rank's first run of steps has no rows
    timeline[2_503] = 4.0
    drawn = timeline_drawn(timeline)
    assert drawn[0] == 0 and 2_503 in drawn and len(drawn) <= 2 * SERIES_BUCKETS
    assert timeline_drawn(timeline[:MAX_SERIES_POINTS]) == list(range(MAX_SERIES_POINTS))


def test_a_long_inline_list_shows_its_head_and_tail(tmp_path: Path) -> None:
    from effspec.report import render

    samples = ", ".join(f"1.{i:02d}" for i in range(30))
    text = f'eff 1\nrun a {{\n  {WORK}\n  timing {{ step_time = [{samples}] s }}\n}}\n'
    html = render(effspec.check_text(text, "t.eff"), "html").decode("utf-8")
    assert "30 samples, the first and last 5 shown: [1.00, 1.01, 1.02, 1.03, 1.04, … 20 more …, " \
           "1.25, 1.26, 1.27, 1.28, 1.29] s" in html


def test_a_long_straggler_timeline_is_drawn_bucketed() -> None:
    import numpy as np

    from effspec.ranks.stats import RankProfile
    from effspec.report.rank_charts import straggler_timeline_chart

    steps = np.arange(1, 5_001)
    timeline = 1.0 + (steps % 7) / 100
    timeline[3_000] = 3.0  # the straggler's one slow step
    profile = RankProfile(np.arange(4), ("n0",) * 4, np.ones(4), np.zeros(4), np.zeros(4), flagged=(3,),
                          steps=steps, timeline_rank=3, timeline_node="n0", timeline_quantity="compute",
                          timeline=timeline, others=3, others_p10=np.full(5_000, 0.99),
                          others_median=np.full(5_000, 1.0), others_p90=np.full(5_000, 1.01))
    svg, caption = straggler_timeline_chart(profile, "t")
    drawn = timeline_drawn(timeline)
    assert len(drawn) == 2 * SERIES_BUCKETS and 3_000 in drawn  # each run of 5 steps: its fastest and slowest
    assert caption.endswith("2,000 of 5,000 steps drawn: in each of 1,000 runs of about 5 consecutive steps, the "
                            "straggler's fastest and slowest step (min/max bucketing), and the other ranks' median "
                            "and band at those steps.")
    assert svg.startswith("<svg") and len(svg) < 200_000
