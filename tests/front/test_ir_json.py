"""The IR as an interchange format (spec/ir-json.md): `effspec export`, `effspec check FILE.eff.json`, effspec.api.

1. Round trip: every example, fixture and regression spec that compiles, exported and checked as JSON, gives the
   same findings (code, severity, message, help, label, notes, in order) and byte-identical figures as the `.eff`;
   a spec that does not compile exports nothing.
2. Each class of invalid document (not JSON, wrong type, unknown member, missing member, out-of-range value,
   oversize, too deep, too many items, a value its text does not compile to, a `file` outside the folder) is one
   coded diagnostic with its JSON pointer and its line:column in the JSON text, and never reaches the engine.
3. The schema: versioned `$id`, shipped in the package, and nothing in it goes unread (a schema-valid change of
   any member changes the check); tests/front/test_ir_schema.py checks the schema against the dataclasses.
4. The CLI (export, check, report, folders, --fix) and effspec.api.check_ir.
5. Fuzzing: any member of a document replaced by any JSON value, and any edit of its text, end in a check or in
   coded diagnostics (never EFF099, never an exception).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli
from fuzz_inputs import GRAMMAR, mutated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import effspec
from effspec import api
from effspec.front import ir, ir_json
from effspec.front.limits import Limits
from effspec.report.text import result_json

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "spec" / "eff-ir.schema.json"
POSITION = ("line", "column", "end_line", "end_column")


def corpus() -> list[Path]:
    files = sorted((ROOT / "examples").glob("*.eff"))
    files += sorted((ROOT / "tests" / "fixtures").rglob("*.eff"))
    files += sorted((ROOT / "tests" / "regressions").glob("*.eff"))
    return files


def _compiles(result) -> bool:
    return result.spec is not None and not any(d.severity == "error" and d.code < "EFF100" for d in result.diagnostics)


def outcome(result) -> dict:
    """What must be identical: findings without their positions (which are in different files), in order, and the
    figures byte for byte.  The configuration lines are left out: a JSON IR has no pragmas to apply or not."""
    doc = result_json(result)
    for key in ("file", "pragmas_off_by", "pragmas_not_applied"):
        doc.pop(key)
    for d in doc["diagnostics"]:
        for key in POSITION:
            d.pop(key)
    for s in doc["suppressed"]:
        for key in POSITION:
            s.get("diagnostic", s).pop(key, None)
    return doc


def check_json(text: str, folder: str | None = None, name: str = "run.eff.json"):
    return api.check_ir_text(text, name, folder)


# ----------------------------------------------------------------------------
# 1. Round trip


@pytest.mark.parametrize("path", corpus(), ids=lambda p: str(p.relative_to(ROOT)))
def test_round_trip_gives_the_same_findings_and_figures(path: Path) -> None:
    # Pragmas are comments, which the IR does not carry: the `.eff` is compared without them.
    spec = effspec.load(path, inline_config=False)
    if not _compiles(spec):
        with pytest.raises(ValueError, match="does not compile"):
            api.export_ir(spec)
        return
    text = api.export_ir(spec)
    checked = check_json(text, str(path.parent))
    assert json.dumps(outcome(checked), sort_keys=True) == json.dumps(outcome(spec), sort_keys=True)
    # the figures cite the original's lines: the IR checked is the original's, spans included
    assert ir.to_json(checked.spec) == ir.to_json(spec.spec)


def test_the_corpus_is_not_empty() -> None:
    files = corpus()
    compiling = [p for p in files if _compiles(effspec.load(p, inline_config=False))]
    assert len(files) > 100 and len(compiling) > 100


def test_findings_are_placed_on_the_json_member_that_carries_their_span() -> None:
    path = ROOT / "examples" / "example_b_vendor_claim.eff"
    text = api.export_ir(effspec.load(path))
    lines = text.split("\n")
    checked = check_json(text, str(path.parent))
    peak = next(d for d in checked.diagnostics if d.code == "EFF202")
    # the sparse peak 624 TFLOP/s, written `peak = 624 TFLOP/s`: the finding is on the entry's "value" member
    assert lines[peak.span.line - 1].strip() == '"value": 624000000000000.0,'
    assert lines[peak.span.line - 1][peak.span.column - 1:peak.span.end_column - 1] == "624000000000000.0"
    # ... and the message cites the same figures as for the .eff
    eff = next(d for d in effspec.load(path).diagnostics if d.code == "EFF202")
    assert (peak.message, peak.help, peak.notes) == (eff.message, eff.help, eff.notes)
    assert eff.span.line == 26 and peak.span.line != eff.span.line  # `peak = 624 TFLOP/s` in the .eff


# ----------------------------------------------------------------------------
# 2. Invalid documents


@pytest.fixture(scope="module")
def doc() -> dict:
    """The callback example's document (examples/callback/run.eff.json), as make_run.py writes it."""
    return json.loads((ROOT / "examples" / "callback" / "run.eff.json").read_text(encoding="utf-8"))


def _text(d: dict) -> str:
    return json.dumps(d, indent=2)


def _only(result, code: str):
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == [code], [(d.code, d.message) for d in errors]
    assert result.evaluation is None and result.spec is None  # never reached the engine
    return errors[0]


def _line_of(text: str, needle: str, after: str = "") -> int:
    """The 1-based line of the first line holding ``needle`` after the first line holding ``after``."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i, line in enumerate(lines) if i >= start and needle in line) + 1


def test_wrong_type(doc) -> None:
    d = copy.deepcopy(doc)
    d["runs"][0]["blocks"][0]["entries"][1]["value"] = "24"  # layers: an integer
    text = _text(d)
    diag = _only(check_json(text), "EFF003")
    assert diag.message == "`/runs/0/blocks/0/entries/1/value` must be of type integer, found a string \"24\""
    assert diag.span.line == _line_of(text, '"value": "24"')
    assert text.split("\n")[diag.span.line - 1][diag.span.column - 1:diag.span.end_column - 1] == '"24"'


def test_unknown_member(doc) -> None:
    d = copy.deepcopy(doc)
    d["runs"][0]["notes"] = "x"
    text = _text(d)
    diag = _only(check_json(text), "EFF002")
    assert diag.message == "unknown member `notes` in `/runs/0`"
    assert text.split("\n")[diag.span.line - 1][diag.span.column - 1:diag.span.end_column - 1] == '"notes"'


def test_missing_member(doc) -> None:
    d = copy.deepcopy(doc)
    del d["runs"][0]["blocks"][2]["entries"][0]["provenance"]
    text = _text(d)
    diag = _only(check_json(text), "EFF003")
    assert diag.message == "`/runs/0/blocks/2/entries/0` is missing `provenance`"
    assert diag.span.line == _line_of(text, "{", after='"name": "work"')  # the entry object's `{`
    assert diag.span.end_line > diag.span.line  # the whole object


@pytest.mark.parametrize("where, value, pointer", [
    (lambda d: d["runs"][0]["blocks"][4]["entries"][0]["value"]["samples"], -0.5, "/runs/0/blocks/4/entries/0/value/samples/3"),
    (lambda d: d["runs"][0]["span"], 0, "/runs/0/span/line"),
])
def test_out_of_range(doc, where, value, pointer) -> None:
    d = copy.deepcopy(doc)
    target = where(d)
    if isinstance(target, list):
        target[3] = value
    else:
        target["line"] = value
    text = _text(d)
    diag = _only(check_json(text), "EFF011")
    assert diag.message.startswith(f"`{pointer}` is out of range")
    positions = ir_json.Positions(text)
    ir_json.decode(text, positions)
    assert diag.span == positions.of(pointer)


def test_oversize(doc, monkeypatch, tmp_path) -> None:
    import effspec.front.limits as limits

    text = _text(doc)
    monkeypatch.setattr(limits, "LIMITS", Limits(max_spec_bytes=len(text.encode()) - 1))
    diag = _only(check_json(text), "EFF030")
    assert diag.message == f"the document is larger than {len(text.encode()) - 1:,} bytes" and diag.span.line == 1
    path = tmp_path / "big.eff.json"  # read from a file: refused before it is decoded
    path.write_text(text, encoding="utf-8")
    assert [d.code for d in api.load_ir(path).diagnostics] == ["EFF030"]


@pytest.mark.parametrize("depth", [ir_json.MAX_DEPTH + 1, 200_000])
def test_deep_nesting(depth) -> None:
    text = '{"runs": ' + "[" * depth + "]" * depth + "}"
    diag = _only(check_json(text), "EFF030")
    assert diag.message == f"the document nests more than {ir_json.MAX_DEPTH} levels deep"
    assert (diag.span.line, diag.span.column) == (1, 10 + ir_json.MAX_DEPTH - 1)  # the first bracket too deep


def test_too_many_items(doc, monkeypatch) -> None:
    monkeypatch.setattr(ir_json, "LIMITS", Limits(max_list_length=10))  # every object has fewer members
    text = _text(doc)  # 12 step times, one a line
    diag = _only(check_json(text), "EFF030")
    assert diag.message == "`/runs/0/blocks/4/entries/0/value/samples` has more than 10 items"
    assert diag.span.line == _line_of(text, "0.912") + 10  # where the eleventh item begins


def test_the_deepest_expression_a_spec_may_hold_fits_the_depth_limit(tmp_path) -> None:
    def spec(n: int) -> str:  # a claim of n terms: n - 1 nested additions
        return ("eff 1\nrun a { work { seq_len = 8 token/sequence  global_batch = 1 sequence }\n"
                f"  claim mfu = {' + '.join(['0.1 %'] * n)}\n}}\n")

    n = 2
    while _compiles(effspec.check_text(spec(n + 1), "deep.eff", str(tmp_path), isolated=True)):
        n += 1
    assert n > effspec.front.limits.LIMITS.max_expression_depth  # the builder's limit, reached
    result = effspec.check_text(spec(n), "deep.eff", str(tmp_path), isolated=True)
    checked = check_json(api.export_ir(result), str(tmp_path))
    assert outcome(checked) == outcome(result) and checked.evaluation is not None


@pytest.mark.parametrize("text, code, message, column", [
    ('{"a": [1, 2,, 3]}', "EFF001", "not JSON: expected a value, found `, 3]}`", 13),
    ('{"version": NaN}', "EFF001", "not JSON: expected a value, found `NaN}` (NaN and Infinity are not JSON)", 13),
    ('{"version": 1e400}', "EFF011", "`1e400` is beyond the range of a double", 13),
    ('{"version": 1, "version": 1}', "EFF003", "`/version` is given twice", 16),
    ('{"file": "\\ud800"}', "EFF001", "the string holds \\ud800, a lone surrogate, not a character", 10),
    ('{"version": 1} {}', "EFF001", "not JSON: more text after the document", 16),
    ("", "EFF001", "not JSON: expected a value, found the end of the file", 1),
])
def test_not_json(text, code, message, column) -> None:
    diag = _only(check_json(text), code)
    assert (diag.message, diag.span.line, diag.span.column) == (message, 1, column)


def test_value_that_its_text_does_not_compile_to(doc) -> None:
    d = copy.deepcopy(doc)
    d["runs"][0]["blocks"][2]["entries"][0]["value"] = 4096.0  # seq_len; its text says 2048 token/sequence
    text = _text(d)
    diag = _only(check_json(text), "EFF003")
    assert diag.message == "`/runs/0/blocks/2/entries/0/value` is 4096.0, but what its text compiles to has 2048.0"
    assert diag.span.line == _line_of(text, '"value": 4096.0')


def test_errors_of_the_language_are_placed_in_the_json(doc) -> None:
    d = copy.deepcopy(doc)
    d["runs"][0]["blocks"][0]["entries"][1]["key"] = "layer"  # not a key of `model`
    text = _text(d)
    result = check_json(text)
    codes = [x.code for x in result.diagnostics if x.severity == "error"]
    assert codes == ["EFF003", "EFF002"]  # `model` (its name first in the JSON) is missing `layers`; an unknown key
    assert result.diagnostics[0].message == "`model` is missing `layers`"
    unknown = result.diagnostics[1]
    assert unknown.message == "unknown key `layer` in `model`" and unknown.help == "did you mean `layers`?"
    assert text.split("\n")[unknown.span.line - 1].strip() == '"key": "layer",'


@pytest.mark.parametrize("name", ["../outside.csv", "/etc/passwd", "sub/../../outside.csv"])
def test_no_file_reference_outside_the_folder(tmp_path, name) -> None:
    inside = tmp_path / "inside"
    inside.mkdir()
    (tmp_path / "outside.csv").write_text("rank,node,step,compute,comm,stall\n0,n0,1,0.4,0.05,0\n", encoding="utf-8")
    spec = ('eff 1\nrun a { work { seq_len = 8 token/sequence  global_batch = 1 sequence }\n'
            '  ranks { samples = file "r.csv" } }\n')
    (inside / "r.csv").write_text("rank,node,step,compute,comm,stall\n0,n0,1,0.4,0.05,0\n", encoding="utf-8")
    text = api.export_ir(effspec.check_text(spec, "a.eff", str(inside), isolated=True))
    text = text.replace('"r.csv"', json.dumps(name)).replace('file \\"r.csv\\"', f"file {json.dumps(json.dumps(name))[1:-1]}")
    result = check_json(text, str(inside))
    diag = _only(result, "EFF020")
    assert name[:20] in diag.message
    assert '"text": "file' in text.split("\n")[diag.span.line - 1]


def test_a_line_break_no_eff_string_can_hold(doc) -> None:
    d = copy.deepcopy(doc)
    d["runs"][0]["title"] = "two\nlines"
    text = _text(d)
    diag = _only(check_json(text), "EFF003")
    assert diag.message == "`/runs/0/title` holds a line break" and diag.span.line == _line_of(text, '"title"')


def test_a_text_that_closes_its_block_is_not_taken_for_more_runs(doc) -> None:
    d = copy.deepcopy(doc)  # the text of `layers` tries to end the run and declare another
    d["runs"][0]["blocks"][0]["entries"][1]["text"] = "24 } } run evil { work { seq_len = 1 token/sequence  global_batch = 1 sequence"
    result = check_json(_text(d))
    assert result.has_errors and result.spec is None
    assert {x.code for x in result.diagnostics} == {"EFF002", "EFF003"}  # what the text did to the run, told


def test_no_pragma_hides_in_a_json_string(doc) -> None:
    d = copy.deepcopy(doc)
    d["runs"][0]["title"] = "# effspec: file-ignore[EFF601]"  # a pragma's words, in a string: no comment in JSON
    d["runs"][0]["claims"][0]["provenance"]["citation"] = "x\" # effspec: file-ignore[EFF601]"
    claim = d["runs"][0]["claims"][0]
    claim["expr"].update(value=45, text="45")
    claim["text"] = "45 %"
    result = check_json(_text(d), str(ROOT / "examples" / "callback"))
    assert [x.code for x in result.diagnostics if x.severity == "error"] == ["EFF601"]
    assert result.suppressed == [] and result.pragmas_not_applied == ()
    # a text is put into the generated `.eff` as it is: a comment there is refused, never applied
    claim["text"] = "45 % # effspec: file-ignore[EFF601]"
    result = check_json(_text(d), str(ROOT / "examples" / "callback"))
    diag = _only(result, "EFF003")
    assert diag.message == '`/runs/0/claims/0/text` is "45 % # effspec: file-ignore[EFF601]", but what its text compiles to has "45 %"'


def test_invalid_documents_never_reach_the_engine(doc, monkeypatch) -> None:
    import effspec.engine.evaluate as evaluate

    def boom(spec):
        raise AssertionError("the engine ran")

    monkeypatch.setattr(evaluate, "evaluate", boom)
    for mutate in (lambda d: d.__setitem__("version", 2), lambda d: d["runs"][0].pop("blocks"),
                   lambda d: d["runs"][0]["claims"][0]["expr"].__setitem__("node", "call"),
                   lambda d: d["runs"][0]["blocks"][1]["entries"][0].__setitem__("kind", "string")):
        d = copy.deepcopy(doc)
        mutate(d)
        result = check_json(_text(d))
        assert result.has_errors and result.spec is None


def test_an_unknown_expression_node_names_every_node(doc) -> None:
    d = copy.deepcopy(doc)
    d["runs"][0]["claims"][0]["expr"]["node"] = "call"
    diag = _only(check_json(_text(d)), "EFF003")
    assert diag.message == '`/runs/0/claims/0/expr/node` is "call", not one of the values allowed'
    assert diag.help == 'allowed: "number", "ref", "binop", "neg"'


# ----------------------------------------------------------------------------
# 3. The schema


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def test_schema_is_versioned_and_shipped(schema) -> None:
    assert schema["$id"] == ir_json.SCHEMA_ID == "https://effspec.invalid/spec/eff-ir/1/eff-ir.schema.json"
    assert schema["$defs"]["Spec"]["properties"]["version"] == {"const": 1, "description": schema["$defs"]["Spec"]
                                                                 ["properties"]["version"]["description"]}
    assert ir_json.schema() == schema  # the checker reads the file in the package (effspec.spec), this one
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert project["package-dir"]["effspec.spec"] == "spec" and "*.json" in project["package-data"]["effspec.spec"]
    # the package list is derived in setup.py, which maps each data folder (tests/house/test_packaging.py checks the list)
    assert '"effspec.spec": "spec"' in (ROOT / "setup.py").read_text(encoding="utf-8")


def test_export_names_the_schema_first_and_is_strict_json() -> None:
    text = api.export_ir(effspec.load(ROOT / "examples" / "example_a_measured.eff"))
    assert text.startswith('{\n  "$schema": "https://effspec.invalid/spec/eff-ir/1/eff-ir.schema.json",\n')
    assert ir_json.declares_ir(text)

    def refuse(constant):
        raise ValueError(constant)

    json.loads(text, parse_constant=refuse)  # no NaN, no Infinity


def _objects(doc: dict):
    """(def name, pointer, object) for every object of a document that a $defs entry describes."""
    stack = [("Spec", "", doc)]
    while stack:
        name, pointer, obj = stack.pop()
        yield name, pointer, obj
        children = {"Spec": {"runs": "Run", "scalings": "Scaling"}, "Run": {"blocks": "Block", "claims": "Claim"},
                    "Scaling": {"entries": "Entry", "claims": "Claim"}, "Block": {"entries": "Entry"}}.get(name, {})
        for key, child in children.items():
            stack += [(child, f"{pointer}/{key}/{i}", x) for i, x in enumerate(obj[key])]
        if name == "Entry":
            stack.append(("Provenance", f"{pointer}/provenance", obj["provenance"]))
            if obj["kind"] in ("samples", "file"):
                stack.append(("Samples" if obj["kind"] == "samples" else "FileRef", f"{pointer}/value", obj["value"]))
            if "plus_minus" in obj:
                stack.append(("PlusMinus", f"{pointer}/plus_minus", obj["plus_minus"]))
        if name == "Claim":
            stack.append(("Provenance", f"{pointer}/provenance", obj["provenance"]))
            stack.append(({"number": "Number", "ref": "Ref", "binop": "BinOp", "neg": "Neg"}[obj["expr"]["node"]],
                          f"{pointer}/expr", obj["expr"]))
        if name in ("Number", "Ref", "BinOp", "Neg"):
            for key in ("left", "right", "operand"):
                if key in obj:
                    stack.append(({"number": "Number", "ref": "Ref", "binop": "BinOp", "neg": "Neg"}[obj[key]["node"]],
                                  f"{pointer}/{key}", obj[key]))
        for key in ("span", "name_span", "value_span"):
            if key in obj:
                stack.append(("Span", f"{pointer}/{key}", obj[key]))


def _changed(value, spec, defs: dict):
    """A different value of the same member that the schema may still accept, or None when it admits only one."""
    import re

    if spec is True:  # Entry.value: its shape follows `kind`
        return value + 1 if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if "$ref" in spec:
        spec = defs[spec["$ref"].rsplit("/", 1)[1]]
    if "const" in spec:
        return None
    if "enum" in spec:
        return next(v for v in spec["enum"] if v != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return next((v for v in (value + "x", value + "0") if re.search(spec.get("pattern", ""), v)), None)
    if value is None:
        return "x"
    if isinstance(value, list):  # one item fewer, or one more (a copy of the first)
        return value[:-1] if len(value) > 1 else value + value[:1] if value else None
    return None


def _everything(result) -> str:
    return json.dumps([result_json(result), ir.to_json(result.spec) if result.spec else None], sort_keys=True)


@pytest.fixture(scope="module")
def coverage(tmp_path_factory):
    """The coverage spec of tests/front/test_ir_schema.py (every IR node), with a scaling claim, exported, and its folder."""
    from test_ir_schema import COVERAGE_SPEC

    folder = tmp_path_factory.mktemp("coverage")
    (folder / "steps.csv").write_text("step,step_ms\n1,900\n2,510\n3,505\n", encoding="utf-8")
    (folder / "ranks.csv").write_text("rank,node,step,compute,comm,stall\n0,n0,1,0.4,0.05,0\n1,n0,1,0.4,0.05,0\n",
                                      encoding="utf-8")
    scaling = "scaling s { kind = strong  baseline = base  runs = [scaled] }"
    assert scaling in COVERAGE_SPEC
    text = COVERAGE_SPEC.replace(scaling, scaling[:-1] + " claim speedup[scaled] = 1.8 from paper \"Table 2\" }")
    result = effspec.check_text(text, "coverage.eff", str(folder), isolated=True)
    assert _compiles(result)
    return json.loads(api.export_ir(result)), str(folder)


def test_nothing_in_the_schema_goes_unread(coverage, schema) -> None:
    """For every member of every $defs entry: a change the schema accepts changes what the check gives (a finding,
    a figure, or the IR the engine is handed), so no member is validated and then ignored."""
    doc, folder = coverage
    defs = schema["$defs"]
    baseline = _everything(check_json(json.dumps(doc), folder))
    tried: set[tuple[str, str]] = set()
    objects: set[tuple[str, str]] = set()  # members holding an object: their own members are tried
    for name, pointer, obj in list(_objects(doc)):
        for member, spec in defs[name]["properties"].items():
            if isinstance(obj.get(member), dict):
                objects.add((name, member))
            if (name, member) in tried or member == "$schema" or member not in obj:
                continue
            new = _changed(obj[member], spec, defs)
            if new is None:
                continue
            mutated = copy.deepcopy(doc)
            target = next(o for n, p, o in _objects(mutated) if n == name and p == pointer)
            target[member] = new
            if ir_json.validate(mutated, ir_json.Positions("")):
                continue  # another instance may take this change
            tried.add((name, member))
            assert _everything(check_json(json.dumps(mutated), folder)) != baseline, f"{name}.{member} is not read"
    every = {(n, m) for n, d in defs.items() if "properties" in d for m in d["properties"] if m != "$schema"}
    consts = {(n, m) for n, d in defs.items() if "properties" in d for m, s in d["properties"].items() if isinstance(s, dict) and "const" in s}
    assert every - consts - objects - tried == set()


def test_the_one_field_the_schema_leaves_out_is_derived_inside_the_folder(coverage) -> None:
    # FileRef.path, the resolved path (machine-dependent, so not in the JSON): the check resolves `file` again
    doc, folder = coverage
    result = check_json(json.dumps(doc), folder)
    (ranks,) = [e for r in result.spec.runs for b in r.blocks for e in b.entries if e.kind == "file"]
    assert ranks.value.file == "ranks.csv" and ranks.value.path == os.path.join(os.path.realpath(folder), "ranks.csv")


def test_schema_member_is_read_as_the_document_kind(tmp_path, doc) -> None:
    # a `.json` file is IR when its first member is `$schema` naming the schema; else it is `.eff` text
    named = tmp_path / "run.json"
    named.write_text(_text(doc), encoding="utf-8")
    assert api.load_ir(named).evaluation is not None
    d = {k: v for k, v in doc.items() if k != "$schema"}
    named.write_text(_text(d), encoding="utf-8")
    assert [x.code for x in api.load_ir(named).diagnostics][:1] == ["EFF001"]  # checked as `.eff` text
    ir_named = tmp_path / "run.eff.json"
    ir_named.write_text(_text(d), encoding="utf-8")
    assert api.load_ir(ir_named).evaluation is not None  # `.eff.json` is IR with or without `$schema`


# ----------------------------------------------------------------------------
# 4. The CLI and the API


def test_export_check_and_report_from_the_command_line(tmp_path) -> None:
    for name in ("straggler_ranks.eff", "straggler_ranks.csv", "straggler_steps.csv"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    (tmp_path / "out.eff.json").write_text("old", encoding="utf-8")
    done = cli("export", "straggler_ranks.eff", "-o", "out.eff.json", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "wrote out.eff.json\n"
    assert sorted(os.listdir(tmp_path)) == ["out.eff.json", "straggler_ranks.csv", "straggler_ranks.eff", "straggler_steps.csv"]
    eff = json.loads(cli("check", "--format", "json", "straggler_ranks.eff", cwd=tmp_path).stdout)
    both = cli("check", "--format", "json", ".", cwd=tmp_path)  # the folder form takes .eff and .eff.json
    files = json.loads(both.stdout)
    assert [f["file"] for f in files] == ["./out.eff.json", "./straggler_ranks.eff"]
    assert files[0]["runs"] == eff[0]["runs"]
    assert files[0]["runs"]["llama7b_64"]["metrics"]["mfu"]["value"] == pytest.approx(0.368, abs=5e-4)
    report = cli("report", "out.eff.json", "-o", "r.md", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "36.8" in (tmp_path / "r.md").read_text(encoding="utf-8")


def test_export_of_a_spec_that_does_not_compile_writes_nothing(tmp_path) -> None:
    (tmp_path / "bad.eff").write_text("eff 1\nrun a { work { seq_len = 8 }\n", encoding="utf-8")
    (tmp_path / "bad.eff.json").write_text("old", encoding="utf-8")
    done = cli("export", "bad.eff", cwd=tmp_path)
    assert done.returncode == 1 and "bad.eff.json was not written" in done.stderr
    assert (tmp_path / "bad.eff.json").read_text(encoding="utf-8") == "old"
    assert sorted(os.listdir(tmp_path)) == ["bad.eff", "bad.eff.json"]


def test_fix_leaves_a_json_ir_alone(tmp_path, doc, monkeypatch, capsys) -> None:
    import effspec.cli.fix as fix
    from effspec.cli import main

    d = copy.deepcopy(doc)
    d["runs"][0]["blocks"][0]["entries"][1]["key"] = "layer"  # an unknown key, with a `did you mean` fix in a `.eff`
    path = tmp_path / "run.eff.json"
    path.write_text(_text(d), encoding="utf-8")
    read = []
    monkeypatch.setattr(fix, "read_as_checked", lambda p, *a: read.append(p))  # what --fix would edit
    assert main(["check", "--fix", "--unsafe-fixes", "--no-cache", str(path)]) == 1
    assert read == [] and path.read_text(encoding="utf-8") == _text(d)
    assert "unknown key `layer`" in capsys.readouterr().out


def test_a_wheel_ships_the_schema_and_checks_a_json_ir(tmp_path, effspec_wheel) -> None:
    """A non-editable install finds the schema in the package (effspec.spec) and checks the callback example.

    The wheel is built once per session (conftest: effspec_wheel)."""
    import zipfile

    zipfile.ZipFile(effspec_wheel).extractall(tmp_path / "site")
    assert (tmp_path / "site" / "effspec" / "spec" / "eff-ir.schema.json").read_bytes() == SCHEMA_PATH.read_bytes()
    proc = subprocess.run([sys.executable, "-c", "import effspec.api, sys; print(effspec.api.__file__); "
                           "r = effspec.api.load_ir(sys.argv[1]); print(len(r.diagnostics), "
                           "r.evaluation.runs['callback_run'].metrics['mfu'].value)",
                           str(ROOT / "examples" / "callback" / "run.eff.json")],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(tmp_path / "site")), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    installed_at, findings, mfu = proc.stdout.split()
    assert str(tmp_path / "site") in installed_at and findings == "0"
    assert float(mfu) == pytest.approx(0.1711, abs=5e-5)


def test_callback_example_is_what_make_run_writes_and_checks_clean(tmp_path) -> None:
    shutil.copy(ROOT / "examples" / "callback" / "make_run.py", tmp_path / "make_run.py")
    subprocess.run([sys.executable, "make_run.py"], cwd=tmp_path, check=True, timeout=60)
    shipped = (ROOT / "examples" / "callback" / "run.eff.json").read_text(encoding="utf-8")
    assert (tmp_path / "run.eff.json").read_text(encoding="utf-8") == shipped
    result = api.load_ir(ROOT / "examples" / "callback" / "run.eff.json")
    assert result.diagnostics == []
    run = result.evaluation.runs["callback_run"]
    # 9 GFLOP/token (palm, from the shape) x 131,072 tokens / (0.871 s median x 8 x 989.4 TFLOP/s) = 17.11 %
    assert run.metrics["mfu"].value == pytest.approx(0.1711, abs=5e-5)
    assert run.metrics["valid_tokens_per_second"].value == pytest.approx(131072 / 0.871, rel=1e-9)


def test_check_ir_takes_a_dict(doc) -> None:
    result = api.check_ir(doc, "callback", str(ROOT / "examples" / "callback"))
    same = api.check_ir_text(json.dumps(doc, indent=2), "callback", str(ROOT / "examples" / "callback"))
    assert outcome(result) == outcome(same) and result.source == json.dumps(doc, indent=2)


@pytest.mark.parametrize("value, code, message", [
    (float("nan"), "EFF011", "`/runs/0/blocks/0/entries/1/value` is a non-finite number (nan), which JSON cannot hold"),
    ((1, 2), "EFF003", "`/runs/0/blocks/0/entries/1/value` is a tuple, which JSON cannot hold"),
])
def test_check_ir_refuses_what_json_cannot_hold(doc, value, code, message) -> None:
    d = copy.deepcopy(doc)
    d["runs"][0]["blocks"][0]["entries"][1]["value"] = value
    result = api.check_ir(d)
    assert [(x.code, x.message) for x in result.diagnostics] == [(code, message)] and result.spec is None


def test_check_ir_refuses_a_deep_dict_without_recursing() -> None:
    deep: dict = {}
    node = deep
    for _ in range(100_000):
        node["x"] = {}
        node = node["x"]
    result = api.check_ir(deep)
    assert [x.code for x in result.diagnostics] == ["EFF030"]


def test_api_lists_what_it_offers() -> None:
    assert sorted(api.__all__) == dir(api) == ["Result", "check_ir", "check_ir_text", "export_ir", "load_ir"]


# ----------------------------------------------------------------------------
# 5. Any document ends in a check or coded diagnostics

JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
                           | st.text(max_size=20), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                           max_leaves=6)
CALLBACK = json.loads((ROOT / "examples" / "callback" / "run.eff.json").read_text(encoding="utf-8"))


def _leaves(doc, pointer=""):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, f"{pointer}/{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _leaves(v, f"{pointer}/{i}")
    yield pointer


LEAVES = list(_leaves(CALLBACK))


def _ends_well(result) -> None:
    from effspec.rules import code_table

    assert {d.code for d in result.diagnostics} <= set(code_table()) - {"EFF099"}
    if result.spec is None:
        assert result.evaluation is None and result.has_errors


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LEAVES), JSON_VALUES)
def test_any_member_replaced_by_any_value(pointer, value) -> None:
    d = copy.deepcopy(CALLBACK)
    if not pointer:
        d = value
    else:
        *path, last = pointer.split("/")[1:]
        target = d
        for part in path:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[int(last) if isinstance(target, list) else last] = value
    _ends_well(api.check_ir(d, "fuzz", str(ROOT / "examples" / "callback")))


def test_a_whole_number_written_as_a_float_in_a_span() -> None:
    """JSON Schema's "integer" admits 1.0 (the fuzz above found a span column of 1.0 raising TypeError in the
    writer): the document is the same as with 1, text, spans and figures."""
    d = copy.deepcopy(CALLBACK)
    for span in (d["runs"][0]["span"], d["runs"][0]["blocks"][0]["span"]):
        span["line"], span["column"] = float(span["line"]), float(span["column"])
        span["end_line"], span["end_column"] = float(span["end_line"]), float(span["end_column"])
    as_float, as_int = api.check_ir(d, "f", str(ROOT / "examples" / "callback")), \
        api.check_ir(CALLBACK, "f", str(ROOT / "examples" / "callback"))
    _ends_well(as_float)
    assert [(x.code, x.span) for x in as_float.diagnostics] == [(x.code, x.span) for x in as_int.diagnostics]
    assert as_float.evaluation.runs.keys() == as_int.evaluation.runs.keys()
    for rid, run in as_int.evaluation.runs.items():
        assert {k: m.value for k, m in as_float.evaluation.runs[rid].metrics.items()} == \
            {k: m.value for k, m in run.metrics.items()}


def test_a_span_beyond_any_spec_is_refused_not_padded() -> None:
    """A line of 10**12 would make the writer pad a trillion lines: the schema bounds every span member by a spec's
    byte limit (10 MiB), so the document is refused with a coded diagnostic before anything is written."""
    d = copy.deepcopy(CALLBACK)
    d["runs"][0]["blocks"][0]["span"]["line"] = 10**12
    result = api.check_ir(d, "f", str(ROOT / "examples" / "callback"))
    _ends_well(result)
    assert result.spec is None and result.has_errors
    assert any("10485760" in d.message or "maximum" in d.message for d in result.diagnostics), result.diagnostics


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_text_edit(data) -> None:
    text = json.dumps(CALLBACK, indent=1)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 40)))
    insert = data.draw(st.text(alphabet='{}[]",:0123456789.eE-+ \n\\untrlfasx', max_size=8))
    _ends_well(check_json(text[:start] + insert + text[end:], str(ROOT / "examples" / "callback")))


# ----------------------------------------------------------------------------
# 6. The fuzz cases round-trip too: whatever the grammar generator and the mutator make that compiles


def _round_trips(text: str, folder: str) -> None:
    spec = effspec.check_text(text, "fuzz.eff", folder, inline_config=False)
    if not _compiles(spec):
        return
    checked = check_json(api.export_ir(spec), folder)
    assert json.dumps(outcome(checked), sort_keys=True) == json.dumps(outcome(spec), sort_keys=True)
    assert ir.to_json(checked.spec) == ir.to_json(spec.spec)


@settings(max_examples=150, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(data=st.data())
def test_fuzz_cases_round_trip(data) -> None:
    strategy = mutated() if data.draw(st.booleans(), label="mutated") else GRAMMAR
    _round_trips(data.draw(strategy, label="program"), str(ROOT / "examples"))
