"""The PDF's layout, measured on the PDF itself: page fill, the source gutter, page 1's cells, the page budget.

Every example is laid out once per session (WeasyPrint is most of the time).
Positions come from the PDF through pdfplumber (character, rule, rectangle,
curve and image boxes, in points from the top of the page); the one thing
the PDF cannot say, which block the stylesheet keeps whole, is read from the
same WeasyPrint document the PDF was written from (tests/rendering.py, which
renders each example once per test session for every module that reads it).
"""

from __future__ import annotations

import io
import pathlib
import re
from dataclasses import dataclass

import pytest
from rendering import laid_out

import effspec
from effspec.report.pdf import layout_pdf, write_pdf
from effspec.report.sections import build
from effspec.report.sections.convention import same_knobs

pdfplumber = pytest.importorskip("pdfplumber", reason="pdfplumber (the test extra) not installed: pip install -e '.[test]'")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))
MM = 72 / 25.4


def page_margins() -> tuple[float, float, float, float]:
    """The @page margins (top, right, bottom, left) in points, read from the stylesheet."""
    css = (ROOT / "templates" / "report.css").read_text(encoding="utf-8")
    block = css[css.index("@page {"):]
    top, right, bottom, left = (float(v) * MM for v in re.search(r"margin:\s*([\d.]+)mm\s+([\d.]+)mm\s+([\d.]+)mm\s+([\d.]+)mm", block).groups())
    return top, right, bottom, left


@dataclass
class Laid:
    """One rendered report: its PDF bytes, pdfplumber pages' object boxes, and WeasyPrint's pages."""

    pdf: bytes
    unbreakable: list[float | None]  # per page: its first unbreakable block's height (rendering.first_unbreakable_height)
    boxes: list[list[dict]]  # per page: every drawn object inside the content area
    chars: list[list[dict]]  # per page: glyph boxes
    outside: list[str]  # what is drawn left or right of the content area (page, glyph or shape, x)
    height: float


def lay_out(pdf: bytes, unbreakable: list[float | None]) -> Laid:
    top, right, bottom, left = page_margins()
    boxes, chars, outside = [], [], []
    with pdfplumber.open(io.BytesIO(pdf)) as doc:
        height = float(doc.pages[0].height)
        for index, page in enumerate(doc.pages):
            drawn = page.chars + page.rects + page.lines + page.curves + page.images
            # The running head and the page number sit in the margins: not content.
            boxes.append([o for o in drawn if o["top"] >= top - 1 and o["bottom"] <= height - bottom + 1])
            chars.append(list(page.chars))
            width = float(page.width)
            outside += [f"page {index + 1}: {o.get('text', o['object_type'])!r} at x {o['x0']:.0f}-{o['x1']:.0f}" for o in drawn
                        if (o["x0"] < left - 1 or o["x1"] > width - right + 1) and o.get("text", "x").strip()]
    return Laid(pdf, unbreakable, boxes, chars, outside, height)


@pytest.fixture(scope="module")
def laid(render_cache) -> dict[str, Laid]:
    return {name: lay_out(pdf, unbreakable) for name, (pdf, unbreakable) in laid_out(render_cache, EXAMPLES).items()}


# --- 1. No page left more than a third empty -----------------------------------

def content_area(height: float) -> tuple[float, float]:
    top, _, bottom, _ = page_margins()
    return top, height - bottom


def filled_to(boxes: list[dict]) -> float:
    """The lowest point drawn on a page (points from the top of the page)."""
    return max(o["bottom"] for o in boxes)


def fill_report(item: Laid) -> list[str]:
    """Pages (all but the last) more than a third empty whose next block would have fit: the failures."""
    top, bottom = content_area(item.height)
    usable = bottom - top
    failures = []
    for i, boxes in enumerate(item.boxes[:-1]):
        free = bottom - filled_to(boxes) if boxes else usable
        if free <= usable / 3:
            continue
        next_block = item.unbreakable[i + 1]
        if next_block is not None and next_block > free:
            continue
        failures.append(f"page {i + 1}: {free / usable:.0%} empty, next page's first block "
                        + ("is breakable" if next_block is None else f"is {next_block:.0f} pt, free {free:.0f} pt"))
    return failures


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_pdf_pages_are_at_least_two_thirds_full_unless_the_next_block_cannot_fit(laid, name):
    assert fill_report(laid[name]) == []


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_pdf_nothing_runs_past_the_side_margins(laid, name):
    # A wide table (a long value as written kept on one line) once pushed its line column off the page.
    assert laid[name].outside[:5] == []


def test_pdf_stylesheet_forces_no_page_break():
    for path in (ROOT / "templates").glob("*.*"):
        text = path.read_text(encoding="utf-8")
        forced = re.findall(r"(?:page-)?break-(?:before|after)\s*:\s*(always|page|left|right|recto|verso)", text)
        assert forced == [], f"{path.name} forces a page break: {forced}"


# --- 3. Nothing drawn on page 1 overlaps ---------------------------------------

def overlapping_chars(chars: list[dict], share: float = 0.25) -> list[str]:
    """Pairs of glyph boxes that cover each other by more than ``share`` of the smaller one, each way.

    Neighbouring glyphs in a word only touch, except a kerned pair (bold "Fi",
    "Te"), which follow each other in the content stream and are let be; any
    other such pair is text drawn over text: one cell's caption running into
    the next.  Checked glyph by glyph, because
    pdfplumber merges glyphs closer than its tolerance into one word and
    would hide exactly the collision looked for.
    """
    boxes = sorted(({**c, "order": n} for n, c in enumerate(chars) if c["text"].strip()), key=lambda c: c["x0"])
    clashes = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b["x0"] >= a["x1"]:
                break
            if abs(a["order"] - b["order"]) == 1 and abs(a["top"] - b["top"]) < 0.1:
                continue  # kerning
            dx = min(a["x1"], b["x1"]) - b["x0"]
            dy = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            if dx > share * min(a["width"], b["width"]) and dy > share * min(a["height"], b["height"]):
                clashes.append(f"{a['text']!r} at ({a['x0']:.0f}, {a['top']:.0f}) and {b['text']!r} at ({b['x0']:.0f}, {b['top']:.0f})")
    return clashes


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_pdf_page_one_has_no_overlapping_text(laid, name):
    assert overlapping_chars(laid[name].chars[0]) == []


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_pdf_no_page_has_overlapping_text(laid, name):
    clashes = [f"page {n + 1}: {c}" for n, chars in enumerate(laid[name].chars) for c in overlapping_chars(chars)]
    assert clashes[:5] == []


def test_breakable_marks_identifier_wrap_points_and_keeps_markup_and_entities_whole():
    from effspec.report.html import breakable, code_spans

    assert breakable("work.padded_tokens, parallelism.recompute") == (
        "work.<wbr>padded_<wbr>tokens, parallelism.<wbr>recompute")
    # numbers and a lone dot are not identifiers: "3.5 s", "1.2e10", "end."
    assert breakable("3.5 s, 1.2e10 at end.") == "3.5 s, 1.2e10 at end."
    # a hostile string stays escaped; a 40-character run gets a point every 16 characters, outside any entity
    out = breakable(code_spans("`claim_name` <b>&" + "x" * 40))
    # (the run is "<b>&" and the 40 x: 16, 16 and 12 characters, the entities whole)
    assert out == "<code>claim_<wbr>name</code> &lt;b&gt;&amp;" + "x" * 12 + "<wbr>" + "x" * 16 + "<wbr>" + "x" * 12
    assert breakable("a\0b") == "ab"  # the marker character cannot be smuggled in


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_pdf_page_one_notes_wrap_identifiers_only_at_dots_and_underscores(laid, name):
    # "parallelism.recompute, w / ork.padded_tokens" on Example C's page 1 before: a line may
    # end inside an identifier only after its ".", "_" or "/".
    report = build(effspec.load(ROOT / "examples" / name))
    idents = {t for run in report.runs for h in run.headline for c in h.causes for t in re.findall(r"[a-z_]+\.[a-z_.]+", c.text)}
    idents |= {t for run in report.runs for h in run.headline for t in re.findall(r"[a-z_]+\.[a-z_.]+", h.note)}
    with pdfplumber.open(io.BytesIO(laid[name].pdf)) as pdf:
        text = pdf.pages[0].extract_text()
    for ident in idents:
        for match in re.finditer("\n?".join(map(re.escape, ident)), text):
            broken = [k for k, ch in enumerate(match[0]) if ch == "\n"]
            assert all(match[0][k - 1] in "._/" for k in broken), (ident, match[0])


# --- 2. Source listings wrap inside the gutter -----------------------------------

MINIMAL_RUN = '''run {name} {{
  model {{ kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }}
  convention {{ preset = palm }}
  work {{ seq_len = 128 token/sequence  global_batch = 8 sequence }}
  hardware {{ accelerator = "H100-SXM5-80GB"  count = 1 device  dtype = bf16  peak = 989.4 TFLOP/s from datasheet "x" }}
  timing {{ step_time = [0.01, 0.01, 0.011, 0.01, 0.012] s  warmup = 0 step  boundary = "x" }}
}}
'''
# Twenty comment lines of about seven printed rows each (words, then one unbroken
# run of letters), and one longer than a page, so that some page break falls inside a line.
LONG_LINES = ("".join(f"# {n:02d} " + "wrapped words " * 30 + "x" * 200 + "\n" for n in range(20))
              + "# longer than a page: " + "split across pages " * 480 + "\n")
LONG_SPEC = "eff 1\n" + LONG_LINES + MINIMAL_RUN.format(name="long_lines")
MUTED = (0.353, 0.353, 0.353)  # --muted, the line numbers' colour


def is_muted(char: dict) -> bool:
    colour = char.get("non_stroking_color") or ()
    return len(colour) == 3 and all(abs(c - m) < 0.01 for c, m in zip(colour, MUTED, strict=True))


def listing(pdf: bytes) -> tuple[list[tuple[int, list[dict]]], list[float]]:
    """The source listing: (page index, glyphs) for every printed row in order, and the gutter's right edge on each row.

    The gutter is the line-number box with its right rule; WeasyPrint draws
    that rule as a clipped rectangle one row high spanning the box, whose
    right edge is where the listing's text may begin.
    """
    rows: list[tuple[int, list[dict]]] = []
    gutter: list[float] = []
    with pdfplumber.open(io.BytesIO(pdf)) as doc:
        below = None  # the Source heading's bottom on its page, then the content area's top on the pages after
        top, _ = content_area(float(doc.pages[0].height))
        bottom = float(doc.pages[0].height) - page_margins()[2]
        for index, page in enumerate(doc.pages):
            if below is None:
                heading = [w for w in page.extract_text_lines() if w["text"].startswith("10 Source")]
                if not heading:
                    continue
                below = heading[0]["bottom"]
            for line in page.extract_text_lines(return_chars=True):
                if below < line["top"] < bottom and line["chars"][0].get("size", 0) < 8:  # the listing is 7.5 pt; its lead is not
                    rows.append((index, line["chars"]))
            gutter += [r["x1"] for r in page.rects if r["top"] > below and r["height"] < 12 and r["width"] < 60]
            below = top
    return rows, gutter


def test_pdf_source_lines_wrap_right_of_the_gutter_across_page_breaks():
    pdf = write_pdf(*layout_pdf(build(effspec.check_text(LONG_SPEC, "long_lines.eff"), charts=True)))
    rows, rules = listing(pdf)
    gutter = max(rules)
    assert len(rules) >= 21 and gutter - min(rules) <= 0.5 + 1e-6  # one gutter (box and its 0.5 pt rule), on every page
    numbered = [r for r in rows if is_muted(r[1][0])]
    continued = [r for r in rows if not is_muted(r[1][0])]
    assert len(numbered) >= 21 and len(continued) >= 20 * 5 + 70  # the long lines did wrap
    for _, chars in rows:
        text = [c for c in chars if not is_muted(c)]
        assert all(c["x0"] > gutter for c in text), "".join(c["text"] for c in text)[:60]
    # Some page of the listing starts inside a wrapped line, and that row too is right of the gutter.
    first_rows = [rows[i] for i in range(1, len(rows)) if rows[i][0] != rows[i - 1][0]]
    assert any(not is_muted(chars[0]) for _, chars in first_rows)


# --- 4. The page budget of a claims-only run -------------------------------------

# A run as a paper's table row states it: a model, the work, the layout, the
# hardware, and two quoted figures; no step samples, breakdown or calendar.
CLAIMS_ONLY_RUN = '''run claims_only_{i} {{
  title  = "Claims-only run {i}, {gpus} x H100"
  source = "A paper, Table 4, row {i}"
  model {{
    kind = dense_transformer  layers = 126  d_model = 16384  heads = 128  kv_heads = 8
    ffn = swiglu  d_ff = 53248  vocab = 128000
    params = 405e9 param from paper "A paper, Table 3"
  }}
  work {{ seq_len = 8192 token/sequence  global_batch = 2048 sequence }}
  parallelism {{ tp = 8  cp = 1  pp = 16  dp = {dp} }}
  hardware {{
    accelerator = "H100-SXM5-80GB"
    count       = {gpus} device from paper "A paper, Table 4"
    dtype       = bf16
    peak        = catalog
  }}
  claim achieved_flops_per_device = {tflops} TFLOP/s from paper "A paper, Table 4"
  claim mfu                       = {mfu} %        from paper "A paper, Table 4"
}}
'''


def claims_only_spec(n: int) -> str:
    # tp·cp·pp·dp = 8·1·16·64(i+1) = count, so no layout finding is added
    return "eff 1\n" + "".join(CLAIMS_ONLY_RUN.format(i=i, gpus=128 * 64 * (i + 1), dp=64 * (i + 1), tflops=430 - 10 * i, mfu=43 - i)
                               for i in range(n))


def page_count(pdf: bytes) -> int:
    from pypdf import PdfReader

    return len(PdfReader(io.BytesIO(pdf)).pages)


@pytest.fixture(scope="module")
def budget_pages() -> dict[int, int]:
    out = {}
    for n in range(1, 7):
        result = effspec.check_text(claims_only_spec(n), "claims_only.eff")
        views = build(result).runs
        assert len(views) == n and all(view.claims_only for view in views)
        out[n] = page_count(write_pdf(*layout_pdf(build(result, charts=True))))
    return out


def test_claims_only_runs_are_recognised_and_no_other_example_run_is():
    runs = {path.name: build(effspec.load(path)).runs for path in EXAMPLES}
    assert [v.claims_only for v in runs["llama3_405b_table4.eff"]] == [True, True, True]
    assert not any(v.claims_only for v in runs["example_a_measured.eff"] + runs["straggler_ranks.eff"])


# Where a run's part starts in sections 2 to 5: its heading, a later run's run-in name (sections 2
# and 4), or its name heading a table row or row group (sections 3 and 5).
_RUN_MARK = re.compile(r'<h3[^>]*>([^<]*)</h3>|<p class="[^"]*\bsib\b[^"]*" id="[a-z]+-\d+"><span class="run">([^<]*)</span>'
                       r'|(?<!<thead><tr>)<th class="run"[^>]*>(.*?)</th>')


def _run_parts(html: str, run_ids: list[str]) -> dict[str, str]:
    """Each run's own text in sections 2 to 5 (from where its part starts to where the next run's does), joined."""
    parts = {rid: "" for rid in run_ids}
    for section in ("inputs", "convention", "derivations", "claims"):
        body = html[html.index(f'<section id="{section}">'):]
        body = body[:body.index("</section>")]
        marks = list(_RUN_MARK.finditer(body))
        for mark, after in zip(marks, marks[1:] + [None], strict=True):
            rid = next(g for g in mark.groups() if g is not None).replace("<wbr>", "")
            parts[rid] += body[mark.start():after.start() if after else len(body)]
    return parts


def _shown(part: str, name: str, value: str) -> bool:
    """Whether an input is printed in a run's part: as an entry, a knob, a figure row or a claim row."""
    bare = re.sub(r"<wbr>|,|×", "", value)
    text = re.sub(r'<span class="nw">([^<]*)</span>', r"\1", re.sub(r"<wbr>|,|×", "", part))  # a quantity's unbreakable halves
    knob = name.removeprefix("convention.")
    claim = name.removeprefix("claim ")
    return (f'<code>{name}</code> = <span class="num">{escape(bare)}</span>' in text
            or re.search(re.escape(f"<code>{name}</code></td>") + r'<td class="num[^"]*">' + re.escape(f"{escape(bare)}</td>"),
                         text) is not None  # a row of the inputs table
            or f'<code>{knob}</code> = {escape(bare)} (' in text
            or f'= <b class="d-value">{escape(bare)}</b>' in text or f'<span class="d-value">{escape(bare)}</span>' in text
            or re.search(rf'<code>{re.escape(claim)}</code><br><span class="small">[^<]*</span></td>'
                         rf'<td class="num">{re.escape(escape(bare))}<br>', text) is not None)


def test_claims_only_compaction_keeps_every_input_figure_and_formula():
    from effspec.report.html import render_html

    result = effspec.load(ROOT / "examples" / "llama3_405b_table4.eff")
    report = build(result)
    html = render_html(report)
    parts = _run_parts(html, [run.id for run in report.runs])
    first = report.runs[0]
    for n, run in enumerate(report.runs):
        part = parts[run.id]
        earlier = report.sections.inputs.runs[n].earlier
        sibling = earlier.run if earlier is not None else None
        for i in run.inputs:
            # its own entry (a row of the inputs table, or an item of "differs from" when it has a sibling), or the
            # sibling's identical one (lines aside), which the part names; identifiers may wrap at <wbr>
            inline = f"<code>{i.name}</code> = <span class=\"num\">{escape(i.value)}</span> ({escape(i.provenance)}"
            row = re.compile(re.escape(f"<code>{i.name}</code></td>") + r'<td class="num[^"]*">'
                             + re.escape(f"{escape(i.value)}</td>") + r'<td class="src[^"]*">' + re.escape(escape(i.provenance)))

            def shown_in(html_part: str) -> bool:
                plain = html_part.replace("<wbr>", "")
                return inline in plain or row.search(plain) is not None  # noqa: B023 (used at once)

            assert shown_in(part) or (sibling is not None and shown_in(parts[sibling.id]) and sibling.id in part), (run.id, i)
        same = report.sections.derivations.runs[n].same
        for metric in run.metrics:
            if metric in same:  # named with its result; its values put in are the sibling's, word for word
                assert f'<span class="lbl">{escape(metric.label)}</span> <span class="num">{escape(metric.value)}</span>' in part
                assert escape(metric.substituted) in parts[sibling.id]
            else:  # its values put in; a later run's table sets the result they give in bold
                lhs, _, rhs = metric.substituted.rpartition(" = ")
                assert escape(metric.value) in part
                assert (escape(metric.substituted) in part
                        or (sibling is not None and f'{escape(lhs)} = <b class="d-value">{escape(rhs)}</b>' in part))
            assert escape(metric.formula) in (part if sibling is None else parts[sibling.id])
            for i in metric.inputs:
                assert _shown(part, i.name, i.value) or (sibling is not None and _shown(parts[sibling.id], i.name, i.value)), (run.id, i)
        for k in run.knobs:
            assert f"<code>{k.knob}</code> = {escape(k.value)}" in (part if not same_knobs(run, earlier) else parts[first.id])
        for c in run.claims:
            assert escape(c.reconstructed) in part and f"<code>{c.written}</code>".replace("_", "_<wbr>") in part


def test_a_claims_only_run_like_an_earlier_one_prints_what_differs():
    # By hand from the spec (Llama 3, Table 4): the 16,384-GPU 8K row differs from the 8,192-GPU
    # row in the GPU count and DP (64 -> 128); the 128K row also in sequence length, batch and CP.
    report = build(effspec.load(ROOT / "examples" / "llama3_405b_table4.eff"))
    inputs, derivations = report.sections.inputs.runs, report.sections.derivations.runs
    assert [x.earlier and x.earlier.id for x in inputs] == [None, "llama3_405b_8k_8192gpu", "llama3_405b_8k_8192gpu"]
    assert [(x.input.name, x.input.value) for x in inputs[1].changed] == [("parallelism.dp", "128"), ("hardware.count", "16384 device")]
    assert [x.input.name for x in inputs[2].changed] == ["work.seq_len", "work.global_batch", "parallelism.cp", "parallelism.dp",
                                                          "hardware.count"]
    assert inputs[1].absent == () and all(same_knobs(x.run, x.earlier) for x in inputs[1:])
    # what only the derivations know, once: the head dimension and the catalog peak with its source
    extra = {i.name: i.value for i in report.runs[0].derivation_extra_inputs}
    assert extra["model.head_dim"] == "128" and extra["hardware.peak"] == "989.4 TFLOP/s"
    assert "model.layers" not in extra and "convention.attention" not in extra and "mfu" not in extra
    assert derivations[1].extra == ()  # the same head dimension and peak as the 8,192-GPU row


def test_a_paper_table_reads_as_tables_of_its_runs():
    # By hand from the spec (Llama 3, Table 4): the three rows are claims-only with the same page-1
    # figures, so page 1 and section 5 set them as one table; rows 2 and 3 have row 1's knobs and
    # presets, so section 3 gives them one table of their MFU under each preset.
    report = build(effspec.load(ROOT / "examples" / "llama3_405b_table4.eff"))
    assert report.sections.summary.groups == ((0, 1, 2),) and report.sections.convention.groups == ((0,), (1, 2))
    # Example C's runs have step samples (not claims-only) and differ in knobs: a block each.
    other = build(effspec.load(ROOT / "examples" / "example_c_scaling.eff"))
    assert other.sections.summary.groups == ((0,), (1,)) and other.sections.convention.groups == ((0,), (1,))
    # Row 2's page-1 notes are row 1's but for its claim's line (93, row 1's 65); row 3's likewise (125).
    first = "llama3_405b_8k_8192gpu"
    notes = [row.notes_like for row in report.sections.summary.blocks[0].rows]
    assert notes[0] is None
    assert (notes[1].earlier, notes[1].here, notes[1].there) == (first, ("93",), ("65",))
    assert (notes[2].earlier, notes[2].here, notes[2].there) == (first, ("125",), ("65",))
    # ... linking its own findings and inputs: its EFF101 (the 5th finding) and its two defaults
    assert [(c.text, c.anchor) for c in notes[1].causes] == [
        ("convention.preset, convention.attention and 3 more (EFF101)", "finding-5"),
        ("parallelism.recompute", "input-2-20"), ("work.padded_tokens", "input-2-21")]
    from effspec.report.html import render_html
    html = render_html(report)
    assert "Notes as for llama3_405b_8k_8192gpu, with line 93 in place of line 65" in html


def test_a_later_run_prints_only_the_figures_its_own_values_change():
    # Row 2 (16,384 GPUs, DP 128) has row 1's model and batch: the FLOPs per token, the tokens and
    # FLOPs per step come from the same values; the peak, the implied step time and what follows
    # do not.  Row 3 (128K context) shares no figure's values with row 1.
    report = build(effspec.load(ROOT / "examples" / "llama3_405b_table4.eff"))
    derivations = report.sections.derivations.runs
    assert [m.name for m in derivations[1].same] == ["flops_per_token", "valid_tokens_per_step",
                                                         "model_flops_per_step", "executed_flops_per_step"]
    assert [m.name for m in derivations[1].own] == ["aggregate_peak", "step_time", "valid_tokens_per_second", "mfu", "hfu"]
    assert derivations[2].same == () and len(derivations[2].own) == 9
    # Each rests on what row 1's figure of that name rests on, the implying claim at line 93 for 65.
    assert derivations[1].standings_like == (("93",), ("65",)) and derivations[1].same_missing
    from effspec.report.html import render_html
    html = render_html(report)
    part = html[html.index('id="derivations-2"'):html.index('id="derivations-3"')]
    # by hand: 16,384 × 989.4 TFLOP/s = 16.21 EFLOP/s; 44.05 EFLOP / (400 TFLOP/s × 16,384) = 6.721 s
    assert '(16384 − 0) × 989.4 TFLOP/s = <b class="d-value">16.21 EFLOP/s</b>' in part
    assert '44.05 EFLOP / (400 TFLOP/s × 16384) = <b class="d-value">6.721 s</b>' in part
    assert '<span class="lbl">Model FLOPs per token</span> <span class="num">2.625 TFLOP/token</span>' in part
    assert "Each rests on what it does under llama3_405b_8k_8192gpu, with line 93 in place of line 65" in part
    assert "Not recoverable, as under llama3_405b_8k_8192gpu:</span> Achieved model FLOP/s per device." in part


def test_a_note_every_finding_of_a_rule_has_is_printed_once():
    report = build(effspec.load(ROOT / "examples" / "llama3_405b_table4.eff"))
    groups = {g.group.code: g.group for g in report.sections.findings.groups}
    note = "all 5: missing `timing.step_time` or `timing.throughput`"
    assert groups["EFF605"].notes == (note,) and groups["EFF101"].notes == ()
    assert all(groups["EFF605"].own_notes(f) == tuple(n for n in f.notes if n != note) for _, f in groups["EFF605"].members)
    from effspec.report.html import code_spans, render_html
    html = render_html(report)
    assert html.count(str(code_spans(note))) == 1 and f"note (each): {code_spans(note)}" in html


def test_a_sibling_that_lacks_an_input_says_so():
    spec = claims_only_spec(2).replace('    params = 405e9 param from paper "A paper, Table 3"\n', "", 1)
    # the first run now lacks model.params; the second still declares it
    report = build(effspec.check_text(spec, "claims_only.eff"))
    assert report.sections.inputs.runs[1].earlier is not None
    assert [x.input.name for x in report.sections.inputs.runs[1].changed] == ["model.params", "parallelism.dp", "hardware.count"]
    spec = claims_only_spec(2)
    at = spec.index("run claims_only_1")
    spec = spec[:at] + spec[at:].replace('    params = 405e9 param from paper "A paper, Table 3"\n', "", 1)
    report = build(effspec.check_text(spec, "claims_only.eff"))
    assert report.sections.inputs.runs[1].absent == ("model.params",)
    from effspec.report.html import render_html
    assert "Not declared here: <code>model.params</code>." in render_html(report)


def test_grouped_findings_keep_every_finding_its_anchor_place_message_notes_and_help():
    from effspec.report.html import code_spans, render_html

    result = effspec.load(ROOT / "examples" / "llama3_405b_table4.eff")
    report = build(result)
    html = render_html(report)
    findings = html[html.index('<section id="findings">'):html.index('<h3 id="suppressed">')]
    # 13 findings, by hand from the spec's comment block: EFF101, EFF605, EFF602, EFF603 on each run, EFF205 on the third
    codes = [f.code for f in report.findings]
    assert sorted(codes) == sorted(["EFF101", "EFF605", "EFF602", "EFF603"] * 3 + ["EFF205"])
    # one block a rule: five blocks, in the order each rule first occurs
    assert [g.group.code for g in report.sections.findings.groups] == ["EFF101", "EFF605", "EFF602", "EFF603", "EFF205"]
    assert findings.count('<div class="finding ') == 5
    for n, f in enumerate(report.findings, 1):
        block = findings[findings.index(f'id="finding-{n}"'):]
        block = block[:block.index("</div>")]
        assert f'<a class="lineref" href="#L{f.line}">{f.line}</a>:{f.column}' in block
        assert str(code_spans(f.message)) in block
        group = next(g.group for g in report.sections.findings.groups if any(m is f for _, m in g.group.members))
        for note in f.notes:  # its own, or one every member of its group has, printed once for the group
            assert str(code_spans(note)) in block or (note in group.notes and findings.count(str(code_spans(note))) == 1)
        if group.members[0][1] is f:  # the group's first finding shows its source line; the others link to theirs
            assert f'<span class="ln">{f.line}</span>' in block
        else:
            assert '<pre class="excerpt">' not in block and f'<span id="L{f.line}" class="flag">' in html
        assert str(code_spans(f.help)) in findings  # its help: with it, or once for the group when every member shares it
    # EFF101's help is the same on the three runs: printed once; EFF603's names each run's figure: printed three times
    eff101 = next(f for f in report.findings if f.code == "EFF101")
    assert findings.count(str(code_spans(eff101.help))) == 1
    assert sum(findings.count(str(code_spans(f.help))) for f in report.findings if f.code == "EFF603") == 3


def escape(text: str) -> str:
    from markupsafe import escape as html_escape

    return str(html_escape(text))


def test_pdf_a_claims_only_run_costs_at_most_one_page(budget_pages, laid):
    # n generated claims-only runs, each like the first (a paper's table rows), take at most n - 1
    # pages more than one run does (they render 5, 5, 6, 7, 8, 9 pages).  The budget is on the
    # count, not on each step: a run of 0.9 pages can still push one block onto a new page.  Before
    # page 1's table of such runs, the shared derivations' line a figure, the grouped findings'
    # run-on notes and the claims' source under each claim, 1, 2 and 3 runs rendered 5, 7 and 8
    # pages (6, 11 and 16 at first).
    assert all(budget_pages[n] - budget_pages[1] <= n - 1 for n in budget_pages), budget_pages
    assert page_count(laid["llama3_405b_table4.eff"].pdf) <= 8  # 10 before, 17 at first


def test_pdf_claims_only_runs_of_other_model_sizes_cost_at_most_a_page_each():
    # The same table rows with a model of another size in each (none of the first row's figures
    # comes from the same values, so every one is printed with its own): 5 pages for one, 8 for four.
    def sized(n: int) -> str:
        sizes = [(32, 4096, 32, 14336), (80, 8192, 64, 28672), (126, 16384, 128, 53248), (48, 6144, 48, 24576)]
        runs = claims_only_spec(n).split("run claims_only_")[1:]
        return "eff 1\n" + "".join("run claims_only_" + r.replace("layers = 126  d_model = 16384  heads = 128",
                                                                  f"layers = {L}  d_model = {d}  heads = {h}")
                                                       .replace("d_ff = 53248", f"d_ff = {ff}")
                                      for r, (L, d, h, ff) in zip(runs, sizes, strict=False))
    pages = {n: page_count(write_pdf(*layout_pdf(build(effspec.check_text(sized(n), "sized.eff"), charts=True))))
             for n in (1, 4)}
    assert pages[4] - pages[1] <= 3, pages
