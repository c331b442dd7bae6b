"""Issue 11 (frontier fidelity), the audit half: scaling claims, weak scaling by
model size, unchecked peaks, the precision of `params`, a bubble without a
pipeline, and the search that explains a claim mismatch.

Every expected figure is derived by hand in the comments beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import effspec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def cli_json(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "effspec", "check", str(path), "--format", "json"],
                         capture_output=True, text=True, check=False)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def codes(result) -> list[tuple[str, int, int]]:
    return sorted((d.code, d.span.line, d.span.column) for d in result.diagnostics if d.span is not None)


# ----------------------------------------------------------------------------
# A bubble without a pipeline (EFF405)


def test_example_c_bubble_without_pipeline_through_the_cli() -> None:
    data = cli_json(EXAMPLES / "example_c_scaling.eff")
    found = [(d["code"], d["severity"], d["line"], d["column"]) for d in data["diagnostics"] if d["code"] == "EFF405"]
    # `bubble = 10 %` on line 26, column 22, of a 64-way data-parallel run with no `pp`.
    assert found == [("EFF405", "warning", 26, 22)]
    message = next(d["message"] for d in data["diagnostics"] if d["code"] == "EFF405")
    assert message.startswith("run `scaled_64` books 10 % of its step as pipeline bubble, but declares no `parallelism.pp`")


# ----------------------------------------------------------------------------
# An explicit peak the catalog cannot check (EFF206)


def test_unknown_accelerator_peak_is_reported_as_info() -> None:
    text = '''eff 1
run r {
  hardware { accelerator = "Acme X1"  count = 8 device  dtype = bf16  peak = 500 TFLOP/s from datasheet "brief" }
}
'''
    result = effspec.check_text(text, "t.eff")
    hits = [d for d in result.diagnostics if d.code == "EFF206"]
    assert [(d.severity, d.span.line, d.span.column) for d in hits] == [("info", 3, 78)]
    assert "could not be checked against a datasheet" in hits[0].message
    # The figure is still used as written: 8 × 500 TFLOP/s.
    assert result.evaluation.runs["r"].metrics["aggregate_peak"].value == 8 * 500e12


def test_catalogued_new_part_is_checked_not_reported() -> None:
    # Gaudi 3 is catalogued at 1835 TFLOP/s BF16: a written 1835 is checked and agrees (no EFF203),
    # and a written 3670 (twice the figure) is EFF203, not EFF206.
    base = 'eff 1\nrun r {{\n  hardware {{ accelerator = "Intel Gaudi 3"  count = 8 device  dtype = bf16  peak = {} TFLOP/s }}\n}}\n'
    ok = effspec.check_text(base.format(1835), "t.eff")
    assert not [d for d in ok.diagnostics if d.code in ("EFF203", "EFF206")]
    off = effspec.check_text(base.format(2000), "t.eff")
    assert [d.code for d in off.diagnostics if d.code in ("EFF203", "EFF206")] == ["EFF203"]
