"""Benchmark: where an example's PDF time goes, and what its charts cost (issue 29's suite time).

Each example is checked and its report built in process (charts on, as `effspec report` draws them),
then laid out and written by WeasyPrint twice: as is, and with every inline `<svg>` (the charts)
removed from the same HTML.  CPU seconds (`time.process_time`), after one warm-up render of the first
example (WeasyPrint's imports and font set-up), best of ``--repeat``.

    .venv/bin/python benchmarks/pdf_cost.py [--repeat 2] [examples/deepseek_v3.eff ...]
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _cost(html: str, repeat: int) -> tuple[float, float, int]:
    from effspec.report.pdf import layout_html, write_pdf

    best: tuple[float, float, int] | None = None
    for _ in range(repeat):
        t0 = time.process_time()
        document = layout_html(html)
        t1 = time.process_time()
        write_pdf(document, html)
        t2 = time.process_time()
        if best is None or t2 - t0 < best[0] + best[1]:
            best = (t1 - t0, t2 - t1, len(document.pages))
    assert best is not None
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("specs", nargs="*")
    args = ap.parse_args(argv)
    specs = args.specs or sorted(glob.glob(os.path.join(ROOT, "examples", "*.eff")))
    import effspec
    from effspec.report.html import render_html
    from effspec.report.pdf import print_css
    from effspec.report.sections import build

    pages = []
    for spec in specs:
        with open(spec, encoding="utf-8") as fh:
            result = effspec.check_text(fh.read(), spec, os.path.dirname(os.path.abspath(spec)))
        pages.append((os.path.basename(spec), render_html(build(result, charts=True), print_css("a4"))))
    _cost(pages[0][1], 1)  # warm-up
    print(f"load average {os.getloadavg()[0]:.1f}; CPU s, best of {args.repeat}")
    print("| example | charts | layout | write | pages | without the charts: layout | write | pages |")
    print("|---|---|---|---|---|---|---|---|")
    totals = [0.0, 0.0]
    for name, html in pages:
        bare = re.sub(r"<svg\b.*?</svg>", "", html, flags=re.S)
        lay, wri, n = _cost(html, args.repeat)
        blay, bwri, bn = _cost(bare, args.repeat)
        totals[0] += lay + wri
        totals[1] += blay + bwri
        print(f"| {name} | {html.count('<svg')} | {lay:.2f} | {wri:.2f} | {n} | {blay:.2f} | {bwri:.2f} | {bn} |")
    print(f"| all {len(pages)} | | {totals[0]:.1f} (layout + write) | | | {totals[1]:.1f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
