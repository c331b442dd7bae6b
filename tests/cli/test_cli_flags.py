"""`effspec check`'s linter flags (issue 15, "Linters' CLI conventions"), through the installed console script.

Expected findings are read off the example specs by hand:

- example C (examples/example_c_scaling.eff) has two runs, neither with a
  timing `boundary` (2 x EFF504), with 5 and 6 step samples, under 10
  (2 x EFF502), a 0.97 s step above 1.5 x the 0.605 s median of run
  scaled_64 (1 x EFF503), and a 10 % bubble with no `parallelism.pp`
  (1 x EFF405): six warnings, no error.
- example A's two claims (mfu = 52 %, throughput = 2.0e6 token/s on lines
  61 and 62) disagree with the reconstruction: two EFF601 errors.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import cli

ROOT = Path(__file__).resolve().parents[2]
EFFSPEC = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "effspec"
A = "examples/example_a_measured.eff"
C = "examples/example_c_scaling.eff"
UNCLOSED = "eff 1\nrun x {\n"  # a front-end error: EFF001, the file ends before the `}`


def run(*args, cwd=ROOT, env=None):
    """`effspec ARGS` in this process (conftest.cli); the terminal test below runs the console script."""
    return cli(*args, cwd=cwd, env={**os.environ, **(env or {})})


def codes(out: str) -> list[str]:
    return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines()
            if line.startswith(("error[", "warning[", "info["))]


# 1. --select / --ignore / --extend-select / --extend-ignore

def test_ignore_prefix_drops_the_family_and_records_it_as_suppressed():
    proc = run("check", C, "--ignore", "EFF50", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (doc,) = json.loads(proc.stdout)
    assert [d["code"] for d in doc["diagnostics"]] == ["EFF405"]
    assert sorted(s["code"] for s in doc["suppressed"]) == ["EFF502", "EFF502", "EFF503", "EFF504", "EFF504"]
    assert {s["by"] for s in doc["suppressed"]} == {"--ignore EFF50"}
    assert {s["effect"] for s in doc["suppressed"]} == {"ignored"}


def test_select_keeps_only_the_prefix_and_exact_code():
    assert sorted(codes(run("check", C, "--select", "EFF50").stdout)) == ["EFF502", "EFF502", "EFF503", "EFF504", "EFF504"]
    assert codes(run("check", C, "--select", "EFF503").stdout) == ["EFF503"]
    assert codes(run("check", C, "--select", "EFF2").stdout) == []


def test_more_specific_prefix_wins_and_extend_flags_add():
    # --select EFF5 keeps the five EFF50x; --ignore EFF504 is more specific, so the two EFF504 go.
    assert sorted(codes(run("check", C, "--select", "EFF5", "--ignore", "EFF504").stdout)) == ["EFF502", "EFF502", "EFF503"]
    # --extend-select adds EFF405 to the selection; --extend-ignore adds to --ignore.
    out = run("check", C, "--select", "EFF503", "--extend-select", "EFF4").stdout
    assert codes(out) == ["EFF503", "EFF405"]
    out = run("check", C, "--ignore", "EFF502", "--extend-ignore", "EFF504,EFF503").stdout
    assert codes(out) == ["EFF405"]
    # equal specificity: --ignore wins
    assert codes(run("check", C, "--select", "EFF405", "--ignore", "EFF405").stdout) == []


def test_front_end_errors_are_never_dropped(tmp_path):
    spec = tmp_path / "bad.eff"
    spec.write_text(UNCLOSED)
    proc = run("check", str(spec), "--select", "EFF6", "--ignore", "EFF0")
    assert codes(proc.stdout) == ["EFF001"]
    assert proc.returncode == 1


def test_bad_code_is_an_argument_error_with_the_check_usage():
    proc = run("check", C, "--select", "EFF9x")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: effspec check ")
    assert "argument --select: expected a code or a code prefix such as EFF601 or EFF2, got 'EFF9X'" in proc.stderr


def test_text_summary_names_the_flag():
    out = run("check", C, "--ignore", "EFF405").stdout
    assert out.splitlines()[-1] == "  ignored by --ignore EFF405: EFF405 at 26:22"


# 2. --exit-zero and --fail-on

def test_fail_on_thresholds():
    assert run("check", C).returncode == 0  # warnings only, default --fail-on error
    assert run("check", C, "--fail-on", "warning").returncode == 1
    assert run("check", C, "--fail-on", "info").returncode == 1
    assert run("check", C, "--fail-on", "warning", "--ignore", "EFF4,EFF5").returncode == 0
    assert run("check", A).returncode == 1


def test_exit_zero():
    assert run("check", A, "--exit-zero").returncode == 0
    assert run("check", "no-such.eff", "--exit-zero").returncode == 2  # could not run is still 2


# 3. --quiet and --statistics

def test_quiet_prints_only_findings():
    out = run("check", C, "--quiet").stdout
    assert "example_c_scaling.eff: 6 warnings" not in out
    assert len(codes(out)) == 6
    assert run("check", C, "--quiet", "--ignore", "EFF4,EFF5").stdout == ""
    assert "6 warnings" in run("check", C).stdout.splitlines()[-1]


def test_statistics_counts_per_code_sorted():
    out = run("check", C, "--statistics", "--quiet").stdout
    assert out.splitlines()[-4:] == ["    2  EFF502  warning", "    2  EFF504  warning",
                                     "    1  EFF405  warning", "    1  EFF503  warning"]


# 4. --output-format is --format

def test_output_format_alias():
    assert run("check", C, "--output-format", "json").stdout == run("check", C, "--format", "json").stdout


# 5. grand total

def test_grand_total_after_several_files():
    out = run("check", A, C).stdout
    assert out.splitlines()[-1] == "2 files: 2 errors, 6 warnings"
    assert "files:" not in run("check", C).stdout
    assert "files:" not in run("check", A, C, "--quiet").stdout


# 8. exit codes in --help

def test_exit_codes_in_help():
    for args in (("--help",), ("check", "--help")):
        out = run(*args).stdout
        assert "exit status:" in out
        assert "0  no finding at or above --fail-on" in out
        assert "2  effspec could not run" in out


# 4. --format github and --format junit

def test_github_annotations_escaped(tmp_path):
    spec = tmp_path / "we,ird:name.eff"
    spec.write_text((ROOT / C).read_text())
    proc = run("check", spec.name, "--format", "github", "--select", "EFF405", cwd=tmp_path)
    assert proc.returncode == 0
    line, = proc.stdout.splitlines()
    head, message = line.split("::", 2)[1:]
    # properties: `,` and `:` escaped; the bubble `10 %` at line 26, columns 22-26
    assert head == "warning file=we%2Cird%3Aname.eff,line=26,col=22,endLine=26,endColumn=26,title=EFF405"
    assert message.startswith("run `scaled_64` books 10 %25 of its step as pipeline bubble")
    assert "%0Ahelp: " in message and "\n" not in message
    out = run("check", A, "--format", "github").stdout.splitlines()
    assert [x.split(" ", 1)[0] for x in out] == ["::error", "::error"]
    assert out[0].startswith("::error file=examples/example_a_measured.eff,line=61,col=22,")


def test_junit_is_valid_xml_one_suite_per_file():
    import xml.etree.ElementTree as ET

    proc = run("check", A, C, "--format", "junit", "--select", "EFF601,EFF405")
    root = ET.fromstring(proc.stdout)
    assert root.tag == "testsuites" and root.get("tests") == "3" and root.get("failures") == "3"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [A, C]
    assert [c.get("name") for c in suites[0]] == ["EFF601 at 61:22", "EFF601 at 62:22"]
    assert suites[0][0].find("failure").get("message").startswith("claim `mfu` = 52 % disagrees")
    assert [c.get("name") for c in suites[1]] == ["EFF405 at 26:22"]
    clean = ET.fromstring(run("check", C, "--format", "junit", "--select", "EFF601").stdout)
    case, = clean.find("testsuite")
    assert case.get("name") == "no findings" and case.find("failure") is None
    assert clean.get("failures") == "0"


def test_junit_escapes_markup_from_the_file_name(tmp_path):
    import xml.etree.ElementTree as ET

    spec = tmp_path / 'a<b>&" tests="9.eff'
    spec.write_text(UNCLOSED)
    out = run("check", spec.name, "--format", "junit", cwd=tmp_path).stdout
    root = ET.fromstring(out)
    assert root.get("tests") == "1" and root.get("failures") == "1"
    suite = root.find("testsuite")
    assert suite.get("name") == 'a<b>&" tests="9.eff'
    assert suite[0].find("failure").get("type") == "EFF001"


# 7. `check -` and --stdin-filename

def run_stdin(data: bytes, *args, cwd=ROOT):
    return cli(*args, stdin=data, text=False, cwd=cwd)


def test_stdin_with_stdin_filename_is_the_file_checked_by_name():
    # example A reads `file "llm3b_64_steps.csv"` beside it: found from --stdin-filename's folder
    proc = run_stdin((ROOT / A).read_bytes(), "check", "-", "--stdin-filename", A, "--format", "json")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.decode() == run("check", A, "--format", "json").stdout


def test_stdin_without_a_name_and_bad_input():
    proc = run_stdin((ROOT / C).read_bytes(), "check", "-")
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines()[-1] == "-: 6 warnings"
    proc = run_stdin(b"\xff", "check", "-", "--format", "json")  # issue 26: EFF001 at 1:1, in the output
    assert proc.returncode == 1 and proc.stderr == b""
    [doc] = json.loads(proc.stdout)
    assert [(d["code"], d["message"], d["line"], d["column"]) for d in doc["diagnostics"]] == [
        ("EFF001", "not UTF-8 text: byte 0xff at line 1, column 1", 1, 1)]


# 6. --color

RED_BOLD = "\x1b[1;31m"


def test_color_always_never_and_the_palette():
    out = run("check", A, "--color", "always").stdout
    assert out.startswith(RED_BOLD + "error[EFF601]\x1b[0m: claim `mfu`")
    assert "\x1b[32mhelp\x1b[0m:" in out and "\x1b[36mnote\x1b[0m:" in out
    assert "\x1b[1;33mwarning[EFF405]\x1b[0m" in run("check", C, "--color", "always").stdout
    assert "\x1b" not in run("check", A, "--color", "never", env={"FORCE_COLOR": "1"}).stdout


def test_color_auto_follows_the_environment_and_never_colours_a_pipe():
    assert "\x1b" not in run("check", A).stdout  # a pipe
    assert run("check", A, env={"FORCE_COLOR": "1"}).stdout.startswith(RED_BOLD)
    assert "\x1b" not in run("check", A, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert run("check", A, "--color", "always", env={"NO_COLOR": "1"}).stdout.startswith(RED_BOLD)


def test_color_auto_on_a_terminal(tmp_path):
    import pty

    if not EFFSPEC.exists():
        pytest.skip("the console script is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm"
    main, secondary = pty.openpty()
    proc = subprocess.run([str(EFFSPEC), "check", A], stdout=secondary, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(secondary)
    data = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    os.close(main)
    assert proc.returncode == 1
    assert data.decode().startswith(RED_BOLD + "error[EFF601]")
    env["NO_COLOR"] = "1"
    main, secondary = pty.openpty()
    subprocess.run([str(EFFSPEC), "check", A], stdout=secondary, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(secondary)
    data = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    os.close(main)
    assert b"\x1b" not in data and b"error[EFF601]" in data


def test_no_escape_code_comes_from_the_spec(tmp_path):
    import re

    text = (ROOT / A).read_text().replace('from paper "Table 2"', 'from paper "Table 2\x1b[5m\x1b]0;x\x07"')
    (tmp_path / "a.eff").write_text(text)
    for name in ("llm3b_64_steps.csv",):
        (tmp_path / name).write_bytes((ROOT / "examples" / name).read_bytes())
    out = run("check", "a.eff", "--color", "always", cwd=tmp_path).stdout
    assert "a.eff:62:" in out and "62 |" in out  # the line with the escape codes is shown (an EFF001 error)
    ours = {"\x1b[0m", "\x1b[1;31m", "\x1b[1;33m", "\x1b[36m", "\x1b[32m", "\x1b[1;34m"}
    assert set(re.findall("\x1b\\[[0-9;]*m", out)) <= ours
    assert out.count("\x1b") == len(re.findall("\x1b\\[[0-9;]*m", out))
    assert "\x07" not in out


# 8. subcommand usage on subcommand errors

def test_subcommand_errors_show_the_subcommand_usage():
    proc = run("check")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: effspec check ")
    assert proc.stderr.rstrip().endswith("effspec check: error: the following arguments are required: FILE")
    proc = run("report", "x.eff")
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: effspec report ")
    assert "effspec report: error: the following arguments are required: -o/--output" in proc.stderr


def test_ignored_findings_stay_in_sarif_as_suppressed():
    doc = json.loads(run("check", A, "--ignore", "EFF6", "--format", "sarif").stdout)
    results = doc["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["EFF601", "EFF601"]
    assert [r["suppressions"] for r in results] == [[{"kind": "external", "status": "accepted",
                                                     "justification": "ignored by --ignore EFF6"}]] * 2


def test_a_prefix_that_matches_no_code_is_an_error():
    proc = run("check", C, "--select", "EFF5", "--extend-ignore", "EFF777")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "effspec: no code starts with EFF777 (`effspec explain --list` lists every code)\n"
