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

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VSCODE = ROOT / "editors" / "vscode"
sys.path.insert(0, str(VSCODE / "scripts"))
from generate_grammar import OUT, lark_tokens, render  # noqa: E402

GRAMMAR = json.loads(OUT.read_text(encoding="utf-8"))
PATTERNS = [(re.compile(p["match"]), p) for p in GRAMMAR["patterns"]]


def scopes(line: str) -> list[str | None]:
    """The scope of each character of one line (None where no pattern applies)."""
    out: list[str | None] = [None] * len(line)
    pos = 0
    while pos < len(line):
        best = None
        for regex, pattern in PATTERNS:
            m = regex.search(line, pos)
            if m is not None and (best is None or m.start() < best[0].start()):
                best = (m, pattern)
        if best is None:
            break
        m, pattern = best
        if "name" in pattern:
            for i in range(m.start(), m.end()):
                out[i] = pattern["name"]
        for group, capture in pattern.get("captures", {}).items():
            if m.group(int(group)) is not None:
                for i in range(m.start(int(group)), m.end(int(group))):
                    out[i] = capture["name"]
        pos = m.end() if m.end() > pos else pos + 1
    return out


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


def compare_with_vscode(tokens_json: str) -> int:
    """Compare editors/vscode/scripts/tokenize.js's output (the real engine) with :func:`scopes`; the count of differences."""
    tokens = json.loads(Path(tokens_json).read_text(encoding="utf-8"))
    texts = {p.name: p.read_text(encoding="utf-8").split("\n") for p in (ROOT / "examples").glob("*.eff")}
    diffs = 0
    for file, line, col, text, scope in tokens:
        ours = scopes(texts[file][line - 1])
        for i in range(col - 1, col - 1 + len(text)):
            if text.strip() and (ours[i] or "source.eff") != scope:
                diffs += 1
                print(f"{file}:{line}:{i + 1} {text!r}: vscode {scope}, ours {ours[i]}")
    print(f"{len(tokens)} tokens, {diffs} differences")
    return diffs


if __name__ == "__main__":
    sys.exit(1 if compare_with_vscode(sys.argv[1]) else 0)
