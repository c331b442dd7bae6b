"""Reports: every example in every format, the figures in the PDF, safety, determinism.

Figures are derived here by hand from the formulas, not read back from the
evaluator.  PDFs are slow to make (WeasyPrint), so each example's HTML and PDF
come from the session's render cache (tests/rendering.py: rendered once per
test session, shared with the other modules that read them).
"""

from __future__ import annotations

import csv
import io
import json
import os
import pathlib
import shutil
import statistics
import subprocess

import pytest
from conftest import effspec_process
from rendering import reports

import effspec
from effspec.report import render
from effspec.report.text import result_json

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))
FORMATS = ("html", "pdf", "json", "sarif", "md", "tex")


def _example(name: str) -> pathlib.Path:
    return ROOT / "examples" / name


@pytest.fixture(scope="module")
def rendered(render_cache):
    """{(example file name, format): bytes}, each rendered once (HTML and PDF once per session)."""
    shared = {fmt: reports(render_cache, EXAMPLES, fmt) for fmt in ("html", "pdf")}
    out = {}
    for path in EXAMPLES:
        result = effspec.load(path)
        out[(path.name, "result")] = result
        for fmt in FORMATS:
            out[(path.name, fmt)] = shared[fmt][path.name] if fmt in shared else render(result, fmt)
    return out


def pdf_text(data: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)


# --- Example A by hand -------------------------------------------------------
# flops_per_token (palm, causal attention, logits included, L=32 d=2560 H=32 Q=80 G=8 f=6912 V=50304 s=4096, m=2):
#   qkv    m·d·(H·Q + 2·G·Q) = 2·2560·(2560 + 1280)   =   19,660,800 per layer
#   out    m·H·Q·d           = 2·2560·2560            =   13,107,200 per layer
#   scores m·s·H·Q (causal)  = 2·4096·2560            =   20,971,520 per layer
#   ffn    3·m·d·f           = 3·2·2560·6912          =  106,168,320 per layer
#   logits m·d·V             = 2·2560·50304           =  257,556,480 once
#   forward = 32·(19,660,800 + 13,107,200 + 20,971,520 + 106,168,320) + 257,556,480 = 5,374,607,360
#   training = 3 × forward = 16,123,822,080 FLOP/token
# valid tokens = 4096·512 − 61,440 − 0 = 2,035,712
# step time = median of the CSV's step_seconds after 20 warm-up rows
# aggregate peak = 64 × 989.4 TFLOP/s
def example_a_by_hand() -> tuple[float, float]:
    per_layer = 2 * 2560 * (2560 + 2 * 8 * 80) + 2 * 2560 * 2560 + 2 * 4096 * 2560 + 3 * 2 * 2560 * 6912
    forward = 32 * per_layer + 2 * 2560 * 50304
    flops_per_token = 3 * forward
    assert flops_per_token == 16_123_822_080
    tokens = 4096 * 512 - 61440
    with open(_example("llm3b_64_steps.csv"), newline="") as fh:
        samples = [float(row["step_seconds"]) for row in csv.DictReader(fh)]
    step = statistics.median(samples[20:])
    mfu = flops_per_token * tokens / (step * 64 * 989.4e12)
    return mfu, tokens / step


def test_example_a_pdf_states_the_headline_figures_formula_citation_and_finding(rendered):
    mfu, tokens_per_second = example_a_by_hand()
    assert f"{mfu * 100:.2f} %" == "47.12 %"
    assert f"{round(tokens_per_second):,}" == "1,850,479"
    text = pdf_text(rendered[("example_a_measured.eff", "pdf")])
    flat = " ".join(text.split())
    assert "47.12 %" in flat
    assert "1,850,479" in flat
    assert "model_flops_per_step / (step_time × aggregate_peak)" in flat  # the MFU formula
    assert "dataloader stats, mean over window" in flat  # the padded_tokens citation
    assert "8192^3 BF16 GEMM" in flat  # the measured_peak citation
    result = rendered[("example_a_measured.eff", "result")]
    for code in {d.code for d in result.diagnostics}:
        assert code in flat
    assert "Page 1 of" in flat  # page numbers in the margin box


def test_example_b_pdf_shows_the_sparse_peak_finding_and_the_implied_mfu(rendered):
    flat = " ".join(pdf_text(rendered[("example_b_vendor_claim.eff", "pdf")]).split())
    assert "EFF202" in flat
    assert "footnote 3" in flat
    # MFU implied by the claimed throughput under palm (assumed):
    # flops/token = 3·(40·(2·5120·3·5120 + 2·5120·5120 + 2·2·2048·5120 + 2·2·5120·20480) + 2·5120·32000)
    per_layer = 2 * 5120 * 3 * 5120 + 2 * 5120 * 5120 + 2 * 2 * 2048 * 5120 + 2 * 2 * 5120 * 20480
    flops_per_token = 3 * (40 * per_layer + 2 * 5120 * 32000)
    implied = flops_per_token * 780_000 / (256 * 624e12)  # the declared (sparse) peak
    assert f"{implied * 100:.4g} %" == "39.8 %"
    assert "39.8 %" in flat
    assert "mismatch" in flat.lower()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_example_renders_in_every_format(rendered, path, fmt):
    data = rendered[(path.name, fmt)]
    assert isinstance(data, bytes) and data
    if fmt == "pdf":
        assert data.startswith(b"%PDF-")
    elif fmt == "html":
        text = data.decode()
        assert text.startswith("<!DOCTYPE html>")
        for section in ("summary", "inputs", "convention", "derivations", "claims", "findings", "scaling",
                        "walltime", "steps", "source"):
            assert f'id="{section}"' in text
        assert 'id="L1"' in text  # source lines carry anchors for the findings' links
    elif fmt == "json":
        assert json.loads(data) == json.loads(json.dumps(result_json(rendered[(path.name, "result")])))
    elif fmt == "sarif":
        assert json.loads(data)["version"] == "2.1.0"
    elif fmt == "md":
        assert len(data.decode()) < 65_536
    elif fmt == "tex":
        assert b"\\newcommand" in data or b"did not compile" in data


def test_html_links_findings_to_source_lines_and_charts_inline(rendered):
    html = rendered[("example_c_scaling.eff", "html")].decode()
    # Breakdown and scaling curve; 5 and 6 step samples are too few for a histogram (charts.MIN_HISTOGRAM_SAMPLES).
    assert html.count("<svg") == 2
    assert "<img" not in html and "<script" not in html
    result = rendered[("example_c_scaling.eff", "result")]
    for d in result.diagnostics:
        assert f'href="#L{d.span.line}"' in html


def test_first_page_is_not_blank(rendered, tmp_path):
    if shutil.which("pdftoppm") is None:
        pytest.skip("pdftoppm (poppler-utils) not installed: `make sysdeps`")
    from PIL import Image, ImageStat

    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(rendered[("example_a_measured.eff", "pdf")])
    subprocess.run(["pdftoppm", "-r", "40", "-png", "-f", "1", "-l", "1", "-singlefile", str(pdf), str(tmp_path / "p1")],
                   check=True)
    image = Image.open(tmp_path / "p1.png").convert("L")
    assert ImageStat.Stat(image).var[0] > 100  # a blank page has variance 0


def test_letter_paper():
    from pypdf import PdfReader

    data = render(effspec.load(_example("example_b_vendor_claim.eff")), "pdf", paper="letter")
    box = PdfReader(io.BytesIO(data)).pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (612, 792)  # 8.5 × 11 in at 72 pt/in


def test_a4_paper(rendered):
    from pypdf import PdfReader

    box = PdfReader(io.BytesIO(rendered[("example_b_vendor_claim.eff", "pdf")])).pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (595, 842)  # 210 × 297 mm


# --- Safety ----------------------------------------------------------------------

HOSTILE = '<script>alert(1)</script> <img src=\\"file:///etc/passwd\\"> <link rel=\\"attachment\\" href=\\"file:///etc/passwd\\">'
HOSTILE_SPEC = f'''eff 1
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


@pytest.fixture(scope="module")
def hostile():
    result = effspec.check_text(HOSTILE_SPEC, "hostile.eff")
    assert result.evaluation is not None, [d.message for d in result.diagnostics]
    assert "<script>" in result.spec.runs[0].title
    return result


def test_hostile_strings_render_as_text_in_html(hostile):
    html = render(hostile, "html").decode()
    assert "<script" not in html
    assert "<img" not in html
    assert "<link" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=&#34;file:///etc/passwd&#34;&gt;" in html
    assert 'href="file:' not in html and 'src="file:' not in html


def test_hostile_strings_embed_nothing_in_the_pdf(hostile):
    data = render(hostile, "pdf")
    assert b"/EmbeddedFile" not in data
    assert b"/Filespec" not in data
    text = pdf_text(data)
    assert "root:x:0:0" not in text and b"root:x:0:0" not in data
    assert "<script>alert(1)</script>" in " ".join(text.split())  # shown, as text


def test_hostile_strings_in_markdown_and_latex(hostile):
    md = render(hostile, "md").decode()
    assert "<script>" not in md and "\\<script\\>" in md
    from effspec.report.latex import tex_escape

    assert tex_escape("50% of $x & #1_{a}~^\\") == r"50\% of \$x \& \#1\_\{a\}\textasciitilde{}\textasciicircum{}\textbackslash{}"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "http://example.com/", "https://example.com/x.css",
                                 "data:text/css,body{}", "effspec-asset:../../../etc/passwd",
                                 "effspec-asset:/etc/passwd", "effspec-asset:report.css/../../x"])
def test_fetcher_fails_closed(url):
    from weasyprint.urls import FatalURLFetchingError

    from effspec.report.pdf import url_fetcher

    with pytest.raises(FatalURLFetchingError):
        url_fetcher()(url)


def test_fetcher_serves_bundled_fonts():
    from effspec.report.pdf import url_fetcher

    response = url_fetcher()("effspec-asset:fonts/DejaVuSans.ttf")
    assert response.read(4) in (b"\x00\x01\x00\x00", b"true")  # a TrueType header


def test_a_live_external_reference_fails_the_render():
    """Even markup we did not escape (a template bug) cannot read a file: the render stops."""
    from weasyprint import HTML
    from weasyprint.urls import FatalURLFetchingError

    from effspec.report.pdf import url_fetcher

    with pytest.raises(FatalURLFetchingError):
        HTML(string='<p>x</p><img src="file:///etc/passwd">', base_url=None, url_fetcher=url_fetcher()).write_pdf()


# --- Determinism ---------------------------------------------------------------


def test_html_and_pdf_are_byte_identical_across_runs(rendered, tmp_path):
    # A private copy: other people may edit examples/ while the suite runs.
    spec = tmp_path / "example_c_scaling.eff"
    spec.write_text(rendered[("example_c_scaling.eff", "result")].source)
    first = effspec.load(spec)
    html, pdf = render(first, "html"), render(first, "pdf")
    again = effspec.load(spec)
    assert render(again, "html") == html
    # And this process's renders give the bytes the session's cache holds (tests/rendering.py renders as `render` does).
    assert (html, pdf) == (rendered[("example_c_scaling.eff", "html")], rendered[("example_c_scaling.eff", "pdf")])
    # A second process (the CLI, both outputs from one evaluation) must give the same bytes as this one.
    effspec_process("report", str(spec), "-o", str(tmp_path / "cli.pdf"), "-o", str(tmp_path / "cli.html"), text=False,
                    cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}, module=True)
    assert (tmp_path / "cli.html").read_bytes() == html
    assert (tmp_path / "cli.pdf").read_bytes() == pdf
    assert b"/CreationDate" not in pdf and b"/ModDate" not in pdf


# --- Text formats --------------------------------------------------------------


def test_markdown_summary_table_puts_valid_tokens_beside_mfu(rendered):
    md = rendered[("example_a_measured.eff", "md")].decode()
    header = next(line for line in md.splitlines() if line.startswith("| MFU"))
    assert header.startswith("| MFU | Valid tokens/s |")
    row = md.splitlines()[md.splitlines().index(header) + 2]
    # each headline figure with its interval (from the 95 % CI of the median of the 500 samples, [1.0995, 1.1007] s:
    # 2,035,712 token / [1.1007, 1.0995] s = [1,849,470, 1,851,489] token/s; the CI itself is checked by hand in
    # tests/engine/test_intervals.py) and its claim beside it (claim mfu = 52 %, claim throughput = 2.0e6 token/s)
    assert row.startswith("| 47.12 % \\[47.09–47.15 %\\] (52 % claimed\\: not supported) | 1,850,479 token/s "
                          "\\[1,849,470–1,851,489 token/s\\] (2,000,000 token/s claimed\\: not supported) |")
    assert "| `mfu` | 52 % | 47.12 % | **mismatch** |" in md


def test_markdown_stays_under_the_comment_limit(hostile):
    from dataclasses import replace

    many = [replace(d, message="x" * 300) for d in hostile.diagnostics] * 400
    big = effspec.Result(hostile.file, hostile.source, hostile.spec, hostile.evaluation, many)
    md = render(big, "md").decode()
    assert len(md) < 65_536
    assert "more findings" in md


def test_latex_macros_follow_the_naming_scheme(rendered):
    from effspec.report.latex import camel

    assert camel("llm3b_64") == "LlmThreeBSixFour"
    assert camel("valid_tokens_per_second") == "ValidTokensPerSecond"
    tex = rendered[("example_a_measured.eff", "tex")].decode()
    assert "\\newcommand{\\effLlmThreeBSixFourMfu}{47.12\\%}" in tex
    assert "\\newcommand{\\effLlmThreeBSixFourValidTokensPerSecond}{1,850,479\\,token/s}" in tex
    assert "\\newcommand{\\effClaimsTable}" in tex
    names = [line.split("}")[0].removeprefix("\\newcommand{\\") for line in tex.splitlines() if line.startswith("\\newcommand")]
    assert all(n.isalpha() for n in names) and len(names) == len(set(names))
    c = rendered[("example_c_scaling.eff", "tex")].decode()
    # strong efficiency = (4.01 / 0.605) / (64 / 8) = 0.8285
    assert f"{4.01 / 0.605 / 8 * 100:.4g}" == "82.85"
    assert "\\newcommand{\\effDpStrongScaledSixFourStrongScalingEfficiency}{82.85\\%}" in c


def test_report_view_degrades_without_optional_attributes():
    """GEMM shapes come from the engine's scaling comparison: absent is a note, present is a table."""
    from effspec.engine.gemm import Gemm, LocalShapes
    from effspec.report.sections import scaling

    result = effspec.load(_example("example_c_scaling.eff"))
    sr = next(iter(result.evaluation.scalings.values()))
    for run in [sr.baseline, *sr.runs]:  # as if the comparison had no shapes at all
        run.gemms = None
    view = scaling.scaling_view(sr, result.evaluation.runs)
    assert view.shapes == () and "not available" in view.shapes_note

    sr.runs[0].gemms = LocalShapes(tp=1, pp=1, cp=1, ep=1, dp=None, micro_batch=1, tokens_per_microbatch=4096,
                                   layers_per_stage=1, gemms=(Gemm("qkv", 4096, 1536, 2048, 1),), notes=())
    view = scaling.scaling_view(sr, result.evaluation.runs)
    assert view.shapes[0].columns == ("name", "m", "n", "k", "count", "batch", "per")
    assert view.shapes[0].rows == (("qkv", "4096", "1536", "2048", "1", "1", "layer"),)
    # (the per-rank charts read the diagnosis' RankProfile: tests/report/test_report_reviewer.py)
