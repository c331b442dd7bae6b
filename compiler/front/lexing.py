"""lark's contextual lexer in one tight loop: the check path's lexer (effspec.front.syntax).

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
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

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
        from lark.lexer import Token

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
