"""The canonical layout of a `.eff` file: read it with its comments, print it again.

The front end's grammar drops comments, so the formatter reads the text itself,
with a small recursive-descent reader that follows the grammar (``grammar/eff.lark``)
and its contextual lexer: a unit is read only where the grammar expects one (after
a number, a list's `]`, or a `file` reference), and keywords win over names where
both may stand.  It runs only on text the LALR parser has accepted, so it never
has to report an error of its own.

Every comment is kept, attached to what it sits beside:

- a comment on its own line is *leading*: it moves with the statement below it
  (or, before a `}`, stays at the end of its block);
- a comment after a statement, on the same line, is *trailing*: it stays at the
  end of that statement's line (after `{` or `}` for a block);
- a comment inside a value (a list written over several lines) goes on its own
  line above the statement.

The layout:

- `eff 1`, then each run or scaling separated by one blank line;
- inside a run: `title` and `source` first, then the blocks in the order of the
  language reference (model, convention, work, parallelism, hardware, timing,
  breakdown, ranks, calendar, target; unknown blocks after them, as written),
  then the claims; keys inside a block keep their order;
- one statement per line in blocks with more than one, two-space indent, `=`
  aligned across consecutive keys (and across consecutive claims), `from`
  aligned across those of them that cite a source, trailing comments aligned
  across the same lines;
- a block with a single key and no comment inside is one line:
  `convention { preset = palm }`;
- values with one space around binary operators and after commas, none inside
  brackets, a unit one space after its number; parentheses are kept;
- blank lines between statements are kept (at most one).

Pragmas keep their meaning: `# effspec: ignore[…]` silences findings *on its
line*, so a one-line block that carries such a pragma stays on one line, and
when a line holding several statements is split, each gets a copy of it.  A
pragma written after a token inside a statement goes to the end of the
statement's line; if the statement spanned several lines, it then covers all
of it (the one reach the layout cannot keep).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from effspec.front import lexicon

_WS = re.compile(r"[ \t\f\r\n]+")
_LINE_PRAGMA = re.compile(r"#\s*effspec:\s*ignore\b")

INDENT = "  "


@cache
def _terminal(name: str) -> re.Pattern[str]:
    """The grammar's terminal (COMMENT, NAME, NUMBER, STRING) as a compiled regex: effspec.front.lexicon."""
    return re.compile(lexicon.terminal(name))


def unit_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    """The grammar's UNIT terminal as a regex, from its unit words."""
    word = "(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + ")"
    atom = word + r"(?:\^-?[0-9])?"
    return re.compile(r"%|" + atom + r"(?:[/*]" + atom + r")*(?![A-Za-z0-9_])")


@dataclass
class Comment:
    text: str
    blank_before: bool = False
    line: int = 0  # 0-based line where it was written
    own_line: bool = True  # nothing but blanks before it on its line


@dataclass
class Node:
    """A statement, block, run or scaling, with the comments around it."""

    kind: str  # assign | claim | block | run | scaling
    head: str  # `key`, `claim name[point]`, block name, `run ID`, `scaling ID`
    value: str = ""  # assign and claim: the value, rendered
    provenance: str = ""  # ` from KIND "citation"`, or ""
    body: list[Node] = field(default_factory=list)
    leading: list[Comment] = field(default_factory=list)
    trailing: str | None = None  # after the statement, or after a block's `}`
    pragmas: list[tuple[int, str]] = field(default_factory=list)  # line pragmas on the lines it was written on
    open_comment: str | None = None  # after a block's `{`
    dangling: list[Comment] = field(default_factory=list)  # before a block's `}`
    blank_before: bool = False
    one_line: bool = False  # a block written on one line
    first_line: int = 0  # where it was written (0-based), for pragmas that cover a line
    last_line: int = 0
    open_line: int = -1  # a block's `{`

    @property
    def name(self) -> str:
        return self.head


@dataclass
class File:
    leading: list[Comment]
    header: str
    header_comment: str | None
    items: list[Node]
    dangling: list[Comment]


class _Reader:
    """A cursor over text the parser accepted, collecting comments as it skips them."""

    def __init__(self, text: str, unit: re.Pattern[str]) -> None:
        self.text = text
        self.pos = 0
        self.unit = unit
        self.pending: list[tuple[int, Comment]] = []  # comments on their own lines, not yet attached
        self.inner: list[tuple[int, Comment]] = []  # comments on a line with a token before them
        self.blank = False  # a blank line since the last token or comment
        self.newline = True  # a newline since the last token
        self.last_end = 0  # end of the last token
        self.line = 0  # 0-based line of pos
        self.last_line = 0  # line of the last token

    # -- whitespace and comments
    def skip(self) -> None:
        text = self.text
        while True:
            m = _WS.match(text, self.pos)
            if m:
                newlines = m.group(0).count("\n")
                self.line += newlines
                self.newline = self.newline or newlines > 0
                self.blank = self.blank or newlines >= 2
                self.pos = m.end()
            m = _terminal("COMMENT").match(text, self.pos)
            if not m:
                return
            comment = Comment(m.group(0).rstrip(), blank_before=self.blank, line=self.line, own_line=self.newline)
            if self.newline:
                self.pending.append((m.start(), comment))
            else:
                self.inner.append((m.start(), comment))
            self.blank = False
            self.pos = m.end()

    def trailing(self) -> str | None:
        """The comment on the rest of the last token's line, if any (consumed)."""
        self.skip()
        for i, (pos, comment) in enumerate(self.inner):
            if pos >= self.last_end:
                del self.inner[i]
                return comment.text
        return None

    def take_inner(self) -> list[Comment]:
        """The comments met before the last token: inside the statement just read."""
        inside = sorted([(p, c) for p, c in self.pending if p < self.last_end] + self.inner, key=lambda pc: pc[0])
        self.pending = [(p, c) for p, c in self.pending if p >= self.last_end]
        self.inner = []
        return [c for _, c in inside]

    def take_leading(self) -> tuple[list[Comment], bool]:
        """The own-line comments before the next token, and whether a blank line precedes it."""
        self.skip()
        comments, self.pending = self.pending, []
        return [c for _, c in comments], self.blank

    def _consumed(self, end: int) -> None:
        self.pos = end  # a token never holds a newline: the line stays
        self.last_end = end
        self.last_line = self.line
        self.newline = False
        self.blank = False

    # -- tokens
    def _token(self, pattern: re.Pattern[str]) -> str | None:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if m is None:
            return None
        self._consumed(m.end())
        return m.group(0)

    def peek(self, literal: str) -> bool:
        self.skip()
        return self.text.startswith(literal, self.pos)

    def peek_word(self) -> str | None:
        self.skip()
        m = _terminal("NAME").match(self.text, self.pos)
        return m.group(0) if m else None

    def literal(self, literal: str) -> None:
        self.skip()
        if not self.text.startswith(literal, self.pos):
            raise ValueError(f"expected {literal!r} at offset {self.pos}")
        self._consumed(self.pos + len(literal))

    def accept(self, literal: str) -> bool:
        if self.peek(literal):
            self.literal(literal)
            return True
        return False

    def name(self) -> str:
        tok = self._token(_terminal("NAME"))
        if tok is None:
            raise ValueError(f"expected a name at offset {self.pos}")
        return tok

    def number(self) -> str:
        tok = self._token(_terminal("NUMBER"))
        if tok is None:
            raise ValueError(f"expected a number at offset {self.pos}")
        return tok

    def string(self) -> str:
        tok = self._token(_terminal("STRING"))
        if tok is None:
            raise ValueError(f"expected a string at offset {self.pos}")
        return tok

    def maybe_unit(self) -> str | None:
        return self._token(self.unit)

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)



# -- values ---------------------------------------------------------------


def _value(r: _Reader) -> str:
    if r.peek('"'):
        return r.string()
    if r.accept("["):
        items: list[str] = []
        while not r.peek("]"):
            items.append(_value(r))
            if not r.accept(","):
                break
        r.literal("]")
        unit = r.maybe_unit()
        return "[" + ", ".join(items) + "]" + (f" {unit}" if unit else "")
    if r.peek_word() == "file":
        r.name()
        out = "file " + r.string()
        if r.peek_word() == "column":
            r.name()
            out += " column " + r.string()
        unit = r.maybe_unit()
        return out + (f" {unit}" if unit else "")
    return _expr(r)


def _expr(r: _Reader) -> str:
    out = _product(r)
    while True:
        for op in "+-":
            if r.accept(op):
                out += f" {op} " + _product(r)
                break
        else:
            return out


def _product(r: _Reader) -> str:
    out = _unary(r)
    while True:
        for op in "*/":
            if r.accept(op):
                out += f" {op} " + _unary(r)
                break
        else:
            return out


def _unary(r: _Reader) -> str:
    if r.accept("-"):
        return "-" + _unary(r)
    if r.accept("("):
        inner = _expr(r)
        r.literal(")")
        return f"({inner})"
    r.skip()
    if _terminal("NUMBER").match(r.text, r.pos):
        number = r.number()
        unit = r.maybe_unit()
        return number + (f" {unit}" if unit else "")
    return _dotted(r)


def _dotted(r: _Reader) -> str:
    parts = [r.name()]
    while r.accept("."):
        parts.append(r.name())
    return ".".join(parts)


def _provenance(r: _Reader) -> str:
    if r.peek_word() == "from":
        r.name()
        kind = r.name()
        return f" from {kind} {r.string()}"
    return ""


# -- statements -----------------------------------------------------------


def _statement(r: _Reader) -> Node:
    leading, blank = r.take_leading()
    first_line = r.line
    word = r.name()
    if word == "claim":
        head = "claim " + _dotted(r)
        if r.accept("["):
            head += f"[{r.name()}]"
            r.literal("]")
        r.literal("=")
        node = Node("claim", head)
    elif r.peek("{"):
        node = _braced(r, "block", word)
    else:
        r.literal("=")
        node = Node("assign", word)
    if node.kind != "block":
        node.value = _value(r)
        if node.kind == "assign" and r.accept("±"):  # `13.7 s ± 0.2 s`
            unit = (r.number(), r.maybe_unit())
            node.value += f" ± {unit[0]}" + (f" {unit[1]}" if unit[1] else "")
        node.provenance = _provenance(r)
        node.last_line = r.last_line
        node.trailing = r.trailing()
        if _is_pragma(node.trailing):
            node.pragmas.append((node.last_line, node.trailing or ""))
    node.first_line = first_line
    # Comments written inside the statement go on their own lines above it,
    # but a line pragma written after a token goes to the end of its line,
    # where it still covers the statement.
    for comment in r.take_inner():
        if comment.own_line or not _is_pragma(comment.text):
            node.leading.append(comment)
        else:
            node.trailing = _joined(node.trailing, comment.text)
            node.pragmas.append((comment.line, comment.text))
    node.leading = leading + node.leading
    node.blank_before = blank
    return node


def _joined(first: str | None, comment: str) -> str:
    """Two comments as one: `# note  # effspec: ignore`."""
    return comment if first is None else first if comment in first else f"{first}  {comment}"


def _braced(r: _Reader, kind: str, head: str) -> Node:
    """A `{ … }` body after ``head``: a block, run or scaling."""
    r.skip()
    node = Node(kind, head)
    node.open_line = r.line
    r.literal("{")
    node.open_comment = r.trailing()
    if _is_pragma(node.open_comment):
        node.pragmas.append((node.open_line, node.open_comment or ""))
    for comment in r.take_inner():  # between the head and its `{`
        if comment.own_line or not _is_pragma(comment.text):
            node.leading.append(comment)
        else:  # `timing  # effspec: ignore` then `{`: after the `{`, on the block's first line
            node.open_comment = _joined(node.open_comment, comment.text)
            node.pragmas.append((comment.line, comment.text))
    while not r.peek("}"):
        node.body.append(_statement(r))
    node.dangling, _ = r.take_leading()
    node.dangling += r.take_inner()
    r.literal("}")
    node.last_line = r.last_line
    node.one_line = node.open_line == node.last_line
    node.trailing = r.trailing()
    if _is_pragma(node.trailing):
        node.pragmas.append((node.last_line, node.trailing or ""))
    _spread_pragmas(node)
    return node


def _is_pragma(comment: str | None) -> bool:
    return comment is not None and _LINE_PRAGMA.search(comment) is not None


def _spread_pragmas(node: Node) -> None:
    """A line pragma covers every statement written on its line: when the layout
    puts those statements on lines of their own, each gets a copy of it (and so
    does a block's `{` or `}` line when the pragma was on it)."""
    own = [] if _compact(node) else node.pragmas  # a compact block keeps its line, pragma and all
    for line, pragma in [p for stmt in node.body for p in stmt.pragmas] + own:
        for stmt in node.body:
            if stmt.first_line <= line <= stmt.last_line:
                _cover(stmt, line, pragma)
        if node.open_line == line and not node.one_line:
            node.open_comment = _joined(node.open_comment, pragma)


def _cover(node: Node, line: int, pragma: str) -> None:
    """Give ``node`` the pragma of ``line``, where the layout will print it."""
    if node.kind != "block" or _compact(node):
        node.trailing = _joined(node.trailing, pragma)
        return
    if line == node.open_line:
        node.open_comment = _joined(node.open_comment, pragma)
    if line == node.last_line:
        node.trailing = _joined(node.trailing, pragma)
    for stmt in node.body:
        if stmt.first_line <= line <= stmt.last_line:
            _cover(stmt, line, pragma)


def read(text: str, unit: re.Pattern[str]) -> File:
    """The layout tree of ``text``, which must be a spec the parser accepts."""
    r = _Reader(text, unit)
    if r.text.startswith("\ufeff"):
        r.pos = 1
    leading, _ = r.take_leading()
    r.literal("eff")
    header = "eff " + r.number()
    header_comment = r.trailing()
    items: list[Node] = []
    while not r.at_end():
        comments, blank = r.take_leading()
        word = r.name()
        ident = r.name()
        item = _braced(r, word, f"{word} {ident}")
        item.leading = comments + item.leading
        item.blank_before = blank
        items.append(item)
    dangling, _ = r.take_leading()
    return File(leading, header, header_comment, items, dangling + r.take_inner())


# -- printing -------------------------------------------------------------


def _order(body: list[Node], block_order: dict[str, int], top: bool) -> list[Node]:
    """Run bodies: keys, then blocks in the reference's order, then claims (stable)."""
    if not top:
        return body

    def rank(node: Node) -> tuple[int, int]:
        if node.kind == "assign":
            return (0, 0)
        if node.kind == "block":
            return (1, block_order.get(node.head, len(block_order)))
        return (2, 0)

    return sorted(body, key=rank)


def _stmt_text(node: Node, width: int, value_width: int = 0) -> str:
    if node.kind in ("assign", "claim"):
        value = node.value.ljust(value_width) if node.provenance else node.value
        return f"{node.head.ljust(width)} = {value}{node.provenance}"
    raise AssertionError(node.kind)


def _compact(node: Node) -> bool:
    """Print a block on one line: one key and no comment inside, or a one-line
    block that a line pragma covers."""
    if node.open_comment or node.dangling or any(s.kind == "block" for s in node.body):
        return False
    if any(s.leading for s in node.body) or any(s.trailing for s in node.body[:-1]):
        return False
    if not node.body:
        return True
    if len(node.body) == 1:
        return not (node.trailing and node.body[0].trailing)
    pragma = node.trailing is not None and _LINE_PRAGMA.search(node.trailing)
    return bool(node.one_line and pragma and node.body and not node.body[-1].trailing)


def _compact_text(node: Node) -> str:
    inner = "  ".join(_stmt_text(s, 0) for s in node.body)
    return f"{node.head} {{ {inner} }}" if inner else f"{node.head} {{}}"


def _comment_lines(comments: list[Comment], indent: str, first: bool) -> list[str]:
    lines: list[str] = []
    for i, c in enumerate(comments):
        if c.blank_before and not (first and i == 0):
            lines.append("")
        lines.append(indent + c.text)
    return lines


def _groups(body: list[Node]) -> list[list[Node]]:
    """Maximal runs of consecutive keys, or of consecutive claims: each aligns its `=`."""
    groups: list[list[Node]] = []
    for node in body:
        if groups and node.kind == groups[-1][-1].kind and node.kind in ("assign", "claim"):
            groups[-1].append(node)
        else:
            groups.append([node])
    return groups


def _body_lines(nodes: list[Node], indent: str, block_order: dict[str, int], top: bool) -> list[str]:
    lines: list[str] = []
    for group in _groups(_order(nodes, block_order, top)):
        width = max(len(n.head) for n in group) if group[0].kind in ("assign", "claim") else 0
        # `from` aligns too, across the statements of the group that have one (when several do)
        cited = [len(n.value) for n in group if n.provenance]
        value_width = max(cited) if len(cited) > 1 else 0
        rendered: list[tuple[Node, list[str]]] = []
        for node in group:
            if node.kind in ("assign", "claim"):
                rendered.append((node, [indent + _stmt_text(node, width, value_width)]))
            else:
                rendered.append((node, _node_lines(node, indent, block_order)))
        # trailing comments of one-line statements align across the group
        column = max((len(ls[0]) for n, ls in rendered if n.kind != "block" and n.trailing), default=0) + 2
        for node, node_lines in rendered:
            first = not lines
            lines += _comment_lines(node.leading, indent, first)
            if node.blank_before and (node.leading or not first):
                lines.append("")
            if node.kind != "block" and node.trailing:
                node_lines = [node_lines[0].ljust(column) + node.trailing]
            lines += node_lines
    return lines


def _node_lines(node: Node, indent: str, block_order: dict[str, int]) -> list[str]:
    """A block, run or scaling, at ``indent``."""
    if node.kind == "block" and _compact(node):
        text = indent + _compact_text(node)
        trailing = node.trailing or (node.body[0].trailing if len(node.body) == 1 else None)
        return [text + ("  " + trailing if trailing else "")]
    opening = f"{indent}{node.head} {{" + (f"  {node.open_comment}" if node.open_comment else "")
    inner = indent + INDENT
    lines = [opening]
    lines += _body_lines(node.body, inner, block_order, node.kind == "run")
    lines += _comment_lines(node.dangling, inner, len(lines) == 1)
    lines.append(f"{indent}}}" + (f"  {node.trailing}" if node.trailing else ""))
    return lines


def render(tree: File, block_order: dict[str, int]) -> str:
    lines = _comment_lines(tree.leading, "", True)
    lines.append(tree.header + (f"  {tree.header_comment}" if tree.header_comment else ""))
    for item in tree.items:
        lines.append("")
        lines += _comment_lines(item.leading, "", True)
        if item.leading and item.blank_before:
            lines.append("")
        lines += _node_lines(item, "", block_order)
    if tree.dangling:
        lines.append("")
        lines += _comment_lines(tree.dangling, "", True)
    return "\n".join(line.rstrip() for line in lines) + "\n"
