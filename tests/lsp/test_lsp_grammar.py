"""The VS Code extension's TextMate grammar, checked against grammar/eff.lark.

- editors/vscode/syntaxes/eff.tmLanguage.json is what the generator makes from
  grammar/eff.lark (not stale);
- run over every example (and every ```eff block of spec/language.md) by a
  small TextMate matcher (single-line `match` patterns, earliest match first,
  ties to the first pattern), every lark token gets a scope, and the right
  kind: each keyword `keyword.control`, each number `constant.numeric`, each
  unit `keyword.other.unit`, each string `string.quoted`; each comment is a
  comment.  No unscoped keyword, no unscoped token.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
sys.path.insert(0, str(VSCODE / "scripts"))
from compare_tokens import scopes  # noqa: E402  (the matcher; also compares with tokenize.js)
from generate_grammar import OUT, lark_tokens, render  # noqa: E402


def sources() -> list[tuple[str, str]]:
    out = [(p.name, p.read_text(encoding="utf-8")) for p in sorted((ROOT / "examples").glob("*.eff"))]
    reference = (ROOT / "spec" / "language.md").read_text(encoding="utf-8")
    out += [(f"language.md block {i}", block) for i, block in enumerate(re.findall(r"```eff\n(.*?)```", reference, re.S))]
    return out


EXPECTED = {"NUMBER": "constant.numeric", "UNIT": "keyword.other.unit", "STRING": "string.quoted"}


def test_the_grammar_is_generated_from_eff_lark():
    assert OUT.read_text(encoding="utf-8") == render(), "run python editors/vscode/scripts/generate_grammar.py"


def test_the_keywords_are_the_lark_grammars():
    keywords, units = lark_tokens()
    assert keywords == ["claim", "column", "eff", "file", "from", "run", "scaling"]
    assert {"TFLOP", "token", "sequence", "s", "W"} <= set(units)


@pytest.mark.parametrize("name, text", sources(), ids=[n for n, _ in sources()])
def test_every_token_of_every_example_is_scoped(name, text):
    from effspec.front.syntax import parser

    keywords = {k.upper() for k in lark_tokens()[0]}
    lines = text.split("\n")
    line_scopes = [scopes(line) for line in lines]
    unscoped, wrong = [], []
    toks = []
    try:
        for tok in parser().lex(text):
            toks.append(tok)
    except Exception:  # a deliberately broken reference block: its tokens up to the error are still checked
        pass
    assert toks, name
    for tok in toks:
        scope = line_scopes[tok.line - 1][tok.column - 1]
        where = f"{name}:{tok.line}:{tok.column} {tok.type} {str(tok)!r}"
        if scope is None:
            unscoped.append(where)
            continue
        expected = "keyword.control" if tok.type in keywords else EXPECTED.get(tok.type)
        # `run` inside a reference (`run.base_8.step_time`) is still the keyword
        if expected is not None and not scope.startswith(expected):
            wrong.append(f"{where}: {scope}, expected {expected}")
    assert unscoped == [], "unscoped tokens"
    assert wrong == []
    for n, line in enumerate(lines):
        for m in re.finditer("#", line):
            in_string = line[: m.start()].count('"') % 2 == 1
            if not in_string:
                assert (line_scopes[n][m.start()] or "").startswith("comment"), f"{name}:{n + 1}: comment not scoped"


def test_the_matcher_is_not_vacuous():
    got = scopes('run x { hardware { peak = 312 TFLOP/s from datasheet "A100" } }  # note')
    line = 'run x { hardware { peak = 312 TFLOP/s from datasheet "A100" } }  # note'
    assert got[line.index("run")] == "keyword.control.eff"
    assert got[line.index("x {")] == "entity.name.type.eff"
    assert got[line.index("hardware")] == "entity.name.section.block.eff"
    assert got[line.index("peak")] == "variable.other.key.eff"
    assert got[line.index("312")] == "constant.numeric.eff"
    assert got[line.index("TFLOP/s")] == got[line.index("/s")] == "keyword.other.unit.eff"
    assert got[line.index("from")] == "keyword.control.from.eff"
    assert got[line.index("datasheet")] == "storage.modifier.provenance.eff"
    assert got[line.index('"A100"')] == "string.quoted.double.eff"
    assert got[line.index("# note")] == "comment.line.number-sign.eff"
    assert scopes("  ")[0] is None
