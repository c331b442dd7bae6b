"""Where a claims-only run's pages go (issue 14's page budget: at most one page a run).

Renders the page-budget test's generated spec with 1 and N claims-only runs and prints, per
report section, the page height its boxes take and the cost of each run after the first, from
WeasyPrint's laid-out boxes (a section split by a page counts each piece; blank space left by a
block moved to the next page is not counted).  Run from the repository root:

    .venv/bin/python benchmarks/page_budget.py          # --runs N (default 3)
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_report_layout import claims_only_spec  # noqa: E402

import effspec  # noqa: E402
from effspec.report.context import build  # noqa: E402
from effspec.report.pdf import layout_pdf  # noqa: E402


def section_heights(n: int) -> tuple[dict[str, float], int, float]:
    """Height per section in points, the page count, and a page's content height."""
    document, _ = layout_pdf(build(effspec.check_text(claims_only_spec(n), "claims_only.eff"), charts=True))
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
    return dict(heights), len(document.pages), document.pages[0]._page_box.height


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    n = max(2, parser.parse_args().runs)
    one, pages_one, page = section_heights(1)
    many, pages_many, _ = section_heights(n)
    print(f"{'section':12s} {'1 run':>7s} {f'{n} runs':>7s} {'each later run':>15s}   (pages)")
    for key in many:
        a, b = one.get(key, 0.0), many[key]
        print(f"{key:12s} {a / page:7.2f} {b / page:7.2f} {(b - a) / (n - 1) / page:15.2f}")
    total = (sum(many.values()) - sum(one.values())) / (n - 1) / page
    print(f"each later run: {total:.2f} pages of boxes; the PDF has {pages_one} pages for 1 run, {pages_many} for {n}")


if __name__ == "__main__":
    main()
