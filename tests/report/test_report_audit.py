"""Reports a reviewer can audit by hand (issue 14): statistics that follow the sample count,
page 1 as the verdict, Markdown that renders, notebooks that escape."""

from __future__ import annotations

import pathlib
import re
import statistics
from html.parser import HTMLParser

import pytest

import effspec
from effspec.report import render
from effspec.report.sections import build

ROOT = pathlib.Path(__file__).resolve().parents[2]

RUN = """eff 1

run r {{
  model {{ kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }}
  convention {{ preset = palm }}
  work {{ seq_len = 2048 token/sequence  global_batch = 256 sequence }}
  parallelism {{ dp = 8  micro_batch = 4 sequence }}
  hardware {{ accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }}
  timing {{ step_time = [{samples}] s  warmup = 0 step }}
}}
"""

SIX = [4.02, 4.00, 4.05, 3.99, 4.01, 4.03]
TWELVE = SIX + [4.00, 4.02, 3.98, 4.01, 4.00, 4.04]


def _stats_rows(samples: list[float]) -> dict[str, tuple[str, str]]:
    result = effspec.check_text(RUN.format(samples=", ".join(map(str, samples))), "s.eff")
    (run,) = build(result).runs
    return {row.label: (row.value, row.note) for row in run.step_stats}


def test_six_samples_print_no_interval_and_no_tail_percentiles_and_say_why():
    rows = _stats_rows(SIX)
    value, note = rows["median"]
    assert value == "4.015 s"  # (4.01 + 4.02) / 2
    assert "bootstrap" not in note and "6 samples after warm-up" in note and "at least 10 (EFF502)" in note
    value, note = rows["p5 / p95 / p99"]
    assert value == "—" and note.startswith("percentiles not reported: 6 samples")
    html = render(effspec.check_text(RUN.format(samples=", ".join(map(str, SIX))), "s.eff"), "html").decode()
    assert "bootstrap CI" not in html and "p95 / p99" in html and "a spread needs at least 10 (EFF502)" in html


def test_twelve_samples_print_the_interval_and_percentiles():
    rows = _stats_rows(TWELVE)
    value, note = rows["median"]
    assert value == "4.01 s" and statistics.median(TWELVE) == 4.01  # the 6th and 7th of 12 sorted are both 4.01
    assert note.startswith("95 % bootstrap CI ") and "EFF502" not in note
    value, note = rows["p5 / p95 / p99"]
    assert value.count(" s") == 3 and note == ""


# --- Page 1 is the verdict --------------------------------------------------------

class _Headline(HTMLParser):
    """The cells of each `table.headline`, row by row, as text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._in = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("class", "headline") in attrs:
            self._in = True
            self.tables.append([])
        elif self._in and tag == "tr":
            self.tables[-1].append([])
        elif self._in and tag in ("td", "th"):
            self._cell = []
        elif self._cell is not None and tag == "br":
            self._cell.append(" ")

    def handle_endtag(self, tag):
        if tag == "table":
            self._in = False
        elif self._in and tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _headline_columns(html: str) -> list[dict[str, str]]:
    parser = _Headline()
    parser.feed(html)
    out = []
    for head, figure, status, versus, notes in parser.tables:
        out.append({h: {"figure": f, "status": s, "versus": v, "notes": n}
                    for h, f, s, v, n in zip(head, figure, status, versus, notes, strict=True)})
    return out


def test_example_b_page_1_shows_the_declared_the_corrected_and_the_claimed_mfu():
    # By hand (palm with full attention, as EFF101 assumes; L=40 d=5120 f=20480 V=32000 s=2048):
    #   per layer qkv 2·d·3d + out 2·d·d + scores 4·s·d + ffn 2·2·d·f = 671,088,640; logits 2·d·V = 327,680,000
    #   training FLOP/token = 3 × (40 × 671,088,640 + 327,680,000) = 81,513,676,800
    fpt = 3 * (40 * (2 * 5120 * 3 * 5120 + 2 * 5120 * 5120 + 4 * 2048 * 5120 + 2 * 2 * 5120 * 20480) + 2 * 5120 * 32000)
    assert fpt == 81_513_676_800
    declared = fpt * 780_000 / (256 * 624e12)  # the step implied by the claimed throughput, the sparse peak
    dense = fpt * 780_000 / (256 * 312e12)  # A100 dense BF16: 312 TFLOP/s
    assert f"{declared * 100:.3g}" == "39.8" and f"{dense * 100:.3g}" == "79.6"
    html = render(effspec.load(ROOT / "examples" / "example_b_vendor_claim.eff"), "html").decode()
    (cols,) = _headline_columns(html)
    mfu = cols["MFU"]
    assert mfu["figure"] == "39.8 %"  # struck through: it divides by the peak EFF202 calls wrong
    assert "<s>39.8</s>" in html
    assert mfu["status"] == "wrong input EFF202 at 26"
    assert mfu["versus"] == "79.6 % against the dense BF16 peak 61 % claimed: not supported"
    assert cols["HFU"]["status"].startswith("wrong input")
    assert cols["Model FLOP/s per device"]["versus"] == ""  # does not divide by the peak: nothing to correct
    assert cols["Step time"]["status"] == "implied"


def test_a_single_quoted_step_time_carries_no_warm_up_assumption():
    # megatron_gpt3_175b quotes one step time (32 s) and no warm-up: the default cannot matter there
    result = effspec.load(ROOT / "examples" / "megatron_gpt3_175b.eff")
    (rr,) = result.evaluation.runs.values()
    step = rr.metrics["step_time"]
    assert not step.assumed and [i.name for i in step.inputs] == ["timing.step_time"]
    assert step.substituted == "median of 1 sample (row 1) = 32 s"
    (cols,) = _headline_columns(render(result, "html").decode())
    # 3,145,728 token / 32 s = 98,304 token/s
    assert cols["Valid tokens/s"]["figure"] == "98,304 token/s"
    assert all(c["status"] != "assumed" for c in cols.values()), cols
    # Example A declares no warm-up over 520 samples: there the default matters, and is named
    a = effspec.load(ROOT / "examples" / "example_a_measured.eff")
    assert [i.name for i in next(iter(a.evaluation.runs.values())).metrics["step_time"].inputs][-1] == "timing.warmup"


# --- Markdown for a pull-request comment, read through a CommonMark parser ------------

def _md_html(example: str) -> str:
    from markdown_it import MarkdownIt

    md = render(effspec.load(ROOT / "examples" / example), "md").decode()
    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(md)


class _Text(HTMLParser):
    """Text outside code, and the text of each code span or block."""

    def __init__(self) -> None:
        super().__init__()
        self.prose: list[str] = []
        self.code: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        if tag == "code":
            self._depth += 1
            self.code.append("")

    def handle_endtag(self, tag):
        if tag == "code":
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.code[-1] += data
        else:
            self.prose.append(data)


def _read(html: str) -> _Text:
    t = _Text()
    t.feed(html)
    return t


def test_markdown_renders_counts_with_plurals_and_real_code_spans():
    html = _md_html("example_b_vendor_claim.eff")
    # EFF202, EFF601, EFF401 are errors; EFF101, EFF602 warnings; EFF605 info
    assert "<p><code>example_b_vendor_claim.eff</code>: 3 errors, 2 warnings, 1 info</p>" in html
    text = _read(html)
    assert not any("`" in p for p in text.prose), [p for p in text.prose if "`" in p]
    assert not any("\\" in p for p in text.prose)
    assert {"sparsity", "peak = catalog", "mfu", "throughput"} <= set(text.code)
    # the headline: the declared MFU struck, the corrected and the claimed beside it
    assert "<s>39.8 %</s> (wrong input: EFF202, line 26; 79.6 % against the dense BF16 peak; " \
           "61 % claimed: not supported)" in html


def test_markdown_findings_carry_their_formula_and_numbers():
    html = _md_html("example_b_vendor_claim.eff")
    items = html.split("<p><strong>EFF")  # one chunk per finding, its notes and blocks included
    eff601 = next(i for i in items if i.startswith("601</strong>"))
    block = _read(eff601).code
    assert "mfu = model_flops_per_step / (step_time × aggregate_peak)\n" \
           "  = 170.9 PFLOP / (2.689 s × 159.7 PFLOP/s) = 39.8 %\n" in block
    assert round(170.9e15 / (2.689 * 159.7e15) * 100, 1) == 39.8  # recomputes by hand
    eff202 = next(i for i in items if i.startswith("202</strong>"))
    assert "  = (256 − 0) × 624 TFLOP/s = 159.7 PFLOP/s\n" in "".join(_read(eff202).code)
    assert 256 * 624e12 == 159.744e15


def test_markdown_scaling_claims_are_code_without_escapes():
    text = _read(_md_html("megatron_lm_weak_scaling.eff"))
    assert "efficiency" in text.code and not any("\\" in c for c in text.code)


def test_markdown_singular_counts():
    result = effspec.check_text(RUN.format(samples=", ".join(map(str, TWELVE))), "one.eff")
    first = next(line for line in render(result, "md").decode().splitlines() if line.startswith("`one.eff`: "))
    warnings = sum(d.severity == "warning" for d in result.diagnostics)
    infos = sum(d.severity == "info" for d in result.diagnostics)
    assert ("1 warning" in first) == (warnings == 1) and "1 warnings" not in first and "infos" not in first
    assert f"{warnings} warning" in first and (infos == 0 or f"{infos} info" in first)


# --- Notebooks: Result._repr_html_ ----------------------------------------------------

HOSTILE = '<script>alert(1)</script> <img src=x onerror=alert(2)> {{ 7*7 }} &amp; `x`'
HOSTILE_RUN = f'''eff 1
run hostile {{
  title  = "{HOSTILE}"
  source = "{HOSTILE}"
  model {{ kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }}
  convention {{ preset = palm }}
  work {{ seq_len = 128 token/sequence  global_batch = 8 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 1 device  dtype = bf16  peak = 989.4 TFLOP/s from datasheet "{HOSTILE}" }}
  timing {{ step_time = [0.01, 0.01, 0.011, 0.01, 0.012] s  warmup = 0 step  boundary = "x" }}
  claim mfu = 1 % from paper "{HOSTILE}"
}}
'''


def test_repr_html_shows_summary_and_findings_with_the_report_escaping():
    result = effspec.check_text(HOSTILE_RUN, "hostile.eff")
    assert result.evaluation is not None and "<script>" in result.spec.runs[0].title
    html = result._repr_html_()
    assert html.startswith('<div class="effspec-report">') and html.endswith("</div>")
    prefix = re.search(r'<section id="(effspec-[0-9a-f]{10}-)summary">', html)[1]
    assert f'<section id="{prefix}findings">' in html
    assert 'id="source"' not in html and f'id="{prefix}source"' not in html  # the verdict, not the appendix
    assert "<script" not in html and "<img" not in html and "<iframe" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&amp;amp;" in html  # an entity in the spec is text, escaped once more
    assert "{{ 7*7 }}" in html and ">49<" not in html  # spec text is never a template
    # the same fragment as the HTML report's own summary, its ids prefixed and links out of it made text
    page = render(result, "html").decode()
    start = page.index('<section id="summary">')
    ours = page[start:page.index("</section>", start)]
    ours = re.sub(r'<a([^>]*) href="#(?:L\d+|input-[\d-]+)">(.*?)</a>', r"<span\1>\2</span>", ours)
    assert ours.replace(' id="', f' id="{prefix}').replace('href="#', f'href="#{prefix}') in html
    # with a finding: the claim of 1 % against 5 samples is EFF502's (5 < 10)
    assert "EFF502" in html


def test_repr_html_links_resolve_inside_the_fragment_and_two_reports_share_no_id():
    a = effspec.load(ROOT / "examples" / "example_c_scaling.eff")._repr_html_()
    b = effspec.load(ROOT / "examples" / "example_b_vendor_claim.eff")._repr_html_()
    for html in (a, b):
        ids = re.findall(r'\sid="([^"]*)"', html)
        assert len(ids) == len(set(ids))
        links = re.findall(r'href="#([^"]*)"', html)
        assert set(links) <= set(ids)  # every link kept has its target in the fragment
    # Example B's assumed figures link to EFF101's finding, which is inline too
    assert re.search(r'href="#effspec-[0-9a-f]{10}-finding-1"', b)
    # Example C's HFU badge links to an input row in the report; inline it is the word, not a dead link
    assert '<span class="badge badge-assumed">assumed</span>' in a
    assert not set(re.findall(r'\sid="([^"]*)"', a)) & set(re.findall(r'\sid="([^"]*)"', b))
    assert a == effspec.load(ROOT / "examples" / "example_c_scaling.eff")._repr_html_()  # deterministic


# --- Charts: none below EFF502's count, captions true to the picture --------------------

def _charts(result) -> dict:
    (run,) = build(result, charts=True).runs
    return run.charts


def test_no_step_chart_below_ten_samples_and_a_series_from_twenty():
    six = _charts(effspec.check_text(RUN.format(samples=", ".join(map(str, SIX))), "s.eff"))
    assert "step_series" not in six and "step_time" not in six
    twelve = _charts(effspec.check_text(RUN.format(samples=", ".join(map(str, TWELVE))), "s.eff"))
    assert "step_series" not in twelve and "step_time" not in twelve  # 12 rows: the table shows them all
    both = TWELVE + TWELVE  # 24 samples, median still 4.01 s
    twelve = _charts(effspec.check_text(RUN.format(samples=", ".join(map(str, both))), "s.eff"))
    assert twelve["step_series"].startswith("<svg")
    # no warm-up and no stall (every sample < 1.5 × 4.01 s = 6.015 s): the caption promises neither
    assert twelve["step_series_caption"] == ("Each step's time by step index: the median after warm-up (solid); "
                                             "no step reaches the stall threshold (6.015 s), which is left off the axis.")
    assert "<pattern" not in twelve["step_series"]


def test_example_a_charts_show_what_their_captions_promise():
    charts = _charts(effspec.load(ROOT / "examples" / "example_a_measured.eff"))
    # 520 rows, 20 warm-up (rows 21–520 kept); 5 steps past 1.5 × 1.1001 s
    series = charts["step_series_caption"]
    assert "the 20 warm-up steps, left out of every statistic, shaded" in series
    assert "the 5 stall steps marked with a cross" in series
    assert "<pattern" in charts["step_series"]  # the shading is a hatch, readable in grayscale
    hist = charts["step_time_caption"]
    assert "bins at or past the threshold hatched" in hist and "log scale" in hist
    assert "<pattern" in charts["step_time"]


def test_example_c_draws_no_step_chart_for_five_and_six_samples():
    result = effspec.load(ROOT / "examples" / "example_c_scaling.eff")
    for run in build(result, charts=True).runs:
        assert not {"step_series", "step_time"} & set(run.charts), run.id
    html = render(result, "html").decode()
    assert "stall steps hatched" not in html


def test_straggler_charts_are_not_squeezed_by_a_threshold_no_step_reaches():
    charts = _charts(effspec.load(ROOT / "examples" / "straggler_ranks.eff"))
    # 60 steps between 1.9153 and 1.9423 s; the threshold 1.5 × 1.92845 = 2.892675 s is far above them
    assert pytest.approx(2.892675) == 1.5 * 1.92845
    for key in ("step_series_caption", "step_time_caption"):
        assert "no step reaches the stall threshold (2.893 s), which is left off the axis" in charts[key]
        assert "dashed" not in charts[key]
