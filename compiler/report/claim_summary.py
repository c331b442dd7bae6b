"""Each claim's verdict and its basis, in words: page 1 of every report and the end of `effspec check`.

One :class:`ClaimLine` per claim (a run's or a scaling's) and one lead sentence per run or scaling,
built once from a check's result and read by the HTML/PDF summary, Markdown, LaTeX and the
terminal's claims summary, so the three never word a verdict differently.

A verdict names its basis, because "consistent" means less when the figure it agrees with
was itself implied by another claim:

- **the declared inputs**: the figure is reconstructed from the spec's own inputs;
- **with assumed values**: the same, but some input is assumed (an unwritten convention, a default);
- **another claim**: the figure is implied by a claim (a throughput with no step time); a claim
  that agrees with it "agrees with claim `throughput` (line 13), not with measurements".

Two marks travel with an MFU or HFU verdict: the figure against the right peak where a finding
(EFF201-EFF204) calls the declared peak wrong, and "HFU-like" where the numerator counts
recomputation (EFF102), with the MFU once recomputation is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from effspec.engine import flops
from effspec.report.assumptions import assumed_inputs, named
from effspec.report.verdict import PEAK_FIGURES, Correction, peak_corrections
from effspec.report.words import clean, interval_text, label, value_text

if TYPE_CHECKING:
    from effspec import Result
    from effspec.engine.results import ClaimResult, Evaluation, Metric, RunResult
    from effspec.engine.scaling import ScalingResult
    from effspec.front.ir import Claim

# A run's lead sentence is about its most telling claim: a mismatch before a claim that cannot be
# checked before one that holds, and among equals the headline metrics first, then the order written.
_STATUS_ORDER = {"mismatch": 0, "inconclusive": 1, "unrecoverable": 2, "consistent": 3}
_METRIC_ORDER = ("mfu", "hfu", "valid_tokens_per_second", "achieved_flops_per_device", "step_time", "flops_per_token")
# What a wrong-peak finding says the declared peak is.
_PEAK_IS = {
    "EFF201": "another datatype's figure",
    "EFF202": "the 2:4-sparse figure",
    "EFF203": "off the catalog row for this part",
    "EFF204": "a whole pool's figure, not one device's",
}
# The basis kinds, as the reports label them.
BASIS_LABELS = {"inputs": "declared inputs", "assumed": "assumed values", "claim": "another claim", "none": "—"}
_NAMED_CLAIM = re.compile(r"claims? `[^`]*`(?: and `[^`]*`)? \((line \d+)\)")  # an implied figure's basis
VERDICT_LABELS = {"consistent": "holds", "mismatch": "not supported", "inconclusive": "inconclusive",
                  "unrecoverable": "cannot be checked"}


@dataclass(frozen=True)
class ClaimLine:
    """One claim's verdict, worded."""

    owner: str  # the run or scaling id
    scaling: bool  # a scaling's claim
    claim: str  # as written: `mfu`, `throughput`, `efficiency[scaled_64]`
    metric: str  # the metric it names: `valid_tokens_per_second`
    line: int | None
    status: str  # the engine's: consistent | mismatch | unrecoverable
    verdict: str  # "holds", "agrees with claim `x` (line 9), not with measurements", "not supported", …
    claimed: str  # "61 %"
    reconstructed: str  # "39.8 %"; "" when it cannot be checked
    basis_kind: str  # inputs | assumed | claim | none
    basis: str  # "the declared inputs", "claim `throughput` (line 30)", …
    corrected: str = ""  # "79.6 % against the dense BF16 peak"
    hfu_like: str = ""  # the MFU without recomputation, where the numerator counts it: "35.45 %"
    missing: str = ""  # "`timing.step_time`"
    sentence: str = ""

    @property
    def verdict_label(self) -> str:
        """The short status a table cell or the terminal shows."""
        if self.status == "consistent" and self.basis_kind == "claim":
            return "agrees with a claim"
        return VERDICT_LABELS.get(self.status, self.status)

    @property
    def card_verdict(self) -> str:
        """The verdict for a narrow card, whose notes beneath name the claim: "agrees with the claim at line 65,
        not with measurements"."""
        if self.basis_kind != "claim":
            return self.verdict
        return _NAMED_CLAIM.sub(r"the claim at \1", self.verdict)


@dataclass(frozen=True)
class LeadSentence:
    """A run's or a scaling's verdict in one sentence, and its claims."""

    owner: str
    scaling: bool
    sentence: str
    claims: tuple[ClaimLine, ...]


def _subject(metric: str, value: str) -> str:
    """"61 % MFU", "780,000 token/s", "a step time of 2.1 s"."""
    if metric in ("mfu", "hfu", "mfu_measured_peak"):
        return f"{value} {label(metric)}"
    if metric.startswith("breakdown."):
        return f"{value} {metric.split('.', 1)[1].replace('_', ' ')} share"
    if metric in ("valid_tokens_per_second", "goodput"):
        return value if metric == "valid_tokens_per_second" else f"{value} goodput"
    if metric == "achieved_flops_per_device":
        return f"{value} per device"
    if metric.endswith("speedup"):
        return f"{value} speedup"
    if metric.endswith("efficiency"):
        return f"{value} {label(metric).lower()}"
    words = label(metric)
    return f"{words[0].lower()}{words[1:]} of {value}"


def _basis(rr: RunResult | None, cr: ClaimResult, metric: Metric | None) -> tuple[str, str]:
    """(kind, words) of what the reconstructed figure rests on."""
    basis = clean(cr.basis)
    if basis.startswith("claim"):
        return "claim", basis
    if metric is not None and metric.basis not in ("inputs", ""):
        return "claim", clean(metric.basis)
    if metric is not None and metric.assumed and rr is not None:
        roots = [clean(n) for n in assumed_inputs(rr, metric)]
        return "assumed", "the declared inputs with assumed values" + (f" ({named(roots)})" if roots else "")
    inputs = "the measured inputs" if _measured(rr) else "the declared inputs"
    if basis not in ("inputs", ""):  # a scaling's: `gpus_512` against `one_gpu`
        return "inputs", f"{inputs} ({basis})"
    return "inputs", inputs


_MEASURED = ("measured", "profiler", "log")


def _measured(rr: RunResult | None) -> bool:
    """The run's time is a measurement: step-time samples, or a step time or throughput from a log, a profiler or
    a timer."""
    timing = rr.run.block("timing") if rr is not None else None
    return timing is not None and any(e.provenance.kind in _MEASURED or e.kind in ("samples", "file")
                                      for e in timing.entries if e.key in ("step_time", "throughput"))


def hfu_like(rr: RunResult | None, name: str, value: float) -> str:
    """"35.45 %": the MFU without recomputation, where the numerator counts it (EFF102's figure); "" otherwise."""
    if name != "mfu" or rr is None or rr.shape is None or rr.run.block("convention") is None:
        return ""
    work = rr.run.block("work")
    both = flops.with_and_without_recompute(rr.shape, rr.knobs, work.number("seq_len") if work is not None else None)
    if both is None:
        return ""
    counted, without = both
    return value_text(value * without.total / counted.total, "", name)


def _line(owner: str, scaling: bool, cr: ClaimResult, rr: RunResult | None, correction: Correction | None,
          figure: Metric | None) -> ClaimLine:
    c = cr.claim
    metric_name = c.name
    shown_name = "speedup" if metric_name.endswith("speedup") else metric_name
    claimed = value_text(cr.claimed, cr.unit, shown_name) if cr.claimed is not None else clean(c.text)
    line = c.span.line if c.span is not None else None
    if cr.status == "unrecoverable" or cr.reconstructed is None:
        missing = ", ".join(" or ".join(f"`{part}`" for part in clean(m).split(" or ")) for m in cr.missing)
        subject = _subject(metric_name, claimed)
        why = f"missing {missing}" if missing else "the inputs do not give it"
        sentence = f"The claimed {subject} cannot be checked: {why}."
        return ClaimLine(owner, scaling, clean(c.key if scaling else c.written), metric_name, line,
                         "unrecoverable", "cannot be checked", claimed, "", "none", "", missing=missing,
                         sentence=sentence)
    reconstructed = value_text(cr.reconstructed, cr.unit, shown_name)
    if figure is not None and getattr(figure, "value", None) == cr.reconstructed:
        bounds = interval_text(figure, shown_name)  # the point figure and its interval, in one line
        reconstructed += f" {bounds}" if bounds else ""
    kind, basis = _basis(rr, cr, figure)
    corrected = ""
    if correction is not None and metric_name in PEAK_FIGURES:
        corrected = f"{value_text(cr.reconstructed * correction.factor, cr.unit, shown_name)} against {correction.against}"
    hfu = hfu_like(rr, metric_name, cr.reconstructed)
    subject = _subject(metric_name, claimed)
    gives = f"{basis} implies {reconstructed}" if kind == "claim" else f"{basis} give {reconstructed}"
    if corrected:
        assert correction is not None
        gives += (f" against the declared peak, which is {_PEAK_IS.get(correction.code, 'called wrong')} "
                  f"({correction.code}); against {correction.against} it is {corrected.split(' against ')[0]}")
    if hfu:
        gives += f"; it counts recomputation, so it is HFU-like: {hfu} without it (EFF102)"
    if cr.status == "mismatch":
        verdict, sentence = "not supported", f"The claimed {subject} is not supported: {gives}."
    elif cr.status == "inconclusive":
        decide = f"; {cr.decided_by} would decide it" if cr.decided_by else ""
        verdict = "inconclusive"
        sentence = (f"The claimed {subject} is inconclusive: {gives}, an interval its tolerance meets, "
                    f"but not the point figure{decide}.")
    elif kind == "claim":
        verdict = f"agrees with {basis}, not with measurements"
        sentence = f"The claimed {subject} agrees with {basis}, not with measurements: that claim implies {reconstructed}."
        if corrected or hfu:
            sentence = sentence[:-1] + gives[len(f"{basis} implies {reconstructed}"):] + "."
    else:
        verdict = "holds" + (" on assumed values" if kind == "assumed" else "")
        sentence = f"The claimed {subject} holds: {gives}."
    return ClaimLine(owner, scaling, clean(c.key if scaling else c.written), metric_name, line,
                     cr.status, verdict, claimed, reconstructed, kind, basis, corrected, hfu, sentence=sentence)


def _order(line: ClaimLine) -> tuple[int, int, int]:
    metric = _METRIC_ORDER.index(line.metric) if line.metric in _METRIC_ORDER else len(_METRIC_ORDER)
    return _STATUS_ORDER.get(line.status, 3), metric, line.line or 0


def _lead(owner: str, scaling: bool, lines: tuple[ClaimLine, ...], rr: RunResult | None) -> str:
    who = f"Scaling `{clean(owner)}`" if scaling else f"Run `{clean(owner)}`"
    if not lines:
        shown = []
        for name in ("mfu", "valid_tokens_per_second"):
            metric = rr.metrics.get(name) if rr is not None else None
            if metric is not None:
                shown.append(f"{label(name) if name == 'mfu' else 'valid tokens per second'} "
                             f"{value_text(metric.value, metric.unit, name)}")
        gives = f"; the declared inputs give {' and '.join(shown)}" if shown else ""
        return f"{who} makes no claim to check{gives}."
    first = min(lines, key=_order)
    clauses = [first.sentence[:-1]]
    others = [line for line in sorted(lines, key=_order) if line is not first]
    if first.status == "unrecoverable":  # the claims that agree only with it say so here, not as agreement
        leaning = [o for o in others if o.basis_kind == "claim" and o.basis.startswith(f"claim `{first.claim}` ")]
        if leaning:
            agree = " and ".join(f"the claimed {_subject(o.metric, o.claimed)}" for o in leaning)
            verb = "agrees" if len(leaning) == 1 else "agree"
            figures = " and ".join(o.reconstructed for o in leaning)
            clauses[0] += f"; {agree} {verb} with the {figures} that {leaning[0].basis} implies, not with measurements"
            others = [o for o in others if o not in leaning]
    clauses += [o.sentence[:-1] for o in others]  # every claim named, its verdict and basis with it
    return f"{who}: " + "; ".join(c[0].lower() + c[1:] for c in clauses) + "."


def claim_lines(result: Result, corrections: dict[str, Correction] | None = None) -> tuple[LeadSentence, ...]:
    """Every run's and scaling's lead sentence and claims, in the order the spec declares them (``corrections``:
    report.verdict.peak_corrections of ``result``, where the caller has them)."""
    ev = cast("Evaluation | None", result.evaluation)
    if ev is None:
        return ()
    if corrections is None:
        corrections = peak_corrections(result)
    out = []
    for run_id, rr in ev.runs.items():
        lines = tuple(_line(run_id, False, cr, rr, corrections.get(run_id), _figure(rr, name))
                      for name, cr in rr.claims.items())
        out.append(LeadSentence(run_id, False, _lead(run_id, False, lines, rr), lines))
    for sid, sr in ev.scalings.items():
        lines = tuple(_line(sid, True, cr, None, None, _point_figure(sr, cr.claim)) for cr in sr.claims.values())
        if lines:
            out.append(LeadSentence(sid, True, _lead(sid, True, lines, None), lines))
    return tuple(out)


def _point_figure(sr: ScalingResult, claim: Claim) -> Metric | None:
    """The figure a scaling claim is checked against: the named run's, or the final point's."""
    point = next((r for r in sr.runs if r.run_id == claim.point), None) if claim.point is not None else sr.final_point
    return point.metrics.get(claim.name) if point is not None else None


def _figure(rr: RunResult, name: str) -> Metric | None:
    if name.startswith("breakdown."):
        return None
    return rr.figure(name)


def summary_text(leads: Iterable[LeadSentence], path: str) -> str:
    """The terminal's claims summary: one line per claim, its verdict, figure and basis (pytest's short summary)."""
    rows = []
    for lead in leads:
        for line in lead.claims:
            where = f"{path}:{line.line}" if line.line is not None else path
            head = f"{lead.owner}.{line.claim} = {line.claimed}"
            if line.status == "unrecoverable":
                tail = f"missing {line.missing}" if line.missing else "the inputs do not give it"
            else:
                basis = f"from {line.basis}" if line.basis_kind != "claim" else f"implied by {line.basis}"
                tail = f"{line.reconstructed} {basis}"
                if line.corrected:
                    tail += f"; {line.corrected}"
                if line.hfu_like:
                    tail += f"; HFU-like: {line.hfu_like} without it (EFF102)"
            rows.append((line.verdict_label.upper(), f"{where} {head}: {tail}"))
    if not rows:
        return ""
    width = max(len(status) for status, _ in rows)
    return "claims:\n" + "\n".join(f"  {status:<{width}}  {rest}" for status, rest in rows)
