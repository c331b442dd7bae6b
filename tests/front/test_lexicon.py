"""One lexicon: every token pattern comes from the grammar (effspec.front.lexicon).

1. No hand copy of the NUMBER pattern outside grammar/eff.lark: the package,
   the editors, the spec, the templates, the benchmarks and scripts are grepped
   for its pieces.  Three generated data files hold it (the VS Code grammar and
   word pattern, the IR schema's `text` pattern); each holds exactly the
   lexicon's pattern (the schema: the grammar's two alternatives, anchored), and
   is checked to be in step with it (here, and tests/front/test_ir_schema.py).
2. The grep finds a planted copy, so it cannot pass vacuously.
3. Every scanner that reads numbers accepts the grammar's literals and no others
   (the cases below are read off the NUMBER rule by hand).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from effspec.front import lexicon

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "grammar" / "eff.lark"
SEARCHED = ("compiler", "editors", "spec", "templates", "grammar", "benchmarks", "scripts")
SUFFIXES = {".py", ".js", ".json", ".lark", ".j2", ".md", ".toml", ".yaml", ".yml", ".ts"}
# Generated from the lexicon and checked below to be in step with it.
GENERATED = {ROOT / "editors/vscode/syntaxes/eff.tmLanguage.json", ROOT / "editors/vscode/language-configuration.json",
             ROOT / "spec/eff-ir.schema.json"}


def number_pieces() -> list[str]:
    """The NUMBER rule's distinctive pieces, as grammar/eff.lark writes them: the exponent
    `[eE][+-]?[0-9]+`, the fraction `\\.[0-9_]+` and the leading-dot form `\\.[0-9][0-9_]*`."""
    rule = re.search(r"^NUMBER:(.*)$", SOURCE.read_text(encoding="utf-8"), flags=re.M)
    assert rule is not None
    pieces = [r"[eE][+-]?[0-9]+", r"\.[0-9_]+", r"\.[0-9][0-9_]*"]
    assert all(p in rule.group(1) for p in pieces), rule.group(1)
    return pieces


def copies(text: str, pieces: list[str]) -> list[str]:
    """The pieces of NUMBER that ``text`` spells out (as written, or JSON-escaped)."""
    found = []
    for piece in pieces:
        if piece in text or json.dumps(piece)[1:-1] in text:
            found.append(piece)
    return found


def searched_files() -> list[Path]:
    out = []
    for top in SEARCHED:
        folder = ROOT / top
        if folder.is_dir():
            out += [p for p in folder.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                    and "node_modules" not in p.parts and "__pycache__" not in p.parts]
    return sorted(out)


def test_no_hand_copy_of_the_number_pattern():
    pieces = number_pieces()
    pattern = lexicon.terminal("NUMBER")
    alternatives = re.search(r"^NUMBER: /(.+)/ \| /(.+)/$", SOURCE.read_text(encoding="utf-8"), re.M).groups()
    assert len(searched_files()) > 100  # the package alone has more modules than that
    found = {}
    for path in searched_files():
        if path == SOURCE:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path in GENERATED:  # the lexicon's own pattern (or the grammar's alternatives) may stand there, nothing else
            for allowed in (pattern, *alternatives):
                text = text.replace(json.dumps(allowed)[1:-1], "")
        hits = copies(text, pieces)
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    assert found == {}, "take the pattern from effspec.front.lexicon.terminal('NUMBER')"


def test_the_grep_finds_a_planted_copy():
    pieces = number_pieces()
    # the pattern fmt/layout.py carried before this test
    planted = 'NUMBER = re.compile(r"[0-9][0-9_]*(?:\\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?")'
    assert copies(planted, pieces) == [r"[eE][+-]?[0-9]+", r"\.[0-9_]+"]
    assert copies(json.dumps({"match": planted}), pieces) == [r"[eE][+-]?[0-9]+", r"\.[0-9_]+"]
    assert copies('CONFIG = re.compile(r"[0-9][0-9_]*")', pieces) == []


def test_the_lexicon_is_the_grammars_terminal():
    from effspec.front.syntax import parser

    lark_pattern = parser().get_terminal("NUMBER").pattern.to_regexp()
    # the same alternatives, with lark's capturing groups made non-capturing
    assert lexicon.terminal("NUMBER") == lark_pattern.replace("(", "(?:").replace("(?:?:", "(?:")
    assert re.compile(lexicon.terminal("NUMBER")).groups == 0


def test_non_capturing_leaves_escapes_classes_and_extensions_alone():
    assert lexicon.non_capturing(r"(a)\((?P<n>b)[(][]()](?:c)") == r"(?:a)\((?P<n>b)[(][]()](?:c)"


def test_the_generated_files_are_in_step():
    # (the IR schema's Number pattern: tests/front/test_ir_schema.py::test_identifier_and_number_follow_the_grammar)
    proc = subprocess.run([sys.executable, str(ROOT / "editors/vscode/scripts/generate_grammar.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


# Read off `NUMBER: /[0-9][0-9_]*(\.[0-9_]+)?([eE][+-]?[0-9]+)?/ | /\.[0-9][0-9_]*([eE][+-]?[0-9]+)?/`:
# digits (underscores after the first), an optional fraction of digits and underscores, an optional
# signed exponent; or a leading `.` and digits.
LITERALS = ["7", "1_000", "312.5", "0.000_5", ".5", "1e9", "1.5E-3", "2e+4", ".5e2"]
NOT_LITERALS = ["1.", "1e", "_1", "1.e5", "e5", "1e+", "-1", "1,000"]


@pytest.mark.parametrize("text", LITERALS + NOT_LITERALS)
def test_every_scanner_reads_the_grammars_numbers(text):
    from effspec.engine.claims import written_precision
    from effspec.importers.record import number
    from effspec.lsp.scan import tokens

    is_literal = text in LITERALS
    assert (re.fullmatch(lexicon.terminal("NUMBER"), text) is not None) == is_literal
    # the language server's tokenizer: one number token for the whole text
    toks = tokens(text)
    assert (len(toks) == 1 and toks[0].kind == "number") == is_literal
    # a claim's written precision is known for one literal (and its unit) only; `1e` reads as 1 of a
    # unit `e`, so it is left out here
    if text != "1e":
        assert (written_precision(text) is not None) == is_literal
    if is_literal:
        assert number(text) == text
    elif "," not in text:  # the importers read "1,000" as 1000 (a thousands separator)
        with pytest.raises(ValueError):
            number(text)
