"""Section 10, the source: the spec as written, with line numbers; lines with findings are marked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.diagnostics import sanitize

if TYPE_CHECKING:
    from markupsafe import Markup

# The Source section shows every line whole (it is the spec as written), so a
# long unbroken run of characters gets break opportunities: <wbr> every
# BREAK_EVERY characters inside it (WeasyPrint's overflow-wrap search is
# quadratic in an unbroken run).  Runs with spaces break at their spaces, never
# mid-word.  A listed line is a block (for its hanging indent), where WeasyPrint
# breaks only at a <wbr> once there is one: every 16 characters fills a row to
# within 16 of its width.
BREAK_EVERY = 16
_UNBROKEN = re.compile(r"\S{" + str(BREAK_EVERY + 1) + ",}")


def source_text(line: str) -> str:
    """A source line for the Source section: sanitised, tabs as four spaces, and
    an unbroken run longer than ``BREAK_EVERY`` as markup with a break opportunity every ``BREAK_EVERY`` characters."""
    text = sanitize(line.replace("\t", "    "))
    if not _UNBROKEN.search(text):
        return text
    from markupsafe import Markup, escape

    def broken(run: str) -> Markup:
        return Markup("<wbr>").join(escape(run[i:i + BREAK_EVERY]) for i in range(0, len(run), BREAK_EVERY))

    parts: list[Markup] = []
    last = 0
    for match in _UNBROKEN.finditer(text):
        parts += [escape(text[last:match.start()]), broken(match.group())]
        last = match.end()
    return Markup("").join([*parts, escape(text[last:])])


@dataclass(frozen=True)
class SourceLine:
    number: int
    text: str
    flagged: bool

    @property
    def css(self) -> str:
        return "flag" if self.flagged else "line"


@dataclass(frozen=True)
class SourceView:
    file: str
    lines: tuple[SourceLine, ...]


def build(file: str, lines: list[str], flagged: set[int]) -> SourceView:
    return SourceView(file, tuple(SourceLine(n, source_text(t), n in flagged) for n, t in enumerate(lines, 1)))
