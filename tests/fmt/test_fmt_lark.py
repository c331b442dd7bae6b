"""effspec fmt reads a spec with lark, never with a reader of its own (issue 30, "one lexicon").

The layout is read off the front end's parse tree, and the comments come from
lark's lexer (its callbacks, ``effspec.front.syntax.parse(text, kept)``).  These
tests change what lark hands the formatter and expect the layout to follow: a
formatter that read the text again itself (the hand-written recursive-descent
reader fmt/layout.py carried before) would print what the text says instead.
"""

from __future__ import annotations

from effspec.fmt import block_order, format_text
from effspec.fmt.layout import read, render
from effspec.front import syntax

TEXT = "eff 1\nrun r {\n  # about timing\n  timing { warmup = (2 step)  # two\n  }\n}\n"


def _layout(text: str, tree, kept) -> str:
    return render(read(text, tree, kept), block_order())


def test_the_layout_is_larks_tree_and_the_comments_its_lexers():
    kept: list = []
    tree, diags = syntax.parse(TEXT, kept)
    assert diags == []
    assert [t.type for t in kept] == ["LBRACE", "COMMENT", "LBRACE", "LPAR", "COMMENT"]
    assert _layout(TEXT, tree, kept) == "eff 1\n\nrun r {\n  # about timing\n  timing { warmup = (2 step) }  # two\n}\n"
    # Rename the key and change the number in lark's tree; drop a comment and the `(` from what its lexer kept.
    (assign,) = tree.find_data("assign")
    assign.children[0] = assign.children[0].update(value="cooldown")
    (quantity,) = tree.find_data("quantity")
    quantity.children[0] = quantity.children[0].update(value="3")
    kept = [t for t in kept if str(t) != "# about timing" and t.type != "LPAR"]
    assert _layout(TEXT, tree, kept) == "eff 1\n\nrun r {\n  timing { cooldown = 3 step }  # two\n}\n"


def test_format_text_lays_out_the_tree_the_front_end_parsed(monkeypatch):
    real = syntax.parse_tree

    def renaming(text):
        """The front end's parse, renaming the key `warmup` in the trees it returns."""
        tree = real(text)
        for assign in tree.find_data("assign"):
            if assign.children[0] == "warmup":
                assign.children[0] = assign.children[0].update(value="cooldown")
        return tree

    monkeypatch.setattr(syntax, "parse_tree", renaming)
    # The layout prints the key of the tree the front end parsed; one read from the text would print `warmup`.
    assert format_text(TEXT).text == "eff 1\n\nrun r {\n  # about timing\n  timing { cooldown = (2 step) }  # two\n}\n"


def test_what_lark_rejects_is_never_laid_out():
    kept: list = []
    tree, diags = syntax.parse("eff 1\nrun r { timing { warmup = (2 step } }\n", kept)
    assert tree is None and [d.code for d in diags] == ["EFF001"] and kept == []
    result = format_text("eff 1\nrun r { timing { warmup = (2 step } }  # c\n")
    assert result.text is None and [d.code for d in result.diagnostics] == ["EFF001"]


def test_the_front_ends_parse_keeps_nothing_unless_asked():
    kept: list = []
    syntax.parse(TEXT, kept)
    tree, _ = syntax.parse(TEXT)  # no list: the callbacks keep nothing, and the tree is the same
    assert len(kept) == 5 and tree == syntax.parse(TEXT, [])[0]
