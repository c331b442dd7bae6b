"""The language server's incremental parser gives the full parse's tree, position for position.

effspec.lsp.incremental re-parses only the runs and scalings whose text
changed and moves the trees of the others.  Each case here feeds one parser a
sequence of edits and compares its tree with `effspec.front.syntax.parse` of
the same text, token by token (type, text, line, column, offsets) and node by
node (every position field of the node's meta); and the check's JSON output
with and without it.  No pygls needed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from gen import generate_spec  # noqa: E402

import effspec  # noqa: E402
from effspec.front.syntax import parse  # noqa: E402
from effspec.lsp.incremental import IncrementalParser, split  # noqa: E402
from effspec.report.text import result_json  # noqa: E402

EXAMPLES = sorted((ROOT / "examples").glob("*.eff"))


def dump(node):
    from lark import Token, Tree

    if isinstance(node, Tree):
        return (node.data, tuple(sorted(vars(node.meta).items())), tuple(dump(c) for c in node.children))
    if isinstance(node, Token):
        return (node.type, str(node), node.line, node.column, node.end_line, node.end_column, node.start_pos, node.end_pos)
    return node


def same(parser: IncrementalParser, text: str) -> None:
    tree, diags = parser.parse(text)
    full_tree, full_diags = parse(text)
    assert diags == full_diags
    assert dump(tree) == dump(full_tree)
    assert parser.errors == 0


def edits_of(text: str) -> list[str]:
    """A session's worth of edits: in a run, a new line on top, a run removed, a syntax error, the fix, a comment between runs."""
    first = text.index("title")
    out = [
        text,
        text[:first] + "title   " + text[first + 5:],  # an in-line edit: later offsets move
        "# a comment first\n\n" + text,  # every line moves
        text.replace("eff 1", "eff 1\n\n# moved", 1),
        text + "\n# trailing comment\n",
    ]
    runs = split(text)[1]
    if len(runs) > 1:
        start, end, _line, _col = runs[0]
        out.append(text[:start] + text[end:])  # the first item deleted
        out.append(text[:start] + text[start:end] + "\n  # between\n" + text[end:])
    out.append(text.replace("{", "{ = ", 1))  # a syntax error: the full parse, its EFF001
    out.append(text)  # fixed
    return out


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_incremental_trees_equal_full_parses_over_a_session_of_edits(example):
    parser = IncrementalParser()
    for text in edits_of(example.read_text(encoding="utf-8")):
        same(parser, text)


def test_a_generated_100_run_spec_reuses_the_unchanged_runs():
    text = generate_spec(100, seed=11)
    parser = IncrementalParser()
    same(parser, text)
    misses = parser.misses
    for text2 in edits_of(text)[1:3]:
        same(parser, text2)
    assert parser.misses - misses <= 2  # each edit re-parsed one item (or none): the rest were moved
    assert parser.hits >= 2 * (len(split(text)[1]) - 1)


@pytest.mark.parametrize("text", [
    "eff 1\n",
    "eff 1\nrun a { }\nrun a { }\n",  # the same item twice: full parse
    'eff 1\nrun a { title = "x }\n',  # an unterminated string
    "eff 1\nrun a { model { layers = 2 }\n",  # unbalanced
    "eff 1 run a { work { seq_len = 8 token/sequence } } scaling s { kind = strong }",  # all on one line
    "eff 1\nrun a { title = \"\u202e\" }\n",  # an invisible character: EFF001 from the full parse
    "eff 1\nbogus { }\n",
    "\ufeffeff 1\nrun a { }\n",
    " " * 3000 + "x",
    "eff 1\n" + "#" * 3000 + "\nx",
])
def test_odd_texts_match_the_full_parse(text):
    parser = IncrementalParser()
    same(parser, text)
    same(parser, text + "\n")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_check_with_the_incremental_parser_equals_the_cli_check(example):
    parser = IncrementalParser()
    text = example.read_text(encoding="utf-8")
    for version in (text, "# edited\n" + text, text):
        plain = result_json(effspec.check_text(version, str(example), str(example.parent)))
        fast = result_json(effspec.check_text(version, str(example), str(example.parent), parse=parser.parse,
                                              memo=parser.memo))
        parser.memo.prune()
        assert json.dumps(fast, sort_keys=True) == json.dumps(plain, sort_keys=True)


def test_the_build_memo_reuses_unchanged_runs_and_the_check_is_the_same():
    text = generate_spec(12, seed=3)
    items = len(split(text)[1])
    parser = IncrementalParser()
    session = edits_of(text) + [text.replace("claim mfu", "claim  mfu", 3), text]
    reused = []
    for version in session:
        plain = result_json(effspec.check_text(version, "g.eff"))
        hits = parser.memo.hits
        fast = result_json(effspec.check_text(version, "g.eff", parse=parser.parse, memo=parser.memo))
        parser.memo.prune()
        reused.append(parser.memo.hits - hits)
        assert json.dumps(fast, sort_keys=True) == json.dumps(plain, sort_keys=True)
        assert len(parser.memo) <= items + 1  # one version of each run is kept
    assert reused[0] == 0  # the first check builds everything
    assert reused[1] == items - 1  # an edit inside the first run's title line: the other runs and scalings reused
    assert reused[2] == 0  # a comment on top moves every line: nothing can be reused


def test_random_edits_keep_the_trees_and_the_checks_equal():
    import random

    rng = random.Random(16)
    text = generate_spec(6, seed=5)
    parser = IncrementalParser()
    pieces = [" ", "\n", "#", "{", "}", '"', "x", "1", "run r { }\n", "\n# note\n"]
    for step in range(60):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.5 and len(text) > 10:
            text = text[:at] + text[at + rng.randrange(1, 4):]
        else:
            text = text[:at] + rng.choice(pieces) + text[at:]
        same(parser, text)
        if step % 6 == 0:
            plain = result_json(effspec.check_text(text, "r.eff"))
            fast = result_json(effspec.check_text(text, "r.eff", parse=parser.parse, memo=parser.memo))
            parser.memo.prune()
            assert json.dumps(fast, sort_keys=True) == json.dumps(plain, sort_keys=True)
