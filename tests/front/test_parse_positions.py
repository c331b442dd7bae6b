"""The parser's shortcut for one-child `?rule` reductions (effspec.front.syntax._skip_single_child_positions)
gives the tree lark's own callbacks give: the same nodes, and on every node the same positions,
the container positions (a `( … )` or an inlined rule's extent) included."""

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
    fast = syntax.parser().parse(text)
    assert _shape(fast) == _shape(_stock().parse(text))


def test_the_shortcut_is_installed():
    # Without it this file would compare lark with itself.
    def shortcuts(lark_parser):
        return [f for f in lark_parser._callbacks.values() if getattr(f, "__qualname__", "").startswith("_single_child_first")]

    assert len(shortcuts(syntax.parser())) >= 5  # ?item ?stmt ?value ?expr ?product ?unary: no punctuation
    assert shortcuts(_stock()) == []


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
