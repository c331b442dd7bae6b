"""Quick fixes: the diagnostics whose help already names a concrete replacement.

There is no ``effspec check --fix`` yet, so the table lives here.  Each entry
reads one diagnostic and the text under its span and returns zero or more
edits; a fix is offered only when the text under the span is exactly what the
message names, so an edit never lands on the wrong characters.

| fix | diagnostic | edit |
|---|---|---|
| unit spelling | EFF001 "unknown unit `tokens`", help "write `token`" | the unit, replaced |
| did you mean | EFF002 / EFF003 "… `layer` …", help "did you mean `layers`?" | the name, replaced |
| bare ratio claim | EFF604 / EFF601 on a claim of a ratio written as a bare number above 1 (`claim mfu = 52`) | `52 %` |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from effspec.diagnostics import Diagnostic, Span

_WRITE = re.compile(r"^write `([^`\n]+)`$")
_DID_YOU_MEAN = re.compile(r"did you mean `([^`\n]+)`\?")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_BARE_NUMBER = re.compile(r"^[0-9][0-9_]*(\.[0-9_]+)?([eE][+-]?[0-9]+)?$")
_RATIO_CLAIM_CODES = ("EFF601", "EFF604")


@dataclass(frozen=True)
class Fix:
    title: str
    span: Span  # 1-based, end exclusive: the text replaced
    new_text: str
    preferred: bool = True


def fixes_for(diag: Diagnostic, source_under, claim_unit=lambda span: None) -> list[Fix]:
    """The fixes for one diagnostic; ``source_under(span)`` gives the text a span covers and
    ``claim_unit(span)`` the unit of the claim whose value is under the span ("" for a ratio), or None."""
    if diag.span is None or diag.span.line != diag.span.end_line:
        return []
    written = source_under(diag.span)
    if not written:
        return []
    out: list[Fix] = []
    named = _BACKTICKED.findall(diag.message)
    write = _WRITE.match(diag.help or "")
    if write and diag.message.startswith("unknown unit") and written in named:
        out.append(Fix(f"Write `{write.group(1)}`", diag.span, write.group(1)))
    mean = _DID_YOU_MEAN.search(diag.help or "")
    if mean and written in named and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", mean.group(1)):
        out.append(Fix(f"Change `{written}` to `{mean.group(1)}`", diag.span, mean.group(1)))
    if diag.code in _RATIO_CLAIM_CODES and _BARE_NUMBER.match(written) and claim_unit(diag.span) == "":
        value = float(written.replace("_", ""))
        if value > 1:
            out.append(Fix(f"Write `{written} %` (a bare ratio above 1 reads as {value * 100:g} %)", diag.span, f"{written} %"))
    return out

