"""The PDF's layout, measured on the PDF itself: page fill, the source gutter, page 1's cells, the page budget.

Every example is laid out once per module (WeasyPrint is most of the time).
Positions come from the PDF through pdfplumber (character, rule, rectangle,
curve and image boxes, in points from the top of the page); the one thing
the PDF cannot say, which block the stylesheet keeps whole, is read from the
same WeasyPrint document the PDF was written from.
"""

from __future__ import annotations

import io
import pathlib
import re
from dataclasses import dataclass

import pytest

import effspec
from effspec.report.context import build
from effspec.report.pdf import layout_pdf, write_pdf

pdfplumber = pytest.importorskip("pdfplumber", reason="pdfplumber (the test extra) not installed: pip install -e '.[test]'")

ROOT = pathlib.Path(__file__).resolve().parent.parent
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
    document: object
    boxes: list[list[dict]]  # per page: every drawn object inside the content area
    words: list[list[dict]]  # per page: pdfplumber words (text boxes)
    height: float


def lay_out(result) -> Laid:
    document, html = layout_pdf(build(result, charts=True))
    pdf = write_pdf(document, html)
    top, _, bottom, _ = page_margins()
    boxes, words = [], []
    with pdfplumber.open(io.BytesIO(pdf)) as doc:
        height = float(doc.pages[0].height)
        for page in doc.pages:
            drawn = page.chars + page.rects + page.lines + page.curves + page.images
            # The running head and the page number sit in the margins: not content.
            boxes.append([o for o in drawn if o["top"] >= top - 1 and o["bottom"] <= height - bottom + 1])
            words.append(page.extract_words(keep_blank_chars=False, use_text_flow=False))
    return Laid(pdf, document, boxes, words, height)


@pytest.fixture(scope="module")
def laid() -> dict[str, Laid]:
    return {path.name: lay_out(effspec.load(path)) for path in EXAMPLES}


# --- 1. No page left more than a third empty -----------------------------------

def content_area(height: float) -> tuple[float, float]:
    top, _, bottom, _ = page_margins()
    return top, height - bottom


def filled_to(boxes: list[dict]) -> float:
    """The lowest point drawn on a page (points from the top of the page)."""
    return max(o["bottom"] for o in boxes)


def first_unbreakable_height(page) -> float | None:
    """Height in points, from the top of the content area, of the first block on a WeasyPrint page that could not be split.

    Walking the page's boxes in document order: headings are kept with what
    follows (break-after: avoid), containers (sections, tables, row groups)
    are entered, and the walk ends at the first box the stylesheet keeps whole
    (break-inside: avoid: a derivation, a finding, a chart, a table row).  A
    breakable paragraph or listing first means nothing forced the break: None.
    """
    from weasyprint.formatting_structure import boxes

    root = page._page_box.children[0]
    content_top = root.content_box_y()

    def walk(box) -> float | bool | None:
        for child in getattr(box, "children", []):
            if not isinstance(child, boxes.BlockLevelBox | boxes.TableRowGroupBox | boxes.TableRowBox):
                continue
            if child.style["break_after"] in ("avoid", "avoid-page"):
                continue  # a heading: it moves with the block after it
            if child.style["break_inside"] in ("avoid", "avoid-page"):
                return (child.border_box_y() + child.border_height() - content_top) * 0.75  # CSS px to pt
            if any(isinstance(c, boxes.BlockLevelBox | boxes.TableRowGroupBox | boxes.TableRowBox) for c in getattr(child, "children", [])):
                found = walk(child)
                if found is not None:
                    return found
                continue
            return False  # a breakable block came first
        return None

    found = walk(root)
    return found if isinstance(found, float) else None


def fill_report(item: Laid) -> list[str]:
    """Pages (all but the last) more than a third empty whose next block would have fit: the failures."""
    top, bottom = content_area(item.height)
    usable = bottom - top
    failures = []
    for i, boxes in enumerate(item.boxes[:-1]):
        free = bottom - filled_to(boxes) if boxes else usable
        if free <= usable / 3:
            continue
        next_block = first_unbreakable_height(item.document.pages[i + 1])
        if next_block is not None and next_block > free:
            continue
        failures.append(f"page {i + 1}: {free / usable:.0%} empty, next page's first block "
                        + ("is breakable" if next_block is None else f"is {next_block:.0f} pt, free {free:.0f} pt"))
    return failures


@pytest.mark.parametrize("name", [p.name for p in EXAMPLES])
def test_pdf_pages_are_at_least_two_thirds_full_unless_the_next_block_cannot_fit(laid, name):
    assert fill_report(laid[name]) == []


def test_pdf_stylesheet_forces_no_page_break():
    for path in (ROOT / "templates").glob("*.*"):
        text = path.read_text(encoding="utf-8")
        forced = re.findall(r"(?:page-)?break-(?:before|after)\s*:\s*(always|page|left|right|recto|verso)", text)
        assert forced == [], f"{path.name} forces a page break: {forced}"
