"""The Pygments lexer (effspec.fmt.lexer), found through its entry point.

Every example, rule fixture and ```eff block of spec/language.md lexes with no
error token and gives back its text; keywords, names, numbers, units, strings
and comments get the token types the module documents.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pygments = pytest.importorskip("pygments")
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename  # noqa: E402
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Whitespace  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _sources() -> list[tuple[str, str]]:
    files = sorted(ROOT.glob("examples/*.eff")) + sorted((ROOT / "tests" / "fixtures").rglob("*.eff"))
    out = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in files]
    md = (ROOT / "spec" / "language.md").read_text(encoding="utf-8")
    out += [(f"language.md:{md.count(chr(10), 0, m.start()) + 2}", m.group(1))
            for m in re.finditer(r"^```eff\n(.*?)^```[ \t]*$", md, re.S | re.M)]
    return out


SOURCES = _sources()


def test_the_entry_point_registers_the_lexer():
    from effspec.fmt.lexer import EffLexer

    assert type(get_lexer_by_name("eff")) is EffLexer
    assert type(get_lexer_by_name("effspec")) is EffLexer
    assert type(get_lexer_for_filename("model.eff")) is EffLexer


@pytest.mark.parametrize(("name", "text"), SOURCES, ids=[s[0] for s in SOURCES])
def test_every_spec_lexes_without_an_error_token(name, text):
    tokens = list(get_lexer_by_name("eff").get_tokens(text))
    errors = [(t, v) for t, v in tokens if t in Error]
    assert not errors, errors[:5]
    assert "".join(v for _, v in tokens) == (text if text.endswith("\n") else text + "\n")


def _significant(text: str) -> list[tuple[object, str]]:
    return [(t, v) for t, v in get_lexer_by_name("eff").get_tokens(text) if t not in Whitespace]


def test_token_types():
    text = ('eff 1\n'
            '# a comment\n'
            'run base_8 {\n'
            '  title = "a \\"quoted\\" title"  # effspec: ignore[EFF101]\n'
            '  hardware { count = 8 device  peak = 989.4 TFLOP/s from datasheet "H100" }\n'
            '  timing { step_time = [4.02, 4.00] s  warmup = 0 step }\n'
            '  ranks { samples = file "r.csv" column "step_ms" ms }\n'
            '  convention { preset = palm  moe = active }\n'
            '  claim mfu = 100 % - run.base_8.hfu\n'
            '}\n')
    got = _significant(text)
    assert got[:2] == [(Keyword.Declaration, "eff"), (Number.Integer, "1")]
    assert got[2] == (Comment.Single, "# a comment")
    assert got[3:6] == [(Keyword.Declaration, "run"), (Name.Class, "base_8"), (Punctuation, "{")]
    assert got[6:8] == [(Name.Attribute, "title"), (Operator, "=")]
    assert (String.Escape, '\\"') in got
    assert (Comment.Special, "# effspec: ignore[EFF101]") in got
    assert (Name.Namespace, "hardware") in got and (Name.Namespace, "convention") in got
    assert (Number.Integer, "8") in got and (Keyword.Type, "device") in got
    assert (Number.Float, "989.4") in got and (Keyword.Type, "TFLOP/s") in got
    assert [(Keyword, "from"), (Name.Decorator, "datasheet")] == [g for g in got if g[1] in ("from", "datasheet")]
    i = got.index((Punctuation, "]"))
    assert got[i + 1] == (Keyword.Type, "s")  # a unit after a list
    assert (Keyword, "file") in got and (Keyword, "column") in got
    i = got.index((Keyword.Type, "ms"))  # a unit after a file reference
    assert got[i - 3:i] == [(String.Double, '"'), (String.Double, "step_ms"), (String.Double, '"')]
    assert (Keyword.Constant, "palm") not in got and (Name, "palm") in got
    assert (Keyword, "claim") in got and (Keyword.Type, "%") in got
    tail = got[got.index((Keyword, "claim")):]
    assert tail == [(Keyword, "claim"), (Name.Attribute, "mfu"), (Operator, "="), (Number.Integer, "100"), (Keyword.Type, "%"),
                    (Operator, "-"), (Keyword, "run"), (Punctuation, "."), (Name, "base_8"), (Punctuation, "."),
                    (Name, "hfu"), (Punctuation, "}")]


def test_a_key_named_like_a_unit_is_a_key_and_plurals_are_not_units():
    got = _significant("eff 1\nrun r { calendar { steps = 1000 step } }\n")
    assert (Name.Attribute, "steps") in got and (Keyword.Type, "step") in got
    got = _significant("eff 1\nrun r { work { seq_len = 8 tokens } }\n")
    assert (Keyword.Type, "tokens") not in got and (Name, "tokens") in got


def test_catalog_and_booleans_are_constants():
    got = _significant("eff 1\nrun r { hardware { peak = catalog } model { tied_embeddings = true } }\n")
    assert (Keyword.Constant, "catalog") in got and (Keyword.Constant, "true") in got


def test_a_stray_character_is_an_error_token():
    got = _significant("eff 1\nrun r { title = 'x' }\n")
    assert (Error, "'") in got


def test_guess_lexer_recognises_a_spec_by_its_header():
    from pygments.lexers import guess_lexer

    from effspec.fmt.lexer import EffLexer

    text = (ROOT / "examples" / "llama3_405b_table4.eff").read_text(encoding="utf-8")
    assert type(guess_lexer(text)) is EffLexer
    assert EffLexer.analyse_text("print('hello')\n") == 0.0
