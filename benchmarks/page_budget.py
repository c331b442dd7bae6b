"""Where a claims-only run's pages go (issue 14's page budget: at most one page a run).

Renders the page-budget test's generated spec with 1 and N claims-only runs and prints, per
report section, the height its content takes and the cost of each run after the first, in A4
pages of content.  Heights come from a layout on one page 20 m tall, so no page break splits a
block or leaves a gap: they are what the content needs, not where the breaks fell.  The last
line gives the real page counts of the A4 PDFs.  Run from the repository root:

    .venv/bin/python benchmarks/page_budget.py          # --runs N (default 4)
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "report"))  # tests/report/test_report_layout.py

from test_report_layout import claims_only_spec  # noqa: E402

import effspec  # noqa: E402
from effspec.report.html import render_html  # noqa: E402
from effspec.report.pdf import layout_html, print_css  # noqa: E402
from effspec.report.sections import build  # noqa: E402

MM = 96 / 25.4  # CSS px a millimetre


def content_height() -> float:
    """An A4 page's content height in CSS px, from the stylesheet's @page margins."""
    css = (ROOT / "templates" / "report.css").read_text(encoding="utf-8")
    top, _, bottom, _ = (float(v) for v in re.search(r"@page \{\s*margin:\s*([\d.]+)mm\s+([\d.]+)mm\s+([\d.]+)mm\s+([\d.]+)mm",
                                                       css).groups())
    return (297 - top - bottom) * MM


def report_of(n: int):
    return build(effspec.check_text(claims_only_spec(n), "claims_only.eff"), charts=True)


def section_heights(n: int) -> dict[str, float]:
    """Height per section in CSS px, laid out on one tall page."""
    document = layout_html(render_html(report_of(n), print_css("a4") + "@page { size: 210mm 20000mm; }"))
    heights: collections.Counter[str] = collections.Counter()

    def walk(box) -> None:
        element = getattr(box, "element", None)
        if element is not None and box.element_tag in ("section", "header"):
            heights[element.get("id") or box.element_tag] += box.margin_height()
            return
        for child in getattr(box, "children", None) or ():
            walk(child)

    for page in document.pages:
        walk(page._page_box)
    return dict(heights)


def pages(n: int) -> int:
    return len(layout_html(render_html(report_of(n), print_css("a4"))).pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    n = max(2, parser.parse_args().runs)
    page = content_height()
    one, many = section_heights(1), section_heights(n)
    print(f"{'section':12s} {'1 run':>7s} {f'{n} runs':>7s} {'each later run':>15s}   (A4 pages of content)")
    for key in many:
        a, b = one.get(key, 0.0), many[key]
        print(f"{key:12s} {a / page:7.2f} {b / page:7.2f} {(b - a) / (n - 1) / page:15.3f}")
    total = (sum(many.values()) - sum(one.values())) / (n - 1) / page
    print(f"each later run: {total:.3f} pages of content; the first: {sum(one.values()) / page:.2f}")
    print("PDF pages for 1.." + str(n) + " runs: " + ", ".join(str(pages(k)) for k in range(1, n + 1)))


if __name__ == "__main__":
    main()
