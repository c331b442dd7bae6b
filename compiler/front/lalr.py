"""lark's LALR parse in two tight loops, its lexer's and its parser's, over lark's own tables.

The front end's parse (effspec.front.syntax.parse_tree) runs here; lark builds the
scanners, the parse table and the tree callbacks, and raises every error.  Measured
on 50 generated 4-run specs (min of 15 rounds, alternating): lark alone 9.0 ms a spec,
with these loops and the fused callbacks (:func:`fuse_positions`) 4.4 ms.

The lexer.

lark's lexer reads each token through several Python calls: the state's lexer,
its scanner, the match, a line counter's feed, the token's constructor, and
the same again for each stretch of ignored text between two tokens.  This
lexer runs lark's own compiled scanners (each parser state's alternation of
terminals, in lark's order) in one loop, with the same steps in the same
order: at each position the state's scanner matches; an ignored terminal is
counted for lines and skipped; another becomes the token, positioned as
lark positions it.  The tokens are the same, type, text and every position
(tests/front/test_parse_positions.py compares trees and positions with lark's
own lexer).

Each token goes to the lexer's callbacks as in lark: its `unless` callbacks
(a keyword lexed as a name takes the keyword's type) and effspec's own (the
tokens the formatter keeps, ignored comments included).

Where no terminal matches, the loop hands its place (position, line, column,
last token) to lark's own contextual lexer, which goes on from there and
raises its own error, with its expected terminals; an error the parser raises
(a token it refuses) is the parser's, with the same token.  So a syntax error
reads exactly as before, and costs no second parse.

The parser.  :func:`parse` is lark's ``parse_from_state`` and ``feed_token``
as one loop over the same lark ``ParserState`` (whose state stack the lexer
reads): shift, or reduce through the rule's callback until a shift, as lark's
``feed_token`` does, without a method call and five attribute reads a token.
A token the table has no action for goes to lark's own ``feed_token``, which
raises lark's UnexpectedToken; the end of input is fed through it too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# Imported by effspec.front.syntax once lark is (this module runs only inside a parse), so lark's names are
# bound here once rather than looked up in the loops.
from lark.exceptions import UnexpectedInput
from lark.lexer import LexerState, LexerThread, TextSlice, Token
from lark.parsers.lalr_analysis import Shift
from lark.parsers.lalr_interactive_parser import InteractiveParser
from lark.parsers.lalr_parser_state import ParseConf, ParserState
from lark.tree import Meta, Tree

# A state's scanner, its ignored types, the types that may hold a newline, and the lexer's callbacks by type.
_State = tuple[re.Pattern[str], frozenset[str], frozenset[str], dict[str, Any]]


class ContextualScan:
    """Stands in for lark's ContextualLexer in a LexerThread: ``lex(lexer_state, parser_state)``.
    Each state's scanner is compiled by lark when first used, as lark's own lexer does."""

    def __init__(self, contextual: Any) -> None:
        self._lark = contextual
        self._lexers = contextual.lexers  # parser state -> lark BasicLexer
        self._by_state: dict[int, _State | None] = {}

    def _for_state(self, state: int) -> _State | None:
        """The state's scanner; None where it is not one regex over text (lark's lexer then goes on)."""
        lexer = self._lexers[state]
        mres = lexer.scanner._mres  # lark's alternation of the state's terminals, in its order
        if len(mres) != 1 or getattr(lexer, "use_bytes", False):
            self._by_state[state] = None
            return None
        got = self._by_state[state] = (mres[0], frozenset(lexer.ignore_types), frozenset(lexer.newline_types),
                                       dict(lexer.callback))
        return got

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Any]:
        text, end = lexer_state.text.text, lexer_state.text.end
        pos = lexer_state.line_ctr.char_pos
        line, line_start = 1, 0
        stack = parser_state.state_stack  # the parser's, changed in place: its last item is the state
        by_state = self._by_state
        new = str.__new__
        last = None
        while pos < end:
            state = stack[-1]
            scanning = by_state[state] if state in by_state else self._for_state(state)
            m = scanning[0].match(text, pos, end) if scanning is not None else None
            if m is None or m.end() == pos or scanning is None:  # no terminal here (an error), or a scanner
                yield from self._hand_over(lexer_state, parser_state, pos, line, line_start, last)  # left to lark
                return
            _, ignored, newline_types, callbacks = scanning
            kind: str = m.lastgroup or ""  # every alternative is a named group
            start, pos = pos, m.end()
            if kind in ignored:
                if kind in callbacks:  # lark hands an ignored token to its callback too (a kept comment)
                    skipped = Token(kind, m.group(), start, line, start - line_start + 1)
                if kind in newline_types and (newlines := text.count("\n", start, pos)):
                    line += newlines
                    line_start = text.rfind("\n", start, pos) + 1
                if kind in callbacks:
                    skipped.end_line, skipped.end_column, skipped.end_pos = line, pos - line_start + 1, pos
                    callbacks[kind](skipped)
                continue
            value = m.group()
            token = new(Token, value)
            token.type, token.value, token.start_pos = kind, value, start
            token.line, token.column = line, start - line_start + 1  # positioned before its own lines count
            if kind in newline_types and (newlines := value.count("\n")):
                line += newlines
                line_start = text.rfind("\n", start, pos) + 1
            token.end_line, token.end_column, token.end_pos = line, pos - line_start + 1, pos
            if kind in callbacks:  # a keyword lexed as a name (lark's `unless` callback retypes it), a kept token
                token = callbacks[kind](token)
            last = token
            yield token

    def _hand_over(self, lexer_state: Any, parser_state: Any, pos: int, line: int, line_start: int,
                   last: Any) -> Iterator[Any]:
        """lark's contextual lexer, from where this loop stopped, in the state lark's own loop would be in."""
        counter = lexer_state.line_ctr
        counter.char_pos, counter.line, counter.line_start_pos = pos, line, line_start
        counter.column = pos - line_start + 1
        lexer_state.last_token = last
        yield from self._lark.lex(lexer_state, parser_state)


def parse(frontend: Any, scan: ContextualScan, start: str, text: str) -> Any:
    """``frontend.parse(text)`` (a lark LALR ParsingFrontend) with ``scan`` as its lexer."""
    parser = frontend.parser.parser  # lark's _Parser: the parse table and the tree callbacks
    conf = ParseConf(parser.parse_table, parser.callbacks, start)
    thread = LexerThread(scan, LexerState(TextSlice.cast_from(text)))  # type: ignore[arg-type]  # lark's Lexer protocol
    state = ParserState(conf, thread)
    states, callbacks = conf.states, conf.callbacks
    stack, values = state.state_stack, state.value_stack
    token = None
    try:
        for token in scan.lex(thread.state, state):  # what LexerThread.lex(state) calls
            kind = token.type
            while True:
                row = states[stack[-1]]
                if kind not in row:
                    state.feed_token(token)  # raises lark's UnexpectedToken, with its expected terminals
                action, arg = row[kind]
                if action is Shift:
                    stack.append(arg)
                    values.append(callbacks[kind](token) if kind in callbacks else token)
                    break
                size = len(arg.expansion)  # a reduction by the rule ``arg``
                if size:
                    children = values[-size:]
                    del stack[-size:]
                    del values[-size:]
                else:
                    children = []
                values.append(callbacks[arg](children) if callbacks else children)
                stack.append(states[stack[-1]][arg.origin.name][1])  # the goto: always a shift in lark's table
        end = Token.new_borrow_pos("$END", "", token) if token else Token("$END", "", 0, 1, 1)
        return state.feed_token(end, True)
    except UnexpectedInput as exc:
        exc.interactive_parser = InteractiveParser(parser, state, state.lexer)  # as lark's parse_from_state
        raise


def fuse_positions(callbacks: dict[Any, Any]) -> int:
    """Replace, in lark's callback table, each ``PropagatePositions(ChildFilterLALR_NoPlaceholders(partial(Tree,
    name)))`` chain (or one without the filter) by one function doing the three steps: the children kept (the
    filter), the tree, and its positions from the first and last child that has any (lark's position pass, on
    the children before the filter).  The same tree with the same meta (tests/front/test_parse_positions.py);
    a chain of another shape (placeholders, a node filter) keeps lark's callbacks.  Returns how many it fused."""
    from functools import partial

    from lark.parse_tree_builder import ChildFilterLALR_NoPlaceholders, PropagatePositions

    fused = 0
    for rule, callback in list(callbacks.items()):
        if type(callback) is not PropagatePositions or callback.node_filter is not None:
            continue
        builder, include = callback.node_builder, None
        if type(builder) is ChildFilterLALR_NoPlaceholders:
            builder, include = builder.node_builder, tuple(builder.to_include)
        if type(builder) is not partial or builder.func is not Tree or len(builder.args) != 1 or builder.keywords:
            continue
        callbacks[rule] = _positioned(builder.args[0], include, callback)
        fused += 1
    return fused


_OTHER = object()  # a leaf that is neither a tree nor a token: lark's own position pass reads it


def _edge(children: Any) -> Any:
    """lark's PropagatePositions._pp_get_meta without a node filter: the first child with positions."""
    for c in children:
        if isinstance(c, Tree):
            if not c.meta.empty:
                return c.meta
        elif isinstance(c, Token):
            return c
        elif hasattr(c, "__lark_meta__"):
            return _OTHER
    return None


def _span(first: Any, last: Any) -> dict[str, Any]:
    """The positions lark's pass gives a new tree: its first child's container start, its last child's end."""
    if isinstance(first, Token):
        line, column, start = first.line, first.column, first.start_pos
    else:
        line = getattr(first, "container_line", first.line)
        column = getattr(first, "container_column", first.column)
        start = getattr(first, "container_start_pos", first.start_pos)
    if isinstance(last, Token):
        end_line, end_column, end = last.end_line, last.end_column, last.end_pos
    else:
        end_line = getattr(last, "container_end_line", last.end_line)
        end_column = getattr(last, "container_end_column", last.end_column)
        end = getattr(last, "container_end_pos", last.end_pos)
    return {"empty": False, "line": line, "column": column, "start_pos": start, "container_line": line,
            "container_column": column, "container_start_pos": start, "end_line": end_line, "end_column": end_column,
            "end_pos": end, "container_end_line": end_line, "container_end_column": end_column,
            "container_end_pos": end}


def _positioned(name: str, include: tuple[tuple[int, bool], ...] | None, stock: Any) -> Any:
    def reduce(children: list[Any]) -> Any:
        first = _edge(children)
        last = _edge(reversed(children)) if first is not None else None
        if first is _OTHER or last is _OTHER:
            return stock(children)
        kept = children
        if include is not None:  # ChildFilterLALR_NoPlaceholders
            kept = []
            for i, expand in include:
                if not expand:
                    kept.append(children[i])
                elif kept:
                    kept += children[i].children
                else:
                    kept = children[i].children  # lark's shortcut for a left recursion: the child's own list
        meta = Meta()  # type: ignore[no-untyped-call]
        if first is not None:
            meta.__dict__.update(_span(first, last))
        return Tree(name, kept, meta)

    return reduce
