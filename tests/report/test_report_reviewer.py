"""Issue 14, the reviewer's reading of a report: per-rank charts, GEMM tables with their run,
EFF203 on page 1, "assumed" badges that link to their cause, code spans in findings, rule links
to a configurable documentation base, and ids unique in every HTML document."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rendering import reports

import effspec
from effspec.report import render

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))


class _Anchors(HTMLParser):
    """Every id an HTML page defines, and every in-document reference it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.append(value)
            elif name in ("href", "xlink:href") and value.startswith("#"):
                self.refs.append(value[1:])
            self.refs += re.findall(r"url\(#([^)]+)\)", value)

    handle_startendtag = handle_starttag


def _anchors(html: str) -> _Anchors:
    parser = _Anchors()
    parser.feed(html)
    return parser


# ---------------------------------------------------------------------------
# 7. Inline SVGs: ids unique per document, every internal reference resolves


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_id_in_a_report_is_unique_and_every_reference_resolves(example, render_cache):
    html = reports(render_cache, [example], "html")[example.name].decode("utf-8")  # rendered once per session
    page = _anchors(html)
    repeated = sorted({i for i in page.ids if page.ids.count(i) > 1})
    assert repeated == []
    assert sorted(set(page.refs) - set(page.ids)) == []
    assert page.refs  # the page links to its own source lines at least


def test_two_charts_of_one_page_share_no_id_and_stay_deterministic():
    from effspec.report import charts

    result = effspec.load(ROOT / "examples" / "example_a_measured.eff")
    first = render(result, "html")
    assert first == render(effspec.load(ROOT / "examples" / "example_a_measured.eff"), "html")
    svgs = re.findall(r"<svg.*?</svg>", first.decode("utf-8"), re.S)
    assert len(svgs) >= 2
    prefixes = [sorted({i.split("-", 1)[0] for i in _anchors(s).ids}) for s in svgs]
    assert prefixes == [[f"c{n}"] for n in range(1, len(svgs) + 1)]  # one prefix per chart, in page order
    # The rewrite leaves references to ids the chart does not define alone, and rewrites both kinds it does.
    svg = '<svg><defs><path id="g1"/></defs><use xlink:href="#g1"/><rect clip-path="url(#g1)"/><a href="#L3"/></svg>'
    assert charts.scope_ids(svg, "c7") == ('<svg><defs><path id="c7-g1"/></defs><use xlink:href="#c7-g1"/>'
                                           '<rect clip-path="url(#c7-g1)"/><a href="#L3"/></svg>')


# ---------------------------------------------------------------------------
# 5. Backticks in finding messages are code spans, never literal, and never markup from the spec

HOSTILE_ACCELERATOR = '''eff 1
run hostile {
  model { kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }
  convention { preset = palm }
  work { seq_len = 128 token/sequence  global_batch = 8 sequence }
  hardware { accelerator = "<script>alert(1)</script> <b>"  count = 1 device  dtype = bf16  peak = 989.4 TFLOP/s from datasheet "d" }
  timing { step_time = [0.01, 0.01, 0.011, 0.01, 0.012] s  warmup = 0 step  boundary = "x" }
}
'''


def _findings_section(html: str) -> str:
    start = html.index('<section id="findings">')
    return html[start:html.index("</section>", start)]


def test_finding_backticks_are_code_spans_and_hostile_text_stays_text():
    from effspec.report.html import code_spans

    assert str(code_spans("run `a` has `<b>` & an unpaired ` tick")) == (
        "run <code>a</code> has <code>&lt;b&gt;</code> &amp; an unpaired ` tick")
    result = effspec.check_text(HOSTILE_ACCELERATOR, "hostile.eff")
    html = render(result, "html").decode("utf-8")
    findings = _findings_section(html)
    # EFF206 quotes the accelerator in backticks: a code span whose text is the escaped name
    assert "<code>&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt;</code> is not in the peak catalog" in findings
    # EFF502's message and help: `hostile`, `step_time` as spans, no backtick left in the findings' text
    assert "run <code>hostile</code> has only 5 <code>step_time</code> samples" in findings
    assert "`" not in re.sub(r"<[^>]+>", "", findings)
    assert "<script" not in html and "<b>" not in html


@pytest.mark.slow
def test_finding_backticks_print_as_code_not_literally_in_the_pdf():
    import io

    from pypdf import PdfReader

    data = render(effspec.check_text(HOSTILE_ACCELERATOR, "hostile.eff"), "pdf")
    text = "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)
    findings = text[text.index("6 Findings"):text.index("Suppressed findings")]
    assert "has only 5 step_time samples" in " ".join(findings.split())
    assert "<script>alert(1)</script> <b> is not in the peak catalog" in " ".join(findings.split())
    assert "`" not in findings


# ---------------------------------------------------------------------------
# 3. EFF203 on page 1: the figure divided by a peak off the catalog row, and the corrected one


def test_eff203_marks_mfu_on_page_1_with_the_catalog_figure_beside_it():
    from test_report_audit import _headline_columns

    # By hand (palm, full attention; L=24 d=2048 f=8192 V=50257 s=2048):
    #   per layer qkv 6·d² + out 2·d² + ffn 4·d·f + scores 4·s·d = 117,440,512; logits 2·d·V = 205,852,672
    #   training FLOP/token = 3 × (24 × 117,440,512 + 205,852,672) = 9,073,274,880
    d, f, V, s = 2048, 8192, 50257, 2048
    fpt = 3 * (24 * (6 * d * d + 2 * d * d + 4 * d * f + 4 * s * d) + 2 * d * V)
    assert fpt == 9_073_274_880
    per_device = fpt * (256 * 2048 / 1.6) / 8
    declared, catalog = per_device / 756e12, per_device / 989.4e12  # the PCIe figure written; the SXM row
    assert (f"{declared * 100:.4g}", f"{catalog * 100:.4g}") == ("49.16", "37.56")
    result = effspec.load(ROOT / "tests" / "fixtures" / "rules" / "EFF203" / "fail_pcie_figure_on_sxm.eff")
    assert [d.code for d in result.diagnostics if d.code.startswith("EFF2")] == ["EFF203"]
    (cols,) = _headline_columns(render(result, "html").decode("utf-8"))
    for name in ("MFU", "HFU"):
        assert cols[name]["status"] == "wrong input EFF203 at 13"
        assert cols[name]["versus"] == "37.56 % against the catalog's dense BF16 peak"
        assert "divides by the peak EFF203 calls wrong" in cols[name]["notes"]
    assert cols["Model FLOP/s per device"]["status"] == "from inputs"  # does not divide by the peak


# ---------------------------------------------------------------------------
# 2. GEMM tables with the run they belong to


def _section(html: str, name: str) -> str:
    start = html.index(f'<section id="{name}">')
    return html[start:html.index("</section>", start)]


def test_example_c_gemm_tables_sit_with_their_runs_not_in_the_scaling_section(render_cache):
    html = reports(render_cache, [ROOT / "examples" / "example_c_scaling.eff"], "html")["example_c_scaling.eff"].decode("utf-8")
    scaling, derivations = _section(html, "scaling"), _section(html, "derivations")
    assert "local GEMM shapes" not in scaling and "<caption>" not in scaling
    # the scaling links to each run's table instead
    assert '<a href="#gemms-1">base_8</a>, <a href="#gemms-2">scaled_64</a>' in scaling
    # each run's table is inside that run's part of the derivations (between its heading and the next run's)
    base, scaled = derivations.index("<h3>base_8</h3>"), derivations.index("<h3>scaled_64</h3>")
    base_table = derivations.index("<caption>base_8: local GEMM shapes per rank")
    scaled_table = derivations.index("<caption>scaled_64: local GEMM shapes per rank")
    assert base < derivations.index('<h4 id="gemms-1">') < base_table < scaled < derivations.index('<h4 id="gemms-2">') < scaled_table
    # by hand: dp = 8 and dp = 64 both run micro-batches of 4 × 2048 = 8192 tokens on a whole replica
    # (tp = 1): qkv is 8192 × (3 × 2048) × 2048, ffn_up 8192 × 8192 × 2048, logits 8192 × 50257 × 2048
    for start, dp in ((base_table, 8), (scaled_table, 64)):
        table = derivations[start:derivations.index("</table>", start)]
        assert f"dp = {dp}," in table
        cells = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", table))
        for row in ("qkv 8192 6144 2048", "ffn_up 8192 8192 2048", "logits 8192 50257 2048"):
            assert f" {row} " in cells, row


# ---------------------------------------------------------------------------
# 4. "Assumed" badges link to the finding or the input that causes them


def test_assumed_badges_link_to_the_finding_or_the_input_row_that_causes_them():
    result = effspec.load(ROOT / "examples" / "example_c_scaling.eff")
    html = render(result, "html").decode("utf-8")
    # base_8's HFU divides executed FLOPs, which rest on two defaults the spec does not write:
    # `parallelism.recompute` (none) and `work.padded_tokens` (0); its badge links to the first
    summary = _section(html, "summary")
    assert summary.count('<a class="badge badge-assumed" href="#input-1-') == 1  # base_8's HFU
    # (in a summary cell an identifier may wrap at its dots and underscores: <wbr>)
    assert ('rests on assumed inputs: <a href="#input-1-20">parallelism.<wbr>recompute</a>, '
            '<a href="#input-1-21">work.<wbr>padded_<wbr>tokens</a>') in summary
    inputs = _section(html, "inputs")
    # ... and those rows exist in base_8's inputs table, marked assumed (its 19 written inputs come first)
    written = len([e for b in result.spec.runs[0].blocks for e in b.entries])
    assert written == 19
    # (two inputs a row: each input's cells start at the cell that carries its anchor)
    cells = re.findall(r'<td id="input-1-20" class="key assumed">(.*?)</td><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td>', inputs)
    assert cells == [("<code>parallelism.<wbr>recompute</code>", "none", "default (assumed): not written in the spec: "
                      "effspec&#39;s default")]
    cells = re.findall(r'<td id="input-1-21" class="key assumed">(.*?)</td><td[^>]*>(.*?)</td>', inputs)
    assert cells == [("<code>work.<wbr>padded_<wbr>tokens</code>", "0 token")]


def test_an_assumption_a_finding_explains_links_to_that_finding():
    result = effspec.load(ROOT / "examples" / "example_b_vendor_claim.eff")
    assert result.diagnostics[0].code == "EFF101"  # no convention declared: palm assumed
    html = render(result, "html").decode("utf-8")
    assert '<div class="finding sev-warning" id="finding-1">' in html
    link = '<a href="#finding-1">convention.preset, convention.attention and 3 more (EFF101)</a>'
    assert link in _section(html, "summary")  # MFU and the FLOP/s per device rest on the assumed convention
    derivations = _section(html, "derivations")
    mfu = derivations[derivations.index('<span class="d-name">MFU</span>'):]
    assert mfu[:mfu.index("</p>")].endswith(f'<span class="tag">rests on assumed inputs</span> <span class="causes">{link}</span>')


@pytest.mark.slow
def test_assumed_links_are_live_in_the_pdf(render_cache):
    import io

    from pypdf import PdfReader

    example = ROOT / "examples" / "example_b_vendor_claim.eff"
    reader = PdfReader(io.BytesIO(reports(render_cache, [example], "pdf")[example.name]))  # rendered once per session
    page1 = {str(a.get_object().get("/Dest")) for a in reader.pages[0].get("/Annots") or []}
    assert {"finding-1", "input-1-14", "input-1-15"} <= page1
    dests = reader.named_destinations
    finding = reader.pages[reader.get_destination_page_number(dests["finding-1"])].extract_text()
    assert "EFF101" in finding
    row = reader.pages[reader.get_destination_page_number(dests["input-1-14"])].extract_text()
    row = re.sub(r"\s+", "", row)  # an identifier wraps at its dots in a narrow cell
    assert "parallelism.recompute" in row and "default(assumed)" in row


# ---------------------------------------------------------------------------
# 6. Rule links: a configurable documentation base, else the shipped page and `effspec explain`

DOCS = "https://docs.example.org/effspec/rules"


def test_rule_links_default_to_the_shipped_page_and_effspec_explain_in_html(render_cache):
    from importlib import resources

    example = ROOT / "examples" / "example_b_vendor_claim.eff"
    html = reports(render_cache, [example], "html")[example.name].decode("utf-8")
    findings = _findings_section(html)
    assert ('<p class="small rule-link">Rule page: <code>effspec/spec/rules/EFF202.md</code>, shipped with effspec; '
            'run <code>effspec explain EFF202</code> to print it.</p>') in findings
    assert "http" not in findings  # no guessed URL
    # the page named is really shipped: the package's data holds it
    assert resources.files("effspec.spec").joinpath("rules", "EFF202.md").read_text(encoding="utf-8").startswith("# EFF202")


def test_rule_links_follow_the_doc_base_in_html_and_sarif(tmp_path):
    import json

    result = effspec.load(ROOT / "examples" / "example_b_vendor_claim.eff")
    html = render(result, "html", doc_base=DOCS).decode("utf-8")
    assert f'Rule page: <a href="{DOCS}/EFF202.md">{DOCS}/EFF202.md</a>, or run <code>effspec explain EFF202</code>.' in html
    placeholder = render(result, "html", doc_base="https://docs.example.org/rules.html#{code}").decode("utf-8")
    assert '<a href="https://docs.example.org/rules.html#EFF202">' in placeholder
    sarif = json.loads(render(result, "sarif", doc_base=DOCS))
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["EFF202"]["helpUri"] == f"{DOCS}/EFF202.md"
    assert rules["EFF202"]["help"]["text"].startswith("EFF202: ")  # what the rule reports, then where its page is
    assert rules["EFF202"]["help"]["text"].endswith(
        f"Example and fix: the rule's page: {DOCS}/EFF202.md; run `effspec explain EFF202` to print it "
        "(shipped with effspec as effspec/spec/rules/EFF202.md).")
    assert f"[Example and fix]({DOCS}/EFF202.md)" in rules["EFF202"]["help"]["markdown"]
    plain = json.loads(render(result, "sarif"))
    rules = {r["id"]: r for r in plain["runs"][0]["tool"]["driver"]["rules"]}
    assert all("helpUri" not in r for r in rules.values())
    assert rules["EFF202"]["help"]["text"].endswith("Example and fix: run `effspec explain EFF202` to print it "
                                                    "(shipped with effspec as effspec/spec/rules/EFF202.md).")




@pytest.mark.slow
def test_rule_links_are_live_uris_in_the_pdf():
    import io

    from pypdf import PdfReader

    result = effspec.load(ROOT / "examples" / "example_b_vendor_claim.eff")
    reader = PdfReader(io.BytesIO(render(result, "pdf", doc_base=DOCS)))
    uris = {str(a.get_object()["/A"]["/URI"]) for p in reader.pages for a in p.get("/Annots") or []
            if "/A" in a.get_object() and "/URI" in a.get_object()["/A"]}
    assert uris == {f"{DOCS}/{d.code}.md" for d in result.diagnostics}
    plain = PdfReader(io.BytesIO(render(result, "pdf")))
    assert not [a for p in plain.pages for a in p.get("/Annots") or [] if "/A" in a.get_object()]  # no external link
    text = " ".join(" ".join(p.extract_text() or "" for p in plain.pages).split())
    assert "Rule page: effspec/spec/rules/EFF202.md, shipped with effspec; run effspec explain EFF202 to print it." in text


def test_doc_base_comes_from_the_flag_or_the_configuration_and_must_be_an_http_url(tmp_path, capsys):
    import json

    from effspec.cli import main

    spec = tmp_path / "b.eff"
    spec.write_text((ROOT / "examples" / "example_b_vendor_claim.eff").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.effspec]\ndoc_base = "https://config.example/r/"\n', encoding="utf-8")
    out = tmp_path / "b.sarif"
    assert main(["report", str(spec), "-o", str(out)]) == 1  # Example B has errors
    rules = {r["id"]: r for r in json.loads(out.read_text())["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["EFF202"]["helpUri"] == "https://config.example/r/EFF202.md"
    assert main(["report", str(spec), "-o", str(out), "--doc-base", DOCS]) == 1  # the flag wins
    rules = {r["id"]: r for r in json.loads(out.read_text())["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["EFF202"]["helpUri"] == f"{DOCS}/EFF202.md"
    capsys.readouterr()
    assert main(["check", "--format", "sarif", str(spec), "--doc-base", DOCS]) == 1
    rules = {r["id"]: r for r in json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["EFF101"]["helpUri"] == f"{DOCS}/EFF101.md"
    assert main(["check", "--show-settings", str(spec)]) == 0
    assert capsys.readouterr().out.endswith('inline_config = true\ndoc_base = "https://config.example/r/"\n')
    html = tmp_path / "b.html"
    main(["report", str(spec), "-o", str(html)])
    assert '<a href="https://config.example/r/EFF202.md">' in html.read_text(encoding="utf-8")
    for bad in ("javascript:alert(1)", "file:///etc/passwd", "docs/rules", 'https://x.example/"onmouseover=1'):
        assert main(["report", str(spec), "-o", str(html), "--doc-base", bad]) == 2
        assert "argument --doc-base" in capsys.readouterr().err
    bad = tmp_path / "bad"  # (settings are cached per folder: another project)
    (bad / ".git").mkdir(parents=True)
    (bad / "pyproject.toml").write_text('[tool.effspec]\ndoc_base = "javascript:alert(1)"\n', encoding="utf-8")
    (bad / "b.eff").write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
    result = effspec.load(bad / "b.eff")
    problem = [d for d in result.diagnostics if d.code == "EFF031"]
    assert problem and "`doc_base` is not an http or https URL with a host" in problem[0].message


# ---------------------------------------------------------------------------
# 1. Per-rank charts: the split of every rank, sorted, and the straggler's timeline

_BAR = re.compile(r'<g id="c\d+-((?:rank|bin)-\d+)-(compute|comm|stall)">\s*<path d="([^"]+)"')
_LINE = re.compile(r'<g id="c\d+-(straggler|others-median)">\s*<path d="([^"]+)"')


def _points(d: str) -> list[tuple[float, float]]:
    nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", d)]
    return list(zip(nums[0::2], nums[1::2], strict=True))


def _bars(svg: str) -> dict[str, dict[str, tuple[float, float]]]:
    """{bar id: {segment: (left x, height)}} of the drawn rectangles, in the SVG's own coordinates."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for bar, part, d in _BAR.findall(svg):
        pts = _points(d)
        out.setdefault(bar, {})[part] = (min(x for x, _ in pts), max(y for _, y in pts) - min(y for _, y in pts))
    return out


def _rank_charts(result) -> dict:
    from effspec.report.sections import build

    (run,) = build(result, charts=True).runs
    return run.charts


def test_straggler_example_rank_split_is_every_rank_sorted_slowest_first():
    import csv
    import statistics

    path = ROOT / "examples" / "straggler_ranks.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    means = {}
    for r in sorted({int(row["rank"]) for row in rows}):
        mine = [row for row in rows if int(row["rank"]) == r]
        means[r] = {p: statistics.fmean(float(row[p]) for row in mine) for p in ("compute", "comm", "stall")}
    assert len(means) == 64 and len(rows) == 64 * 60
    slowest = max(means, key=lambda r: means[r]["compute"])
    assert slowest == 37 and {row["node"] for row in rows if row["rank"] == "37"} == {"node04"}
    charts = _rank_charts(effspec.load(ROOT / "examples" / "straggler_ranks.eff"))
    bars = _bars(charts["ranks"])
    assert len(bars) == 64 and all(set(b) == {"compute", "comm", "stall"} for b in bars.values())
    # left to right: by mean compute, slowest first (ties by rank id), rank 37 leftmost
    order = sorted(bars, key=lambda b: bars[b]["compute"][0])
    assert order == [f"rank-{r}" for r in sorted(means, key=lambda r: (-means[r]["compute"], r))]
    # each segment is its share of the rank's mean step, as the CSV says
    for bar, seg in bars.items():
        m = means[int(bar.split("-")[1])]
        total_px, total = sum(h for _, h in seg.values()), sum(m.values())
        for part in ("compute", "comm", "stall"):
            assert seg[part][1] / total_px == pytest.approx(m[part] / total, abs=2e-4), (bar, part)
    # heights share one scale: rank 37's compute bar over the last rank's is the ratio of their means
    last = int(order[-1].split("-")[1])
    assert bars["rank-37"]["compute"][1] / bars[order[-1]]["compute"][1] == pytest.approx(
        means[37]["compute"] / means[last]["compute"], rel=1e-4)
    assert "<pattern" in charts["ranks"]  # communication hatched: readable in grayscale
    # the triangle the caption promises: one marker over rank 37's bar, centred on it
    (marker,) = re.findall(r'<g id="c\d+-flagged">.*?<use xlink:href="#[^"]+" x="([0-9.]+)"', charts["ranks"], re.S)
    left, width = bars["rank-37"]["compute"][0], bars[order[1]]["compute"][0] - bars["rank-37"]["compute"][0]
    assert float(marker) == pytest.approx(left + 0.4 * width, abs=0.01)  # bars are 0.8 wide on a pitch of 1
    assert charts["ranks_caption"] == (
        "Each rank's mean seconds per step, split into compute (dark), communication (hatched) and stall (light); "
        "the 64 ranks sorted by mean compute time, slowest first; the straggler, rank 37 (node04), marked with a triangle.")


def test_straggler_example_timeline_is_rank_37_against_the_other_63():
    import csv
    import statistics

    rows = list(csv.DictReader((ROOT / "examples" / "straggler_ranks.csv").open(encoding="utf-8")))
    steps = sorted({int(row["step"]) for row in rows})
    mine = {int(row["step"]): float(row["compute"]) for row in rows if row["rank"] == "37"}
    others = {s: statistics.median(float(row["compute"]) for row in rows if int(row["step"]) == s and row["rank"] != "37")
              for s in steps}
    charts = _rank_charts(effspec.load(ROOT / "examples" / "straggler_ranks.eff"))
    svg = charts["rank_timeline"]
    lines = {name: _points(d) for name, d in _LINE.findall(svg)}
    assert len(lines["straggler"]) == len(lines["others-median"]) == len(steps) == 60
    assert "others-band" in svg and "stroke-dasharray" in svg[svg.index("-straggler"):]  # the straggler dashed
    # one linear scale maps seconds to the SVG's y for both lines (y grows downwards): fit it on two points
    values = [mine[s] for s in steps] + [others[s] for s in steps]
    ys = [y for _, y in lines["straggler"]] + [y for _, y in lines["others-median"]]
    slope = (ys[0] - ys[60]) / (values[0] - values[60])
    assert slope < 0
    for v, y in zip(values, ys, strict=True):
        assert y == pytest.approx(ys[0] + slope * (v - values[0]), abs=0.01)
    # x is the step index: equal spacing, left to right
    xs = [x for x, _ in lines["straggler"]]
    assert all(b - a == pytest.approx(xs[1] - xs[0], abs=1e-3) for a, b in zip(xs, xs[1:], strict=False))
    assert charts["rank_timeline_caption"] == (
        "Compute seconds at each step of rank 37 (node04), the straggler (dashed), against the median of the other "
        "63 ranks (solid) and their 10th to 90th percentile band (shaded).")


RANKS_SPEC = '''eff 1
run r {
  model { kind = custom  flops_per_token = 1e9 FLOP/token }
  convention { preset = palm }
  work { valid_tokens = 1000000 token }
  parallelism { dp = 1024  tp = 1  pp = 1  micro_batch = 1 sequence }
  hardware { accelerator = "TestGPU"  count = 1024 device  dtype = bf16  peak = 100 TFLOP/s }
  timing { step_time = [1.2, 1.2, 1.2, 1.2, 1.2] s  warmup = 0 step }
  ranks { samples = file "ranks.csv" }
}
'''


def test_1024_ranks_are_binned_with_the_straggler_kept_on_its_own_bar(tmp_path):
    import numpy as np

    R, S = 1024, 6
    rng = np.random.default_rng(14)
    compute = 1.0 + 0.05 * rng.random((R, S))
    compute[700] *= 1.3  # rank 700 (node087) is the straggler
    comm = 0.1 + (compute.max(axis=0) - compute)
    lines = ["rank,node,step,compute,comm,stall"]
    lines += [f"{r},node{r // 8:03d},{s},{compute[r, s]:.6f},{comm[r, s]:.6f},0.002" for r in range(R) for s in range(S)]
    (tmp_path / "ranks.csv").write_text("\n".join(lines) + "\n")
    result = effspec.check_text(RANKS_SPEC, "r.eff", str(tmp_path))
    assert result.evaluation.runs["r"].diagnosis.ranks == (700,)
    charts = _rank_charts(result)
    bars = _bars(charts["ranks"])
    # by hand: 1,023 other ranks in 64 − 1 = 63 bars at most: bins of ceil(1023 / 63) = 17, so ceil(1023 / 17) = 61 bins
    assert sorted(bars) == sorted(["rank-700"] + [f"bin-{k}" for k in range(1, 62)])
    order = sorted(bars, key=lambda b: bars[b]["compute"][0])
    assert order[0] == "rank-700" and order[1:] == [f"bin-{k}" for k in range(1, 62)]
    means = np.round(compute, 6).mean(axis=1)
    rest = sorted((r for r in range(R) if r != 700), key=lambda r: (-means[r], r))
    expected = [means[700]] + [float(np.mean(means[rest[k:k + 17]])) for k in range(0, 1023, 17)]
    heights = [bars[b]["compute"][1] for b in order]
    for h, v in zip(heights, expected, strict=True):
        assert h / heights[0] == pytest.approx(v / expected[0], rel=2e-4)
    assert heights[1:] == sorted(heights[1:], reverse=True)  # bins, slowest first
    assert charts["ranks_caption"].endswith(
        "the 1,024 ranks sorted by mean compute time, slowest first; the straggler, rank 700 (node087), marked with a "
        "triangle; the other ranks averaged in bins of up to 17 consecutive ranks in that order (labelled by their "
        "positions in it).")
    assert "the other 1,023 ranks" in charts["rank_timeline_caption"]


def test_no_timeline_without_a_straggler_and_the_split_still_drawn(tmp_path):
    import numpy as np

    rng = np.random.default_rng(3)
    compute = np.repeat([0.7, 1.0, 0.8, 0.9], 2)[:, None] * (1 + 0.01 * rng.random((8, 5)))  # imbalance, 8 ranks
    comm = 0.05 + (compute.max(axis=0) - compute)
    lines = ["rank,node,step,compute,comm,stall"]
    lines += [f"{r},node0,{s},{compute[r, s]:.6f},{comm[r, s]:.6f},0.001" for r in range(8) for s in range(5)]
    (tmp_path / "ranks.csv").write_text("\n".join(lines) + "\n")
    text = RANKS_SPEC.replace("dp = 1024  tp = 1  pp = 1", "dp = 2  tp = 1  pp = 4").replace("1024 device", "8 device")
    result = effspec.check_text(text, "r.eff", str(tmp_path))
    assert result.evaluation.runs["r"].diagnosis.family == "imbalance"
    charts = _rank_charts(result)
    assert "rank_timeline" not in charts
    order = sorted(_bars(charts["ranks"]), key=lambda b: _bars(charts["ranks"])[b]["compute"][0])
    assert sorted(b.split("-")[1] for b in order[:2]) == ["2", "3"]  # stage 1 (ranks 2 and 3, 1.0 s) computes longest
    assert "straggler" not in charts["ranks_caption"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_histogram_counts_steps_in_whole_numbers(example):
    """The histogram's y axis counts steps: its tick labels are whole numbers (12.5 steps is not a count)."""
    from effspec.report.sections import build

    charts = [run.charts.get("step_time") for run in build(effspec.load(str(example)), charts=True).runs]
    for svg in filter(None, charts):
        labels = re.findall(r"<!-- ([^>]*?) -->", svg)
        start = labels.index("step time (s), after warm-up") + 1
        end = next(i for i, t in enumerate(labels) if t.startswith("steps"))
        ticks = labels[start:end]
        assert ticks and all(re.fullmatch(r"\d+|10\^\{?-?\d+\}?|\$.*\$", t) for t in ticks), ticks


def test_rank_split_with_comm_exposed_draws_and_names_the_exposed_part(tmp_path):
    # A rank table from `effspec traces` carries `comm_exposed`, the communication no compute
    # hides: the chart's hatched segment is that column, and the caption says so.
    import csv
    import shutil
    import statistics

    rows = list(csv.DictReader((ROOT / "examples" / "straggler_ranks.csv").open(encoding="utf-8")))
    with (tmp_path / "straggler_ranks.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["rank", "node", "step", "compute", "comm", "stall", "comm_exposed"])
        for row in rows:  # a quarter of each rank's communication exposed
            writer.writerow([row["rank"], row["node"], row["step"], row["compute"], row["comm"], row["stall"],
                             f"{float(row['comm']) / 4:.6f}"])
    for name in ("straggler_ranks.eff", "straggler_steps.csv"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    charts = _rank_charts(effspec.load(tmp_path / "straggler_ranks.eff"))
    assert charts["ranks_caption"].startswith(
        "Each rank's mean seconds per step, split into compute (dark), exposed communication (hatched) and stall (light)")
    bars = _bars(charts["ranks"])
    assert len(bars) == 64
    for bar, seg in bars.items():
        mine = [row for row in rows if row["rank"] == bar.split("-")[1]]
        compute = statistics.fmean(float(r["compute"]) for r in mine)
        exposed = statistics.fmean(float(f"{float(r['comm']) / 4:.6f}") for r in mine)
        stall = statistics.fmean(float(r["stall"]) for r in mine)
        total_px = sum(h for _, h in seg.values())
        assert seg["comm"][1] / total_px == pytest.approx(exposed / (compute + exposed + stall), abs=2e-4), bar
