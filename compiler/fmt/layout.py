"""The canonical layout of a `.eff` file: read it with its comments, print it again.

The formatter reads a spec as the front end does, with lark and the grammar
(``grammar/eff.lark``): the layout is read off the front end's parse tree, and
the comments, which the grammar ignores, come from lark's lexer, with their
positions, through its lexer callbacks (``effspec.front.syntax.parse(text,
kept)``, which also keeps the `{` and `(` the tree leaves out).  There is no
second reader of the language: what lark did not parse is never laid out.

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
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

_LINE_PRAGMA = re.compile(r"#\s*effspec:\s*ignore\b")
_HSPACE = re.compile(r"[ \t\f\r]*")  # what the grammar's `%ignore` skips on one line

INDENT = "  "


@dataclass
class Comment:
    text: str
    blank_before: bool = False
    line: int = 0  # 0-based line where it was written
    own_line: bool = True  # nothing but blanks before it on its line
    pos: int = 0  # its offset in the text


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


class _Source:
    """The text as lark read it, and the tokens its lexer kept beside the tree (comments, `{`, `(`)."""

    def __init__(self, text: str, kept: list[Any]) -> None:
        self.text = text
        self.braces = [t for t in kept if t.type == "LBRACE"]
        self.brace_starts = [t.start_pos for t in self.braces]
        self.parens = [t.start_pos for t in kept if t.type == "LPAR"]
        self.comments = [self._comment(t) for t in kept if t.type == "COMMENT"]
        self.starts = [c.pos for c in self.comments]

    def _comment(self, token: Any) -> Comment:
        pos = token.start_pos
        own_line = _HSPACE.fullmatch(self.text, self.text.rfind("\n", 0, pos) + 1, pos) is not None
        return Comment(str(token).rstrip(), self.blank_before(pos), token.line - 1, own_line, pos)

    def blank_before(self, pos: int) -> bool:
        """Whether the whitespace just before offset ``pos`` holds a blank line."""
        start = pos
        while start > 0 and self.text[start - 1] in " \t\f\r\n":
            start -= 1
        return self.text.count("\n", start, pos) >= 2

    def between(self, start: int, end: int) -> list[Comment]:
        """The comments written between offsets ``start`` and ``end``."""
        return self.comments[bisect_left(self.starts, start):bisect_left(self.starts, end)]

    def leading(self, start: int, end: int) -> list[Comment]:
        """The comments on lines of their own between ``start`` and ``end``: they lead what comes next."""
        return [c for c in self.between(start, end) if c.own_line]

    def trailing(self, end: int) -> str | None:
        """The comment just after offset ``end``, on its line (nothing but blanks between), if any."""
        i = bisect_left(self.starts, end)
        if i < len(self.starts) and _HSPACE.fullmatch(self.text, end, self.starts[i]):
            return self.comments[i].text
        return None

    def brace(self, after: int) -> Any:
        """The first `{` after offset ``after``."""
        return self.braces[bisect_right(self.brace_starts, after)]

    def parentheses(self, node: Any) -> int:
        """How many pairs of parentheses the text writes around expression ``node``: lark's
        positions of a node inlined through `"(" expr ")"` start at its first `(` (its container)."""
        meta = node.meta
        return bisect_left(self.parens, meta.start_pos) - bisect_left(self.parens, meta.container_start_pos)


# -- values ---------------------------------------------------------------

_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def _value(src: _Source, node: Any) -> str:
    """A value as laid out: one space around binary operators and after commas, a unit one space after."""
    children = node.children
    if node.data == "string":
        return str(children[0])
    if node.data not in ("list", "file"):
        return _expr(src, node)
    unit = "".join(f" {c}" for c in children if getattr(c, "type", None) == "UNIT")
    if node.data == "list":  # values, then the unit (an empty list's one child is None)
        return "[" + ", ".join(_value(src, c) for c in children if hasattr(c, "data")) + "]" + unit
    return "file " + " column ".join(str(c) for c in children if c.type == "STRING") + unit


def _expr(src: _Source, node: Any) -> str:
    if node.data in _OPERATORS:
        left, right = node.children
        inner = f"{_expr(src, left)} {_OPERATORS[node.data]} {_expr(src, right)}"
    elif node.data == "neg":
        inner = "-" + _expr(src, node.children[0])
    elif node.data == "ref":
        inner = _dotted(node.children[0])
    else:  # quantity: a number and its unit
        inner = " ".join(str(c) for c in node.children)
    pairs = src.parentheses(node)
    return "(" * pairs + inner + ")" * pairs


def _dotted(node: Any) -> str:
    return ".".join(str(c) for c in node.children)


def _provenance(node: Any) -> str:
    kind, citation = node.children
    return f" from {kind} {citation}"


# -- statements -----------------------------------------------------------


def _statement(src: _Source, tree: Any, after: int) -> Node:
    """A key, claim or block of a body; ``after``: the end of the `{` or statement before it."""
    start = tree.meta.start_pos
    if tree.data == "block":
        node = _braced(src, tree, "block", str(tree.children[0]), 1)
    else:
        node = _keyed(src, tree)
    node.first_line = tree.meta.line - 1
    node.leading = src.leading(after, start) + node.leading
    node.blank_before = src.blank_before(start)
    return node


def _keyed(src: _Source, tree: Any) -> Node:
    """An assign or a claim, with its comments."""
    node = _assign(src, tree) if tree.data == "assign" else _claim(src, tree)
    node.last_line = tree.meta.end_line - 1
    node.trailing = src.trailing(tree.meta.end_pos)
    if _is_pragma(node.trailing):
        node.pragmas.append((node.last_line, node.trailing or ""))
    # Comments written inside the statement go on their own lines above it,
    # but a line pragma written after a token goes to the end of its line,
    # where it still covers the statement.
    for pragma in _hoist(node, src.between(tree.meta.start_pos, tree.meta.end_pos)):
        node.trailing = _joined(node.trailing, pragma)
    return node


def _assign(src: _Source, tree: Any) -> Node:
    key, value, *rest = tree.children
    node = Node("assign", str(key), _value(src, value))
    for part in rest:
        if part.data == "plusminus":  # `13.7 s ± 0.2 s`
            node.value += " ± " + " ".join(str(c) for c in part.children)
        else:
            node.provenance = _provenance(part)
    return node


def _claim(src: _Source, tree: Any) -> Node:
    dotted, *rest = tree.children
    head = "claim " + _dotted(dotted)
    if rest[0].data == "point":
        head += f"[{rest.pop(0).children[0]}]"
    value, *provenance = rest
    return Node("claim", head, _value(src, value), "".join(_provenance(p) for p in provenance))


def _hoist(node: Node, comments: list[Comment]) -> list[str]:
    """Put the comments written inside ``node`` (a statement, or a block's head) above it, except
    each line pragma written after a token: those are returned, for the end of the line."""
    pragmas: list[str] = []
    for comment in comments:
        if comment.own_line or not _is_pragma(comment.text):
            node.leading.append(comment)
        else:
            pragmas.append(comment.text)
            node.pragmas.append((comment.line, comment.text))
    return pragmas


def _joined(first: str | None, comment: str) -> str:
    """Two comments as one: `# note  # effspec: ignore`."""
    return comment if first is None else first if comment in first else f"{first}  {comment}"


def _braced(src: _Source, tree: Any, kind: str, head: str, first: int, inside: tuple[Comment, ...] = ()) -> Node:
    """A block, run or scaling: ``head``, `{`, the statements ``tree.children[first:]``, `}`.
    ``inside``: comments to take as written between the head and its `{`, before those that are."""
    meta = tree.meta
    brace = src.brace(meta.start_pos)
    node = Node(kind, head, open_line=brace.line - 1)
    node.open_comment = src.trailing(brace.end_pos)
    if _is_pragma(node.open_comment):
        node.pragmas.append((node.open_line, node.open_comment or ""))
    # `timing  # effspec: ignore` then `{`: after the `{`, on the block's first line
    for pragma in _hoist(node, [*inside, *src.between(meta.start_pos, brace.start_pos)]):
        node.open_comment = _joined(node.open_comment, pragma)
    end = brace.end_pos
    for stmt in tree.children[first:]:
        node.body.append(_statement(src, stmt, end))
        end = stmt.meta.end_pos
    node.dangling = src.leading(end, meta.end_pos - 1)
    node.last_line = meta.end_line - 1
    node.one_line = node.open_line == node.last_line
    node.trailing = src.trailing(meta.end_pos)
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


def read(text: str, tree: Any, kept: list[Any]) -> File:
    """The layout tree of ``text`` from lark's parse ``tree`` of it and the tokens its lexer ``kept``
    (``effspec.front.syntax.parse(text, kept)``)."""
    if text.startswith("\ufeff"):  # as the parser read it: a space for the byte-order mark
        text = " " + text[1:]
    src = _Source(text, kept)
    header, *items = tree.children
    eff, number = header.meta.start_pos, header.children[0]
    # A comment after `eff` on its line (`eff  # v` then `1`) goes with the first item's head.
    after_eff = tuple(c for c in src.between(eff, number.start_pos) if not c.own_line)
    nodes: list[Node] = []
    end = eff
    for item in items:
        first = 2 if item.data == "run" else 1  # `run` is a token of the tree; `scaling` is not
        node = _braced(src, item, item.data, f"{item.data} {item.children[first - 1]}", first,
                       after_eff if not nodes else ())
        node.leading = src.leading(end, item.meta.start_pos) + node.leading
        node.blank_before = src.blank_before(item.meta.start_pos)
        nodes.append(node)
        end = item.meta.end_pos
    dangling = src.leading(end, len(text)) + list(after_eff if not nodes else ())
    return File(src.between(0, eff), f"eff {number}", src.trailing(number.end_pos), nodes, dangling)


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
