"""The grammar's terminals as Python regular expressions: effspec's one lexicon.

Every scanner that reads `.eff` text beside the parser (the Pygments lexer, the
language server's tokenizer and item splitter, the claim-literal precision, the
importers' and fixes' literal checks, and the VS Code grammar generator) takes
its token patterns from here, and this module asks the grammar
(``grammar/eff.lark``, through lark's own translation of each terminal) rather
than retyping them.  tests/front/test_lexicon.py fails on a hand copy of the NUMBER
pattern anywhere else.  The formatter has no scanner: it lays out lark's parse,
with the comments lark's lexer hands it (``effspec.front.syntax.parse(text, kept)``).

Groups are made non-capturing, so a pattern can be embedded in a larger one
(a named group, a TextMate ``captures`` list) without shifting its group numbers.
"""

from __future__ import annotations

from functools import cache

__all__ = ["NAME", "NUMBER", "non_capturing", "terminal"]

NUMBER = "NUMBER"
NAME = "NAME"


@cache
def terminal(name: str) -> str:
    """The grammar's terminal ``name`` (``"NUMBER"``, ``"NAME"``, ``"STRING"``, …) as a regex, groups non-capturing.

    The parser is built (or its tables loaded from the cache) on the first call; KeyError for a name the
    grammar does not define.
    """
    from effspec.front.syntax import parser

    return non_capturing(parser().get_terminal(name).pattern.to_regexp())


def non_capturing(regex: str) -> str:
    """``regex`` with every capturing group ``(`` turned into ``(?:`` (escapes and character classes left alone)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            out.append(regex[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]" or (out[-1] in ("[", "[^"))
        elif c == "[":
            in_class = True
            if regex.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
        elif c == "(" and not regex.startswith("(?", i):
            out.append("(?:")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)
