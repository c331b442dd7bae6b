"""Import weight: `effspec check` must not pay for the report stack.

WeasyPrint (~650 ms), matplotlib (~200 ms), Jinja2 and jsonschema are only
needed for reports and schema validation; pygls and lsprotocol only for
`effspec lsp` (imported inside that command).  Each case runs the real CLI entry
point in a fresh interpreter and lists which of those modules ended up in
``sys.modules``; the expected list is empty.  No timing is asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HEAVY = ("weasyprint", "matplotlib", "jinja2", "jsonschema", "pygls", "lsprotocol")

sys.path.insert(0, str(ROOT / "benchmarks"))
from gen import generate_spec  # noqa: E402

# Runs the CLI as `effspec check` does, then reports the heavy modules loaded.
PROBE = f"""
import json, sys
from effspec.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set(json.loads({json.dumps(HEAVY)!r})))
sys.stderr.write('\\nHEAVY=' + json.dumps(heavy) + '\\n')
sys.exit(status)
"""


def _heavy_after(args: list[str], cache_home: Path, warm: Path | None = None) -> list[str]:
    """The heavy modules loaded by `effspec ARGS` in a fresh interpreter whose cache folder is ``cache_home``:
    empty (a first run builds the parser and unit tables), or holding the tables of ``warm`` (as after one)."""
    if warm is not None:
        shutil.copytree(warm, cache_home / "effspec", dirs_exist_ok=True)
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_home))
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr  # 0 clean, 1 findings: never "could not run"
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")][-1]
    return json.loads(line[len("HEAVY="):])


@pytest.fixture(scope="module")
def typical_spec(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("weight") / "typical.eff"
    path.write_text(generate_spec(4, seed=3), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def warm_tables(tmp_path_factory) -> Path:
    """The parser and unit tables a first `effspec check` writes to its cache folder (no result cache: the
    suite runs with EFFSPEC_NO_CACHE), for the cases below that are about a check, not a first run."""
    home = tmp_path_factory.mktemp("warm")
    subprocess.run([sys.executable, "-m", "effspec", "check", str(EXAMPLES / "megatron_gpt3_175b.eff")],
                   env=dict(os.environ, XDG_CACHE_HOME=str(home)), capture_output=True, cwd=ROOT, timeout=300)
    tables = home / "effspec"
    assert sorted(p.name.split("-")[0] for p in tables.glob("*-v1-*.json")) == ["parser", "units"]
    return tables


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_check_imports_no_report_stack(fmt, typical_spec, tmp_path):
    assert _heavy_after(["check", str(typical_spec), "--format", fmt], tmp_path) == []


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.eff")))
def test_check_of_each_example_imports_no_report_stack(example, tmp_path, warm_tables):
    assert _heavy_after(["check", str(EXAMPLES / example), "--format", "json"], tmp_path, warm_tables) == []


def test_check_of_many_files_imports_no_report_stack(tmp_path):
    # 8 files or more take the process-pool path in the CLI; the parent must stay light too.
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(9):
        (folder / f"s{i}.eff").write_text(generate_spec(4, seed=i), encoding="utf-8")
    assert _heavy_after(["check", str(folder), "-j", "2"], tmp_path) == []


def test_check_with_syntax_error_imports_no_report_stack(tmp_path):
    bad = tmp_path / "bad.eff"
    bad.write_text("eff 1\nrun x {\n  model { layers = }\n}\n", encoding="utf-8")
    assert _heavy_after(["check", str(bad)], tmp_path) == []


def test_core_never_imports_rendering_modules():
    # The data-flow rule: the core (parse ... audit) imports neither the report
    # package nor the CLI.  Checked in a fresh interpreter through the Python API.
    code = ("import sys, effspec\n"
            f"effspec.load({str(EXAMPLES / 'example_c_scaling.eff')!r})\n"
            "print(sorted(m for m in sys.modules if m.startswith(('effspec.report', 'effspec.cli'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("spec", "heavy"), [("typical", []), ("example_a_measured.eff", ["numpy"])])
def test_text_check_with_a_warm_unit_cache_imports_neither_numpy_nor_pint(spec, heavy, typical_spec, tmp_path):
    """A pre-commit hook's check (text output) needs neither: pint's factors come
    from the cached table, and the median's bootstrap CI is computed only when
    JSON or a report asks for it, or when a claim's verdict rests on it: Example A's
    two claims are mismatches only because the 95 % interval of the median of its
    500 samples keeps off their tolerance (else they would be inconclusive, EFF606),
    so its check imports numpy, and pint still not."""
    probe = PROBE.replace(json.dumps(HEAVY), json.dumps(["numpy", "pint"]))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    args = ["check", str(typical_spec) if spec == "typical" else str(EXAMPLES / spec)]
    for _attempt in ("cold", "warm"):  # the first run fills the unit cache
        proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")][-1]
    assert json.loads(line[len("HEAVY="):]) == heavy


def test_check_without_ranks_imports_no_csv_fast_path(typical_spec, tmp_path):
    """pyarrow (the `fast` extra) is imported only when a per-rank table is loaded."""
    probe = PROBE.replace(json.dumps(HEAVY), json.dumps(["pyarrow", "polars"]))
    proc = subprocess.run([sys.executable, "-c", probe, "check", str(typical_spec), "--format", "json"],
                          capture_output=True, text=True, env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)), cwd=ROOT,
                          timeout=300)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")][-1]
    assert json.loads(line[len("HEAVY="):]) == []
