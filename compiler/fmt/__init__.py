"""`effspec fmt`: one canonical layout for `.eff` files (a stage beside report and cli).

:func:`format_text` returns the formatted text, or the syntax errors that stop
it.  Before it returns a text it checks its own work, as black does: the output
must parse, and its IR must equal the input's (spans, whitespace inside the
values as written, and the order of a run's blocks aside; the order of blocks is
free in the language).  A formatter bug therefore never rewrites a file.

Unit spellings that the front end rejects with a named fix (`TFLOPS`, `tokens`,
`GPUs`, `sec`, …: EFF001 "unknown unit" with "write `…`") are rewritten to the
spelling it names before formatting, when the fix is safe: the text after it,
checked again, has no new finding (effspec.rules.fixes.vet; `6 GFLOPs/token`
is then `6 GFLOP/token`, and `seq_len = 2048 tokens` is left as an error, as
`token` is not the unit `seq_len` takes); any other syntax error stops the
formatter.

Pygments support (``effspec.fmt.lexer``) is separate and imports pygments; this
module does not.
"""

from __future__ import annotations

import gc
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from effspec.diagnostics import Diagnostic, Span

__all__ = ["Formatted", "FormatterError", "format_text", "ir_signature", "block_order"]


def __dir__() -> list[str]:
    """``dir()`` of the package lists its API (``__all__``), not its imports and private helpers."""
    return sorted(__all__)


_MAX_FIX_ROUNDS = 20


class FormatterError(Exception):
    """The formatter produced text that does not mean what the input meant (a bug)."""


@dataclass
class Formatted:
    source: str
    text: str | None  # None when the input has errors the formatter cannot fix
    diagnostics: list[Diagnostic] = field(default_factory=list)  # the errors that stop it
    fixes: list[tuple[Span, str, str]] = field(default_factory=list)  # (where, written, now)

    @property
    def changed(self) -> bool:
        return self.text is not None and self.text != self.source


@cache
def block_order() -> dict[str, int]:
    """Block name -> rank, in the order of the language reference (spec/language.md section 5)."""
    from effspec.front.keys import BLOCKS

    names = [n for n in BLOCKS if n not in ("run", "scaling")]
    return {name: i for i, name in enumerate(names)}


def _offset(text: str, line: int, column: int) -> int:
    start = 0
    for _ in range(line - 1):
        start = text.index("\n", start) + 1
    return start + column - 1


def _fix_units(text: str) -> tuple[str, list[Diagnostic], list[tuple[Span, str, str]], Any, list[Any]]:
    """Rewrite the unit misspellings the parser names a fix for.

    Returns the text, the errors that stop formatting (those of the text as
    given, so that their lines and columns are the user's; none when the fixed
    text parses) and the fixes made, each at its place in the text as given
    when it is in the first round (fixes are applied last line first, so
    earlier places do not move), and lark's parse of the text returned: its
    tree and the tokens the tree leaves out that the layout needs (the comments,
    `{` and `(`: effspec.front.syntax.parse's ``kept``)."""
    from effspec.front.syntax import parse

    original = text
    first: list[Diagnostic] | None = None
    fixes: list[tuple[Span, str, str]] = []
    for _ in range(_MAX_FIX_ROUNDS):
        kept: list[Any] = []
        tree, diags = parse(text, kept)
        if first is None:
            first = diags
        if tree is not None:
            return text, [], fixes, tree, kept
        edits = _unit_edits(text, diags)
        if edits is None:
            break
        for start, end, written, now, span in sorted(edits, key=lambda e: e[0], reverse=True):
            text = text[:start] + now + text[end:]
            fixes.append((span, written, now))
    return original, first or [], fixes, None, []


def _unit_edits(text: str, diags: list[Diagnostic]) -> list[tuple[int, int, str, str, Span]] | None:
    """One edit per diagnostic if every one is an unknown unit with a safe fix (the fixes table
    `check --fix` and the editor read, effspec.rules.fixes, vetted: the text after the fixes has no new
    finding, so `6 GFLOPs/token` becomes `6 GFLOP/token`, never a rate); else None."""
    import effspec
    from effspec.rules.fixes import vet

    if any(d.code != "EFF001" or d.span is None or not d.message.startswith("unknown unit") for d in diags):
        return None

    def recheck(fixed: str) -> list[Diagnostic]:
        return effspec.check_text(fixed, "<fmt>").diagnostics

    offers = {id(o.diag): o.fix for o in vet(diags, text, recheck, baseline=recheck(text)) if o.fix.safe}
    edits: list[tuple[int, int, str, str, Span]] = []
    for d in diags:
        fix = offers.get(id(d))
        if fix is None or d.span is None:
            return None
        start, end = _offset(text, fix.span.line, fix.span.column), _offset(text, fix.span.end_line, fix.span.end_column)
        edits.append((start, end, text[start:end], fix.new_text, d.span))
    return edits or None


def format_text(text: str) -> Formatted:
    """Format one spec.  Raises FormatterError if the result would not mean the same."""
    # As in effspec.check_text: the trees are many small objects without
    # cycles worth collecting, and the collector rescanning them as they grow
    # would cost more than the formatting.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _format(text)
    finally:
        if gc_was_enabled:
            gc.enable()


def _format(text: str) -> Formatted:
    from effspec.fmt.layout import read, render

    fixed, errors, fixes, tree, kept = _fix_units(text)
    if errors:
        return Formatted(text, None, errors, fixes)
    try:
        out = render(read(fixed, tree, kept), block_order())
    except (AttributeError, ValueError, IndexError) as exc:  # a tree the layout does not expect: a bug, reported as one
        raise FormatterError(f"the formatter could not lay out the spec ({exc})") from None
    before, after = ir_signature(fixed, tree=tree), ir_signature(out)
    if before != after:
        raise FormatterError("the formatted text does not compile to the same IR")
    return Formatted(text, out, [], fixes)


# -- meaning ---------------------------------------------------------------

_SPAN_KEYS = frozenset({"span", "name_span", "value_span"})
_STRING_OR_SPACE = re.compile(r'("(?:[^"\\\n]|\\.)*")|\s+')
_STRING_OR_COMMENT = re.compile(r'("(?:[^"\\\n]|\\.)*")|#[^\n]*')


def _written(text: str) -> str:
    """A value as written, without whitespace or a trailing comma in a list."""
    squeezed = _STRING_OR_SPACE.sub(lambda m: m.group(1) or "", text)
    return squeezed.replace(",]", "]")


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _strip(v) for k, v in node.items() if k not in _SPAN_KEYS}
        if isinstance(out.get("text"), str):
            out["text"] = _written(out["text"])
        if isinstance(out.get("blocks"), list):
            order = block_order()
            out["blocks"] = sorted(out["blocks"], key=lambda b: order.get(b.get("name"), len(order)))
        return out
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def ir_signature(text: str, folder: str | None = None, tree: Any = None) -> object:
    """What a spec means to the compiler: its IR as JSON without source positions
    (or, when the front end rejects it, the codes it reports), for comparing a
    spec before and after formatting.  ``folder`` anchors `file "…"` references;
    without one they are not read (both sides alike).  ``tree``, the parse
    tree of ``text`` when the caller has it, saves parsing it again."""
    from effspec.front.build import build_ir
    from effspec.front.ir import to_json
    from effspec.front.syntax import parse

    if tree is None:
        tree, diags = parse(text)
        if tree is None:
            return ("syntax", sorted(d.code for d in diags))
    # Comments carry no meaning for the IR (pragmas act on diagnostics, not
    # on it), but a value written over several lines keeps them in its text:
    # they are blanked, column for column, so the tree's positions still hold.
    text = _STRING_OR_COMMENT.sub(lambda m: m.group(1) or " " * len(m.group(0)), text)
    spec, build_diags = build_ir(tree, text, "<fmt>", folder)
    codes = sorted(d.code for d in build_diags)
    return (_strip(to_json(spec)) if spec is not None else None, codes)
