"""Issue 17: `effspec report broken.eff -o appendix.pdf` on a spec that does not parse
wrote a report of the syntax errors over the previous good appendix, and a `make`
rule then saw a fresh file and never rebuilt. A spec that does not compile
(EFF0xx errors) now leaves OUT untouched and exits 1; a spec that compiles with
audit findings still gets its report (the findings are the point).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = Path(sys.executable).with_name("effspec")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "effspec"]
FORMATS = ("html", "pdf", "json", "sarif", "md", "tex")

BROKEN = "eff 1\nrun a {\n  timing { step_time = = 1 s }\n}\n"   # EFF001 at 3:24
UNKNOWN_KEY = "eff 1\nrun a {\n  timing { step_tme = 1 s }\n}\n"  # EFF002: compiles to nothing useful
FINDINGS = ('eff 1\nrun a {\n  work { seq_len = 2048 token/sequence  global_batch = 512 sequence }\n'
            '  timing { step_time = 1 s }\n  claim throughput = 2000000 token/s\n}\n')  # EFF601: a real audit


def report(spec: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "report", str(spec), "-o", str(out)], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("text, code", [(BROKEN, "EFF001"), (UNKNOWN_KEY, "EFF002")])
def test_a_spec_that_does_not_compile_leaves_the_old_report(tmp_path: Path, fmt: str, text: str, code: str) -> None:
    spec, out = tmp_path / "appendix.eff", tmp_path / f"appendix.{fmt}"
    out.write_bytes(b"the good report of yesterday")
    spec.write_text(text, encoding="utf-8")
    done = report(spec, out)
    assert done.returncode == 1
    assert out.read_bytes() == b"the good report of yesterday"
    assert code in done.stderr
    assert f"does not compile (the EFF0xx errors above); {out} was not written and is unchanged" in done.stderr
    assert set(tmp_path.iterdir()) == {spec, out}  # and no temporary file left


def test_no_report_is_created_for_a_spec_that_does_not_compile(tmp_path: Path) -> None:
    spec, out = tmp_path / "s.eff", tmp_path / "s.html"
    spec.write_text(BROKEN, encoding="utf-8")
    done = report(spec, out)
    assert done.returncode == 1 and not out.exists()
    assert "was not written" in done.stderr and "unchanged" not in done.stderr


@pytest.mark.parametrize("fmt", ("html", "json", "md"))
def test_a_spec_with_audit_findings_still_gets_its_report(tmp_path: Path, fmt: str) -> None:
    spec, out = tmp_path / "s.eff", tmp_path / f"s.{fmt}"
    out.write_bytes(b"old")
    spec.write_text(FINDINGS, encoding="utf-8")
    done = report(spec, out)
    assert done.returncode == 1  # EFF601: 1,048,576 token/s reconstructed against 2,000,000 claimed
    assert out.read_bytes() != b"old" and b"EFF601" in out.read_bytes()
    assert f"wrote {out}" in done.stderr
