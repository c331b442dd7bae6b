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
from collections.abc import Iterator
from typing import Any

from pygments.lexer import RegexLexer, bygroups, default
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from effspec.front import lexicon
from effspec.version import project_url

__all__ = ["EffLexer"]


def _unit_regex() -> str:
    """The grammar's UNIT terminal (words read from grammar/eff.lark), not followed by `=` or `{`."""
    from effspec.front.units import unit_words

    words = "|".join(re.escape(w) for w in sorted(unit_words(), key=len, reverse=True))
    atom = rf"(?:{words})(?:\^-?[0-9])?"
    return rf"(?:%|{atom}(?:[/*]{atom})*(?![A-Za-z0-9_]))(?!\s*[={{])"


_UNIT = _unit_regex()
_NAME = lexicon.terminal("NAME")
_NUMBER = lexicon.terminal("NUMBER")


def _number(lexer: RegexLexer, match: re.Match[str]) -> Iterator[tuple[int, Any, str]]:
    """A NUMBER (``Number.Float`` when written with `.` or an exponent, else ``Number.Integer``), then its unit if any."""
    number = match.group("number")
    yield match.start("number"), Number.Float if any(c in number for c in ".eE") else Number.Integer, number
    if match.group("space"):
        yield match.start("space"), Whitespace, match.group("space")
    if match.group("unit"):
        yield match.start("unit"), Keyword.Type, match.group("unit")


class EffLexer(RegexLexer):
    """Lexer for effspec's `.eff` training-efficiency specs."""

    name = "eff"
    aliases = ["eff", "effspec"]
    filenames = ["*.eff"]
    mimetypes = ["text/x-eff"]
    url = project_url("homepage") or ""  # what the package metadata declares, never a made-up address
    version_added = ""

    @staticmethod
    def analyse_text(text: str) -> float:
        """A spec starts with its header `eff 1` (after comments and blank lines)."""
        return 0.9 if re.match(r"(?:\s*#[^\n]*\n|\s)*eff\s+" + _NUMBER + r"\b", text) else 0.0

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
            (rf"(?P<number>{_NUMBER})(?:(?P<space>\s*)(?P<unit>{_UNIT}))?", _number),
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
