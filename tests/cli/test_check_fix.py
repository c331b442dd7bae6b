"""`effspec check --fix`, `--unsafe-fixes` and `--diff`, through the installed console script.

Each fixture pair in tests/fixtures/fix is a spec with mistakes (NAME.in) and
the same spec corrected by hand (NAME.eff): `--fix` must produce exactly the
hand-corrected text, whose IR is then the hand-corrected spec's IR.  The
counts in "Fixed N errors" are the edits listed in each test, counted by hand.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import cli as run_effspec

import effspec
from effspec.fmt import ir_signature

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "fix"


def effspec_cli(*args: str, cwd: Path | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`effspec ARGS` in this process (conftest.cli)."""
    return run_effspec(*args, cwd=cwd, stdin=stdin)


def broken(tmp_path: Path, name: str, as_name: str = "spec.eff") -> Path:
    path = tmp_path / as_name
    shutil.copyfile(FIXTURES / f"{name}.in", path)
    return path


def hand_fixed(name: str) -> str:
    return (FIXTURES / f"{name}.eff").read_text(encoding="utf-8")


# name, the flags, the stderr line, the exit status before and after (errors left: none in every fixture)
CASES = [
    # tokens -> token, GPUs -> device, TFLOPs -> TFLOP/s, tflops -> TFLOP/s (three on one line: three rounds)
    ("units", ["--fix"], "Fixed 4 errors", 1, 0),
    # `claim mfu = 50` is EFF604 (5000 %; EFF601 leaves an impossible MFU to it): one edit
    ("bare_mfu", ["--fix"], "Fixed 1 error", 1, 0),
    ("sparse_peak", ["--fix", "--unsafe-fixes"], "Fixed 1 error", 1, 0),
    ("wrong_dtype_peak", ["--fix", "--unsafe-fixes"], "Fixed 1 error", 1, 0),
]


@pytest.mark.parametrize("name, flags, said, before, after", CASES, ids=[c[0] for c in CASES])
def test_each_fix_gives_the_hand_corrected_spec(tmp_path, name, flags, said, before, after):
    spec = broken(tmp_path, name)
    assert effspec_cli("check", str(spec)).returncode == before
    proc = effspec_cli("check", *flags, "spec.eff", cwd=tmp_path)
    assert proc.returncode == after, proc.stdout + proc.stderr
    assert said in proc.stderr.splitlines(), proc.stderr
    text = spec.read_text(encoding="utf-8")
    assert text == hand_fixed(name)
    # the IR after the fix is the hand-corrected spec's, with the files read
    assert ir_signature(text, str(tmp_path)) == ir_signature(hand_fixed(name), str(tmp_path))
    # the check after the fix reports what remains: the hand-corrected spec's findings
    remaining = effspec.check_text(hand_fixed(name), "spec.eff", str(tmp_path)).diagnostics
    assert not [d for d in remaining if d.severity == "error"]
    for d in remaining:
        assert f"[{d.code}]: {d.message}\n --> spec.eff:{d.span.line}:{d.span.column}\n" in proc.stdout
    assert not [tmp for tmp in tmp_path.iterdir() if tmp.name != "spec.eff"]  # no temporary file left behind


@pytest.mark.parametrize("name, flags", [(c[0], c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_fix_is_idempotent(tmp_path, name, flags):
    spec = broken(tmp_path, name)
    assert effspec_cli("check", *flags, str(spec)).returncode == 0
    os.utime(spec, ns=(1_000_000_000, 1_000_000_000))
    again = effspec_cli("check", *flags, str(spec))
    assert again.returncode == 0
    assert not any(line.startswith("Fixed") for line in again.stderr.splitlines()), again.stderr
    assert spec.stat().st_mtime_ns == 1_000_000_000  # not even rewritten with the same text
    assert spec.read_text(encoding="utf-8") == hand_fixed(name)


def test_the_fixes_of_a_hand_corrected_spec_change_nothing(tmp_path):
    for name, flags, *_ in CASES:
        path = tmp_path / f"{name}.eff"
        shutil.copyfile(FIXTURES / f"{name}.eff", path)
        proc = effspec_cli("check", *flags, "--diff", str(path))
        assert (proc.returncode, proc.stdout) == (0, ""), name


def test_diff_prints_the_fixes_and_writes_nothing(tmp_path):
    spec = broken(tmp_path, "bare_mfu")
    os.utime(spec, ns=(1_000_000_000, 1_000_000_000))
    proc = effspec_cli("check", "--fix", "--diff", "spec.eff", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ("--- spec.eff\n"
                           "+++ spec.eff\n"
                           "@@ -8,5 +8,5 @@\n"  # the fix on line 11, three lines of context before it
                           '   hardware { accelerator = "H100-SXM5-80GB"  count = 1 device  dtype = bf16  peak = 989.4 TFLOP/s '
                           'from datasheet "H100 SXM, dense BF16" }\n'
                           '   timing { step_time = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1] s  warmup = 0 step  '
                           'boundary = "optimizer step" }\n'
                           "   claim throughput = 494700 token/s\n"
                           "-  claim mfu = 50\n"
                           "+  claim mfu = 50 %\n"
                           " }\n")
    assert "Would fix 1 error" in proc.stderr
    assert spec.read_text(encoding="utf-8") == (FIXTURES / "bare_mfu.in").read_text(encoding="utf-8")
    assert spec.stat().st_mtime_ns == 1_000_000_000
    assert [p.name for p in tmp_path.iterdir()] == ["spec.eff"]


def test_diff_alone_is_fix_diff(tmp_path):
    broken(tmp_path, "units")
    alone = effspec_cli("check", "--diff", "spec.eff", cwd=tmp_path)
    both = effspec_cli("check", "--fix", "--diff", "spec.eff", cwd=tmp_path)
    assert alone.returncode == both.returncode == 1 and alone.stdout == both.stdout
    assert "+  work { seq_len = 970 token/sequence  global_batch = 510 sequence }\n" in alone.stdout


def test_unsafe_fixes_only_with_the_flag(tmp_path):
    for name in ("sparse_peak", "wrong_dtype_peak"):
        spec = broken(tmp_path, name)
        proc = effspec_cli("check", "--fix", str(spec))
        assert proc.returncode == 1  # the EFF201/EFF202 error remains
        assert spec.read_text(encoding="utf-8") == (FIXTURES / f"{name}.in").read_text(encoding="utf-8")
        assert "(1 hidden fix can be enabled with --unsafe-fixes)" in proc.stderr.splitlines()
        assert not any(line.startswith("Fixed") for line in proc.stderr.splitlines())
        assert effspec_cli("check", "--diff", str(spec)).stdout == ""


def test_a_plain_check_counts_what_fix_would_fix(tmp_path):
    broken(tmp_path, "bare_mfu", "a.eff")
    broken(tmp_path, "sparse_peak", "b.eff")
    proc = effspec_cli("check", "a.eff", "b.eff", cwd=tmp_path)
    assert proc.returncode == 1
    # a.eff: one edit for EFF604; b.eff: the unsafe `peak = catalog`, named
    assert proc.stderr.splitlines() == ["[*] 1 fixable with --fix", "(1 hidden fix can be enabled with --unsafe-fixes)",
                                        "  b.eff:8:87 EFF202: Write `peak = catalog` (the dense BF16 figure, 312 TFLOP/s)"]
    assert effspec_cli("check", "--quiet", "a.eff", "b.eff", cwd=tmp_path).stderr == ""
    with_unsafe = effspec_cli("check", "--unsafe-fixes", "a.eff", "b.eff", cwd=tmp_path)
    assert with_unsafe.stderr.splitlines() == ["[*] 2 fixable with --fix"]
    for fmt in ("json", "sarif", "github", "junit"):  # the hints are for a reader: machine formats go without
        assert effspec_cli("check", "--format", fmt, "a.eff", "b.eff", cwd=tmp_path).stderr == "", fmt


def test_ignored_findings_are_not_fixed(tmp_path):
    spec = broken(tmp_path, "bare_mfu")
    proc = effspec_cli("check", "--fix", "--ignore", "EFF601,EFF604", str(spec))
    assert spec.read_text(encoding="utf-8") == (FIXTURES / "bare_mfu.in").read_text(encoding="utf-8")
    assert not any(line.startswith("Fixed") for line in proc.stderr.splitlines())


def test_json_output_after_fix_is_the_remaining_findings(tmp_path):
    import json

    broken(tmp_path, "wrong_dtype_peak")
    proc = effspec_cli("check", "--fix", "--unsafe-fixes", "--format", "json", "spec.eff", cwd=tmp_path)
    doc = json.loads(proc.stdout)
    doc = doc[0] if isinstance(doc, list) else doc
    assert [d["code"] for d in doc["diagnostics"]] == ["EFF502"]  # one step time: a warning, and no error
    assert proc.returncode == 0 and "Fixed 1 error" in proc.stderr


def test_stdin_with_diff_and_without(tmp_path):
    text = (FIXTURES / "bare_mfu.in").read_text(encoding="utf-8")
    proc = effspec_cli("check", "--fix", "--diff", "--stdin-filename", "piped.eff", "-", cwd=tmp_path, stdin=text)
    assert proc.returncode == 1 and "+  claim mfu = 50 %\n" in proc.stdout and proc.stdout.startswith("--- piped.eff\n")
    proc = effspec_cli("check", "--fix", "-", cwd=tmp_path, stdin=text)
    assert proc.returncode == 2
    assert "--fix cannot write back to stdin" in proc.stderr


# --- what is never written -------------------------------------------------------------------


def test_a_named_symlink_is_written_through_and_stays_a_link(tmp_path):
    """As `effspec fmt` does: the user named the link."""
    target = broken(tmp_path, "bare_mfu", "target.eff")
    link = tmp_path / "link.eff"
    link.symlink_to(target)
    proc = effspec_cli("check", "--fix", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and target.read_text(encoding="utf-8") == hand_fixed("bare_mfu")


def test_a_symlink_in_a_folder_that_leads_out_of_it_is_refused(tmp_path):
    outside = broken(tmp_path, "bare_mfu", "outside.eff")
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "link.eff").symlink_to(outside)
    proc = effspec_cli("check", "--fix", str(folder))
    assert proc.returncode == 2
    assert "symlink" in proc.stderr and "Traceback" not in proc.stderr
    assert outside.read_text(encoding="utf-8") == (FIXTURES / "bare_mfu.in").read_text(encoding="utf-8")
    assert (folder / "link.eff").is_symlink()


def test_a_hard_link_in_a_folder_is_refused(tmp_path):
    outside = broken(tmp_path, "bare_mfu", "outside.eff")
    folder = tmp_path / "specs"
    folder.mkdir()
    os.link(outside, folder / "hard.eff")
    proc = effspec_cli("check", "--fix", str(folder))
    assert proc.returncode == 2
    assert "hard link" in proc.stderr
    assert outside.read_text(encoding="utf-8") == (FIXTURES / "bare_mfu.in").read_text(encoding="utf-8")
    assert os.stat(outside).st_nlink == 2


def test_a_named_hard_link_is_never_replaced(tmp_path):
    """Even named (and with --allow-hardlinks): replacing it would leave the other name with the old text."""
    first = broken(tmp_path, "bare_mfu", "first.eff")
    second = tmp_path / "second.eff"
    os.link(first, second)
    for flags in ([], ["--allow-hardlinks"]):
        proc = effspec_cli("check", "--fix", *flags, str(second))
        assert proc.returncode == 2
        assert f"effspec: {second}: has 2 hard links; not fixed" in proc.stderr
        assert second.read_text(encoding="utf-8") == first.read_text(encoding="utf-8") == \
            (FIXTURES / "bare_mfu.in").read_text(encoding="utf-8")
        assert os.stat(first).st_ino == os.stat(second).st_ino


def test_help_lists_the_fix_flags():
    out = effspec_cli("check", "--help").stdout
    assert "--fix" in out and "--unsafe-fixes" in out and "--diff" in out


def test_the_editor_and_fix_read_one_table():
    """The language server's quick fixes are effspec.rules.fixes: the same edits, unsafe ones not preferred."""
    import effspec.lsp.fixes
    import effspec.rules.fixes
    from effspec.rules.fixes import claim_units, fixes_for, source_reader

    assert effspec.lsp.fixes.fixes_for is effspec.rules.fixes.fixes_for
    text = (FIXTURES / "sparse_peak.in").read_text(encoding="utf-8")
    result = effspec.check_text(text)
    (d,) = [d for d in result.diagnostics if d.code == "EFF202"]
    (fix,) = fixes_for(d, source_reader(text), claim_units(result.spec))
    # line 8: `peak = 624 TFLOP/s from paper "footnote 3"`, the figure and its source replaced
    line = text.split("\n")[7]
    assert line[fix.span.column - 1:fix.span.end_column - 1] == '624 TFLOP/s from paper "footnote 3"'
    assert (fix.new_text, fix.safe, fix.preferred) == ("catalog", False, False)
    assert fix.title == "Write `peak = catalog` (the dense BF16 figure, 312 TFLOP/s)"


def test_a_thousands_separator_is_an_unsafe_fix(tmp_path):
    spec = tmp_path / "spec.eff"
    text = (FIXTURES / "units.eff").read_text(encoding="utf-8").replace("seq_len = 970", "seq_len = 1,970")
    spec.write_text(text, encoding="utf-8")
    proc = effspec_cli("check", "--fix", str(spec))
    assert proc.returncode == 1 and spec.read_text(encoding="utf-8") == text  # `1,970` may be a decimal comma
    assert "(1 hidden fix can be enabled with --unsafe-fixes)" in proc.stderr.splitlines()
    effspec_cli("check", "--fix", "--unsafe-fixes", str(spec))
    assert spec.read_text(encoding="utf-8") == text.replace("1,970", "1_970")


def test_diff_says_why_a_file_cannot_be_read(tmp_path):
    proc = effspec_cli("check", "--diff", str(tmp_path / "missing.eff"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"effspec: {tmp_path / 'missing.eff'}: no such file\n"
    proc = effspec_cli("check", "--fix", str(tmp_path / "missing.eff"))  # said once, by the check
    assert proc.returncode == 2 and proc.stderr.count("no such file") == 1
