"""One diagnostic type for every stage, and its rustc-style text rendering."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, order=True)
class Span:
    """A source range: 1-based line and column, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    @staticmethod
    def of(item: object) -> Span:
        """The span of a lark Token or Tree (with propagate_positions)."""
        meta: Any = getattr(item, "meta", item)  # lark's Meta or Token: positions are set once parsed
        line = getattr(meta, "line", None)
        if line is None:  # an empty tree: lark gives no position
            return Span(1, 1, 1, 1)
        return Span(line, meta.column, meta.end_line, meta.end_column)

    def to(self, other: Span) -> Span:
        return Span(self.line, self.column, other.end_line, other.end_column)


@dataclass(frozen=True)
class Fix:
    """An edit that resolves a finding: the text under ``span`` (one line) replaced by ``new_text``.

    A safe fix keeps the spec's meaning except for the mistake it corrects
    (`TFLOPS` -> `TFLOP/s`): `effspec check --fix` applies it.  An unsafe one
    changes what the spec declares (a written peak replaced by the catalog's):
    only with `--unsafe-fixes`.  Editors offer both (effspec.rules.fixes)."""

    title: str
    span: Span  # 1-based, end exclusive
    new_text: str
    safe: bool = True
    preferred: bool = True  # an editor's preferred quick fix


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: str
    span: Span | None
    message: str
    help: str = ""
    label: str = ""  # a short note printed under the caret
    file: str = ""
    notes: tuple[str, ...] = field(default=())
    # Edits a rule knows resolve the finding (the others are read from the help: effspec.rules.fixes).
    # Not in the JSON output, and not compared: two findings that say the same are equal.
    fixes: tuple[Fix, ...] = field(default=(), compare=False)

    def to_json(self) -> dict:
        out: dict = {
            "code": self.code,
            "severity": self.severity,
            "line": self.span.line if self.span else None,
            "column": self.span.column if self.span else None,
            "end_line": self.span.end_line if self.span else None,
            "end_column": self.span.end_column if self.span else None,
            "message": self.message,
            "help": self.help,
        }
        if self.notes:
            out["notes"] = list(self.notes)
        if self.file:
            out["file"] = self.file  # line and column are in this file (a pyproject.toml), not in the spec
        return out


def sort_key(d: Diagnostic) -> tuple:
    s = d.span if d.span and not d.file else Span(0, 0, 0, 0)  # another file's (the configuration's) first
    return (s.line, s.column, d.code)


# C0/C1 controls (but tab), DEL, the Unicode bidi overrides and isolates
# (Trojan Source, CVE-2021-42574) and the line/paragraph separators (which
# break a caret line in two) are never echoed to a terminal or report.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def sanitize(text: str) -> str:
    """Drop terminal control characters and bidi controls from echoed text."""
    return _UNSAFE.sub("", text)


def _escaped(char: str) -> str:
    if char == "\\":
        return "\\\\"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """A path (or a message that carries one) as one safe terminal line: every
    character that is not printable -- C0 and C1 controls with tab and newline,
    DEL, bidi and other invisible format characters, line and paragraph
    separators, spaces other than U+0020, lone surrogates (undecodable bytes of a
    file name), private-use and unassigned code points -- is written visibly as
    ``\\x1b``, ``\\u202e`` or ``\\U000e0041``.  Where anything is escaped,
    backslashes are doubled, so the line reads back unambiguously; a path with
    nothing to escape (a Windows path too) is returned as it is.

    Unlike :func:`sanitize`, nothing is dropped: a name shown must be the name
    on disk, and a caret line's alignment is not at stake."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() and c != "\\" else _escaped(c) for c in text)


def source_lines(text: str | None) -> list[str]:
    """The lines of a spec as the parser numbers them: split at "\\n" and nowhere else.

    Everything that shows or indexes source lines (the text renderer, the
    report's excerpts and source listing, the builder) uses this one model, so
    a finding's line number always names the same text.  ``str.splitlines()``
    would also break at \\f, \\v, \\r, \\x1c-\\x1e, \\x85, U+2028 and U+2029, which
    the grammar reads as ordinary characters or blanks, and shift every later
    line by one.  A "\\r" before the "\\n" stays on its line (``sanitize`` drops it).
    """
    return text.split("\n") if text is not None else []


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _line(text: str) -> str:
    """A message, label, note or help on one terminal line: what :func:`sanitize`
    drops is dropped, and what is left unprintable (a newline from a CSV header
    the message quotes) is escaped, so no spec text can start a line of its own."""
    return printable(sanitize(text))


def render_text(diag: Diagnostic, source: str | None, filename: str, lines: list[str] | None = None) -> str:
    """rustc-style: header, location, the source line, a caret, help.

    ``lines`` is ``source`` already split (pass it when rendering many
    diagnostics of one file: splitting per diagnostic made 4,000 findings on
    one line quadratic).  A source line longer than ``EXCERPT_COLUMNS`` is cut
    to a window around the caret, marked with "…" on the cut sides.
    """
    if diag.file and diag.file != filename:  # a position in another file (the configuration): no spec excerpt
        filename, source, lines = diag.file, None, []
    out = [f"{diag.severity}[{diag.code}]: {_line(diag.message)}"]
    pad = " " * (len(str(diag.span.line)) if diag.span else 1)  # the gutter: as wide as the line number
    if diag.span is None:
        out.append(f"{pad}--> {printable(filename)}")
    else:
        s = diag.span
        out.append(f"{pad}--> {printable(filename)}:{s.line}:{s.column}")
        # source_lines, not splitlines(): the parser counts only \n, and
        # splitlines() would also break on \f, \x1c-\x1e, \x85, U+2028 and
        # U+2029, showing the wrong source line under the caret.
        if lines is None:
            lines = source_lines(source)
        if 1 <= s.line <= len(lines):
            line = lines[s.line - 1]
            end = s.end_column if s.end_line == s.line and s.end_column > s.column else len(line) + 1
            start, stop = excerpt_window(len(line), s.column)
            text = line[start:stop].replace("\t", " ")
            before = ELLIPSIS if start > 0 else ""
            after = ELLIPSIS if stop < len(line) else ""
            column = s.column - 1 - start  # the caret's offset in the window
            lead = _width(before + sanitize(text[:column]))
            width = max(1, _width(sanitize(text[column : end - 1 - start])))
            out.append(f"{pad} |")
            out.append(f"{s.line} | {before}{sanitize(text)}{after}")
            label = f" {_line(diag.label)}" if diag.label else ""
            out.append(f"{pad} | {' ' * lead}{'^' * width}{label}")
    for note in diag.notes:
        out.append(f"{pad} = note: {_line(note)}")
    if diag.help:
        out.append(f"{pad} = help: {_line(diag.help)}")
    return "\n".join(out)


# ----------------------------------------------------------------------------
# Bounded output: a hostile spec can make many findings, each on a long line.
# Without these bounds, 4,000 duplicate keys on one line printed 289 MB.

MAX_DIAGNOSTICS = 200  # findings shown per file; the rest are counted in one EFF030 info line
MAX_MESSAGE_CHARS = 1000  # message, help, label and each note of one finding
EXCERPT_COLUMNS = 120  # an echoed source line longer than this is cut to a window around the caret
ELLIPSIS = "\u2026"


def excerpt_window(length: int, column: int, columns: int = EXCERPT_COLUMNS) -> tuple[int, int]:
    """The 0-based ``[start, stop)`` characters to show of a line of ``length``
    characters whose caret starts at 1-based ``column``: the whole line when it
    fits, else ``columns`` characters with the caret a third of the way in."""
    if length <= columns:
        return 0, length
    caret = min(max(column - 1, 0), length)
    start = max(0, min(caret - columns // 3, length - columns))
    return start, start + columns


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with "…"."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def _clipped(d: Diagnostic) -> Diagnostic:
    if max(len(d.message), len(d.help), len(d.label), *(len(n) for n in d.notes), 0) <= MAX_MESSAGE_CHARS:
        return d
    return replace(d, message=clip(d.message), help=clip(d.help), label=clip(d.label), notes=tuple(clip(n) for n in d.notes))


def cap(diags: list[Diagnostic], limit: int = MAX_DIAGNOSTICS) -> tuple[list[Diagnostic], dict[str, int]]:
    """At most ``limit`` findings of one file, and the number left out by severity.

    Errors are kept before warnings and warnings before infos (so an error is
    never hidden behind warnings), each in the given order; the kept findings
    stay in that order, and one EFF030 info line at the end says how many more
    there are.  Every text is clipped to ``MAX_MESSAGE_CHARS``.
    """
    if len(diags) <= limit:
        return [_clipped(d) for d in diags], {}
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    order = sorted(range(len(diags)), key=lambda i: (rank.get(diags[i].severity, len(rank)), i))
    kept = [_clipped(diags[i]) for i in sorted(order[:limit])]
    omitted = {s: n for s in SEVERITIES if (n := sum(diags[i].severity == s for i in order[limit:]))}
    total = len(diags) - limit
    counts = ", ".join(f"{n:,} {s}{'s' if n != 1 else ''}" for s, n in omitted.items())
    kept.append(Diagnostic(
        "EFF030", "info", None, f"and {total:,} more findings not shown ({counts})",
        f"a file shows at most {limit} findings, errors first; fix these and check again"))
    return kept, omitted


def name_list(names, limit: int = 8, width: int = 40) -> str:
    """At most ``limit`` names in backquotes, each cut to ``width`` characters,
    then "and N more": a help line that lists a hostile file's header stays short."""
    names = list(names)
    shown = ", ".join(f"`{clip(n, width)}`" for n in names[:limit])
    return shown + (f" and {len(names) - limit:,} more" if len(names) > limit else "")
