"""Section 1, the summary: page 1 as the verdict.

Each run's headline figures (MFU first, valid tokens per second beside it), with
their standing (from inputs, implied, assumed, wrong input, not recoverable),
the corrected figure where a finding calls an input wrong, and what the spec
claims for it.  Consecutive claims-only runs with the same headline figures (a
paper's table) share one table, a row a run; a later row's notes that read as
the first row's but for the lines they cite say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.display import exact_digits, quantity
from effspec.report.assumptions import Cause, RunCauses, assumed_inputs, named
from effspec.report.claim_summary import ClaimLine, LeadSentence
from effspec.report.claim_summary import hfu_like as _hfu_like
from effspec.report.sections.views import consecutive
from effspec.report.verdict import PEAK_FIGURES, Correction
from effspec.report.words import clean, interval_text, label, value_text

if TYPE_CHECKING:
    from effspec.engine.results import RunResult
    from effspec.report.sections.run import RunView

# The headline row of the summary: MFU first, valid tokens/s right beside it.
HEADLINE_LABELS = {"valid_tokens_per_second": "Valid tokens/s", "achieved_flops_per_device": "Model FLOP/s per device"}
HEADLINE = ("mfu", "valid_tokens_per_second", "hfu", "step_time", "achieved_flops_per_device", "goodput",
            "calendar_efficiency")


@dataclass(frozen=True)
class HeadlineView:
    label: str
    value: str  # "—" when not recoverable
    note: str
    status: str = ""  # from inputs | implied | assumed | wrong input | not recoverable
    corrected: str = ""  # "79.6 % against the dense BF16 peak", when a finding calls an input wrong
    claimed: str = ""  # "61 % claimed: mismatch"
    finding: str = ""  # the code of the finding that calls the input wrong
    finding_line: int | None = None
    causes: tuple[Cause, ...] = ()  # what an "assumed" figure rests on: links to a finding or an input row
    interval: str = ""  # the figure's interval beside it, "[46.44 %, 50.86 %]"; "" when exact

    @property
    def number(self) -> str:
        """The figure without its unit (the unit is set smaller beside it)."""
        return self.value.rsplit(" ", 1)[0] if " " in self.value else self.value

    @property
    def unit(self) -> str:
        return self.value.rsplit(" ", 1)[1] if " " in self.value else ""

    @property
    def badge(self) -> str:
        """The status's badge class: ``wrong-input`` for "wrong input"."""
        return self.status.replace(" ", "-")


def _claimed(rr: RunResult, name: str, verdicts: dict[str, ClaimLine]) -> str:
    """"61 % claimed: not supported", "43 % claimed: agrees with claim `x` (line 9), not with measurements"."""
    cr, line = rr.claims.get(name), verdicts.get(name)
    if cr is None or cr.claimed is None:
        return ""
    return f"{value_text(cr.claimed, cr.unit, name)} claimed: {line.card_verdict if line is not None else cr.status}"


def _not_computed(rr: RunResult, name: str, head: str, implied_by: set[str],
                  verdicts: dict[str, ClaimLine]) -> HeadlineView | None:
    """The card of a headline figure the inputs do not give: the claim standing in, or "not recoverable"."""
    if name in ("goodput", "calendar_efficiency") and name not in rr.missing:
        return None  # no calendar declared: nothing to say
    missing = rr.missing.get(name, ())
    needs = ": needs " + ", ".join(map(clean, missing)) if missing else ""
    cr = rr.claims.get(name)
    if cr is not None and cr.claimed is not None:  # the claim stands in: not a second, contradicting verdict
        rests = any(b.startswith(f"claim `{cr.claim.written}` ") for b in implied_by)
        note = "claimed, not checked" + needs + ("; the figures marked implied rest on it" if rests else "")
        return HeadlineView(head, value_text(cr.claimed, cr.unit, name), note, "claimed", claimed=_claimed(rr, name, verdicts))
    return HeadlineView(head, "—", "not recoverable" + needs, "not recoverable", claimed=_claimed(rr, name, verdicts))


def headline(rr: RunResult, correction: Correction | None = None, causes: RunCauses | None = None,
             verdicts: dict[str, ClaimLine] | None = None) -> tuple[HeadlineView, ...]:
    """The run's headline cards, in :data:`HEADLINE` order."""
    verdicts = verdicts or {}
    implied_by = {m.basis for m in rr.implied.values()}
    rows = []
    for name in HEADLINE:
        metric = rr.figure(name)
        head = HEADLINE_LABELS.get(name, label(name))
        if metric is None:
            card = _not_computed(rr, name, head, implied_by, verdicts)
            if card is not None:
                rows.append(card)
            continue
        implied = name not in rr.metrics
        note = "implied by " + clean(metric.basis) if implied else ""
        status = "implied" if implied else "from inputs"
        why: tuple[Cause, ...] = ()
        if metric.assumed:
            why = causes.of(metric) if causes is not None else ()
            roots = list(assumed_inputs(rr, metric))
            if not why:  # the causes, when linked, are shown as links beside the note
                named_roots = ": " + named([clean(n) for n in roots]) if roots else ""
                note = (note + "; " if note else "") + "rests on assumed inputs" + named_roots
            status = "assumed"
        corrected, code, at = "", "", None
        without = _hfu_like(rr, name, metric.value)
        if without:  # an MFU whose numerator counts recomputation (EFF102)
            status, corrected = "hfu-like", f"{without} without recomputation (EFF102)"
            note = (note + "; " if note else "") + "counts recomputation (EFF102)"
        if correction is not None and name in PEAK_FIGURES:
            status, code, at = "wrong input", correction.code, correction.line
            corrected = f"{value_text(metric.value * correction.factor, metric.unit, name)} against {correction.against}" \
                + (f"; {corrected}" if corrected else "")
            note = (note + "; " if note else "") + f"divides by the peak {code} calls wrong"
        # a measured step prints exactly (1.1001 s, not 1.1 s), as the derivations divide by it
        exact = name == "step_time" and rr.step_stats is not None and name in rr.metrics
        shown = quantity(metric.value, "s", exact_digits(metric.value)) if exact else value_text(metric.value, metric.unit, name)
        rows.append(HeadlineView(head, shown, note, status, corrected,
                                 _claimed(rr, name, verdicts), code, at, why, interval_text(metric, name)))
    return tuple(rows)


_LINE_REF = re.compile(r"\(line (\d+)\)")


def without_lines(text: str) -> tuple[str, list[str]]:
    """``text`` with the lines it cites ("(line 37)") taken out, and those lines in order."""
    return _LINE_REF.sub("(line)", text), _LINE_REF.findall(text)


def moved(ours: list[str], theirs: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The lines one run's text cites where another's cites different ones, each pair once, in order:
    ((this run's lines), (the other's lines))."""
    pairs = [pair for pair in dict.fromkeys(zip(ours, theirs, strict=True)) if pair[0] != pair[1]]
    return tuple(a for a, _ in pairs), tuple(b for _, b in pairs)


def _notes_key(run: RunView) -> tuple[tuple[tuple[str, str, tuple[str, ...]], ...], list[str]]:
    """A run's page-1 notes with the lines they cite taken out, and those lines in order."""
    key, lines = [], []
    for labels, h in run.headline_notes:
        note, cited = without_lines(h.note)
        key.append((labels, note, tuple(c.text for c in h.causes)))
        lines += cited
    return tuple(key), lines


@dataclass(frozen=True)
class NotesLike:
    """A later row's page-1 notes, read as the first row's (``earlier``) but for the lines they cite."""

    earlier: str  # the first row's run id
    here: tuple[str, ...]  # this run's lines
    there: tuple[str, ...]  # the first row's lines
    causes: tuple[Cause, ...]  # this run's own causes, each once


@dataclass(frozen=True)
class SummaryRow:
    """A run of page 1, with (in a table of runs) its notes as the first row's."""

    run: RunView
    notes_like: NotesLike | None


@dataclass(frozen=True)
class SummaryBlock:
    """Page 1's block: one run's cards, or a table of consecutive claims-only runs, a row a run."""

    places: tuple[int, ...]  # 0-based places of its runs in the report
    rows: tuple[SummaryRow, ...]

    @property
    def is_table(self) -> bool:
        return len(self.rows) > 1

    @property
    def run(self) -> RunView:
        """The first (or only) run."""
        return self.rows[0].run


@dataclass(frozen=True)
class SummaryView:
    verdicts: tuple[LeadSentence, ...]  # a sentence a run or scaling, and each claim
    counts: tuple[tuple[str, int], ...]
    suppressed: int  # findings suppressed or lowered, those listed and those beyond the cap
    evaluated: bool
    blocks: tuple[SummaryBlock, ...]

    @property
    def count_words(self) -> tuple[tuple[str, int, str], ...]:
        """(severity, count, the severity as counted: "errors", "1 warning", "2 info")."""
        return tuple((sev, n, sev + ("s" if n != 1 and sev != "info" else "")) for sev, n in self.counts)

    @property
    def groups(self) -> tuple[tuple[int, ...], ...]:
        """The blocks as 0-based run places."""
        return tuple(b.places for b in self.blocks)


def _notes_like(runs: tuple[RunView, ...], first: int, index: int) -> NotesLike | None:
    if first == index:
        return None
    here, ours = _notes_key(runs[index])
    there, theirs = _notes_key(runs[first])
    if here != there or len(ours) != len(theirs):
        return None
    causes = dict.fromkeys(c for _, h in runs[index].headline_notes for c in h.causes)
    return NotesLike(runs[first].id, *moved(ours, theirs), tuple(causes))


def summary_groups(runs: tuple[RunView, ...]) -> tuple[tuple[int, ...], ...]:
    """Consecutive claims-only runs with the same headline figures share one block; every other run
    has a block of its own.  The runs keep their order.  Section 5 sets each block's claims as one table too."""
    return consecutive(len(runs), lambda before, n: runs[before].claims_only and runs[n].claims_only
                       and [h.label for h in runs[before].headline] == [h.label for h in runs[n].headline])


def build(runs: tuple[RunView, ...], verdicts: tuple[LeadSentence, ...], counts: tuple[tuple[str, int], ...],
          suppressed: int, evaluated: bool) -> SummaryView:
    blocks = tuple(SummaryBlock(g, tuple(SummaryRow(runs[n], _notes_like(runs, g[0], n)) for n in g))
                   for g in summary_groups(runs))
    return SummaryView(verdicts, counts, suppressed, evaluated, blocks)
