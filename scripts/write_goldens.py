"""Write the page-1 PNGs people look at, tests/golden/*_page1.png (60 dpi), rendered afresh from the examples.

    .venv/bin/python scripts/write_goldens.py          # or: make golden (needs pdftoppm: make sysdeps)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
# (golden name, example): each PNG is page 1 of the example's PDF report.
PAGES = (("example_a_page1", "example_a_measured.eff"), ("example_b_page1", "example_b_vendor_claim.eff"),
         ("example_c_page1", "example_c_scaling.eff"), ("straggler_page1", "straggler_ranks.eff"),
         ("llama3_page1", "llama3_405b_table4.eff"))


def regenerate_golden() -> None:
    import effspec
    from effspec.report import render

    for name, example in PAGES:
        data = render(effspec.load(ROOT / "examples" / example), "pdf")
        subprocess.run(["pdftoppm", "-r", "60", "-png", "-f", "1", "-l", "1", "-singlefile", "-", str(GOLDEN / name)],
                       input=data, check=True)


if __name__ == "__main__":
    regenerate_golden()
