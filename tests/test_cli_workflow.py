"""Workflow fit (issue 15), through the installed console script `.venv/bin/effspec`.

- `check --format json` is always an array of file objects;
- `report` takes several inputs and several outputs, sharing one evaluation,
  and creates the output's folder;
- configuration errors and bad pragmas are diagnostics with file:line:column;
- the code-scanning workflow and its SARIF;
- the PDF's one-line notice without libharfbuzz-subset.

Expected findings are read off the example specs by hand:

- example C (examples/example_c_scaling.eff) has six warnings: two runs with
  no timing `boundary` (2 x EFF504), 5 and 6 step samples (2 x EFF502), a
  0.97 s step above 1.5 x the 0.605 s median (EFF503), and a 10 % bubble with
  no `parallelism.pp` (EFF405);
- example A's two claims (lines 61 and 62) disagree with the reconstruction:
  two EFF601 errors.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EFFSPEC = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "effspec"
A = "examples/example_a_measured.eff"
C = "examples/example_c_scaling.eff"
C_CODES = ["EFF405", "EFF502", "EFF502", "EFF503", "EFF504", "EFF504"]


def run(*args, cwd=ROOT, env=None, stdin=None):
    if not EFFSPEC.exists():
        pytest.skip("the console script is not installed (pip install -e .)")
    return subprocess.run([str(EFFSPEC), *args], capture_output=True, text=True, cwd=cwd, input=stdin,
                          env={**os.environ, **(env or {})}, timeout=600)


# ---------------------------------------------------------------------------- 1. JSON is an array of file objects

@pytest.mark.parametrize("flag", ["--format", "--output-format"])
def test_json_is_an_array_even_for_one_file(flag):
    done = run("check", C, flag, "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert isinstance(doc, list) and len(doc) == 1
    assert doc[0]["file"] == C
    assert sorted(d["code"] for d in doc[0]["diagnostics"]) == C_CODES


def test_json_from_stdin_and_from_a_folder_of_one_are_arrays(tmp_path):
    text = (ROOT / C).read_text(encoding="utf-8")
    piped = json.loads(run("check", "-", "--stdin-filename", C, "--format", "json", stdin=text).stdout)
    assert [d["file"] for d in piped] == [C]
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "a.eff").write_text("eff 1\nrun a { work { seq_len = 2048 token/sequence  global_batch = 8 sequence } }\n")
    doc = json.loads(run("check", str(folder), "--format", "json").stdout)
    assert [d["file"] for d in doc] == [str(folder / "a.eff")]


def test_show_settings_json_is_an_array_of_file_objects():
    doc = json.loads(run("check", "--show-settings", "--isolated", "--format", "json", C).stdout)
    assert [(d["file"], d["ignore"], d["inline_config"]) for d in doc] == [(C, [], False)]
