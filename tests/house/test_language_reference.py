"""The language reference and the examples compile, and stay in sync with the code.

- every ```eff block in spec/language.md, and in the product sketch
  (../shared/design/eff-language.md beside the clone, when present), compiles
  with no EFF001/EFF002/EFF003;
- every examples/*.eff compiles likewise, and examples A, B and C are
  byte-identical to the sketch's three code blocks;
- the generated tables in spec/language.md are exactly what
  scripts/write_language_reference.py makes from effspec.front.keys, the
  presets and the code table (regenerate with ``make language-reference``);
- the unit allow-list, provenance kinds, claimable metrics, limits and codes
  that the reference lists are the ones the code has.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import cli as run_effspec
from write_language_reference import GENERATED, _region

import effspec
from effspec.front import keys
from effspec.front.limits import LIMITS
from effspec.rules import code_table

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "spec" / "language.md"
SKETCH = ROOT.parent / "shared" / "design" / "eff-language.md"
EXAMPLES = ROOT / "examples"
GRAMMAR = ROOT / "grammar" / "eff.lark"
FRONT_END = ("EFF001", "EFF002", "EFF003")
SKETCH_EXAMPLES = ("example_a_measured.eff", "example_b_vendor_claim.eff", "example_c_scaling.eff")



def eff_blocks(markdown: str) -> list[tuple[int, str]]:
    """(line number, text) of every ```eff fenced block, text with its final newline."""
    out = []
    for m in re.finditer(r"^```eff\n(.*?)^```[ \t]*$", markdown, re.S | re.M):
        out.append((markdown.count("\n", 0, m.start()) + 1, m.group(1)))
    return out


def front_end_errors(text: str, folder: Path) -> list[str]:
    result = effspec.check_text(text, file="<block>", folder=str(folder))
    return [f"{d.code} {d.span.line}:{d.span.column} {d.message}" for d in result.diagnostics if d.code in FRONT_END]


# ----------------------------------------------------------------------------
# Key tables, generated from effspec.front.keys

# ----------------------------------------------------------------------------
# The reference's own examples


@pytest.fixture(scope="module")
def reference() -> str:
    return REFERENCE.read_text(encoding="utf-8")


def test_reference_has_examples(reference) -> None:
    assert len(eff_blocks(reference)) >= 10


def _reference_blocks() -> list[tuple[int, str]]:
    return eff_blocks(REFERENCE.read_text(encoding="utf-8")) if REFERENCE.exists() else []


def write_ranks_csv(path: Path) -> None:
    """8 ranks on 2 nodes, 10 steps; rank 5 computes 30 % slower than the rest."""
    rows = ["rank,node,step,compute,comm,stall"]
    for step in range(1, 11):
        for rank in range(8):
            compute = 1.30 if rank == 5 else 1.00
            rows.append(f"{rank},node{rank // 4:02d},{step},{compute:.2f},0.10,{1.40 - compute - 0.10:.2f}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def reference_folder(tmp_path_factory) -> Path:
    """The folder reference blocks are compiled in: the examples' CSV files plus a ranks.csv."""
    folder = tmp_path_factory.mktemp("reference")
    for csv_file in EXAMPLES.glob("*.csv"):
        (folder / csv_file.name).write_bytes(csv_file.read_bytes())
    write_ranks_csv(folder / "ranks.csv")
    return folder


@pytest.mark.parametrize("line, block", _reference_blocks(), ids=lambda x: f"line{x}" if isinstance(x, int) else "")
def test_reference_example_compiles(line: int, block: str, reference_folder: Path) -> None:
    # The folder holds llm3b_64_steps.csv and a ranks.csv.  The reference holds
    # itself to more than the sketch: no front-end finding at all
    # (EFF001-EFF030), so every value in it is well-formed and in range.
    result = effspec.check_text(block, file="<block>", folder=str(reference_folder))
    front = [f"{d.code} {d.span.line}:{d.span.column} {d.message}" for d in result.diagnostics if d.code < "EFF100"]
    assert front == [], f"spec/language.md block at line {line}"
    assert result.evaluation is not None


@pytest.mark.parametrize("begin, end, render", GENERATED, ids=("key tables", "code table", "preset table"))
def test_generated_tables_are_current(begin, end, render, reference) -> None:
    start, stop = _region(reference, begin, end)
    assert reference[start:stop] == render(), \
        "spec/language.md is stale against compiler/front/keys.py, presets.py or the code table: run `make language-reference`"


def test_unit_allow_list_matches_grammar(reference) -> None:
    grammar = GRAMMAR.read_text(encoding="utf-8")
    body = re.search(r"^UNIT_WORD:(.*?)(?=^\S|\Z)", grammar, re.S | re.M).group(1)
    words = re.findall(r'"([^"]+)"', body)
    section = reference[reference.index("### Units"):]
    section = section[: section.index("\n## ", 1)]
    listed = re.findall(r"`([^`\s]+)`", section.split("Allowed unit words")[1].split("\n\n")[1])
    assert sorted(listed) == sorted(words)


def test_provenance_kinds_listed(reference) -> None:
    for kind in keys.PROVENANCE_KINDS:
        assert f"`{kind}`" in reference


def test_claimable_metrics_listed(reference) -> None:
    for name, unit in keys.CLAIMABLE.items():
        assert re.search(rf"^\| `{name}` \| `{re.escape(unit)}` \|" if unit else rf"^\| `{name}` \| ratio \|",
                         reference, re.M), f"metric {name} ({unit or 'ratio'}) missing from the metrics table"
    for alias, target in keys.CLAIM_ALIASES.items():
        assert f"`{alias}` (= `{target}`)" in reference


def test_limits_listed(reference) -> None:
    for field, value in vars(LIMITS).items():
        assert f"`{field}`" in reference, f"limit {field} missing"
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g}".replace("e+", "e")
        assert shown in reference, f"limit {field} = {shown} missing"


def test_every_code_listed(reference) -> None:
    for code, (_title, severity) in code_table().items():
        assert re.search(rf"^\| {code} \| {severity} \|", reference, re.M), f"{code} missing from the code table"


def _json_keys(doc: dict) -> set[str]:
    """Every fixed key of the check JSON (not run, scaling or metric names, not diagnosis evidence)."""
    keys_seen = set(doc)
    keys_seen |= {k for d in doc["diagnostics"] for k in d}
    for run in doc["runs"].values():
        keys_seen |= set(run)
        for metric in list(run["metrics"].values()) + list(run["implied"].values()):
            keys_seen |= set(metric) | {k for i in metric["input_details"] for k in i}
        keys_seen |= {k for c in run["claims"].values() for k in c}
        for part in ("step_statistics", "breakdown", "calendar", "convention"):
            if run.get(part):
                keys_seen |= set(run[part])
        keys_seen |= {k for c in run["conventions"].values() for k in c}
    for scaling in doc["scalings"].values():
        keys_seen |= set(scaling)
        keys_seen |= {k for r in scaling["runs"].values() for k in r}
        keys_seen |= {k for step in scaling["cumulative"] + scaling["incremental"] for k in step}
    return keys_seen


def test_json_outline_names_every_key(reference, reference_folder) -> None:
    from effspec.report.text import result_json

    section = reference[reference.index("## 20. JSON output"):reference.index("## 21. Command line")]
    seen: set[str] = set()
    sources = [effspec.load(p) for p in sorted(EXAMPLES.glob("*.eff"))]
    sources += [effspec.check_text(b, folder=str(reference_folder)) for _, b in eff_blocks(reference)]
    for result in sources:
        seen |= _json_keys(result_json(result))
    missing = sorted(k for k in seen if f'"{k}"' not in section)
    assert not missing, f"section 20 of spec/language.md does not list these JSON keys: {missing}"


# ----------------------------------------------------------------------------
# The README's example and the output shown beside it


def test_readme_example_output_is_real(tmp_path: Path) -> None:
    """The README's spec compiles, and the findings shown under it are the ones it
    gets (codes, severities and positions; message wording may evolve)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (line, block), = eff_blocks(readme)
    assert len(block.splitlines()) == 15
    spec = tmp_path / "vendor.eff"
    spec.write_text(block, encoding="utf-8")
    result = effspec.load(spec)
    assert not [d for d in result.diagnostics if d.code < "EFF100"]
    shown_text = readme[readme.index("```text", readme.index(block)):]
    shown = re.findall(r"^(error|warning|info)\[(EFF\d+)]: .*\n *--> vendor\.eff:(\d+):(\d+)$", shown_text, re.M)
    actual = [(d.severity, d.code, str(d.span.line), str(d.span.column)) for d in result.diagnostics]
    assert shown == actual, "README.md shows stale output: rerun `effspec check vendor.eff` and paste it"
    # and word for word what `effspec check vendor.eff` prints
    printed = run_effspec("check", "vendor.eff", cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"})
    assert printed.returncode == 1
    assert shown_text.split("\n", 1)[1].split("```", 1)[0] == printed.stdout, "README.md shows stale output"


# ----------------------------------------------------------------------------
# The examples and the sketch


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.eff")), ids=lambda p: p.name)
def test_example_compiles(path: Path) -> None:
    result = effspec.load(path)
    bad = [f"{d.code} {d.span.line}:{d.span.column} {d.message}" for d in result.diagnostics if d.code in FRONT_END]
    assert bad == []


def test_examples_readme_lists_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for path in EXAMPLES.glob("*.eff"):
        assert f"`{path.name}`" in readme, f"examples/README.md does not mention {path.name}"


def _sketch() -> str:
    if not SKETCH.exists():
        pytest.skip(f"{SKETCH} is not beside the clone")
    return SKETCH.read_text(encoding="utf-8")


def test_sketch_examples_are_byte_identical() -> None:
    blocks = eff_blocks(_sketch())
    assert len(blocks) == len(SKETCH_EXAMPLES)
    for (line, block), name in zip(blocks, SKETCH_EXAMPLES, strict=False):
        assert (EXAMPLES / name).read_bytes() == block.encode("utf-8"), f"{name} differs from the sketch block at line {line}"


def test_sketch_blocks_compile() -> None:
    for line, block in eff_blocks(_sketch()):
        assert front_end_errors(block, EXAMPLES) == [], f"sketch block at line {line}"
