"""Fixes: the edits the diagnostics name, for `effspec check --fix` and the editor's quick fixes.

One table, read by both: :func:`fixes_for` gives the edits of one finding,
:func:`apply` makes them.  A fix is offered only when the text under the span
is exactly what the message names, so an edit never lands on the wrong
characters.

| fix | finding | edit | safe |
|---|---|---|---|
| unit spelling | EFF001 "unknown unit `TFLOPs`", help "write `TFLOP/s`" | the unit, replaced | yes |
| bare ratio claim | EFF604 / EFF601 on a claim of a ratio written as a bare number above 1 (`claim mfu = 47`) | `47 %` | yes |
| did you mean | EFF002 / EFF003 "… `layer` …", help "did you mean `layers`?" | the name, replaced | no: a guess |
| thousands | EFF001 "`1,000` is not a number", help "write `1_000` or `1000`" | `1_000` | no: `1,000` may be a decimal comma |
| peak from the catalog | EFF201 / EFF202: another dtype's or the sparse peak | `catalog`, for the figure and its `from` | no |

Safe fixes correct a spelling and keep what the spec means; unsafe ones change
what it declares, so `check --fix` applies them only with `--unsafe-fixes`.
The rules that know their fix attach it to the finding (``Diagnostic.fixes``);
the others are read here from the finding's help.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from effspec.diagnostics import Diagnostic, Fix, Span

__all__ = ["Fix", "fixes_for", "claim_units", "apply", "value_fix", "counts"]

_WRITE = re.compile(r"^write `([^`\n]+)`$")
_WRITE_EITHER = re.compile(r"^write `([^`\n]+)` or `([^`\n]+)`$")
_DID_YOU_MEAN = re.compile(r"did you mean `([^`\n]+)`\?")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_BARE_NUMBER = re.compile(r"^[0-9][0-9_]*(\.[0-9_]+)?([eE][+-]?[0-9]+)?$")
_RATIO_CLAIM_CODES = ("EFF601", "EFF604")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

SourceUnder = Callable[[Span], str]
ClaimUnit = Callable[[Span], "str | None"]


def _no_unit(span: Span) -> str | None:
    return None


def fixes_for(diag: Diagnostic, source_under: SourceUnder, claim_unit: ClaimUnit = _no_unit) -> list[Fix]:
    """The fixes for one finding; ``source_under(span)`` gives the text a span covers and
    ``claim_unit(span)`` the unit of the claim whose value is under the span ("" for a ratio), or None."""
    out = list(diag.fixes)
    if diag.span is None or diag.span.line != diag.span.end_line:
        return out
    written = source_under(diag.span)
    if not written:
        return out
    named = _BACKTICKED.findall(diag.message)
    write = _WRITE.match(diag.help or "")
    if write and diag.message.startswith("unknown unit") and written in named:
        rest = written[written.index("/"):] if "/" in written else ""  # the help names the first word's fix
        out.append(Fix(f"Write `{write.group(1)}{rest}`", diag.span, write.group(1) + rest))
    either = _WRITE_EITHER.match(diag.help or "")
    if either and diag.code == "EFF001" and written in named and "," in written:
        out.append(Fix(f"Write `{either.group(1)}`", diag.span, either.group(1), safe=False, preferred=False))
    mean = _DID_YOU_MEAN.search(diag.help or "")
    if mean and written in named and _KEY.fullmatch(mean.group(1)):
        out.append(Fix(f"Change `{written}` to `{mean.group(1)}`", diag.span, mean.group(1), safe=False))
    if diag.code in _RATIO_CLAIM_CODES and _BARE_NUMBER.match(written) and claim_unit(diag.span) == "":
        value = float(written.replace("_", ""))
        if value > 1:
            out.append(Fix(f"Write `{written} %` (a bare ratio above 1 reads as {value * 100:g} %)", diag.span,
                           f"{written} %"))
    return out


def source_reader(text: str) -> SourceUnder:
    """``source_under`` for ``text``: the characters a one-line span covers ("" for any other)."""
    lines = text.split("\n")

    def under(span: Span) -> str:
        if span.line != span.end_line or not 1 <= span.line <= len(lines):
            return ""
        return lines[span.line - 1][span.column - 1:span.end_column - 1]
    return under


def claim_units(spec) -> ClaimUnit:
    """``claim_unit`` for a checked spec (an ``ir.Spec``, or None): the unit a claim's value must have,
    "" for a ratio (MFU, HFU, a breakdown share, a scaling efficiency), None when no claim is there."""
    from effspec.front import keys as K

    units: dict[Span, str | None] = {}
    for run in getattr(spec, "runs", ()):
        for claim in run.claims:
            units[claim.value_span] = (K.CLAIMABLE[claim.name] if claim.name in K.CLAIMABLE
                                       else "" if claim.name.startswith("breakdown.") else None)
    for scaling in getattr(spec, "scalings", ()):
        for claim in scaling.claims:
            units[claim.value_span] = (K.CLAIMABLE.get(claim.name) if claim.name in K.CLAIMABLE
                                       else "" if claim.name in K.SCALING_CLAIMABLE else None)
    return lambda span: units.get(span)


_PROVENANCE = re.compile(r'\s+from\s+[A-Za-z_][A-Za-z0-9_]*\s+"(?:[^"\\\n]|\\.)*"')


def value_fix(lines: list[str], value_span: Span, new_text: str, title: str, safe: bool = False) -> Fix | None:
    """A fix that writes ``new_text`` for a value and drops the `from …` that cited it (it cited the old value)."""
    if value_span.line != value_span.end_line or not 1 <= value_span.line <= len(lines):
        return None
    line = lines[value_span.line - 1]
    m = _PROVENANCE.match(line, value_span.end_column - 1)
    end = m.end() + 1 if m is not None else value_span.end_column
    return Fix(title, Span(value_span.line, value_span.column, value_span.line, end), new_text, safe=safe)


def chosen(diags: Iterable[Diagnostic], text: str, spec=None, unsafe: bool = False) -> list[tuple[Diagnostic, Fix]]:
    """Each finding with the first of its fixes that ``--fix`` (``unsafe``: with ``--unsafe-fixes``) applies."""
    under, unit = source_reader(text), claim_units(spec)
    out = []
    for d in diags:
        fix = next((f for f in fixes_for(d, under, unit) if f.safe or unsafe), None)
        if fix is not None:
            out.append((d, fix))
    return out


def counts(diags: Iterable[Diagnostic], text: str | None, spec=None) -> tuple[int, int]:
    """(edits `--fix` would make, edits only `--unsafe-fixes` would): one per place, as :func:`apply` makes them."""
    if text is None:
        return 0, 0
    safe = {(f.span, f.new_text) for _, f in chosen(diags, text, spec)}
    every = {(f.span, f.new_text) for _, f in chosen(diags, text, spec, unsafe=True)}
    return len(safe), len(every - safe)


def apply(text: str, fixes: Iterable[Fix]) -> tuple[str, list[Fix]]:
    """``text`` with the fixes made, and the fixes made: one edit per place (the first fix for it); an edit that overlaps
    one before it is left for the next round (after a re-check, its span may have moved)."""
    lines = text.split("\n")
    done: dict[tuple[int, int, int], str] = {}
    applied: list[Fix] = []
    for fix in sorted(fixes, key=lambda f: (f.span.line, f.span.column, f.span.end_column)):
        s = fix.span
        key = (s.line, s.column, s.end_column)
        if key in done:  # two findings on one span (EFF601 and EFF604 on `47`): one edit
            continue
        if s.line != s.end_line or not 1 <= s.line <= len(lines) or not 1 <= s.column <= s.end_column \
                or s.end_column - 1 > len(lines[s.line - 1]):
            continue
        if any(line == s.line and start < s.end_column and s.column < end for line, start, end in done):
            continue
        done[key] = fix.new_text
        applied.append(fix)
    for (line, start, end), new_text in sorted(done.items(), reverse=True):  # right to left: columns stay valid
        lines[line - 1] = lines[line - 1][:start - 1] + new_text + lines[line - 1][end - 1:]
    return "\n".join(lines), applied
