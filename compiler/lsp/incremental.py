"""Incremental parsing: re-parse only the runs and scalings whose text changed.

Parsing is most of a check (about 60 % of a 100-run spec), and an edit touches
one run.  :class:`IncrementalParser` splits the text into the header and its
top-level items (`run … { … }`, `scaling … { … }`), parses an item only when
its text is new, and moves the tree of an unchanged item to where the item
now is (its line numbers and offsets; columns are per line and do not move).
The trees it returns are the trees :func:`effspec.front.syntax.parse` returns
for the whole text, position for position (tests/lsp/test_lsp_incremental.py
compares them token by token); whenever that cannot be guaranteed cheaply -- a
syntax error, an invisible character, deep nesting or too many runs, anything between items
that is not a comment, an item written twice -- it returns the full parse.

It plugs into the pipeline as ``effspec.check_text(…, parse=parser.parse,
memo=parser.memo)``: the memo lets the IR builder reuse a run whose lines did
not change (its IR holds lines and columns, so identical lines at the same
place give an identical IR; a run with a `file` reference is always rebuilt).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from effspec.front import lexicon

_LINE_FIELDS = ("line", "end_line", "container_line", "container_end_line")
_POS_FIELDS = ("start_pos", "end_pos", "container_start_pos", "container_end_pos")


@dataclass
class _Entry:
    line: int  # 1-based line of the item's first character when it was parsed or last moved
    offset: int
    tree: Any  # a lark Tree
    tokens: list[Any]  # every Token of the tree, once
    metas: list[Any]  # every non-empty Meta of its nodes, once

    @classmethod
    def of(cls, line: int, offset: int, tree: Any) -> _Entry:
        from lark import Token, Tree

        tokens: dict[int, Any] = {}
        metas: dict[int, Any] = {}
        stack = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, Token):
                tokens[id(node)] = node
            elif isinstance(node, Tree):
                if not getattr(node.meta, "empty", True):
                    metas[id(node.meta)] = node.meta
                stack.extend(node.children)
        return cls(line, offset, tree, list(tokens.values()), list(metas.values()))

    def move(self, line: int, offset: int) -> None:
        """Move every position of the tree to an item that now starts at ``line`` and ``offset``."""
        lines, shift = line - self.line, offset - self.offset
        for tok in self.tokens:  # the lexer sets all four on every token
            tok.start_pos += shift
            tok.end_pos += shift
        for meta in self.metas:
            for name in _POS_FIELDS:
                setattr(meta, name, getattr(meta, name) + shift)
        if lines:
            for tok in self.tokens:
                tok.line += lines
                tok.end_line += lines
            for meta in self.metas:
                for name in _LINE_FIELDS:
                    setattr(meta, name, getattr(meta, name) + lines)
        self.line, self.offset = line, offset


# Strings, comments and braces: all that matters inside an item to find where it ends.
_BRACES = re.compile(r'"(?:[^"\\\n]|\\.)*+"|#[^\n]*+|[{}"]')
_SKIP = r"(?:[ \t\f\r\n]++|#[^\n]*+)*+"  # possessive: no backtracking on long runs of spaces or `#`


@cache
def _header() -> re.Pattern[str]:
    """`eff` and the grammar's NUMBER (effspec.front.lexicon), after blanks and comments."""
    return re.compile(_SKIP + r"eff" + _SKIP + lexicon.terminal("NUMBER") + r"(?![A-Za-z0-9_.])")


@cache
def _item() -> re.Pattern[str]:
    """`run` or `scaling`, the grammar's NAME, `{`."""
    return re.compile(_SKIP + r"(run|scaling)(?![A-Za-z0-9_])" + _SKIP + lexicon.terminal("NAME") + _SKIP + r"\{")


_TAIL = re.compile(_SKIP + r"\Z")


def split(text: str) -> tuple[int, list[tuple[int, int, int, int]]] | None:
    """(end offset of the header, [(start, end, line, column) of each top-level item]), or None when the
    text is not a header followed by balanced `run`/`scaling` items and comments."""
    header = _header().match(text)
    if header is None:
        return None
    items: list[tuple[int, int, int, int]] = []
    pos, line, line_start, counted = header.end(), 1, 0, 0
    while not _TAIL.match(text, pos):
        item = _item().match(text, pos)
        if item is None:
            return None
        start = item.start(1)
        depth, end = 0, -1
        for m in _BRACES.finditer(text, item.end() - 1):
            tok = m.group()
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    end = m.end()
                    break
            elif tok == '"':
                return None  # an unterminated string
        if end < 0:
            return None
        line += text.count("\n", counted, start)
        counted = start
        nl = text.rfind("\n", 0, start)
        line_start = nl + 1
        items.append((start, end, line, start - line_start + 1))
        pos = end
    return header.end(), items


class ItemMemo(dict):
    """The IR builder's memo (``effspec.check_text(…, memo=…)``): a run's IR by its exact lines.
    :meth:`prune` keeps only what the last check used, so it holds one version of each run."""

    def __init__(self) -> None:
        super().__init__()
        self.used: set[object] = set()
        self.hits = 0

    def get(self, key, default=None):
        value = super().get(key, default)
        if value is not default:
            self.used.add(key)
            self.hits += 1
        return value

    def __setitem__(self, key, value) -> None:
        self.used.add(key)
        super().__setitem__(key, value)

    def prune(self) -> None:
        for key in [k for k in self if k not in self.used]:
            del self[key]
        self.used = set()


class IncrementalParser:
    """A drop-in for :func:`effspec.front.syntax.parse` that remembers the trees of top-level items
    (and carries the build memo of the same document, :attr:`memo`)."""

    def __init__(self, limit: int = 20_000) -> None:
        self.memo = ItemMemo()
        self.items: dict[tuple[str, int], _Entry] = {}  # (item text, column) -> its tree and where it is
        self.limit = limit
        self.hits = 0
        self.misses = 0
        self.errors = 0  # the fast path raised (a bug): the full parse was used

    def parse(self, text: str):
        from effspec.front import syntax

        tree = None
        try:
            tree = self._fast(text)
        except Exception:  # never worse than the full parse
            self.errors += 1
            self.items.clear()
            tree = None
        return (tree, []) if tree is not None else syntax.parse(text)

    def _fast(self, text: str):
        from lark import Tree
        from lark.tree import Meta

        from effspec.front import syntax
        from effspec.front.limits import LIMITS

        if len(text) > LIMITS.max_spec_bytes or text.startswith("\ufeff") or syntax._INVISIBLE.search(text) \
                or syntax._prescan(text) is not None:
            return None
        parts = split(text)
        if parts is None:
            return None
        header_end, items = parts
        chunks = [(text[start:end], col) for start, end, _line, col in items]
        if len(set(chunks)) != len(chunks):
            return None
        head = self._parse(text[: items[0][0]] if items else text)
        if head is None or (items and len(head.children) != 1):
            return None
        if not items:
            return head
        trees = []
        used = set()
        for (start, _end, line, col), chunk in zip(items, chunks, strict=True):
            key = (chunk[0], col)
            entry = self.items.get(key)
            if entry is None:
                self.misses += 1
                padded = text[:header_end] + "".join(c if c == "\n" else " " for c in text[header_end:start]) + chunk[0]
                parsed = self._parse(padded)
                if parsed is None or len(parsed.children) != 2:
                    return None
                entry = _Entry.of(line, start, parsed.children[1])
                self.items[key] = entry
            else:
                self.hits += 1
                if entry.line != line or entry.offset != start:
                    entry.move(line, start)
            used.add(key)
            trees.append(entry.tree)
        if len(self.items) > self.limit:  # forget the items no longer in the text
            self.items = {k: v for k, v in self.items.items() if k in used}
        first, last = head.meta, trees[-1].meta
        meta = Meta()
        meta.empty = False
        for name in ("line", "column", "start_pos", "container_line", "container_column", "container_start_pos"):
            setattr(meta, name, getattr(first, name))
        for name in ("end_line", "end_column", "end_pos", "container_end_line", "container_end_column", "container_end_pos"):
            setattr(meta, name, getattr(last, name))
        return Tree("start", [head.children[0], *trees], meta)

    @staticmethod
    def _parse(text: str):
        from lark.exceptions import LarkError

        from effspec.front import syntax

        try:
            return syntax.parse_tree(text)
        except (LarkError, RecursionError):
            return None
