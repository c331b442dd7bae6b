"""CONTRIBUTING.md's recipes, each proved to be a one-file change.

Each test copies the package as an installed wheel lays it out (compiler/ as
effspec/, with grammar/, templates/ and spec/ inside), adds or edits exactly
one file as the recipe says, and runs the CLI from the copy in a fresh
interpreter: discovery and the loaders must pick the change up with nothing
else edited.  The recipe texts are read from CONTRIBUTING.md itself, so the
document and the test cannot drift apart.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from real_logs import has
from recipes import CONTRIBUTING, applied, followed_word_for_word, recipe_block, recipe_files

ROOT = Path(__file__).resolve().parents[2]


# In a copy that scripts/recipe_proof.py made, the rule recipe is already followed: the tests that add its
# rule to a copy, or show a copy without it, have nothing to prove there.
rule_recipe_not_applied = pytest.mark.skipif(applied("Add a rule"), reason="this tree has the rule recipe applied "
                                             "(scripts/recipe_proof.py): its rule is already here")


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the package laid out as the wheel installs it."""
    site = tmp_path / "site"
    target = site / "effspec"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "compiler", target, ignore=ignore)
    for data in ("grammar", "templates", "spec"):
        shutil.copytree(ROOT / data, target / data, ignore=ignore)
    return site


def run(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONHASHSEED", None)
    return subprocess.run([sys.executable, "-m", "effspec", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_the_copy_is_what_runs(package_copy: Path, tmp_path: Path):
    code = "import effspec, sys; print(effspec.__file__)"
    env = dict(os.environ, PYTHONPATH=str(package_copy))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, check=True)
    assert out.stdout.strip() == str(package_copy / "effspec" / "__init__.py")


@rule_recipe_not_applied
def test_recipe_add_a_rule_is_one_new_file(package_copy: Path, tmp_path: Path):
    rule = recipe_block("Add a rule", "python")
    fixture = recipe_block("Add a rule", "eff")
    code = re.search(r'code = "(EFF\d{3})"', rule).group(1)
    family = re.search(r"compiler/rules/(\w+)/EFF\d{3}\.py", CONTRIBUTING.split("## Add a rule", 1)[1]).group(1)
    (package_copy / "effspec" / "rules" / family / f"{code}.py").write_text(rule, encoding="utf-8")
    (tmp_path / "spec.eff").write_text(fixture, encoding="utf-8")

    checked = run(package_copy, "check", "spec.eff", "--format", "json", cwd=tmp_path)
    found = [d for d in json.loads(checked.stdout)[0]["diagnostics"] if d["code"] == code]
    assert len(found) == 1, checked.stdout + checked.stderr
    # line 6 of the fixture is `  claim throughput = …`: the claimed metric's name starts at column 9
    assert (found[0]["line"], found[0]["column"]) == (6, 9)
    explained = run(package_copy, "explain", code, cwd=tmp_path)
    assert explained.returncode == 0 and "## Use instead" in explained.stdout
    listed = run(package_copy, "explain", "--list", cwd=tmp_path)
    assert re.search(rf"^{code}\s+warning\s+claim source is empty", listed.stdout, re.M)
    sarif = json.loads(run(package_copy, "check", "spec.eff", "--format", "sarif", cwd=tmp_path).stdout)
    assert code in [r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]]


@rule_recipe_not_applied
def test_recipe_add_a_rule_is_not_discovered_without_the_file(package_copy: Path, tmp_path: Path):
    """The same spec in an unchanged copy has no such finding: the file is what adds it."""
    rule = recipe_block("Add a rule", "python")
    code = re.search(r'code = "(EFF\d{3})"', rule).group(1)
    (tmp_path / "spec.eff").write_text(recipe_block("Add a rule", "eff"), encoding="utf-8")
    checked = run(package_copy, "check", "spec.eff", "--format", "json", cwd=tmp_path)
    assert code not in {d["code"] for d in json.loads(checked.stdout)[0]["diagnostics"]}


def test_recipe_add_a_catalog_row_is_one_edited_file(package_copy: Path, tmp_path: Path):
    row = json.loads(recipe_block("Add a catalog row", "json"))
    peaks = package_copy / "effspec" / "data" / "peaks.json"
    catalog = json.loads(peaks.read_text(encoding="utf-8"))
    catalog["accelerators"].append(row)
    peaks.write_text(json.dumps(catalog, indent=2) + "\n", encoding="utf-8")
    (tmp_path / "spec.eff").write_text(recipe_block("Add a catalog row", "eff"), encoding="utf-8")

    checked = run(package_copy, "check", "spec.eff", "--format", "json", cwd=tmp_path)
    run_json = json.loads(checked.stdout)[0]["runs"]["acme"]
    # 16 devices × 1,000 TFLOP/s (the row's dense BF16 figure)
    assert run_json["metrics"]["aggregate_peak"]["value"] == pytest.approx(16 * 1000e12)
    cited = [i for i in run_json["metrics"]["aggregate_peak"]["input_details"] if i["provenance"] == "catalog"]
    assert cited and "Acme X1 datasheet" in cited[0]["citation"]


def test_recipe_add_a_convention_preset_is_one_edited_file(package_copy: Path, tmp_path: Path):
    """One entry in compiler/front/presets.py: the spec compiles with the preset's knobs, the
    numerator follows them, and `effspec explain` has its page."""
    entry = recipe_block("Add a convention preset", "python")
    name = re.search(r'name="(\w+)"', entry).group(1)
    table = package_copy / "effspec" / "front" / "presets.py"
    source = table.read_text(encoding="utf-8")
    marker = ")  # end of PRESETS"
    assert source.count(marker) == 1
    table.write_text(source.replace(marker, entry + marker), encoding="utf-8")
    (tmp_path / "spec.eff").write_text(recipe_block("Add a convention preset", "eff"), encoding="utf-8")

    checked = run(package_copy, "check", "spec.eff", "--format", "json", cwd=tmp_path)
    (doc,) = json.loads(checked.stdout)
    assert not [d for d in doc["diagnostics"] if d["code"] < "EFF100"], checked.stdout + checked.stderr
    run_json = doc["runs"]["acme"]
    assert run_json["convention"]["preset"] == name
    knobs = run_json["convention"]["knobs"]
    assert (knobs["attention"], knobs["logits"], knobs["router"]) == ("causal", "excluded", "excluded")
    # By hand: L = 2, d = 256, H·Q = 256, f = 1024 (GELU, 2 matmuls), s = 128, m = 2, training = 3 × forward.
    # Per layer: QKV 3·256², output 256², FFN 2·256·1024 = 786,432 MACs; causal scores and values
    # 128/2 keys × 256 × 2 = 32,768 MACs.  Logits excluded.  3 × 2 × 2 × (786,432 + 32,768) = 9,830,400.
    assert run_json["metrics"]["flops_per_token"]["value"] == 9_830_400
    explained = run(package_copy, "explain", name, cwd=tmp_path)
    assert explained.returncode == 0 and "acme/trainer@0123abc trainer/mfu.py" in explained.stdout
    listed = run(package_copy, "explain", "--presets", cwd=tmp_path)
    assert re.search(rf"^{name}\s+6·N_non-embedding", listed.stdout, re.M)


def test_recipe_add_a_convention_preset_is_unknown_without_the_entry(package_copy: Path, tmp_path: Path):
    (tmp_path / "spec.eff").write_text(recipe_block("Add a convention preset", "eff"), encoding="utf-8")
    checked = run(package_copy, "check", "spec.eff", "--format", "json", cwd=tmp_path)
    codes = [(d["code"], d["line"]) for d in json.loads(checked.stdout)[0]["diagnostics"] if d["code"] < "EFF100"]
    assert codes == [("EFF003", 5)]


def test_recipe_add_a_log_importer_is_one_new_file(package_copy: Path, tmp_path: Path):
    module = recipe_block("Add a log importer", "python")
    name = re.search(r'^    name = "(\w+)"$', module, re.M).group(1)
    assert "compiler/importers/<format>.py" in CONTRIBUTING.split("## Add a log importer", 1)[1]
    (package_copy / "effspec" / "importers" / f"{name}.py").write_text(module, encoding="utf-8")
    (tmp_path / "acme.log").write_text(recipe_block("Add a log importer", "text"), encoding="utf-8")

    helped = run(package_copy, "import", "--help", cwd=tmp_path)
    assert re.search(rf"^  {name}\s+Acme Trainer: `acme step N: time T s, tflops F` lines$", helped.stdout, re.M)
    done = run(package_copy, "import", "auto", "acme.log", "-o", "acme.eff", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"1 run(s) ({name})" in done.stderr
    # Line 6 (`acme step 5: time 1.3`) is cut short: EFF801 there, and the import goes on.
    assert "warning[EFF801]: step line that cannot be read whole; skipped\n --> acme.log:6:1" in done.stderr
    # The CSV, by hand from the log: steps 1-4 on lines 2-5, 6-7 on lines 7-8; step 1 (9 s, over 1.5x the
    # median of all six, 1.245 s) is the warm-up.
    assert (tmp_path / "acme_steps.csv").read_text(encoding="utf-8") == (
        "step,line,step_time_s,tflops,flags\n1,2,9.000,40.0,warmup\n2,3,1.200,300.0,\n3,4,1.250,288.0,\n"
        "4,5,1.240,290.3,\n6,7,1.210,297.5,\n7,8,1.300,276.9,\n")
    spec = (tmp_path / "acme.eff").read_text(encoding="utf-8")
    # The kept five's median is 1.240 s, step 4 on line 5: its 290.3 TFLOP/s is the claim, cited there.
    assert has(spec, 'claim tflops_per_device = 290.3 TFLOP/s  from log "acme.log:5"')
    assert has(spec, 'step_time = file "acme_steps.csv" column "step_time_s" s  from log "acme.log:2-8 (6 step lines)"')
    assert re.search(r"warmup\s+= 1 step ", spec)
    # No preset of that name in the language: the convention's knobs are written out, each with its source.
    assert "# The language has no preset `acmetrain` for this formula: its knobs, written out:" in spec
    assert has(spec, 'attention  = full      from assumed "Acme Trainer: the log does not print the version"')
    # What the log does not say is TODO, and `effspec check` says so (EFF040) until it is filled in.
    todo = [n for n, line in enumerate(spec.split("\n"), 1) if " = TODO" in line]
    checked = run(package_copy, "check", "acme.eff", "--format", "json", cwd=tmp_path)
    assert checked.returncode == 1
    assert [(d["code"], d["line"]) for d in json.loads(checked.stdout)[0]["diagnostics"] if d["code"] < "EFF100"] == [
        ("EFF040", n) for n in todo]


def test_recipe_add_a_log_importer_is_not_there_without_the_file(package_copy: Path, tmp_path: Path):
    (tmp_path / "acme.log").write_text(recipe_block("Add a log importer", "text"), encoding="utf-8")
    done = run(package_copy, "import", "auto", "acme.log", "-o", "acme.eff", cwd=tmp_path)
    assert done.returncode == 2 and "formats tried: maxtext, megatron," in done.stderr
    assert "acmetrain" not in run(package_copy, "import", "--help", cwd=tmp_path).stdout


@rule_recipe_not_applied
def test_recipe_add_a_rule_followed_word_for_word_keeps_the_suite_green(tmp_path: Path):
    """The whole recipe on a copy of the tree: the rule file and its fixtures as given, the commands as
    written (with the copy's package first on the path), then the tests that read the rules run there.
    `make recipe-proof` (scripts/recipe_proof.py) runs the whole suite on such a copy."""
    files = recipe_files("Add a rule")
    assert sorted(files) == ["compiler/rules/claims/EFF607.py", "tests/fixtures/rules/EFF607/fail_empty_source.eff",
                             "tests/fixtures/rules/EFF607/pass_cited.eff"]
    repo, env = followed_word_for_word("Add a rule", tmp_path, files)
    assert "EFF607" in (repo / "spec" / "language.md").read_text(encoding="utf-8")
    assert (repo / "spec" / "rules" / "EFF607.md").exists()
    tests = ["tests/rules/test_rules.py", "tests/house/test_language_reference.py", "tests/report/test_sarif.py", "tests/front/test_self_fixing_messages.py"]
    done = _pytest(repo, env, "-x", *tests)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # the copy's rule was the one tested: its fixtures ran
    listed = _pytest(repo, env, "--collect-only", "tests/rules/test_rules.py")
    assert "EFF607/fail_empty_source.eff" in listed.stdout and "EFF607/pass_cited.eff" in listed.stdout


@rule_recipe_not_applied
def test_a_new_rule_family_is_a_new_folder(package_copy: Path, tmp_path: Path):
    """CONTRIBUTING: a family is a folder of rule files with an `__init__.py`; FAMILIES is derived from
    the folders, so the recipe's rule in a family of its own is found with nothing else edited."""
    assert "`FAMILIES` (effspec.rules) and the package list (setup.py) are derived" in " ".join(
        CONTRIBUTING.split("## Add a rule", 1)[1].split("\n## ", 1)[0].split())
    family = package_copy / "effspec" / "rules" / "provenance"
    family.mkdir()
    (family / "__init__.py").write_text('"""Rules of the provenance family."""\n', encoding="utf-8")
    (family / "EFF607.py").write_text(recipe_block("Add a rule", "python"), encoding="utf-8")
    code = "import effspec.rules as r; print(','.join(r.FAMILIES))"
    env = dict(os.environ, PYTHONPATH=str(package_copy), PYTHONDONTWRITEBYTECODE="1")
    families = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    # the seven families in code order (their first codes EFF101 … EFF701), then the new one, first code EFF607,
    # between claims (EFF601) and numerics (EFF701)
    assert families.stdout.strip() == "numerator,denominator,scaling,time,sampling,claims,provenance,numerics", families.stderr
    listed = run(package_copy, "explain", "--list", cwd=tmp_path)
    assert re.search(r"^EFF607\s+warning\s+claim source is empty", listed.stdout, re.M)


# ---------------------------------------------------------------------------- the trace format and layer kind
# recipes, the catalog row's word-for-word run, each recipe named

ACMEPROF = "compiler/ranks/traces/formats/acmeprof.py"
ACMEPROF_TRACE = "tests/fixtures/traces/formats/acmeprof/rank0.acmeprof"
ACMEPROF_TABLE = "tests/fixtures/traces/formats/acmeprof/expected.csv"
ACME_MIXER = "compiler/front/mixers/acme_mixer.py"
# The table the recipe's trace reduces to, by hand (µs; the CSV is in seconds).  Step 1: its window runs from the
# first kernel's start, 100, to the all-reduce's end, 900 (800): GEMM 500, all-reduce 300 with no GEMM under it
# (exposed 300), no gap.  Step 2: from 900 to the copy's end, 1980 (1080): GEMM 1100-1600 (500), all-reduce
# 1500-1900 (400, 100 of it under the GEMM: exposed 300), the copy 1950-1980 (other 30, memory 30), idle
# 900-1100 and 1900-1950 (250, each gap before a launch: host wait), stall = idle + other = 280.
ACMEPROF_ROWS = [
    "rank,node,step,step_time,compute,comm,comm_exposed,idle,other,stall,idle_host_wait,idle_kernel_wait,idle_other,"
    "gemm,attention,memory,elementwise_other",
    "0,node-a,1,0.0008,0.0005,0.0003,0.0003,0.0,0.0,0.0,0.0,0.0,0.0,0.0005,0.0,0.0,0.0",
    "0,node-a,2,0.00108,0.0005,0.0004,0.0003,0.00025,3e-05,0.00028,0.00025,0.0,0.0,0.0005,0.0,3e-05,0.0",
]


def _table(path: Path) -> list[str]:
    """A CSV effspec traces wrote, without its provenance comment lines (they hold the files' hashes)."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]


def _pytest(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *args],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def test_contributing_names_every_recipe_this_file_proves():
    for title in ("Add a rule", "Add a convention preset", "Add a catalog row", "Add a log importer",
                  "Add a report section", "Add a trace format", "Add a layer kind"):
        assert f"\n## {title}\n" in CONTRIBUTING, title


def test_recipe_add_a_catalog_row_is_not_there_without_the_row(package_copy: Path, tmp_path: Path):
    (tmp_path / "spec.eff").write_text(recipe_block("Add a catalog row", "eff"), encoding="utf-8")
    checked = run(package_copy, "check", "spec.eff", "--format", "json", cwd=tmp_path)
    doc = json.loads(checked.stdout)[0]
    # line 4, `  hardware { accelerator = "Acme X1"  count = 16 device  dtype = bf16  peak = catalog }`: `catalog` at 79
    assert [(d["code"], d["line"], d["column"], d["message"]) for d in doc["diagnostics"] if d["code"] < "EFF100"] == [
        ("EFF020", 4, 79, "`Acme X1` is not in the peak catalog")]
    assert doc["runs"] == {}  # an error in the front end: the run is not evaluated


def test_recipe_add_a_catalog_row_followed_word_for_word_keeps_the_catalog_tests_green(tmp_path: Path):
    """The row appended to the copy's peaks.json as the recipe says; the catalog's own tests (its schema, every
    row's citation and address) run there, on the copy's package."""
    repo, env = followed_word_for_word("Add a catalog row", tmp_path, {})
    row = json.loads(recipe_block("Add a catalog row", "json"))
    peaks = repo / "compiler" / "data" / "peaks.json"
    catalog = json.loads(peaks.read_text(encoding="utf-8"))
    catalog["accelerators"].append(row)
    peaks.write_text(json.dumps(catalog, indent=2) + "\n", encoding="utf-8")
    # "a new vendor (Acme is one) is added to the `vendor` enum of compiler/data/peaks.schema.json too"
    section = " ".join(CONTRIBUTING.split("## Add a catalog row", 1)[1].split("\n## ", 1)[0].split())
    assert "a new vendor (Acme is one) is added to the `vendor` enum of `compiler/data/peaks.schema.json`" in section
    schema_path = repo / "compiler" / "data" / "peaks.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    vendors = schema["$defs"]["accelerator"]["properties"]["vendor"]["enum"]
    assert row["vendor"] not in vendors
    vendors.append(row["vendor"])
    schema_path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
    done = _pytest(repo, env, "-x", "tests/engine/test_catalog.py")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    where = subprocess.run([sys.executable, "-c", "from effspec.engine import catalog; print(catalog.__file__)"],
                           cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert where.stdout.strip().startswith(str(tmp_path / "site")), where.stdout + where.stderr


def test_recipe_add_a_trace_format_is_one_new_file(package_copy: Path, tmp_path: Path):
    files = recipe_files("Add a trace format")
    assert sorted(files) == [ACMEPROF, ACMEPROF_TABLE, ACMEPROF_TRACE]
    assert files[ACMEPROF_TABLE].splitlines() == ACMEPROF_ROWS
    (package_copy / "effspec" / ACMEPROF.removeprefix("compiler/")).write_text(files[ACMEPROF], encoding="utf-8")
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "rank0.acmeprof").write_text(files[ACMEPROF_TRACE], encoding="utf-8")
    (tmp_path / "traces" / "notes.txt").write_text("not a trace\n", encoding="utf-8")

    helped = run(package_copy, "traces", "--help", cwd=tmp_path)
    assert re.search(r"^  acmeprof  \.acmeprof\s+Acme Profiler text: `step\|kernel\|memcpy START_US DUR_US NAME` lines$",
                     helped.stdout, re.M), helped.stdout
    # a folder: its .acmeprof entry is picked up (and notes.txt is not)
    done = run(package_copy, "traces", "traces", "-o", "ranks.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "effspec traces: 1 trace (serial), 2 rows -> ranks.csv" in done.stderr
    assert _table(tmp_path / "ranks.csv") == ACMEPROF_ROWS
    # the file named on the command line: the same table
    done = run(package_copy, "traces", "traces/rank0.acmeprof", "-o", "one.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _table(tmp_path / "one.csv") == ACMEPROF_ROWS
    # a bad line is a coded error at its line, never a traceback
    (tmp_path / "bad.acmeprof").write_text(files[ACMEPROF_TRACE].replace("kernel 600 300", "kernel 600"), encoding="utf-8")
    done = run(package_copy, "traces", "bad.acmeprof", "-o", "bad.csv", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "error[EFF003]: not a span line: `step|kernel|memcpy START_US DUR_US NAME`\n --> bad.acmeprof:4:1" in done.stderr


def test_recipe_add_a_trace_format_is_not_there_without_the_file(package_copy: Path, tmp_path: Path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "rank0.acmeprof").write_text(recipe_files("Add a trace format")[ACMEPROF_TRACE], encoding="utf-8")
    assert "acmeprof" not in run(package_copy, "traces", "--help", cwd=tmp_path).stdout
    done = run(package_copy, "traces", "traces", "-o", "ranks.csv", cwd=tmp_path)
    assert done.returncode == 1 and "error[EFF020]: the folder holds no .json or .json.gz trace\n --> traces\n" in done.stderr
    done = run(package_copy, "traces", "traces/rank0.acmeprof", "-o", "ranks.csv", cwd=tmp_path)  # read as Kineto JSON
    assert done.returncode == 1
    assert "error[EFF003]: invalid JSON: expected '{', found '#'\n --> traces/rank0.acmeprof:1:1" in done.stderr
    assert not (tmp_path / "ranks.csv").exists()


def test_recipe_add_a_trace_format_followed_word_for_word_keeps_the_suite_green(tmp_path: Path):
    """The reader, its fixture and its expected table as given, in a copy of the tree; the trace-format tests
    run there (every format's contract, and each format's fixture against its table)."""
    repo, env = followed_word_for_word("Add a trace format", tmp_path, recipe_files("Add a trace format"))
    done = _pytest(repo, env, "-x", "tests/ranks/test_trace_formats.py")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    listed = _pytest(repo, env, "--collect-only", "tests/ranks/test_trace_formats.py")
    assert "test_the_fixture_reduces_to_its_expected_table[acmeprof]" in listed.stdout, listed.stdout[-2000:]
    assert "test_a_bad_file_is_a_coded_error[empty-acmeprof]" in listed.stdout


def test_recipe_add_a_layer_kind_is_one_new_file(package_copy: Path, tmp_path: Path):
    files = recipe_files("Add a layer kind")
    assert sorted(files) == [ACME_MIXER]
    (package_copy / "effspec" / ACME_MIXER.removeprefix("compiler/")).write_text(files[ACME_MIXER], encoding="utf-8")
    (tmp_path / "spec.eff").write_text(recipe_block("Add a layer kind", "eff"), encoding="utf-8")

    checked = run(package_copy, "check", "spec.eff", "--format", "json", cwd=tmp_path)
    (doc,) = json.loads(checked.stdout)
    assert not [d for d in doc["diagnostics"] if d["code"] < "EFF100"], checked.stdout + checked.stderr
    run_json = doc["runs"]["acme"]
    # By hand (CONTRIBUTING's derivation): d = 256, H·D = 4·64 = 256, s = 128, m = 2, training = 3 × forward.
    # Acme layer: in_proj 4·256·256 = 262,144, state 2·4·64² = 32,768, out_proj 256·256 = 65,536;
    # attention: 256·(256 + 512) + 256·256 + 64 keys·4·128 = 294,912; MLPs 2 × 2·256·1024 = 1,048,576;
    # logits 256·1000 = 256,000.  6 × 1,959,936 = 11,759,616.
    assert run_json["metrics"]["flops_per_token"]["value"] == 11_759_616
    terms = {name: (t["formula"], t["forward_flops_per_token"]) for name, t in run_json["terms"].items()}
    assert terms["acme_in_proj"] == ("L_acme·m·d·4·H·D", 2 * 262_144)
    assert terms["acme_state"] == ("L_acme·2·m·H·D²", 2 * 32_768)
    assert terms["acme_out_proj"] == ("L_acme·m·H·D·d", 2 * 65_536)
    explained = run(package_copy, "explain", "acme_mixer", cwd=tmp_path)
    assert explained.returncode == 0 and explained.stdout.startswith("acme_mixer { heads  head_dim }")
    # a stack of it without its block is refused by name
    stack = recipe_block("Add a layer kind", "eff").replace("    acme_mixer { heads = 4  head_dim = 64 }\n", "")
    (tmp_path / "bare.eff").write_text(stack, encoding="utf-8")
    bare = json.loads(run(package_copy, "check", "bare.eff", "--format", "json", cwd=tmp_path).stdout)[0]
    assert [(d["code"], d["message"]) for d in bare["diagnostics"] if d["code"] < "EFF100"] == [
        ("EFF003", "the stack has acme_mixer layers and `model` has no `acme_mixer` block")]


def test_recipe_add_a_layer_kind_is_not_there_without_the_file(package_copy: Path, tmp_path: Path):
    (tmp_path / "spec.eff").write_text(recipe_block("Add a layer kind", "eff"), encoding="utf-8")
    checked = run(package_copy, "check", "spec.eff", "--format", "json", cwd=tmp_path)
    found = [(d["code"], d["line"], d["column"], d["message"]) for d in json.loads(checked.stdout)[0]["diagnostics"]
             if d["code"] < "EFF100"]
    # line 6 `    pattern = "A-*-"`: the letter A at column 16; line 7 `    acme_mixer { … }`: the block at column 5
    assert found == [("EFF003", 6, 16, "`A` at position 1 of `pattern` is not a layer letter"),
                     ("EFF002", 7, 5, "unknown block `acme_mixer` in `model`")]
    assert run(package_copy, "explain", "acme_mixer", cwd=tmp_path).returncode != 0


def test_recipe_add_a_layer_kind_followed_word_for_word_keeps_the_suite_green(tmp_path: Path):
    """The module as given, the command as written (the reference's tables and the IR schema's block names), then
    the tests that read the layer kinds, run in the copy."""
    repo, env = followed_word_for_word("Add a layer kind", tmp_path, recipe_files("Add a layer kind"))
    assert "| `acme_mixer` {" not in (repo / "spec" / "language.md").read_text(encoding="utf-8")
    assert "#### `acme_mixer { … }` (inside `model`)" in (repo / "spec" / "language.md").read_text(encoding="utf-8")
    assert "A acme_mixer, * attention" in (repo / "spec" / "language.md").read_text(encoding="utf-8")
    assert '"gated_deltanet", "acme_mixer", "lora"]' in (repo / "spec" / "eff-ir.schema.json").read_text(encoding="utf-8")
    done = _pytest(repo, env, "-x", "tests/engine/test_layers.py", "tests/house/test_language_reference.py", "tests/front/test_ir_schema.py")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    listed = _pytest(repo, env, "--collect-only", "tests/engine/test_layers.py")
    assert "test_a_layer_kind_is_in_the_vocabulary[acme_mixer]" in listed.stdout, listed.stdout[-2000:]


def _example_b(tmp_path: Path) -> None:
    shutil.copy(ROOT / "examples" / "example_b_vendor_claim.eff", tmp_path / "spec.eff")


def test_recipe_add_a_report_section_is_one_new_file(package_copy: Path, tmp_path: Path):
    module = recipe_block("Add a report section", "python")
    assert "compiler/report/sections/<name>.py" in CONTRIBUTING.split("## Add a report section", 1)[1]
    (package_copy / "effspec" / "report" / "sections" / "pools.py").write_text(module, encoding="utf-8")
    _example_b(tmp_path)
    done = run(package_copy, "report", "spec.eff", "-o", "r.html", "-o", "r.md", "-o", "r.json", "-o", "r.tex",
               cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # example B's findings: errors
    # Example B's one pool, from the spec: 256 A100-SXM4-80GB, bf16 (dense: no sparsity written), 624 TFLOP/s each.
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '<li><a href="#source">Source</a></li>\n      <li><a href="#pools">Hardware pools</a></li>' in html
    assert ('</section>\n\n<section id="pools">\n  <h2>11 Hardware pools</h2>' in html
            and html.index('<section id="source">') < html.index('<section id="pools">'))
    assert ('<tr><td>vendor_claim</td><td>A100-SXM4-80GB</td><td class="num">256</td><td>bf16 dense</td>'
            '<td class="num">624 TFLOP/s</td></tr>') in html
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "### Hardware pools\n\n| run | accelerator | devices | dtype | peak per device |\n" in markdown
    assert "| vendor\\_claim | A100-SXM4-80GB | 256 | bf16 dense | 624 TFLOP/s |" in markdown
    assert markdown.index("### Hardware pools") < markdown.index("### Findings")
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["sections"] == {"pools": [{"run": "vendor_claim", "accelerator": "A100-SXM4-80GB", "devices": 256,
                                             "dtype": "bf16 dense", "peak_flop_per_s": 624e12}]}
    tex = (tmp_path / "r.tex").read_text(encoding="utf-8")
    assert tex.endswith("\\newcommand{\\effVendorClaimPoolOne}{256 $\\times$ A100-SXM4-80GB}% pool 1 of vendor\\_claim\n")
    line = "pools: vendor_claim: 256 × A100-SXM4-80GB (bf16 dense), 624 TFLOP/s each"
    assert line in done.stderr  # the terminal summary `effspec report` prints
    checked = run(package_copy, "check", "spec.eff", cwd=tmp_path)
    assert checked.returncode == 1 and f"\n\n{line}\n\n" in checked.stdout


def test_recipe_add_a_report_section_is_not_there_without_the_file(package_copy: Path, tmp_path: Path):
    _example_b(tmp_path)
    done = run(package_copy, "report", "spec.eff", "-o", "r.html", "-o", "r.md", "-o", "r.json", "-o", "r.tex",
               cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "sections" not in json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert "Pool" not in (tmp_path / "r.tex").read_text(encoding="utf-8")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="pools"' not in html and "<h2>11 " not in html and html.endswith("</section>\n</body>\n</html>")
    assert "Hardware pools" not in (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "pools:" not in run(package_copy, "check", "spec.eff", cwd=tmp_path).stdout
