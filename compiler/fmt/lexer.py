"""A Pygments lexer for `.eff` specs, so Sphinx, MkDocs and LaTeX `minted` highlight them.

Registered as the ``pygments.lexers`` entry point ``eff`` (aliases ``eff``,
``effspec``; files ``*.eff``): with effspec installed, ``pygmentize -l eff``,
a ```` ```eff ```` fence in MkDocs or Sphinx, and ``\\begin{minted}{eff}`` work.
Pygments is an optional dependency (``pip install effspec[pygments]``); this
is the only module that imports it, and nothing in the compiler imports this
module.

Token types:

- keywords (`eff`, `run`, `scaling`, `claim`, `from`, `file`, `column`):
  ``Keyword`` (``Keyword.Declaration`` for `eff`, `run` and `scaling` at the
  head of an item, whose id is ``Name.Class``);
- a block name before `{`: ``Name.Namespace``; a key before `=`:
  ``Name.Attribute``; the provenance kind after `from`: ``Name.Decorator``;
  `true`, `false`, `catalog`: ``Keyword.Constant``; other names: ``Name``;
- numbers: ``Number.Integer`` or ``Number.Float``; a unit after a number, a
  list or a `file` reference (the grammar's unit words only): ``Keyword.Type``;
- strings: ``String.Double`` (``String.Escape`` for `\\"` and `\\\\`);
- comments: ``Comment.Single``, and ``Comment.Special`` for `# effspec:`
  pragmas;
- `= + - * /`: ``Operator``; brackets, `,` and `.`: ``Punctuation``.
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, bygroups, default
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

__all__ = ["EffLexer"]


def _unit_regex() -> str:
    """The grammar's UNIT terminal (words read from grammar/eff.lark), not followed by `=` or `{`."""
    from effspec.front.units import unit_words

    words = "|".join(re.escape(w) for w in sorted(unit_words(), key=len, reverse=True))
    atom = rf"(?:{words})(?:\^-?[0-9])?"
    return rf"(?:%|{atom}(?:[/*]{atom})*(?![A-Za-z0-9_]))(?!\s*[={{])"


_UNIT = _unit_regex()
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FLOAT = r"(?:[0-9][0-9_]*\.[0-9_]+(?:[eE][+-]?[0-9]+)?|[0-9][0-9_]*[eE][+-]?[0-9]+|\.[0-9][0-9_]*(?:[eE][+-]?[0-9]+)?)"
_INT = r"[0-9][0-9_]*"


class EffLexer(RegexLexer):
    """Lexer for effspec's `.eff` training-efficiency specs."""

    name = "eff"
    aliases = ["eff", "effspec"]
    filenames = ["*.eff"]
    mimetypes = ["text/x-eff"]
    url = "https://github.com/effspec/effspec"
    version_added = ""

    @staticmethod
    def analyse_text(text: str) -> float:
        """A spec starts with its header `eff 1` (after comments and blank lines)."""
        return 0.9 if re.match(r"(?:\s*#[^\n]*\n|\s)*eff\s+[0-9]+\b", text) else 0.0

    tokens = {
        "root": [
            (r"[ \t\f\r\n]+", Whitespace),
            (r"#\s*effspec:[^\n]*", Comment.Special),
            (r"#[^\n]*", Comment.Single),
            (r'"', String.Double, "string"),
            (rf"\b(run|scaling)(\s+)({_NAME})(?=\s*\{{)", bygroups(Keyword.Declaration, Whitespace, Name.Class)),
            (r"\beff\b", Keyword.Declaration),
            (rf"\b(from)(\s+)({_NAME})", bygroups(Keyword, Whitespace, Name.Decorator)),
            (r"\b(claim|file|column|run)\b", Keyword),
            (r"\b(true|false|catalog)\b", Keyword.Constant),
            (rf"({_FLOAT})(\s*)({_UNIT})", bygroups(Number.Float, Whitespace, Keyword.Type)),
            (rf"({_INT})(\s*)({_UNIT})", bygroups(Number.Integer, Whitespace, Keyword.Type)),
            (_FLOAT, Number.Float),
            (_INT, Number.Integer),
            (rf"(\])(\s*)({_UNIT})", bygroups(Punctuation, Whitespace, Keyword.Type)),
            (rf"({_NAME})(?=\s*\{{)", Name.Namespace),
            (rf"({_NAME})(?=\s*=)", Name.Attribute),
            (_NAME, Name),
            (r"[=+\-*/]", Operator),
            (r"[{}\[\](),.]", Punctuation),
            (r".", Error),
        ],
        "string": [
            (r'\\["\\]', String.Escape),
            (r'[^"\\\n]+', String.Double),
            (r"\\.", String.Double),
            (r'"', String.Double, ("#pop", "after_string")),
            (r"\n", Error, "#pop"),
        ],
        # `file "steps.csv" column "step_ms" ms`: a unit may follow a string
        "after_string": [
            (rf"([ \t\f\r\n]*)({_UNIT})", bygroups(Whitespace, Keyword.Type), "#pop"),
            default("#pop"),
        ],
    }
