"""`effspec fmt` through the installed console script.

Exit codes, what is written (and what is not), the diff, standard input;
plus: `effspec check` loads neither the formatter nor Pygments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import cli, effspec_process

ROOT = Path(__file__).resolve().parents[2]
EFFSPEC = os.path.join(os.path.dirname(sys.executable), "effspec")  # the installed console script

MESSY = 'eff 1\nrun r { timing { step_time = [1.0,2.0] s  warmup=0 step }  title="t" }\n'
TIDY = 'eff 1\n\nrun r {\n  title = "t"\n  timing {\n    step_time = [1.0, 2.0] s\n    warmup    = 0 step\n  }\n}\n'


def test_the_console_script_is_installed():
    assert os.access(EFFSPEC, os.X_OK), EFFSPEC


def test_check_exits_1_and_writes_nothing_when_a_file_would_change(tmp_path):
    spec = tmp_path / "messy.eff"
    spec.write_text(MESSY, encoding="utf-8")
    before = spec.stat().st_mtime_ns
    proc = cli("fmt", "--check", str(spec))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    assert f"would reformat {spec}" in proc.stderr
    assert "1 file would be reformatted, 0 already formatted" in proc.stderr
    assert spec.read_text(encoding="utf-8") == MESSY and spec.stat().st_mtime_ns == before


def test_check_exits_0_on_a_formatted_file(tmp_path):
    spec = tmp_path / "tidy.eff"
    spec.write_text(TIDY, encoding="utf-8")
    proc = cli("fmt", "--check", str(spec))
    assert proc.returncode == 0, proc.stderr
    assert "0 files would be reformatted, 1 already formatted" in proc.stderr


def test_fmt_rewrites_in_place_then_check_passes(tmp_path):
    spec = tmp_path / "messy.eff"
    spec.write_text(MESSY, encoding="utf-8")
    proc = cli("fmt", str(spec))
    assert proc.returncode == 0, proc.stderr
    assert spec.read_text(encoding="utf-8") == TIDY
    assert f"reformatted {spec}" in proc.stderr
    assert cli("fmt", "--check", str(spec)).returncode == 0
    assert not [p.name for p in tmp_path.iterdir() if p.name != "messy.eff"]  # no temporary file left behind


def test_fmt_leaves_a_formatted_file_untouched(tmp_path):
    spec = tmp_path / "tidy.eff"
    spec.write_text(TIDY, encoding="utf-8")
    os.utime(spec, ns=(1_000_000_000, 1_000_000_000))
    assert cli("fmt", str(spec)).returncode == 0
    assert spec.stat().st_mtime_ns == 1_000_000_000


def test_diff_prints_a_unified_diff_and_exits_1(tmp_path):
    spec = tmp_path / "messy.eff"
    spec.write_text(MESSY, encoding="utf-8")
    proc = cli("fmt", "--diff", "messy.eff", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == (
        "--- messy.eff\n"
        "+++ messy.eff\n"
        "@@ -1,2 +1,9 @@\n"
        " eff 1\n"
        '-run r { timing { step_time = [1.0,2.0] s  warmup=0 step }  title="t" }\n'
        "+\n"
        "+run r {\n"
        '+  title = "t"\n'
        "+  timing {\n"
        "+    step_time = [1.0, 2.0] s\n"
        "+    warmup    = 0 step\n"
        "+  }\n"
        "+}\n"
    )
    assert spec.read_text(encoding="utf-8") == MESSY


def test_diff_is_empty_and_exit_0_for_a_formatted_file(tmp_path):
    (tmp_path / "tidy.eff").write_text(TIDY, encoding="utf-8")
    proc = cli("fmt", "--diff", "tidy.eff", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "")


def test_a_syntax_error_is_exit_2_with_the_diagnostic_and_the_file_untouched(tmp_path):
    spec = tmp_path / "bad.eff"
    text = "eff 1\nrun r { hardware { count = 8 GPUs } work { seq_len = 1,000 } }\n"
    spec.write_text(text, encoding="utf-8")
    proc = cli("fmt", "bad.eff", cwd=tmp_path)
    assert proc.returncode == 2
    assert "error[EFF001]: unknown unit `GPUs`" in proc.stderr
    assert "--> bad.eff:2:30" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert spec.read_text(encoding="utf-8") == text


def test_unit_spellings_are_fixed(tmp_path):
    spec = tmp_path / "units.eff"
    spec.write_text("eff 1\nrun r { hardware { peak = 989.4 TFLOPS } }\n", encoding="utf-8")
    assert cli("fmt", "--check", str(spec)).returncode == 1
    assert cli("fmt", str(spec)).returncode == 0
    assert spec.read_text(encoding="utf-8") == "eff 1\n\nrun r {\n  hardware { peak = 989.4 TFLOP/s }\n}\n"


def test_stdin_to_stdout():
    proc = cli("fmt", "-", stdin=MESSY)
    assert (proc.returncode, proc.stdout) == (0, TIDY)
    proc = cli("fmt", "--check", "-", stdin=MESSY)
    assert proc.returncode == 1 and proc.stdout == ""


def test_a_folder_formats_its_eff_files_and_a_symlink_stays_a_link(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.eff").write_text(MESSY, encoding="utf-8")
    (tmp_path / "sub" / "notes.txt").write_text("not a spec {", encoding="utf-8")
    target = tmp_path / "b.eff"
    target.write_text(MESSY, encoding="utf-8")
    link = tmp_path / "link.eff"
    link.symlink_to(target)
    proc = cli("fmt", str(tmp_path / "sub"), str(link))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "sub" / "a.eff").read_text(encoding="utf-8") == TIDY
    assert (tmp_path / "sub" / "notes.txt").read_text(encoding="utf-8") == "not a spec {"
    assert link.is_symlink() and target.read_text(encoding="utf-8") == TIDY
    assert "2 files reformatted, 0 already formatted" in proc.stderr


def test_a_missing_file_is_exit_2():
    proc = cli("fmt", "/nonexistent/x.eff")
    assert proc.returncode == 2
    assert "no such file" in proc.stderr


def test_fmt_help_documents_the_exit_codes():
    proc = cli("fmt", "--help")
    assert proc.returncode == 0
    assert "exit status:" in proc.stdout and "--check" in proc.stdout and "--diff" in proc.stdout


def test_every_example_passes_fmt_check_after_fmt(tmp_path):
    for path in sorted((ROOT / "examples").glob("*.eff")):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    for path in sorted((ROOT / "examples").glob("*.csv")):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    assert cli("fmt", str(tmp_path)).returncode == 0
    assert cli("fmt", "--check", str(tmp_path)).returncode == 0
    # and the formatted examples still check with the same findings
    for path in sorted((ROOT / "examples").glob("*.eff")):
        before = cli("check", "--format", "json", str(path))
        after = cli("check", "--format", "json", str(tmp_path / path.name))
        assert before.returncode == after.returncode
        assert _codes(before.stdout) == _codes(after.stdout), path.name


def _codes(out: str) -> list[tuple[str, str]]:
    doc = json.loads(out)
    docs = doc if isinstance(doc, list) else [doc]
    return sorted((d["code"], d["severity"]) for one in docs for d in one["diagnostics"])


def test_check_loads_neither_the_formatter_nor_pygments(tmp_path):
    spec = tmp_path / "a.eff"
    spec.write_text(TIDY, encoding="utf-8")
    probe = ("import sys, effspec.cli\n"
             f"effspec.cli.main(['check', {str(spec)!r}])\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pygments' or m.startswith('effspec.fmt')))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout + proc.stderr


def test_diff_marks_a_missing_final_newline():
    proc = cli("fmt", "--diff", "-", stdin='eff 1\nrun r { title = "t" }')
    assert proc.returncode == 1
    assert proc.stdout == ('--- <stdin>\n+++ <stdin>\n@@ -1,2 +1,5 @@\n eff 1\n-run r { title = "t" }\n'
                           '\\ No newline at end of file\n+\n+run r {\n+  title = "t"\n+}\n')


def test_fmt_of_a_folder_refuses_what_check_refuses(tmp_path):
    """A spec found in a folder is read as `check` reads it: a symlink leading out of the folder, or a hard
    link, is refused and left as it is (the folder may be someone else's), and the exit status says so."""
    messy = 'eff 1\nrun a {\n  model {   preset = "llama3_8b" }\n}\n'
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.eff"
    victim.write_text(messy)
    linked = outside / "linked.eff"
    linked.write_text(messy)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "link.eff").symlink_to("../outside/victim.eff")
    os.link(linked, proj / "hard.eff")
    (proj / "own.eff").write_text(messy)
    proc = effspec_process("fmt", str(proj))
    assert proc.returncode == 2, proc.stderr
    assert victim.read_text() == messy and linked.read_text() == messy
    assert "model { preset" in (proj / "own.eff").read_text()
    assert "1 file reformatted" in proc.stderr and "2 not formatted" in proc.stderr


def test_fmt_never_replaces_a_named_hard_link(tmp_path):
    messy = 'eff 1\nrun a {\n  model {   preset = "llama3_8b" }\n}\n'
    first = tmp_path / "a.eff"
    first.write_text(messy)
    os.link(first, tmp_path / "b.eff")
    proc = effspec_process("fmt", str(tmp_path / "b.eff"))
    assert proc.returncode == 2
    assert "has 2 hard links; not reformatted" in proc.stderr
    assert first.read_text() == messy
