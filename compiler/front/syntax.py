"""Stage 1: `.eff` text to a lark syntax tree, with EFF001 in plain words.

lark's exceptions never leave this module.  On a syntax error the parser
records a diagnostic, blanks the offending line (keeping its braces so block
structure survives) and parses again, so one run reports several independent
errors.  After ``MAX_SYNTAX_ERRORS`` it stops.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from effspec.diagnostics import Diagnostic, Span, source_lines
from effspec.front.limits import LIMITS

if TYPE_CHECKING:  # lark is imported when a spec is parsed, not when this module is
    from lark import Lark, Token, Tree
    from lark.exceptions import UnexpectedCharacters, UnexpectedInput

MAX_SYNTAX_ERRORS = 20

# A node of the parse tree as the builder walks it: a lark Tree or Token, or
# None for an absent optional part.  The walk is duck-typed on lark's objects
# (`getattr(node, "data", None)`), so at this boundary the type is Any.
Node = Any

# How terminals read in a message.
_TERMINAL_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "UNIT": "a unit",
    "EQUAL": "`=`",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "LSQB": "`[`",
    "RSQB": "`]`",
    "LPAR": "`(`",
    "RPAR": "`)`",
    "COMMA": "`,`",
    "DOT": "`.`",
    "PLUS": "`+`",
    "MINUS": "`-`",
    "STAR": "`*`",
    "SLASH": "`/`",
    "RUN": "`run`",
    "SCALING": "`scaling`",
    "CLAIM": "`claim`",
    "FROM": "`from`",
    "FILE": "`file`",
    "COLUMN": "`column`",
    "EFF": "`eff`",
    "$END": "the end of the file",
}


@cache
def grammar_text() -> str:
    # A plain read beside the package module: importlib.resources' machinery
    # costs ~25 ms of imports at start-up, and the grammar is a real file in
    # both editable and wheel installs.
    # (the package data lives outside compiler/, mapped in by package-dir:
    # imported by its full name, not from the root package)
    import effspec.grammar as grammar_package

    try:
        with open(os.path.join(os.path.dirname(grammar_package.__file__ or ""), "eff.lark"), encoding="utf-8") as fh:
            return fh.read()
    except OSError:  # installed as a zip: go through importlib.resources
        from importlib import resources

        return (resources.files("effspec.grammar") / "eff.lark").read_text(encoding="utf-8")


# The parser is built with these options, and its tables are cached between
# runs: building them costs ~200 ms, loading them ~4 ms.  lark's own `cache=True`
# would unpickle a file from the shared temp folder, named predictably and not
# checked for its owner, so any local user could plant code there.  The tables
# are stored instead as JSON (loading it cannot run code) in effspec's
# owner-checked cache folder, keyed by the grammar, lark's version and the options.
_PARSER_OPTIONS = {"parser": "lalr", "lexer": "contextual", "propagate_positions": True}
_PARSER_STEM = "parser-v1"
_PARSER_FILE_LIMIT = 4 << 20

# The tokens the tree leaves out that a layout of the text needs: the comments
# (`%ignore`d) and the `{` and `(` (anonymous punctuation, filtered out).  The
# parser hands each to lark's lexer callbacks, which keep it while a caller of
# ``parse(text, kept)`` has a list open (effspec fmt); otherwise they return at once.
KEPT_TERMINALS = ("COMMENT", "LBRACE", "LPAR")
_KEPT: ContextVar[list[Token] | None] = ContextVar("effspec_kept_tokens", default=None)


def _keep(token: Token) -> Token:
    kept = _KEPT.get()
    if kept is not None:
        kept.append(token)
    return token


_LEXER_CALLBACKS = dict.fromkeys(KEPT_TERMINALS, _keep)


def _parser_key(grammar: str) -> str:
    import hashlib

    import lark

    text = "\n".join([_PARSER_STEM, lark.__version__, repr(sorted(_PARSER_OPTIONS.items())), grammar])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parser_cache_file() -> str:
    """The name of this install's parser-table file in the cache folder."""
    from effspec.front.cachedir import keyed_name

    return keyed_name(_PARSER_STEM, _parser_key(grammar_text()))


def _to_json(value: Any) -> Any:
    """lark's serialized tables hold dicts (with int keys), lists, tuples and
    scalars; tag tuples and dicts so that JSON gives them back exactly."""
    if isinstance(value, tuple):
        return {"t": [_to_json(v) for v in value]}
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {"d": [[_to_json(k), _to_json(v)] for k, v in value.items()]}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"unexpected {type(value).__name__} in the parser tables")


def _from_json(obj: dict[str, Any]) -> Any:
    (tag, items), = obj.items()  # ValueError unless exactly one tag
    if tag == "t":
        return tuple(items)
    if tag == "d":
        return {k: v for k, v in items}
    raise ValueError(f"unknown tag {tag!r}")


def _load_tables(key: str) -> Lark | None:
    """The cached parser if a file of ours holds tables made for ``key``; else None."""
    import json

    from lark import Lark

    from effspec.front.cachedir import cache_root, keyed_name, read_owned

    raw = read_owned(cache_root(), keyed_name(_PARSER_STEM, key), _PARSER_FILE_LIMIT)
    if raw is None:
        return None
    try:
        doc = json.loads(raw, object_hook=_from_json)
        if not isinstance(doc, dict) or doc.get("key") != key:
            return None
        data = dict(doc["data"], options=dict(doc["data"]["options"], lexer_callbacks=_LEXER_CALLBACKS))
        return Lark.load({"data": data, "memo": doc["memo"]})
    except Exception:  # a stale, truncated or foreign file is rebuilt, never trusted
        return None


def _store_tables(lark_parser: Lark, key: str) -> None:
    import json

    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    from effspec.front.cachedir import cache_root, keyed_name, owned_folder, prune, write_owned

    folder = owned_folder(cache_root())
    if folder is None:
        return
    try:
        data, memo = lark_parser.memo_serialize([TerminalDef, Rule])
        data["options"] = {k: v for k, v in data["options"].items() if k != "lexer_callbacks"}  # code: set on load
        text = json.dumps(_to_json({"key": key, "data": data, "memo": memo}), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # a lark whose tables are not plain data: no cache
        return
    if write_owned(folder, keyed_name(_PARSER_STEM, key), text.encode("utf-8")):
        prune(folder, _PARSER_STEM)


@cache
def parser() -> Lark:
    """The LALR parser, built once per process (its tables cached on disk as JSON)."""
    from lark import Lark

    grammar = grammar_text()
    key = _parser_key(grammar)
    loaded = _load_tables(key)
    if loaded is not None:
        return _skip_single_child_positions(loaded)
    built = Lark(grammar, **_PARSER_OPTIONS, lexer_callbacks=_LEXER_CALLBACKS)
    _store_tables(built, key)
    return _skip_single_child_positions(built)


def _skip_single_child_positions(lark_parser: Lark) -> Lark:
    """Skip lark's position pass where it can change nothing: a `?rule` reduced with one child.

    For such a rule lark's callback is ``PropagatePositions(ExpandSingleChild(...))``: the child
    itself is the result, and the position pass then only copies the child's positions onto
    the child (a Tree built by the parser already holds them; a Token is not a Tree, so is left
    alone).  About half of a spec's reductions are of this kind (a list's number is reduced
    through `?unary`, `?product`, `?expr` and `?value`); skipping them took gap_bench's clean check
    from 8.8 to 8.1 ms a file (benchmarks/gap_bench.md).
    The other rules' callbacks are fused (effspec.front.lalr.fuse_positions).
    The tree and every position are the same (tests/front/test_parse_positions.py compares
    them with lark's own callbacks).  A lark whose callbacks are not built this way is left as it is.
    """
    from lark.parse_tree_builder import ExpandSingleChild, PropagatePositions

    callbacks = getattr(lark_parser, "_callbacks", None)
    try:
        shared = lark_parser.parser.parser.parser.callbacks is callbacks
    except AttributeError:
        shared = False
    if not shared or not isinstance(callbacks, dict):
        return lark_parser
    for rule, callback in list(callbacks.items()):
        if isinstance(callback, PropagatePositions) and isinstance(callback.node_builder, ExpandSingleChild):
            callbacks[rule] = _single_child_first(callback)
    from effspec.front.lalr import fuse_positions

    fuse_positions(callbacks)  # and the other rules' filter, tree and positions in one function each
    return lark_parser


def _single_child_first(positioned: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
    def reduce(children: list[Any]) -> Any:
        return children[0] if len(children) == 1 else positioned(children)
    return reduce


@cache
def _scan() -> Any:
    """The front end's lexer over the process's parser (effspec.front.lalr), with the parser's start."""
    from effspec.front.lalr import ContextualScan

    frontend = parser().parser
    return ContextualScan(frontend.lexer), frontend._verify_start()  # type: ignore[no-untyped-call]


def parse_tree(text: str) -> Tree[Token]:
    """``parser().parse(text)`` through effspec.front.lalr's loops over lark's own scanners, table and
    callbacks: the same tree, and at an error the same lark exception."""
    from effspec.front import lalr

    scan, start = _scan()
    return cast("Tree[Token]", lalr.parse(parser().parser, scan, start, text))


def _describe(token: Token | None) -> str:
    if token is None or token.type == "$END":
        return "the end of the file"
    text = str(token)
    if len(text) > 30:
        text = text[:27] + "..."
    return f"`{text}`"


def _expected(names: Iterable[str]) -> str:
    words = sorted({_TERMINAL_WORDS.get(n, f"`{n.lower()}`") for n in names if not n.startswith("__")})
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    if len(words) > 6:
        return "a statement, value or operator"
    return ", ".join(words[:-1]) + " or " + words[-1]


def _previous_token(text: str, pos: int) -> Token | None:
    """The last token that ends at or before ``pos`` (for "after `x`")."""
    from lark.exceptions import LarkError

    prev: Token | None = None
    try:
        for tok in parser().lex(text[:pos], dont_ignore=False):
            prev = tok
    except LarkError:
        pass
    return prev


_UNIT_HINTS = {
    "TFLOPS": "TFLOP/s", "GFLOPS": "GFLOP/s", "PFLOPS": "PFLOP/s", "FLOPS": "FLOP/s", "flops": "FLOP/s",
    "tokens": "token", "sequences": "sequence", "samples": "sample", "steps": "step", "devices": "device",
    "params": "param", "sec": "s", "seconds": "s", "second": "s", "days": "day", "hours": "hour",
    "tok": "token", "GPU": "device", "GPUs": "device", "gpu": "device",
}


# `TFLOPS`, `TFLOPs`, `tflops`, `TFlop/s`: a FLOP rate in any case, with its SI prefix.
_FLOPS = re.compile(r"([kmgtpez]?)flop(s|/s)?", re.IGNORECASE)


def unit_hint(word: str) -> str | None:
    """The unit a misspelled word means (`TFLOPs` -> `TFLOP/s`, `tokens` -> `token`), or None."""
    m = _FLOPS.fullmatch(word)
    if m is not None:
        prefix = m.group(1) if m.group(1) in ("", "k") else m.group(1).upper()
        return prefix + ("FLOP/s" if m.group(2) else "FLOP")
    return _UNIT_HINTS.get(word)


_KEY_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*$")


def _unit_help(text: str, pos: int, hint: str | None) -> str:
    """"write `token`"; or, where the key on that line takes that unit per something (`seq_len = 2048 tokens`),
    "write `token/sequence`, the unit `seq_len` takes" (plain `token` would be EFF010 there)."""
    if hint is None:
        return _UNITS_HELP
    if re.match(r"[A-Za-zµμ]+/", text[pos:]):  # `tokens/sequence`: the help names the first word's fix
        return f"write `{hint}`"
    from effspec.front.keys import BLOCKS

    start = text.rfind("\n", 0, pos) + 1
    number = re.search(r"[0-9][0-9_.eE+-]*\s*$", text[start:pos])
    m = _KEY_BEFORE.search(text, start, start + number.start()) if number is not None else None
    if m is not None:
        units = {k.unit for keys in BLOCKS.values() for k in keys.values() if k.name == m.group(1)}
        if len(units) == 1 and (unit := units.pop()).split("/")[0] == hint and unit != hint:
            return f"write `{unit}`, the unit `{m.group(1)}` takes"
    return f"write `{hint}`"


# `1,000` outside a list: a thousands separator the language does not have.
_THOUSANDS = re.compile(r"[0-9][0-9_]*(?:,[0-9]{3})+(?![0-9A-Za-z_.])")


def _thousands(text: str, number: Token | None) -> tuple[str, str, Span] | None:
    """`1,000` read as `1` then `,`: the message, help and span of the whole written number."""
    if number is None or number.type != "NUMBER" or number.start_pos is None or number.line is None:
        return None
    m = _THOUSANDS.match(text, number.start_pos)
    if m is None or number.column is None:
        return None
    written = m.group(0)
    span = Span(number.line, number.column, number.line, number.column + len(written))
    return (f"`{written}` is not a number: `,` separates list items, and a number has no thousands separator",
            f"write `{written.replace(',', '_')}` or `{written.replace(',', '')}`", span)


_NOT_CLOSED = "a block or run is not closed: add the missing `}`"

_UNITS_HELP = ("units are FLOP (with SI prefixes), token, sequence, sample, step, device, param, "
               "s, ms, min, h, day, W and %; combine them with `/` and `*` and no spaces, e.g. `TFLOP/s`")


def _is_key(name: str) -> bool:
    from effspec.front.keys import BLOCKS

    return name in BLOCKS or any(name in keys for keys in BLOCKS.values())


# Strings and comments (skipped), braces, newlines and other words: one pass finds the `{` left open.
_BRACE_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|[{}\n]|[^\s{}"#]+')
_BLOCK_NAME = re.compile(r"(?:\b(run|scaling)\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*$")


def _open_brace(text: str, upto: int) -> int | None:
    """The offset of the `{` in ``text[:upto]`` that is not closed, or None when every one is.

    Braces pair by count, so a `}` missing inside a run is taken by the run's own
    `}`; the block it really belongs to is found by indentation: a `}` that starts
    its line less indented than the line of the `{` it pairs with closes an outer
    block, and the first such `{` is the one left open.  Otherwise, the innermost
    open `{`.  One pass, linear in the text (a long line of braces included).
    """
    stack: list[tuple[int, int]] = []  # (offset of `{`, indentation of its line)
    suspect: int | None = None
    line_start, indent = 0, -1  # indentation of the current line; -1 until its first word
    for m in _BRACE_SCAN.finditer(text, 0, upto):
        tok = m.group(0)
        if tok == "\n":
            line_start, indent = m.end(), -1
            continue
        first = indent < 0
        if first:
            indent = m.start() - line_start
        if tok == "{":
            stack.append((m.start(), indent))
        elif tok == "}" and stack:
            opened, opened_indent = stack.pop()
            if first and suspect is None and indent < opened_indent:
                suspect = opened
    if not stack:
        return None
    return suspect if suspect is not None else stack[-1][0]


def _unclosed(text: str, upto: int) -> tuple[str, Span] | None:
    """What the open `{` before ``upto`` opens (run `r`, block `model`) and its span."""
    pos = _open_brace(text, upto)
    if pos is None:
        return None
    line_start = text.rfind("\n", 0, pos) + 1
    m = _BLOCK_NAME.search(text, line_start, pos)
    what = "this block" if m is None else f"{m.group(1)} `{m.group(2)}`" if m.group(1) else f"block `{m.group(2)}`"
    line = text.count("\n", 0, pos) + 1
    column = pos - line_start + 1
    return what, Span(line, column, line, column + 1)


class _Found(NamedTuple):
    """A syntax error in plain words; ``at`` is the line the parser stopped on (recovery blanks it)."""

    message: str
    help: str
    span: Span
    at: int


def _found(exc: UnexpectedInput, text: str) -> _Found:
    """The syntax error, pointing at the `{` left open when that is what the parser ran into."""
    from lark.exceptions import UnexpectedToken

    message, help_, span = _message_for(exc, text)
    if message.startswith("the file ended") and help_ == _NOT_CLOSED:
        found = _unclosed(text, len(text))
        if found is not None:
            what, brace = found
            return _Found(f"the file ended early: {what} is not closed", f"add the `}}` that closes {what}", brace,
                          brace.line)
    if isinstance(exc, UnexpectedToken) and exc.token.type == "NAME" and exc.token.start_pos is not None:
        # `run b {` read inside an open block: `run` taken for a key, `b` unexpected
        prev = _previous_token(text, exc.token.start_pos)
        if prev is not None and str(prev) in ("run", "scaling") and prev.column == 1 and prev.start_pos is not None:
            found = _unclosed(text, prev.start_pos)
            if found is not None:
                what, brace = found
                return _Found(f"{what} is not closed before `{prev} {exc.token}`",
                              f"add the `}}` that closes {what}: `run` and `scaling` start a statement only outside "
                              f"every block", brace, span.line)
    return _Found(message, help_, span, span.line)


def _characters_message(exc: UnexpectedCharacters, text: str) -> tuple[str, str, Span]:
    """A character no token starts with: a misspelled unit, `1,000`, a single quote."""
    # lark's stub types the class default (None); the lexer always sets the offset
    pos = cast(int, exc.pos_in_stream)
    ch = text[pos] if pos < len(text) else ""
    span = Span(exc.line, exc.column, exc.line, exc.column + 1)
    prev = _previous_token(text, pos)
    if prev is not None and prev.type == "NUMBER" and (ch.isalpha() or ch in "µμ"):
        m = re.match(r"[^\s]+", text[pos:])
        written = m.group(0) if m else ch
        span = Span(exc.line, exc.column, exc.line, exc.column + len(written))
        hint = unit_hint(written.split("/")[0])  # the first word's fix (effspec fmt keeps the rest)
        return f"unknown unit `{written}`", _unit_help(text, pos, hint), span
    comma = _thousands(text, prev) if ch == "," else None
    if comma is not None:
        return comma
    if ch == "'":
        return "strings use double quotes", 'write "…"', span
    shown = repr(ch)[1:-1] if ch else "end of input"
    return f"unexpected character `{shown}`", "", span


def _ended_message(expected: Iterable[str], text: str) -> tuple[str, str, Span]:
    expected = set(expected)
    line = text.count("\n") + 1
    col = len(text) - (text.rfind("\n") + 1) + 1
    hint = _NOT_CLOSED if "RBRACE" in expected else ""
    return f"the file ended early: expected {_expected(expected)}", hint, Span(line, col, line, col)


def _message_for(exc: UnexpectedInput, text: str) -> tuple[str, str, Span]:
    """Plain words, help and span for a lark UnexpectedInput."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    if isinstance(exc, UnexpectedCharacters):
        return _characters_message(exc, text)
    if isinstance(exc, UnexpectedEOF):
        return _ended_message(exc.expected, text)
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    if tok.type == "$END":
        return _ended_message(exc.expected, text)
    assert tok.line is not None and tok.column is not None and tok.start_pos is not None  # the lexer placed it
    span = Span(tok.line, tok.column, tok.end_line or tok.line, tok.end_column or tok.column + 1)
    prev = _previous_token(text, tok.start_pos)
    expected = _expected(exc.expected)
    after = f" after {_describe(prev)}" if prev is not None else ""
    # The common shapes, said the way a person would.
    comma = _thousands(text, prev) if tok.type == "COMMA" else None
    if comma is not None:
        return comma
    if prev is not None and prev.type == "NUMBER" and tok.type == "NAME" and unit_hint(str(tok)) is not None:
        return f"unknown unit `{tok}`", _unit_help(text, tok.start_pos, unit_hint(str(tok))), span
    if prev is not None and prev.type == "NAME" and not _is_key(str(prev)):
        assert prev.line is not None and prev.column is not None and prev.start_pos is not None  # a lexed token
        before = _previous_token(text, prev.start_pos)
        if before is not None and before.type == "NUMBER" and before.line == prev.line:
            hint = unit_hint(str(prev))
            uspan = Span(prev.line, prev.column, prev.end_line or prev.line, prev.end_column or prev.column + len(prev))
            return f"unknown unit `{prev}`", _unit_help(text, prev.start_pos, hint), uspan
    if prev is not None and prev.type == "NAME" and "EQUAL" in exc.expected and "LBRACE" in exc.expected:
        return (
            f"expected `=` or `{{` after `{prev}`, found {_describe(tok)}",
            f"write `{prev} = <value>` for a key, or `{prev} {{ … }}` for a block",
            span,
        )
    if prev is not None and prev.type == "NAME" and "EQUAL" in exc.expected:
        return f"expected `=` after `{prev}`, found {_describe(tok)}", f"write `{prev} = <value>`", span
    if prev is not None and prev.type == "EQUAL":
        return (
            f"expected a value after `=`, found {_describe(tok)}",
            'a value is a number with its unit (`989.4 TFLOP/s`), a name (`swiglu`), a "string", a [list] or `file "…" column "…"`',
            span,
        )
    if "EFF" in exc.expected:
        return "a spec starts with the header `eff 1`", "add `eff 1` as the first line", span
    if tok.type == "NUMBER" and prev is not None and prev.type in ("NUMBER", "UNIT"):
        return (
            f"expected an operator or a new statement{after}, found {_describe(tok)}",
            "separate list items with `,` inside `[ … ]`, and operators with spaces: `a * b`",
            span,
        )
    return f"expected {expected}{after}, found {_describe(tok)}", "", span


def _blank_line(text: str, line: int) -> str:
    """Blank one line but keep its unbalanced braces, so the blocks around it
    still open and close (an opened block gets a placeholder name)."""
    lines = source_lines(text)
    if 1 <= line <= len(lines):
        body = lines[line - 1]
        net = body.count("{") - body.count("}")
        lines[line - 1] = " " * 2 + ("_ { " * net if net > 0 else "} " * -net)
    return "\n".join(lines)


# Characters that make source display differently from what it is: C0/C1
# controls other than tab, newline, form feed and carriage return, DEL, the
# Unicode bidi embeddings, overrides, isolates and marks (Trojan Source,
# CVE-2021-42574), and the line and paragraph separators, which some viewers
# break lines on while the parser does not.
# Lone surrogates (U+D800 to U+DFFF) are not characters at all: no file the
# CLI reads can hold one (strict UTF-8), but a Python caller can pass one, and
# it would make every UTF-8 output fail.  They are reported with the rest.
_INVISIBLE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Strings, comments and brackets, for the nesting pre-scan.  A string left
# open on its line is the parser's to report.
_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|[(\[{]|[)\]}]|\b(?:run|scaling)\b(?=\s+[A-Za-z_])')
# Re-parsing after each error is linear in the file; bound the total so that a
# large hostile file with many errors cannot take minutes.
_RECOVERY_BUDGET_CHARS = 8 * 1024 * 1024


def _position(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset ``pos``."""
    return text.count("\n", 0, pos) + 1, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _context(text: str, pos: int) -> str:
    """'a string', 'a comment' or '' for the character at ``pos`` (strings never span lines)."""
    in_string = False
    i = text.rfind("\n", 0, pos) + 1
    while i < pos:
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "#":
            return "a comment"
        i += 1
    return "a string" if in_string else ""


def encodable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (one character for
    one, so lines and columns stay put), so that it can be written as UTF-8."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _invisible_characters(text: str) -> list[Diagnostic]:
    """EFF001 for each control or bidi character or lone surrogate (at most MAX_SYNTAX_ERRORS)."""
    import unicodedata

    diags: list[Diagnostic] = []
    for m in _INVISIBLE.finditer(text):
        if len(diags) >= MAX_SYNTAX_ERRORS:
            break
        ch = m.group(0)
        line, col = _position(text, m.start())
        where = _context(text, m.start())
        if "\ud800" <= ch <= "\udfff":
            diags.append(Diagnostic(
                "EFF001", "error", Span(line, col, line, col + 1),
                f"lone surrogate U+{ord(ch):04X}{' in ' + where if where else ''}: the text is not valid Unicode",
                "remove it: a spec is UTF-8 text, and a surrogate code point cannot be written in UTF-8",
            ))
            continue
        name = unicodedata.name(ch, "control character")
        diags.append(Diagnostic(
            "EFF001", "error", Span(line, col, line, col + 1),
            f"invisible character U+{ord(ch):04X} ({name}){' in ' + where if where else ''}",
            "remove it: control and bidirectional-override characters make text display "
            "differently from what it is (Trojan Source)",
        ))
    return diags


def _prescan(text: str) -> Diagnostic | None:
    """EFF030 for a file the parser should not be asked to read: brackets nested
    deeper than the expression-depth limit, or more top-level runs and scalings
    than the file limit.

    Parentheses leave no node in the tree, so the builder's tree-depth check
    cannot see `((((1))))`; and an 8,000-run file would take seconds and
    hundreds of MiB to parse before the builder could count its runs.  This
    pass bounds both before parsing, with one compiled regex that skips
    strings and comments (the builder still checks what it parsed).
    """
    depth = top_level = 0
    limit = LIMITS.max_expression_depth
    over: re.Match[str] | None = None
    for m in _SCAN.finditer(text):
        tok = m.group(0)
        if tok in ("(", "[", "{"):
            depth += 1
            if depth > limit:
                line, col = _position(text, m.start())
                return Diagnostic(
                    "EFF030", "error", Span(line, col, line, col + 1),
                    f"brackets nest more than {limit} levels deep",
                    "simplify the expression: blocks nest two levels, and expressions rarely need more than a few",
                )
        elif tok in (")", "]", "}"):
            depth = max(0, depth - 1)
        elif tok in ("run", "scaling") and depth == 0:
            top_level += 1
            if top_level == LIMITS.max_runs + 1:
                over = m
    if over is not None:
        line, col = _position(text, over.start())
        return Diagnostic("EFF030", "error", Span(line, col, line, col + len(over.group(0))),
                          f"the file declares {top_level:,} runs and scalings; the limit is {LIMITS.max_runs:,}",
                          "split the file")
    return None


def parse(text: str, kept: list[Token] | None = None) -> tuple[Tree[Token] | None, list[Diagnostic]]:
    """Parse ``text``; return the tree (None on syntax errors) and EFF001 diagnostics.

    Never raises on any string: oversize text and deep nesting are EFF030,
    control and bidi characters and lone surrogates EFF001.  ``kept``, a list
    when given, receives the tokens of ``KEPT_TERMINALS`` that lark's lexer
    read, in the order of the text, positioned as the tree's (nothing when no
    tree is returned).
    """
    from lark.exceptions import LarkError, UnexpectedInput

    diags: list[Diagnostic] = []
    if len(text) > LIMITS.max_spec_bytes:
        return None, [
            Diagnostic(
                "EFF030", "error", Span(1, 1, 1, 1),
                f"the spec is {len(text):,} characters; the limit is {LIMITS.max_spec_bytes:,}",
                "split it into several files",
            )
        ]
    if text.startswith("\ufeff"):  # a byte-order mark is harmless; a space keeps the columns
        text = " " + text[1:]
    deep = _prescan(text)
    if deep is not None:
        return None, [deep]
    invisible = _invisible_characters(text)
    if invisible:
        # Report them, then parse with spaces in their place so that other
        # syntax errors show up in the same run.
        diags += invisible
        text = _INVISIBLE.sub(" ", text)
    keeping = _KEPT.set(kept if not diags else None)
    try:
        tree = parse_tree(text)
        return (tree if not diags else None), diags
    except UnexpectedInput as exc:
        first = exc
    except RecursionError:  # defensive: the LALR parser itself is iterative
        return None, diags + [Diagnostic("EFF030", "error", Span(1, 1, 1, 1), "the spec nests too deeply", "")]
    except LarkError as exc:  # defensive: any other lark failure is still a coded syntax error
        return None, diags + [Diagnostic("EFF001", "error", Span(1, 1, 1, 1),
                                         f"the spec cannot be parsed ({type(exc).__name__})", "")]
    finally:
        _KEPT.reset(keeping)
    if kept is not None:
        kept.clear()  # the tokens before the error: no tree to go with them
    return None, _recover(text, first, diags)


# A top-level statement starts a line: `run NAME {` or `scaling NAME {` at column 1.
_STATEMENT_START = re.compile(r"^(?:run|scaling)\s", re.MULTILINE)


def _recover(text: str, first: UnexpectedInput, diags: list[Diagnostic]) -> list[Diagnostic]:
    """Every syntax error after the first, in time linear in the file.

    The parse that failed read everything before the first error, so only the
    top-level statement holding it and the ones after it can hold more.  Each
    of those is parsed on its own (behind a header, with the first line of the
    next statement, so an unclosed block is reported where the whole file
    would report it); inside one, a broken line is blanked and the statement
    parsed again.  Re-parsing the whole file after each error instead cost
    15x a clean parse on a 400-run spec with 20 typos (issue 17).
    """
    lines = text.split("\n")
    starts = [1] + [text.count("\n", 0, m.start()) + 1 for m in _STATEMENT_START.finditer(text)]
    starts = sorted(set(starts)) + [len(lines) + 1]
    seen: set[int] = set()
    message, help_, shown, at = _found(first, text)
    diags.append(Diagnostic("EFF001", "error", shown, message, help_))
    span = Span(at, 1, at, 1)  # where the parser stopped: what recovery goes on from
    seen.add(span.line)
    if message.startswith(("the file ended", "a spec starts with")) or len(diags) >= MAX_SYNTAX_ERRORS:
        return diags
    budget = _RECOVERY_BUDGET_CHARS
    for begin, end in zip(starts, starts[1:], strict=False):
        if end <= span.line:  # wholly before the first error: the failed parse read it
            continue
        chunk = lines[begin - 1:end - 1] + (lines[end - 1:end] if end <= len(lines) else [])
        # The first error on a statement's own first line came from the statement before it
        # (an unclosed block): this one is parsed as written.
        broken = span.line if begin < span.line < end or begin == span.line == 1 else 0
        budget = _recover_statement(chunk, begin, broken, diags, seen, budget)
        if len(diags) >= MAX_SYNTAX_ERRORS or budget <= 0:
            break
    return diags


def _recover_statement(chunk: list[str], begin: int, broken: int, diags: list[Diagnostic],
                       seen: set[int], budget: int) -> int:
    """Parse one top-level statement (file lines ``begin``…, plus the next statement's first
    line) until it parses or errors run out; ``broken`` is the first error's line if it is
    in here. Appends the errors found, in file lines; returns the budget left."""
    from lark.exceptions import LarkError, UnexpectedInput

    header = begin != 1  # the file's own first statement carries the real header
    offset = begin - 2 if header else begin - 1
    work = ("eff 1\n" if header else "") + "\n".join(chunk)
    last = begin + len(chunk) - 1  # the next statement's first line, when there is one
    followed = len(chunk) > 0 and _STATEMENT_START.match(chunk[-1]) is not None and len(chunk) > 1
    if broken:
        work = _blank_line(work, broken - offset)
    while budget > 0 and len(diags) < MAX_SYNTAX_ERRORS:
        budget -= len(work)
        try:
            parse_tree(work)
            return budget
        except UnexpectedInput as exc:
            message, help_, local, at = _found(exc, work)
        except LarkError:
            return budget
        if followed and message.startswith("the file ended"):
            return budget  # the statement closed and the next one began: this one is whole
        line = at + offset
        if line not in seen:
            diags.append(Diagnostic("EFF001", "error", Span(local.line + offset, local.column, local.end_line + offset,
                                                            local.end_column), message, help_))
            seen.add(line)
        if message.startswith(("the file ended", "a spec starts with")) or line >= last or line < begin:
            return budget
        blanked = _blank_line(work, at)
        if blanked == work:
            return budget
        work = blanked
    return budget
