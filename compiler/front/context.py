"""What the build stage carries while it turns one syntax tree into IR."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from effspec.diagnostics import Diagnostic, Span, source_lines


def suggest(word: str, choices: Iterable[str]) -> str:
    """`did you mean` text for the closest valid name, or ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else ""


# A string token or a comment: a comment is dropped from the text of a value written over several lines
# (which is joined into one), where it would otherwise swallow the rest of the value.
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*')


def _without_comment(line: str) -> str:
    return _STRING_OR_COMMENT.sub(lambda m: m.group() if m.group().startswith('"') else "", line) if "#" in line else line


def unescape(token: str) -> str:
    body = token[1:-1]
    return body.replace('\\"', '"').replace("\\\\", "\\") if "\\" in body else body


@dataclass
class BuildContext:
    text: str
    folder: str | None  # the spec's folder, for `file` references; None for text input
    diags: list[Diagnostic] = field(default_factory=list)

    def error(self, code: str, span: Span | None, message: str, help_: str = "", label: str = "") -> None:
        self.diags.append(Diagnostic(code, "error", span, message, help_, label))

    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Split once: `source` runs per entry and per list item, and splitting
        # the whole text each time made a 5 MiB spec quadratic (minutes).
        self.lines = source_lines(self.text)

    def source(self, span: Span) -> str:
        """The source text under a span (single or multi-line)."""
        lines = self.lines
        if span.line == span.end_line:
            return lines[span.line - 1][span.column - 1 : span.end_column - 1]
        parts = [lines[span.line - 1][span.column - 1 :]] + lines[span.line : span.end_line - 1]
        parts.append(lines[span.end_line - 1][: span.end_column - 1])
        return " ".join(_without_comment(p).strip() for p in parts)
