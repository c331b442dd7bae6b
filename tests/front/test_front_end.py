"""Compiler core: parsing, diagnostics with exact codes and positions, units, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli, effspec_process

import effspec
from effspec import check_text, load
from effspec.diagnostics import render_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))

MINIMAL = """eff 1
run a {
  model { kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }
  convention { preset = palm }
  work { seq_len = 128 token/sequence  global_batch = 8 sequence }
  hardware { accelerator = "A100-SXM4-80GB"  count = 8 device  dtype = bf16  peak = catalog }
  timing { step_time = 0.5 s  warmup = 0 step  boundary = "barrier" }
}
"""


def codes_at(result):
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics]


def test_grammar_is_conflict_free_in_strict_mode():
    from lark import Lark

    from effspec.front.syntax import grammar_text

    Lark(grammar_text(), parser="lalr", lexer="contextual", propagate_positions=True, strict=True)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_have_no_front_end_errors(path):
    result = load(path)
    front = [d for d in result.diagnostics if d.code < "EFF100"]
    assert front == [], [render_text(d, result.source, str(path)) for d in front]
    assert result.spec is not None and result.evaluation is not None


def test_minimal_spec_is_clean_of_front_end_errors():
    result = check_text(MINIMAL)
    assert [d for d in result.diagnostics if d.code < "EFF100"] == []
    assert result.spec.runs[0].id == "a"


def test_syntax_error_missing_equals():
    text = MINIMAL.replace("layers = 2", "layers 2")
    result = check_text(text)
    assert codes_at(result) == [("EFF001", 3, 44)]
    d = result.diagnostics[0]
    assert "expected `=`" in d.message and "`layers`" in d.message
    assert "Unexpected" not in d.message and "Token(" not in d.message


def test_syntax_error_end_of_file():
    result = check_text("eff 1\nrun a {\n  model { kind = custom\n")
    (d,) = result.diagnostics
    assert d.code == "EFF001" and "ended early" in d.message and "`}`" in d.help


def test_missing_header():
    result = check_text("run a { }\n")
    (d,) = result.diagnostics
    assert (d.code, d.span.line, d.span.column) == ("EFF001", 1, 1)
    assert "eff 1" in d.message


def test_unknown_key_suggests_nearest():
    text = MINIMAL.replace("global_batch = 8 sequence", "global_batch = 8 sequence  pading_tokens = 3 token")
    result = check_text(text)
    assert codes_at(result) == [("EFF002", 5, 67)]
    assert "`pading_tokens`" in result.diagnostics[0].message
    assert result.diagnostics[0].help == "did you mean `padded_tokens`?"


def test_unknown_block_suggests_nearest():
    result = check_text(MINIMAL.replace("timing {", "timimg {"))
    assert codes_at(result) == [("EFF002", 7, 3)]
    assert "did you mean `timing`?" in result.diagnostics[0].help


def test_key_in_wrong_block_says_where_it_belongs():
    result = check_text(MINIMAL.replace("warmup = 0 step", "warmup = 0 step  dp = 8"))
    (d,) = [d for d in result.diagnostics if d.code == "EFF002"]
    assert "parallelism" in d.help


def test_peak_in_flop_instead_of_flop_per_second():
    result = check_text(MINIMAL.replace("peak = catalog", "peak = 312 TFLOP"))
    assert codes_at(result) == [("EFF010", 6, 85)]
    d = result.diagnostics[0]
    assert "`FLOP/s`" in d.message and "`FLOP`" in d.message
    assert "FLOP per second" in d.help


def test_huge_literal_is_not_finite():
    result = check_text(MINIMAL.replace("seq_len = 128", "seq_len = 1e400"))
    assert codes_at(result) == [("EFF011", 5, 20)]
    assert "finite" in result.diagnostics[0].message


@pytest.mark.parametrize("value,fragment", [("-0.5 s", "negative"), ("0 s", "greater than zero")])
def test_bad_times_are_eff011(value, fragment):
    result = check_text(MINIMAL.replace("step_time = 0.5 s", f"step_time = {value}"))
    (d,) = result.diagnostics
    assert d.code == "EFF011" and fragment in d.message


def test_bad_enum_is_eff003_with_suggestion():
    result = check_text(MINIMAL.replace("ffn = gelu", "ffn = swigelu"))
    assert codes_at(result) == [("EFF003", 3, 80)]
    assert "`swiglu`" in result.diagnostics[0].help


def test_missing_required_key_is_eff003():
    result = check_text(MINIMAL.replace("  vocab = 1000", ""))
    (d,) = result.diagnostics
    assert (d.code, d.span.line, d.span.column) == ("EFF003", 3, 3)
    assert "`vocab`" in d.message


def test_file_path_leaving_the_folder(tmp_path):
    (tmp_path / "spec").mkdir()
    (tmp_path / "steps.csv").write_text("s\n1.0\n")
    text = MINIMAL.replace("step_time = 0.5 s", 'step_time = file "../steps.csv" column "s"')
    spec = tmp_path / "spec" / "a.eff"
    spec.write_text(text)
    result = load(spec)
    assert codes_at(result) == [("EFF020", 7, 29)]
    assert "leaves the spec's folder" in result.diagnostics[0].message


def test_csv_column_and_unit(tmp_path):
    (tmp_path / "steps.csv").write_text("step,step_ms\n1,500\n2,520\n3,480\n")
    text = MINIMAL.replace("step_time = 0.5 s", 'step_time = file "steps.csv" column "step_ms" ms')
    (tmp_path / "a.eff").write_text(text)
    result = load(tmp_path / "a.eff")
    assert [d for d in result.diagnostics if d.code < "EFF100"] == []
    # median of 0.500, 0.520, 0.480 s
    assert result.evaluation.runs["a"].metrics["step_time"].value == pytest.approx(0.5)


def test_csv_bad_row_names_row_and_column(tmp_path):
    (tmp_path / "steps.csv").write_text("step,secs\n1,0.5\n2,oops\n")
    (tmp_path / "a.eff").write_text(MINIMAL.replace("step_time = 0.5 s", 'step_time = file "steps.csv" column "secs"'))
    (d,) = load(tmp_path / "a.eff").diagnostics
    assert d.code == "EFF003" and "row 3" in d.message and "`secs`" in d.message and "`oops`" in d.message


def test_csv_unknown_column_suggests(tmp_path):
    (tmp_path / "steps.csv").write_text("step,step_seconds\n1,0.5\n")
    (tmp_path / "a.eff").write_text(MINIMAL.replace("step_time = 0.5 s", 'step_time = file "steps.csv" column "step_second"'))
    (d,) = load(tmp_path / "a.eff").diagnostics
    assert d.code == "EFF020" and "did you mean `step_seconds`?" in d.help


def test_undefined_baseline():
    text = MINIMAL + "\nscaling s {\n  kind = strong\n  baseline = bse\n  runs = [a]\n}\n"
    result = check_text(text)
    assert codes_at(result) == [("EFF020", 12, 14)]
    assert "no run `bse`" in result.diagnostics[0].message


def test_three_independent_errors_are_all_reported():
    text = (MINIMAL.replace("ffn = gelu", "ffn = gelo")
            .replace("peak = catalog", "peak = 312 TFLOP")
            .replace("boundary", "boundery"))
    result = check_text(text)
    assert codes_at(result) == [("EFF003", 3, 80), ("EFF010", 6, 85), ("EFF002", 7, 48)]


def test_three_independent_syntax_errors_are_all_reported():
    text = (MINIMAL.replace("layers = 2", "layers 2")
            .replace("global_batch = 8 sequence", "global_batch == 8 sequence")
            .replace('boundary = "barrier"', "boundary = 'barrier'"))
    result = check_text(text)
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("EFF001", 3), ("EFF001", 5), ("EFF001", 7)]


def test_unknown_unit_is_named():
    result = check_text(MINIMAL.replace("step_time = 0.5 s", "step_time = 0.5 seconds"))
    (d,) = result.diagnostics
    assert d.code == "EFF001" and "unknown unit `seconds`" in d.message and "`s`" in d.help


def test_one_line_blocks_and_units_next_to_keys():
    # `8 device  dtype` must not read `dtype` as a unit, nor `s` in `seq_len`.
    text = 'eff 1\nrun a { work { seq_len = 2048 token/sequence  global_batch = 16 sequence } parallelism { dp = 8  micro_batch = 2 sequence } }\n'
    result = check_text(text)
    assert [d for d in result.diagnostics if d.code < "EFF100"] == []
    work = result.spec.runs[0].block("work")
    assert work.value("seq_len") == 2048 and work.value("global_batch") == 16


def test_units_convert_to_base():
    text = MINIMAL.replace("step_time = 0.5 s", "step_time = [500, 520, 480] ms")
    result = check_text(text)
    samples = result.spec.runs[0].block("timing").value("step_time")
    assert samples.values == pytest.approx((0.5, 0.52, 0.48))


def test_bare_number_accepted_for_counting_units_only():
    result = check_text(MINIMAL.replace("count = 8 device", "count = 8"))
    assert result.spec.runs[0].block("hardware").value("count") == 8
    result = check_text(MINIMAL.replace("step_time = 0.5 s", "step_time = 0.5"))
    (d,) = result.diagnostics
    assert d.code == "EFF010" and "unit" in d.help


def test_flop_is_its_own_dimension():
    from effspec.front.units import parse_unit

    factor, dims = parse_unit("TFLOP/s")
    assert factor == 1e12 and dict(dims) == {"[flop]": 1, "[time]": -1}
    assert parse_unit("Mtoken/s")[0] == 1e6
    assert parse_unit("%")[0] == 0.01


def test_control_and_bidi_characters_are_stripped_from_echoed_source():
    text = MINIMAL.replace('"barrier"', '"bar\u202erier\x1b[31m"').replace("ffn = gelu", "ffn = gelo")
    result = check_text(text)
    rendered = "\n".join(render_text(d, result.source, "x.eff") for d in result.diagnostics)
    assert "\u202e" not in rendered and "\x1b" not in rendered


def test_rustc_style_rendering():
    result = check_text(MINIMAL.replace("peak = catalog", "peak = 312 TFLOP"))
    out = render_text(result.diagnostics[0], result.source, "x.eff")
    lines = out.splitlines()
    assert lines[0] == "error[EFF010]: `peak` expects `FLOP/s`, found `FLOP`"
    assert lines[1].strip() == "--> x.eff:6:85"
    assert lines[3].startswith("6 | ")
    caret = lines[4]
    assert caret.index("^") - caret.index("|") - 2 == 84 and caret.count("^") == len("312 TFLOP")
    assert lines[-1].strip().startswith("= help:")


# ---------------------------------------------------------------------------- CLI


def test_cli_json_contract_shape():
    proc = cli("check", "examples/example_a_measured.eff", "--format", "json", cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    (doc,) = json.loads(proc.stdout)  # an array of file objects, even for one file
    assert set(doc) >= {"file", "diagnostics", "runs", "scalings"}
    mfu = doc["runs"]["llm3b_64"]["metrics"]["mfu"]
    assert mfu["unit"] == "" and mfu["formula"] and mfu["inputs"]
    assert doc["runs"]["llm3b_64"]["claims"]["mfu"]["status"] in ("consistent", "mismatch", "unrecoverable")


def test_cli_json_array_for_several_files_in_argument_order():
    files = ["examples/example_c_scaling.eff", "examples/example_a_measured.eff"]
    doc = json.loads(cli("check", *files, "--format", "json", cwd=ROOT).stdout)
    assert [d["file"] for d in doc] == files


def test_cli_exit_codes(tmp_path):
    assert cli("check", str(tmp_path / "missing.eff"), cwd=ROOT).returncode == 2
    bad = tmp_path / "bad.eff"
    bad.write_text("eff 1\nrun a { model { layers 2 } }\n")
    proc = cli("check", str(bad), cwd=ROOT)
    assert proc.returncode == 1 and "error[EFF001]" in proc.stdout
    good = tmp_path / "good.eff"
    good.write_text(MINIMAL)
    assert cli("check", str(good), cwd=ROOT).returncode == 0
    assert cli("check", cwd=ROOT).returncode == 2  # bad arguments


def test_cli_non_utf8_is_a_coded_error(tmp_path):
    """Issue 26: EFF001 at the first bad byte, in the output (exit 1), rather than a tool error."""
    p = tmp_path / "latin1.eff"
    p.write_bytes(b"eff 1\nrun a { title = \"caf\xe9\" }\n")
    proc = cli("check", str(p), cwd=ROOT)
    assert proc.returncode == 1 and proc.stderr == ""
    assert f"error[EFF001]: not UTF-8 text: byte 0xe9 at line 2, column 21\n --> {p}:2:21" in proc.stdout


def test_check_imports_no_rendering_stack():
    code = ("import sys, effspec.cli as c; c.main(['check', 'examples/example_a_measured.eff', '--format', 'json']);"
            "heavy = [m for m in ('weasyprint', 'matplotlib', 'jinja2') if m in sys.modules]; print(heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stderr


def test_core_does_not_import_rendering_or_cli():
    """Data flows forward: parse … audit never import report, output or cli."""
    core = ["syntax", "build", "ir", "keys", "units", "flops", "evaluate", "audit", "stats", "scaling",
            "breakdown", "catalog", "config", "diagnostics", "codes", "limits", "fmt"]
    for name in core:
        path = ROOT / "compiler" / f"{name}.py"
        if not path.exists():
            continue
        src = path.read_text()
        for forbidden in ("from .report", "from .cli", "from .output", "import effspec.report", "from .sarif"):
            assert forbidden not in src, f"{name}.py imports {forbidden}"


def test_version_and_module_entry_point():
    proc = cli("--version", cwd=ROOT)
    assert proc.returncode == 0 and effspec.__version__ in proc.stdout


def test_non_editable_install_ships_package_data(tmp_path, effspec_wheel, installed_wheel):
    """A wheel built from the tree holds the grammar, templates, schema and catalog, and works installed.

    The wheel and its install are built once per session (conftest: effspec_wheel, installed_wheel)."""
    import zipfile

    names = set(zipfile.ZipFile(effspec_wheel).namelist())
    for required in ("effspec/grammar/eff.lark", "effspec/data/peaks.json", "effspec/data/peaks.schema.json",
                     "effspec/cli/__init__.py", "effspec/front/build.py", "effspec/engine/evaluate.py", "effspec/ranks/diagnose.py", "effspec/py.typed"):
        assert required in names, required
    target = installed_wheel
    env = dict(os.environ, PYTHONPATH=str(target))
    proc = subprocess.run([sys.executable, "-c", "import effspec, sys; print(effspec.__file__); "
                           "r = effspec.load(sys.argv[1]); print(r.evaluation.runs['llm3b_64'].metrics['mfu'].value)",
                           str(ROOT / "examples" / "example_a_measured.eff")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    installed_at, mfu = proc.stdout.split()
    assert str(target) in installed_at
    assert float(mfu) == pytest.approx(0.47119, abs=1e-4)


def test_a_fifo_named_on_the_command_line_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "spec.eff"
    os.mkfifo(fifo)
    proc = effspec_process("check", str(fifo), module=True, timeout=60)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr


def test_moe_model_needs_an_ffn_size():
    text = MINIMAL.replace("kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000",
                           "kind = moe_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  experts = 8  top_k = 2  vocab = 1000")
    (d,) = check_text(text).diagnostics
    assert (d.code, d.span.line, d.span.column) == ("EFF003", 3, 3) and "`d_ff_expert`" in d.message


def test_gutter_is_as_wide_as_the_line_number():
    result = check_text(MINIMAL.replace("ffn = gelu", "ffn = gelo"))
    lines = render_text(result.diagnostics[0], result.source, "x.eff").splitlines()
    assert lines[1] == " --> x.eff:3:80" and lines[2] == "  |" and lines[-1].startswith("  = help:")
