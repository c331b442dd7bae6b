"""The JSON form of the IR against spec/eff-ir.schema.json.

Three things are checked:

1. the IR JSON of every example and every fixture spec that compiles is valid
   under the schema (Draft 2020-12, closed objects);
2. drift: each dataclass of ``effspec.front.ir`` has a ``$defs`` entry whose
   ``properties`` are exactly its fields (plus ``node`` on expression nodes),
   the JSON that ``to_json`` really emits has exactly those keys, and every
   ``$defs`` entry belongs to a dataclass (or to one of the two documented
   non-dataclass entries, themselves checked against the code);
3. the schema rejects what it should: an extra property, a missing one, a
   wrongly typed value.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import typing
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import effspec
from effspec.front import ir, keys

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "spec" / "eff-ir.schema.json"
GRAMMAR_PATH = ROOT / "grammar" / "eff.lark"

# Dataclass fields the JSON writes under another name, or leaves out.  Each
# entry is also checked against the emitted JSON below, so it cannot go stale.
RENAMED = {"Samples": {"values": "samples"}}
# FileRef.path: the resolved absolute path, machine-dependent.  Samples.lines: where each sample
# was read (for EFF505's message), not part of the IR: an IR file's samples have no lines.
OMITTED = {"FileRef": {"path"}, "Samples": {"lines"}}
EXPRESSION_NODES = {"Number": "number", "Ref": "ref", "BinOp": "binop", "Neg": "neg"}
NON_DATACLASS_DEFS = {"Expr", "Identifier"}
# Optional members of the JSON document that are no dataclass field: `$schema`, which `effspec export`
# writes first and ir.to_json does not (tests/front/test_ir_json.py checks that it is read).
DOCUMENT_ONLY = {"Spec": {"$schema"}}
# Fields to_json leaves out at their empty default (`blocks`), or writes only where the spec writes them (an
# explicit `±`): optional in the schema, so that a document from before them reads the same.
OPTIONAL = {"Block": {"blocks"}, "Entry": {"plus_minus"}}


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def validator(schema) -> Draft202012Validator:
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def ir_dataclasses() -> dict[str, type]:
    """Every dataclass reachable as an attribute of effspec.front.ir (Span included)."""
    return {name: obj for name, obj in vars(ir).items()
            if isinstance(obj, type) and dataclasses.is_dataclass(obj)}


def spec_files() -> list[Path]:
    files = sorted((ROOT / "examples").glob("*.eff"))
    files += sorted((ROOT / "tests" / "fixtures").rglob("*.eff"))
    return files


# A spec that exercises every IR node and every kind of entry value, so the
# drift check sees each dataclass as to_json really writes it.
COVERAGE_SPEC = """eff 1

run base {
  title  = "coverage: every IR node"
  source = "tests/front/test_ir_schema.py"
  model { kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000
          tied_embeddings = true }
  convention { preset = palm  recompute = excluded }
  work { seq_len = 128 token/sequence  global_batch = 8 sequence }
  parallelism { dp = 2  micro_batch = 4 sequence  recompute = none }
  hardware { accelerator = "A100-SXM4-40GB"  count = 2 device  dtype = bf16  peak = catalog }
  timing { step_time = file "steps.csv" column "step_ms" ms  warmup = 1 step  boundary = "optimizer step end" }
  ranks { samples = file "ranks.csv" }
  claim mfu = 100 % - -(2 * breakdown.model_compute) / 4 from estimate "every expression node"
}

run scaled {
  model { kind = dense_transformer  layers = 2  d_model = 64  heads = 4  ffn = gelu  d_ff = 256  vocab = 1000 }
  convention { preset = palm }
  work { seq_len = 128 token/sequence  global_batch = 8 sequence }
  hardware { accelerator = "A100-SXM4-40GB"  count = 4 device  dtype = bf16  peak = 312 TFLOP/s from datasheet "A100" }
  timing { step_time = [0.5, 0.5, 0.6] s ± 0.01 s  warmup = 0 step }
  claim speedup = run.base.step_time / step_time
}

run hybrid {
  model { kind = hybrid  layers = 4  d_model = 64  heads = 4  ffn = relu  d_ff = 256  vocab = 1000
          pattern = "M-*-"  mamba2 { state_size = 16  head_dim = 16 } }
  work { seq_len = 128 token/sequence  global_batch = 8 sequence }
  hardware { accelerator = "A100-SXM4-40GB"  count = 2 device  dtype = bf16  peak = catalog }
  timing { step_time = 0.5 s }
}

scaling s { kind = strong  baseline = base  runs = [scaled] }
"""


@pytest.fixture(scope="module")
def coverage_json(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("coverage")
    (folder / "steps.csv").write_text("step,step_ms\n1,900\n2,510\n3,505\n", encoding="utf-8")
    (folder / "ranks.csv").write_text("rank,node,step,compute,comm,stall\n0,n0,1,0.4,0.05,0\n1,n0,1,0.4,0.05,0\n",
                                      encoding="utf-8")
    result = effspec.check_text(COVERAGE_SPEC, file="coverage.eff", folder=str(folder))
    front = [d for d in result.diagnostics if d.code < "EFF100"]
    assert not front, front
    assert result.spec is not None
    return ir.to_json(result.spec)


# ----------------------------------------------------------------------------
# 1. Every compiling spec validates


@pytest.mark.parametrize("path", spec_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_spec_ir_validates(path: Path, validator) -> None:
    result = effspec.load(path)
    if result.spec is None:
        pytest.skip(f"{path.name} does not compile (it is a failing fixture)")
    doc = ir.to_json(result.spec)
    # Round-trip through JSON text: the schema describes what a consumer reads.
    doc = json.loads(json.dumps(doc, allow_nan=False))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def test_examples_exist() -> None:
    # Guards the parametrization above against silently checking nothing.
    assert len(list((ROOT / "examples").glob("*.eff"))) >= 5


def test_coverage_spec_validates(coverage_json, validator) -> None:
    errors = list(validator.iter_errors(json.loads(json.dumps(coverage_json))))
    assert not errors, [e.message for e in errors[:5]]


# ----------------------------------------------------------------------------
# 2. Drift between the dataclasses and the schema


def _emitted_keys(doc) -> dict[str, set[str]]:
    """Class name -> the JSON keys to_json emitted for it, found by walking the IR JSON."""
    seen: dict[str, set[str]] = {}

    def note(name: str, obj: dict) -> None:
        seen.setdefault(name, set()).update(obj)

    def walk_expr(e: dict) -> None:
        name = {v: k for k, v in EXPRESSION_NODES.items()}[e["node"]]
        note(name, e)
        note("Span", e["span"])
        for child in ("left", "right", "operand"):
            if child in e:
                walk_expr(e[child])

    def walk_entry(e: dict) -> None:
        note("Entry", e)
        note("Provenance", e["provenance"])
        if e["kind"] == "samples":
            note("Samples", e["value"])
        if e["kind"] == "file":
            note("FileRef", e["value"])
        if "plus_minus" in e:
            note("PlusMinus", e["plus_minus"])

    note("Spec", doc)
    for run in doc["runs"]:
        note("Run", run)
        blocks = list(run["blocks"])
        while blocks:  # `model` holds blocks of its own (a hybrid stack's mixers)
            block = blocks.pop()
            note("Block", block)
            blocks += block.get("blocks", [])
            for e in block["entries"]:
                walk_entry(e)
        for claim in run["claims"]:
            note("Claim", claim)
            note("Provenance", claim["provenance"])
            walk_expr(claim["expr"])
    for s in doc["scalings"]:
        note("Scaling", s)
        for e in s["entries"]:
            walk_entry(e)
    return seen


def expected_properties(cls: type) -> set[str]:
    names = {f.name for f in dataclasses.fields(cls)}
    names -= OMITTED.get(cls.__name__, set())
    names = {RENAMED.get(cls.__name__, {}).get(n, n) for n in names}
    if cls.__name__ in EXPRESSION_NODES:
        names.add("node")
    return names


@pytest.mark.parametrize("name", sorted(ir_dataclasses()))
def test_dataclass_fields_match_schema(name: str, schema) -> None:
    cls = ir_dataclasses()[name]
    definition = schema["$defs"].get(name)
    assert definition is not None, f"effspec.front.ir.{name} has no $defs entry in {SCHEMA_PATH.name}"
    assert definition.get("additionalProperties") is False, f"$defs.{name} must be closed"
    props = set(definition["properties"]) - DOCUMENT_ONLY.get(name, set())
    assert props == expected_properties(cls), (
        f"$defs.{name}: schema has {sorted(props - expected_properties(cls))} extra, "
        f"misses {sorted(expected_properties(cls) - props)}")
    # to_json writes every field (but the OPTIONAL ones, at their empty default), so every other property is required.
    assert set(definition["required"]) == props - OPTIONAL.get(name, set())


@pytest.mark.parametrize("name", sorted(ir_dataclasses()))
def test_emitted_json_matches_schema(name: str, schema, coverage_json) -> None:
    emitted = _emitted_keys(coverage_json)
    assert name in emitted, f"the coverage spec never produces a {name}: extend COVERAGE_SPEC"
    assert emitted[name] == set(schema["$defs"][name]["properties"]) - DOCUMENT_ONLY.get(name, set())


def test_every_def_belongs_to_the_code(schema) -> None:
    extra = set(schema["$defs"]) - set(ir_dataclasses()) - NON_DATACLASS_DEFS
    assert not extra, f"$defs without a dataclass in effspec.front.ir: {sorted(extra)}"


def test_expr_def_is_the_expr_union(schema) -> None:
    members = {t.__name__ for t in typing.get_args(ir.Expr)}
    refs = {item["$ref"].rsplit("/", 1)[1] for item in schema["$defs"]["Expr"]["oneOf"]}
    assert refs == members == set(EXPRESSION_NODES)
    # the `node` tags are the ones to_json writes
    for cls_name, tag in EXPRESSION_NODES.items():
        assert ir._EXPR_NODES[getattr(ir, cls_name)] == tag
        assert schema["$defs"][cls_name]["properties"]["node"] == {"const": tag}


def test_identifier_and_number_follow_the_grammar(schema) -> None:
    grammar = GRAMMAR_PATH.read_text(encoding="utf-8")
    name = re.search(r"^NAME: /(.+)/$", grammar, re.M).group(1)
    assert schema["$defs"]["Identifier"]["pattern"] == f"^{name}$"
    number = re.search(r"^NUMBER: /(.+)/ \| /(.+)/$", grammar, re.M).groups()
    assert schema["$defs"]["Number"]["properties"]["text"]["pattern"] == "|".join(f"^{n}$" for n in number)


def test_enums_follow_the_vocabulary(schema) -> None:
    d = schema["$defs"]
    assert set(d["Block"]["properties"]["name"]["enum"]) == set(keys.RUN_BLOCKS) | set(keys.MODEL_BLOCKS)
    kinds = {k.kind for block in keys.BLOCKS.values() for k in block.values()}
    assert set(d["Entry"]["properties"]["kind"]["enum"]) == kinds
    written = set(keys.PROVENANCE_KINDS) | {"declared", "catalog", "derived"}
    assert set(d["Provenance"]["properties"]["kind"]["enum"]) == written
    assert set(d["Scaling"]["properties"]["kind"]["enum"]) - {None} == set(keys.BLOCKS["scaling"]["kind"].choices)


def test_renames_and_omissions_are_real(coverage_json) -> None:
    # If ir.py starts writing `values` or `path`, the tables above must go.
    emitted = _emitted_keys(coverage_json)
    for cls, renames in RENAMED.items():
        for field_name, json_name in renames.items():
            assert field_name not in emitted[cls] and json_name in emitted[cls]
    for cls, fields in OMITTED.items():
        assert not fields & emitted[cls]


# ----------------------------------------------------------------------------
# 3. The schema rejects what it should


def _first_entry(doc: dict, key: str) -> dict:
    return next(e for r in doc["runs"] for b in r["blocks"] for e in b["entries"] if e["key"] == key)


def _errors(validator, doc) -> list[tuple[str, str, str]]:
    """(validator keyword, JSON path, message) of every error, in the validator's order."""
    return [(e.validator, "/".join(map(str, e.absolute_path)), e.message) for e in validator.iter_errors(doc)]


def _one_of_reasons(validator, doc) -> set[str]:
    """The one error's reasons when it is a `oneOf` (no branch fits): each branch's own messages."""
    (error,) = validator.iter_errors(doc)
    assert error.validator == "oneOf"
    return {c.message for c in error.context}


# The coverage spec's IR: runs/0/blocks/0 is `model` (entries: kind, layers, …), blocks/4 `hardware` (entry 3 is
# `peak`), blocks/5 `timing` (entry 0 `step_time`, a list of samples), blocks/6 `ranks` (entry 0 `samples`, a file).
@pytest.mark.parametrize("mutate, where, path, name", [
    (lambda d: d.__setitem__("extra", 1), "Spec", "", "extra"),
    (lambda d: d["runs"][0].__setitem__("notes", "x"), "Run", "runs/0", "notes"),
    (lambda d: d["runs"][0]["blocks"][0]["entries"][0]["span"].__setitem__("offset", 3), "Span",
     "runs/0/blocks/0/entries/0/span", "offset"),
    (lambda d: _first_entry(d, "step_time")["value"].__setitem__("values", []), "Samples",
     "runs/0/blocks/5/entries/0/value", "values"),
    (lambda d: _first_entry(d, "samples")["value"].__setitem__("path", "/abs"), "FileRef",
     "runs/0/blocks/6/entries/0/value", "path"),
])
def test_extra_property_is_rejected(mutate, where, path, name, coverage_json, validator) -> None:
    doc = copy.deepcopy(coverage_json)
    mutate(doc)
    assert _errors(validator, doc) == [("additionalProperties", path, f"Additional properties are not allowed "
                                        f"('{name}' was unexpected)")], f"an extra property in {where}"


def test_extra_property_in_an_expression_is_rejected(coverage_json, validator) -> None:
    # An expression is oneOf its node kinds: the binop branch names the extra property.
    doc = copy.deepcopy(coverage_json)
    doc["runs"][0]["claims"][0]["expr"]["precision"] = 0.5
    assert [(v, p) for v, p, _ in _errors(validator, doc)] == [("oneOf", "runs/0/claims/0/expr")]
    assert "Additional properties are not allowed ('precision' was unexpected)" in _one_of_reasons(validator, doc)


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["runs"][0].pop("claims"), ("required", "runs/0", "'claims' is a required property")),
    (lambda d: d.__setitem__("version", 2), ("const", "version", "1 was expected")),              # only eff 1 exists
    (lambda d: _first_entry(d, "layers").__setitem__("value", 2.5),                              # integer key
     ("type", "runs/0/blocks/0/entries/1/value", "2.5 is not of type 'integer'")),
    (lambda d: d["runs"][0]["blocks"][0]["entries"][0]["provenance"].__setitem__("kind", "rumour"),
     ("enum", "runs/0/blocks/0/entries/0/provenance/kind", None)),
    (lambda d: d["runs"][0]["blocks"][0].__setitem__("name", "models"), ("enum", "runs/0/blocks/0/name", None)),
])
def test_invalid_ir_is_rejected(mutate, expected, coverage_json, validator) -> None:
    doc = copy.deepcopy(coverage_json)
    mutate(doc)
    (found,) = _errors(validator, doc)
    keyword, path, message = expected
    assert found[:2] == (keyword, path)
    if message is not None:
        assert found[2] == message
    else:  # an enum: the value written, refused by name
        assert found[2].startswith(f"{_at(doc, path)!r} is not one of [")


def _at(doc, path: str):
    for part in path.split("/"):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def test_invalid_ir_values_of_a_union_are_rejected(coverage_json, validator) -> None:
    # peak: a number or "catalog"; an expression node: one of the known kinds.
    doc = copy.deepcopy(coverage_json)
    _first_entry(doc, "peak")["value"] = "sparse"
    assert [(v, p) for v, p, _ in _errors(validator, doc)] == [("oneOf", "runs/0/blocks/4/entries/3/value")]
    assert _one_of_reasons(validator, doc) == {"'catalog' was expected", "'sparse' is not of type 'number'"}
    doc = copy.deepcopy(coverage_json)
    doc["runs"][0]["claims"][0]["expr"]["node"] = "call"
    assert [(v, p) for v, p, _ in _errors(validator, doc)] == [("oneOf", "runs/0/claims/0/expr")]
    assert {"'binop' was expected", "'neg' was expected", "'number' was expected", "'ref' was expected"} <= \
        _one_of_reasons(validator, doc)
