"""Fixes: the edits the diagnostics name, for `effspec check --fix`, `effspec fmt` and the editor's quick fixes.

One table, read by all: :func:`fixes_for` gives the candidate edits of one
finding, :func:`vet` checks them, :func:`apply` makes them.  A candidate is
offered only when the text under the span is exactly what the message names,
so an edit never lands on the wrong characters.

| fix | finding | edit | safe |
|---|---|---|---|
| unit spelling | EFF001 "unknown unit `TFLOPs`", help "write `TFLOP/s`" | the unit, replaced | yes |
| the other FLOPs | EFF001 on `6 GFLOPs/token` (a count: the help's rate reading gives EFF010) | `GFLOP/token` | yes |
| the key's unit | EFF001 on `seq_len = 2048 tokens` (`token` gives EFF010) | `token/sequence` | no: a unit not written |
| bare ratio claim | EFF604 on a claim of a ratio written as a bare number above 1 (`claim mfu = 47`) | `47 %` | yes |
| did you mean | EFF002 / EFF003 "… `layer` …", help "did you mean `layers`?" | the name, replaced | no: a guess |
| thousands | EFF001 "`1,000` is not a number", help "write `1_000` or `1000`" | `1_000` | no: `1,000` may be a decimal comma |
| peak from the catalog | EFF201 / EFF202: another dtype's or the sparse peak | `catalog`, for the figure and its `from` | no |

Safe fixes correct a spelling and keep what the spec means; unsafe ones change
what it declares, so `check --fix` applies them only with `--unsafe-fixes`.
The rules that know their fix attach it to the finding (``Diagnostic.fixes``);
the others are read here from the finding's help.

The table proposes; :func:`vet` proves.  It checks the text again with the
candidates made and compares the findings (by code and line) with those before:

- a new syntax, type or dimension error (EFF001, EFF003, EFF010 "expects
  `FLOP/token`") on an edit refutes that edit: it is not offered, and the
  finding's next candidate is tried (`GFLOP/s/token`, then `GFLOP/token`);
- any other new finding (a claim that now disagrees, say) makes the fix unsafe:
  it is offered, never applied by `--fix` alone, and its note says why;
- a fix whose finding is still there afterwards is unsafe too.

When the text before the fix stopped at the front end, the rules never ran on
it, so the rules' findings after the fix are revealed, not new.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from effspec.diagnostics import Diagnostic, Fix, Span
from effspec.front import lexicon

__all__ = ["Fix", "Offer", "fixes_for", "claim_units", "apply", "value_fix", "vet", "chosen", "counts", "held_back"]

_WRITE = re.compile(r"^write `([^`\n]+)`(, the unit `[^`\n]+` takes)?$")
_WRITE_EITHER = re.compile(r"^write `([^`\n]+)` or `([^`\n]+)`$")
_DID_YOU_MEAN = re.compile(r"did you mean `([^`\n]+)`\?")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_RATIO_CLAIM_CODES = ("EFF601", "EFF604")

_FLOPS_WORD = re.compile(r"[kKmMgGtTpPeE]?FLOPS", re.IGNORECASE)
_EXPECTS = re.compile(r"^`([^`\n]+)` expects `([^`\n]+)`, found `([^`\n]+)`$")



@cache
def _terminal(name: str) -> re.Pattern[str]:
    """The grammar's NUMBER or NAME (effspec.front.lexicon), compiled."""
    return re.compile(lexicon.terminal(name))


SourceUnder = Callable[[Span], str]
ClaimUnit = Callable[[Span], "str | None"]
Recheck = Callable[[str], Sequence[Diagnostic]]  # the findings of a text, checked as the original was


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
        if write.group(2):  # the key's unit, a denominator the author did not write
            out.append(Fix(f"Write `{write.group(1)}`{write.group(2)}", diag.span, write.group(1), safe=False,
                           preferred=False))
        else:
            rest = written[written.index("/"):] if "/" in written else ""  # the help names the first word's fix
            out.append(Fix(f"Write `{write.group(1)}{rest}`", diag.span, write.group(1) + rest))
    either = _WRITE_EITHER.match(diag.help or "")
    if either and diag.code == "EFF001" and written in named and "," in written:
        out.append(Fix(f"Write `{either.group(1)}`", diag.span, either.group(1), safe=False, preferred=False))
    mean = _DID_YOU_MEAN.search(diag.help or "")
    if mean and written in named and _terminal("NAME").fullmatch(mean.group(1)):
        out.append(Fix(f"Change `{written}` to `{mean.group(1)}`", diag.span, mean.group(1), safe=False))
    if diag.code in _RATIO_CLAIM_CODES and _terminal("NUMBER").fullmatch(written) and claim_unit(diag.span) == "":
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


def chosen(offers: Iterable[Offer], unsafe: bool = False) -> list[Offer]:
    """The vetted offers ``--fix`` applies (``unsafe``: with ``--unsafe-fixes``)."""
    return [o for o in offers if o.fix.safe or unsafe]


def counts(offers: Iterable[Offer]) -> tuple[int, int]:
    """(edits `--fix` would make, edits only `--unsafe-fixes` would): one per place, as :func:`apply` makes them."""
    offers = list(offers)
    safe = {(o.fix.span, o.fix.new_text) for o in offers if o.fix.safe}
    every = {(o.fix.span, o.fix.new_text) for o in offers}
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


# -- proof ------------------------------------------------------------------

VET_ROUNDS = 6  # candidates tried per finding, at most: the table's, then what a refutation suggests
MAX_ALONE = 8  # fixes re-checked one by one to see which brought a finding; past it, each is held back
_REFUTES = ("EFF001", "EFF003", "EFF010")  # on its own edit, the fix wrote a wrong unit, type or syntax


@dataclass(frozen=True)
class Offer:
    """A vetted fix of one finding: ``fix.safe`` is what was proven, ``note`` why a table-safe fix is held back."""

    diag: Diagnostic
    fix: Fix
    note: str = ""


def _place(d: Diagnostic) -> tuple[str, int]:
    return d.code, d.span.line if d.span is not None else 0


def _front_end(d: Diagnostic) -> bool:
    return d.code < "EFF100"


def _stopped(diags: Iterable[Diagnostic]) -> bool:
    """The check stopped at the front end (a syntax or IR error): the rules did not run."""
    return any(d.severity == "error" and _front_end(d) for d in diags)


def _new(after: Sequence[Diagnostic], before: Iterable[Diagnostic], stopped: bool) -> list[Diagnostic]:
    """The findings of ``after`` that ``before`` had not (by code and line, counted); only the front end's
    when ``before`` stopped there (the rules' findings after it are revealed)."""
    left = Counter(_place(d) for d in before)
    out = []
    for d in after:
        if left[_place(d)] > 0:
            left[_place(d)] -= 1
        elif not stopped or _front_end(d):
            out.append(d)
    return out


def _without(before: Sequence[Diagnostic], fixed: Iterable[Diagnostic]) -> list[Diagnostic]:
    """``before`` less the findings being fixed (once each): after the fix, the same code on their line is new."""
    left = Counter((d.code, d.span, d.message) for d in fixed)
    out = []
    for d in before:
        if left[(d.code, d.span, d.message)] > 0:
            left[(d.code, d.span, d.message)] -= 1
        else:
            out.append(d)
    return out


def _edited(made: Sequence[Fix]) -> dict[int, tuple[int, int]]:
    """Where each edit made lies in the fixed text: (index in ``made``) -> (start, end) columns on its line."""
    out: dict[int, tuple[int, int]] = {}
    by_line: dict[int, list[int]] = {}
    for i, f in enumerate(made):
        by_line.setdefault(f.span.line, []).append(i)
    for ids in by_line.values():
        shift = 0
        for i in sorted(ids, key=lambda i: made[i].span.column):
            f = made[i]
            start = f.span.column + shift
            out[i] = (start, start + len(f.new_text))
            shift += len(f.new_text) - (f.span.end_column - f.span.column)
    return out


def _touches(d: Diagnostic, fix: Fix, where: tuple[int, int]) -> bool:
    s = d.span
    if s is None or not s.line <= fix.span.line <= s.end_line:
        return False
    if s.line != s.end_line:
        return True
    return max(s.column, where[0]) <= min(max(s.end_column, s.column + 1), where[1])


def _next_candidate(fix: Fix, written: str, refuted_by: Diagnostic) -> Fix | None:
    """After a unit spelling that the check refutes with EFF010: `GFLOPs` read as a count (`GFLOP/token`), or the
    unit the key takes when it only adds a denominator (`token` -> `token/sequence`: unsafe, the author wrote a count)."""
    m = _EXPECTS.match(refuted_by.message) if refuted_by.code == "EFF010" else None
    if m is None or not fix.title.startswith("Write `"):
        return None
    key, expects = m.group(1), m.group(2)
    word, new_word = written.split("/")[0], fix.new_text.split("/")[0]
    if _FLOPS_WORD.fullmatch(word) and fix.new_text.startswith(new_word + "/s"):
        count = new_word + fix.new_text[len(new_word) + 2:]
        return Fix(f"Write `{count}` (a count of FLOPs: `{key}` is in `{expects}`)", fix.span, count)
    if "/" in expects and "/" not in fix.new_text and expects.split("/")[0] == fix.new_text:
        return Fix(f"Write `{expects}`, the unit `{key}` takes", fix.span, expects, safe=False, preferred=False)
    return None


def _said(d: Diagnostic) -> str:
    return f"{d.code} on line {d.span.line}" if d.span is not None else d.code


@dataclass
class _Search:
    """Candidates tried together until none is refuted: each finding's current choice, and the last re-check."""

    candidates: dict[int, list[Fix]]
    choice: dict[int, int]
    made: list[Fix]
    after: Sequence[Diagnostic] = ()
    new: list[Diagnostic] = dataclasses.field(default_factory=list)
    settled: bool = False


def _search(diags: list[Diagnostic], text: str, recheck: Recheck, before: list[Diagnostic], under: SourceUnder,
            candidates: dict[int, list[Fix]], stopped: bool) -> _Search:
    """One candidate per finding, all made together (a unit fixed can let the check reach a line it could not
    before); a candidate that brings a new syntax, type or dimension error on its own edit gives way to the next."""
    s = _Search(candidates, dict.fromkeys(candidates, 0), [])
    for _ in range(VET_ROUNDS):
        active = {i: candidates[i][k] for i, k in s.choice.items()}
        fixed, s.made = apply(text, active.values())
        s.after = recheck(fixed)
        s.new = _new(s.after, _without(before, (diags[i] for i in active)), stopped)
        where = _edited(s.made)
        refuted: dict[int, Diagnostic] = {}
        for n in (n for n in s.new if n.code in _REFUTES):
            for j, f in enumerate(s.made):
                if _touches(n, f, where[j]):
                    refuted.update((i, n) for i, g in active.items() if (g.span, g.new_text) == (f.span, f.new_text))
        if not refuted:
            s.settled = True
            return s
        for i, n in refuted.items():
            span = diags[i].span
            following = _next_candidate(active[i], under(span) if span is not None else "", n)
            if following is not None and all(c.new_text != following.new_text for c in candidates[i]):
                candidates[i].append(following)
            s.choice[i] += 1
            if s.choice[i] >= len(candidates[i]):
                del s.choice[i]
        if not s.choice:
            return s
    return s


def vet(diags: Iterable[Diagnostic], text: str, recheck: Recheck, spec=None,
        baseline: Sequence[Diagnostic] | None = None) -> list[Offer]:
    """The fixes of ``diags`` (findings of ``text``), checked: ``recheck(fixed text)`` must bring no new finding.

    ``baseline``: the findings of ``text`` as ``recheck`` gives them, when ``diags`` went through a filter."""
    diags = list(diags)
    before = list(diags if baseline is None else baseline)
    under, unit = source_reader(text), claim_units(spec)
    candidates = {i: c for i, d in enumerate(diags) if (c := fixes_for(d, under, unit))}
    if not candidates:
        return []
    stopped = _stopped(before)
    s = _search(diags, text, recheck, before, under, candidates, stopped)
    where = _edited(s.made)
    index = {(f.span, f.new_text): j for j, f in enumerate(s.made)}
    on_edits = {id(n) for n in s.new for j, f in enumerate(s.made) if _touches(n, f, where[j])}
    # When the check had stopped at the front end, what the fixes let it reach is revealed, not brought: a finding
    # counts against a fix there only on its own edit.
    elsewhere = [] if stopped else [n for n in s.new if id(n) not in on_edits]
    still = Counter((d.code, d.span.line if d.span else 0, d.message) for d in s.after)
    out, alone_checks = [], 0
    for i, k in s.choice.items():
        d, f = diags[i], candidates[i][k]
        j = index.get((f.span, f.new_text))
        if not s.settled:
            note = "the check could not settle which candidate is right"
        elif j is None:
            note = "it overlaps another fix, so it was not checked"
        elif still[(d.code, d.span.line if d.span else 0, d.message)]:
            note = "the finding remains after it"
        else:
            brings = [n for n in s.new if _touches(n, s.made[j], where[j])]
            if not brings and elsewhere:  # one fix: its own; a few: made alone, to see which; many: all of them
                alone = len(s.made) > 1 and alone_checks < MAX_ALONE
                alone_checks += alone
                brings = _new(recheck(apply(text, [f])[0]), _without(before, [d]), False) if alone else elsewhere
            note = "it brings " + ", ".join(_said(n) for n in brings[:3]) if brings else ""
        out.append(Offer(d, dataclasses.replace(f, safe=False) if note and f.safe else f, note if f.safe else ""))
    return out


def held_back(offers: Iterable[Offer], unsafe: bool = False) -> list[Offer]:
    """The offers `--fix` leaves (all of them but the safe, or none with ``unsafe``)."""
    return [] if unsafe else [o for o in offers if not o.fix.safe]


def describe(offer: Offer, path: str) -> str:
    """`spec.eff:6:25 EFF001: `tokens` -> `token/sequence` (Write `token/sequence`, the unit `seq_len` takes)`."""
    s = offer.fix.span
    why = f"; not safe: {offer.note}" if offer.note else ""
    return f"{path}:{s.line}:{s.column} {offer.diag.code}: {offer.fix.title}{why}"
