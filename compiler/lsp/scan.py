"""Positions and a tolerant tokenizer for editor features.

The editor's text is often half-typed and does not parse, so completion and
key hovers read a token stream of their own: names, numbers, strings,
comments and punctuation, never an error.  Positions here are 0-based lines
and 0-based columns in code points (Python string indexes); LSP positions are
UTF-16 code units, converted by :func:`to_utf16` and :func:`from_utf16`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from effspec.diagnostics import Span
from effspec.front import lexicon


@cache
def _token_pattern() -> re.Pattern[str]:
    """One alternative per token kind; NUMBER, NAME and COMMENT are the grammar's (effspec.front.lexicon).
    A string may be unterminated (half-typed text), so it is not the grammar's STRING."""
    return re.compile(
        rf"(?P<comment>{lexicon.terminal('COMMENT')})"
        r"|(?P<string>\"(?:[^\"\\\n]|\\.)*\"?)"
        rf"|(?P<number>{lexicon.terminal('NUMBER')})"
        rf"|(?P<name>{lexicon.terminal('NAME')})"
        r"|(?P<space>[ \t\f\r\n]+)"
        r"|(?P<punct>.)",
        re.S,
    )


@dataclass(frozen=True)
class Tok:
    kind: str  # comment | string | number | name | punct
    text: str
    start: int  # offset in the text
    end: int
    line: int  # 0-based
    col: int  # 0-based, code points
    end_line: int
    end_col: int


def tokens(text: str) -> list[Tok]:
    out: list[Tok] = []
    line, line_start = 0, 0
    for m in _token_pattern().finditer(text):
        kind = m.lastgroup or "punct"
        start, end = m.span()
        if kind == "space":
            newlines = m.group().count("\n")
            if newlines:
                line += newlines
                line_start = start + m.group().rfind("\n") + 1
            continue
        out.append(Tok(kind, m.group(), start, end, line, start - line_start, line, end - line_start))
    return out


def offset_of(text: str, line: int, col: int) -> int:
    """The string index of a 0-based (line, code-point column)."""
    start = 0
    for _ in range(line):
        nl = text.find("\n", start)
        if nl < 0:
            return len(text)
        start = nl + 1
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    return min(start + col, end)


def to_utf16(line: str, col: int) -> int:
    """A code-point column of ``line`` as UTF-16 code units."""
    head = line[:col]
    return len(head) + sum(1 for c in head if ord(c) > 0xFFFF) + max(0, col - len(line))


def from_utf16(line: str, units: int) -> int:
    """A UTF-16 column of ``line`` as a code-point column."""
    count = 0
    for i, c in enumerate(line):
        if count >= units:
            return i
        count += 2 if ord(c) > 0xFFFF else 1
    return len(line)


def contains(span: Span | None, line: int, col: int) -> bool:
    """Whether a 1-based, end-exclusive Span holds the 0-based (line, col) (its end included, for a cursor after a word)."""
    if span is None:
        return False
    pos = (line + 1, col + 1)
    return (span.line, span.column) <= pos <= (span.end_line, span.end_column)


# ----------------------------------------------------------------------------
# The context at a cursor


@dataclass(frozen=True)
class Frame:
    kind: str  # run | scaling | block
    name: str  # the run or scaling id, or the block name
    run: str | None = None  # the enclosing run's id (a block's)


@dataclass(frozen=True)
class Context:
    """What the cursor is inside and what it follows.

    ``where`` is one of: ``top`` (between runs), ``statement`` (a key, a block
    or `claim` may start here), ``claim`` (after `claim`), ``provenance`` (after a
    value's `from`), ``value`` (after
    `key =`), ``unit`` (after a number that is a key's value), ``list`` (inside
    `[ … ]` of a key), ``string`` (inside a string after `key =`).
    """

    where: str
    frames: tuple[Frame, ...]
    key: str | None = None  # the key whose value the cursor is in
    prefix: str = ""  # the part of the word already typed
    prefix_start: int = 0  # its column (code points)

    @property
    def block(self) -> str | None:
        """The innermost block name: `model`, …, `run` for a run's own level, `scaling`, or None at the top."""
        if not self.frames:
            return None
        f = self.frames[-1]
        return f.name if f.kind == "block" else f.kind


def frames_before(toks: list[Tok]) -> tuple[Frame, ...]:
    stack: list[Frame] = []
    for i, t in enumerate(toks):
        if t.kind != "punct" or t.text not in "{}":
            continue
        if t.text == "}":
            if stack:
                stack.pop()
            continue
        prev = toks[i - 1] if i >= 1 else None
        prev2 = toks[i - 2] if i >= 2 else None
        if prev is not None and prev.kind == "name" and prev2 is not None and prev2.kind == "name" \
                and prev2.text in ("run", "scaling"):
            stack.append(Frame(prev2.text, prev.text))
        elif prev is not None and prev.kind == "name":
            run = next((f.name for f in reversed(stack) if f.kind == "run"), None)
            stack.append(Frame("block", prev.text, run))
        else:
            stack.append(Frame("block", "?"))
    return tuple(stack)


def context_at(text: str, line: int, col: int) -> Context:
    """The completion context at a 0-based (line, code-point col)."""
    offset = offset_of(text, line, col)
    toks = [t for t in tokens(text[:offset]) if t.kind != "comment"]
    prefix, prefix_start = "", col
    if toks and toks[-1].end == offset and toks[-1].kind in ("name", "string"):
        if toks[-1].kind == "string" and (len(toks[-1].text) == 1 or not toks[-1].text.endswith('"')):
            prefix, prefix_start = toks[-1].text, toks[-1].col  # an open string
            return _value_context(toks[:-1], "string", prefix, prefix_start)
        prefix, prefix_start = toks[-1].text, toks[-1].col
        toks = toks[:-1]
    frames = frames_before(toks)
    if not frames:
        return Context("top", frames, prefix=prefix, prefix_start=prefix_start)
    last = toks[-1] if toks else None
    if last is not None and last.kind == "name" and last.text == "claim":
        return Context("claim", frames, prefix=prefix, prefix_start=prefix_start)
    if last is not None and last.kind == "name" and last.text == "from" and len(toks) >= 2 and toks[-2].text != "=":
        return Context("provenance", frames, prefix=prefix, prefix_start=prefix_start)
    if last is not None and last.kind == "punct" and last.text == "=":
        return _value_context(toks, "value", prefix, prefix_start)
    if last is not None and last.kind == "number":
        ctx = _value_context(toks, "unit", prefix, prefix_start)
        if ctx.key is not None:
            return ctx
    unit = _unit_start(toks, offset - len(prefix)) if toks and toks[-1].kind == "punct" or prefix else None
    if unit is not None:  # `2048 token/` or `780 TFLOP/s`: a compound unit being typed
        start, number_index = unit
        ctx = _value_context(toks[: number_index + 1], "unit", text[start:offset], toks[number_index + 1].col)
        if ctx.key is not None:
            return ctx
    if last is not None and last.kind == "punct" and last.text in "[,":
        return _value_context(toks, "list", prefix, prefix_start)
    return Context("statement", frames, prefix=prefix, prefix_start=prefix_start)


def _unit_start(toks: list[Tok], word_start: int) -> tuple[int, int] | None:
    """Where a unit written after a number starts when the text before the cursor is one with no
    space inside (`2048 token/`, `780 TFLOP/s^`): (its offset, the number's index), else None.
    ``word_start`` is where the word being typed starts (the cursor when there is none)."""
    end = word_start
    i = len(toks) - 1
    while i >= 1 and (toks[i].kind == "name" or toks[i].text in ("/", "*", "^", "-")) and toks[i].end == end:
        end = toks[i].start
        if toks[i].kind == "name" and toks[i - 1].kind == "number" and toks[i].start > toks[i - 1].end:
            return toks[i].start, i - 1
        i -= 1
    return None


def _value_context(toks: list[Tok], where: str, prefix: str, prefix_start: int) -> Context:
    """The key a value belongs to: the name before the last `=` of the statement."""
    frames = frames_before(toks)
    for i in range(len(toks) - 1, 0, -1):
        t = toks[i]
        if t.kind == "punct" and t.text in "{}":
            break
        if t.kind == "punct" and t.text == "=" and toks[i - 1].kind == "name":
            # `claim mfu = …`: a claim's value, not a key's
            if i >= 2 and toks[i - 2].kind == "name" and toks[i - 2].text == "claim":
                return Context(where, frames, key=f"claim {toks[i - 1].text}", prefix=prefix, prefix_start=prefix_start)
            return Context(where, frames, key=toks[i - 1].text, prefix=prefix, prefix_start=prefix_start)
    return Context(where, frames, prefix=prefix, prefix_start=prefix_start)


def token_at(text: str, line: int, col: int) -> tuple[Tok | None, list[Tok], int]:
    """The token under (line, col) (or just before it), all tokens, and its index."""
    toks = tokens(text)
    for i, t in enumerate(toks):
        if (t.line, t.col) <= (line, col) <= (t.end_line, t.end_col) and t.kind != "comment":
            return t, toks, i
    return None, toks, -1
