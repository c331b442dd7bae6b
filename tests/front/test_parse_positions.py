"""The parser's two shortcuts give the tree lark gives on its own: the same nodes, and on every node the
same positions, the container positions (a `( … )` or an inlined rule's extent) included.

- one-child `?rule` reductions skip lark's position pass (effspec.front.syntax._skip_single_child_positions);
- the other rules' filter, tree and positions run as one function each (effspec.front.lalr.fuse_positions);
- the check path's lexer (effspec.front.lalr.ContextualScan) runs lark's scanners in one loop; at an
  error the text is parsed again with lark's lexer, so the diagnostics are those of lark's."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from effspec.front import syntax

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from gen import generate_spec  # noqa: E402

_META = ("line", "column", "start_pos", "end_line", "end_column", "end_pos", "empty",
         "container_line", "container_column", "container_start_pos",
         "container_end_line", "container_end_column", "container_end_pos")


@cache
def _stock():
    """lark's own callbacks, built when a test first needs them (not at every worker's collection)."""
    from lark import Lark

    return Lark(syntax.grammar_text(), **syntax._PARSER_OPTIONS, lexer_callbacks=syntax._LEXER_CALLBACKS)


def _shape(node):
    """Every node, its kind, and each position attribute it holds (absent ones as absent)."""
    if hasattr(node, "data"):
        meta = node.meta
        return ("tree", str(node.data), tuple((a, getattr(meta, a, "<absent>")) for a in _META),
                tuple(_shape(c) for c in node.children))
    if node is None:
        return None
    return ("token", node.type, str(node), node.line, node.column, node.end_line, node.end_column, node.start_pos)


def _same(text: str) -> None:
    stock = _shape(_stock().parse(text))
    assert _shape(syntax.parser().parse(text)) == stock  # lark's lexer, the positions shortcut
    assert _shape(syntax.parse_tree(text)) == stock  # and the check path's lexer


def test_the_shortcut_is_installed():
    # Without it this file would compare lark with itself.
    def shortcuts(lark_parser):
        return [f for f in lark_parser._callbacks.values() if getattr(f, "__qualname__", "").startswith("_single_child_first")]

    assert len(shortcuts(syntax.parser())) >= 5  # ?item ?stmt ?value ?expr ?product ?unary: no punctuation
    assert shortcuts(_stock()) == []
    fused = [f for f in syntax.parser()._callbacks.values() if "_positioned" in getattr(f, "__qualname__", "")]
    assert len(fused) >= 40  # every rule but the placeholders' `list` and `?atom`'s parentheses


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.eff")) + sorted((ROOT / "tests" / "fixtures").rglob("*.eff")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_and_fixtures(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        _stock().parse(text)
    except Exception:  # a fixture of a syntax error: both refuse it (the error path is the same parser)
        pytest.skip("not valid syntax")
    _same(text)


@pytest.mark.parametrize("mismatch", [False, True])
def test_generated_specs(mismatch):
    for seed in range(5):
        _same(generate_spec(4, seed=seed, mismatch=mismatch))


def test_nested_expressions_and_parentheses():
    # One-child reductions of a `( … )` keep the parentheses' extent on the inner node's container.
    _same('eff 1\nrun a {\n  x = ((1))\n  y = (2 + (3 * -(4))) / (5 TFLOP/s)\n'
          '  z = [ (1), -2, ((3 s)) ]\n  t { u = run.b.x  v = (run.b.x) }\n}\n')


_ATOMS = st.sampled_from(["1", "2.5 s", "x", "run.a.b", "-3", "(4)", "((5 token))"])


@st.composite
def _exprs(draw, depth=0):
    if depth > 2 or draw(st.booleans()):
        return draw(_ATOMS)
    op = draw(st.sampled_from([" + ", " - ", " * ", " / "]))
    left, right = draw(_exprs(depth + 1)), draw(_exprs(depth + 1))
    return f"({left}{op}{right})" if draw(st.booleans()) else f"{left}{op}{right}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_exprs(), min_size=1, max_size=4), st.booleans())
def test_random_expressions(exprs, as_list):
    body = f"  v = [{', '.join(exprs)}]\n" if as_list else "".join(f"  k{i} = {e}\n" for i, e in enumerate(exprs))
    _same(f"eff 1\nrun r {{\n{body}}}\n")


def test_the_check_path_lexes_without_lark_lexer(monkeypatch):
    # Without this, a silent fallback to lark's lexer would make the comparisons above compare lark with itself.
    from lark.lexer import ContextualLexer

    def refuse(*args, **kwargs):
        raise AssertionError("lark's lexer was used")

    text = generate_spec(2, seed=3)
    expected = _shape(syntax.parse_tree(text))
    monkeypatch.setattr(ContextualLexer, "lex", refuse)
    assert _shape(syntax.parse_tree(text)) == expected
    kept: list = []
    assert _shape(syntax.parse(text, kept=kept)[0]) == expected  # the formatter's parse, tokens kept, too
    assert kept and {t.type for t in kept} <= set(syntax.KEPT_TERMINALS)


def test_kept_tokens_are_lark_own(monkeypatch):
    # The formatter's comments, braces and parentheses: the same tokens at the same positions.
    text = "eff 1  # header\n# alone\nrun a {  # open\n  x = (1 + 2)  # tail\n\t# tab\n}\n# end"
    ours: list = []
    syntax.parse(text, kept=ours)
    monkeypatch.setattr(syntax, "parse_tree", lambda t: syntax.parser().parse(t))
    theirs: list = []
    syntax.parse(text, kept=theirs)
    assert [_shape(t) for t in ours] == [_shape(t) for t in theirs]
    assert [t.type for t in ours].count("COMMENT") == 6


_GAPS = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", "\n\n  ", " # a comment\n", "\n# c\n\t", "\f "])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_GAPS, min_size=40, max_size=40))
def test_any_layout_of_whitespace_and_comments(gaps):
    # Every gap between two tokens of a small spec drawn from spaces, tabs, CR LF, form feeds and comments:
    # the line and column of every token after them are lark's.
    words = ["eff", "1", "run", "r", "{", "model", "{", "layers", "=", "24", "}", "work", "{", "seq_len", "=",
             "2048", "token/sequence", "}", "timing", "{", "step_time", "=", "[", "1.5", ",", "1.25", "]", "s",
             "note", "=", '"a \\" string"', "}", "claim", "mfu", "=", "50", "%", "from", "paper", '"T1"', "}"]
    text = "".join(w + g for w, g in zip(words, gaps + [""], strict=False)) + "\n"
    _same(text)


@pytest.mark.parametrize("text", [
    "eff 1\nrun a {\n  x = 1 $ 2\n}\n",  # a character no terminal matches
    "eff 1\nrun a {\n  x = = 2\n}\n",  # a token the parser refuses
    "eff 1\nrun a {\n  x = 2\n",  # the end of the file too early
    "eff 1\nrun a {\n  s = \"unclosed\n}\nrun b { y = 3 }\n",
    "eff 1\nrun a { x = 1 }\nrun b { y = ) }\nrun c { z = ( }\n",  # errors in several statements
    "eff 1\nrun a {\r\n\n  # c\n\tx = 'q'\n}\n",  # after newlines, a comment and a tab
    "eff 1\nrun a { x = 5 TFLOP/s ms }\n",  # a terminal of another state: lark's root lexer names it
])
def test_syntax_errors_are_lark_own(text, monkeypatch):
    # The check path's lexer hands over to lark's at an error: the same exception, on the same token or
    # character, with the same expected terminals; and so the same diagnostics.
    from lark.exceptions import UnexpectedInput

    def raised(parse):
        with pytest.raises(UnexpectedInput) as info:
            parse(text)
        exc = info.value
        token = getattr(exc, "token", None)
        return (type(exc), exc.line, exc.column, exc.pos_in_stream, _shape(token) if token is not None else None,
                sorted(getattr(exc, "expected", None) or ()), sorted(getattr(exc, "allowed", None) or ()))

    assert raised(syntax.parse_tree) == raised(_stock().parse)
    tree, diags = syntax.parse(text)
    monkeypatch.setattr(syntax, "parse_tree", lambda t: syntax.parser().parse(t))
    stock_tree, stock_diags = syntax.parse(text)
    assert tree is None and stock_tree is None
    assert diags and diags == stock_diags


def test_a_state_left_to_lark_is_lexed_by_lark(monkeypatch):
    # A scanner the loop does not take (several regexes, bytes): lark's lexer goes on from there.
    from effspec.front.lalr import ContextualScan

    text = generate_spec(2, seed=5)
    scan = ContextualScan(syntax.parser().parser.lexer)
    monkeypatch.setattr(scan, "_for_state", lambda state: None)
    monkeypatch.setattr(syntax, "_scan", lambda: (scan, "start"))
    assert _shape(syntax.parse_tree(text)) == _shape(_stock().parse(text))
