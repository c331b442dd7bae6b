"""One run as the sections show it, and the earlier run a claims-only run is printed against.

A :class:`RunView` holds a run's parts, each formatted once (its headline
cards, inputs, knobs, figures, claims, step statistics…); the sections lay
them out.  :func:`earlier_runs` finds, once per report, for each claims-only
run the first earlier claims-only run with the same formulas: sections 2 to 4
then print such a run as what differs from that one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from effspec.report.assumptions import Cause
from effspec.report.sections.convention import ConventionRow, KnobView
from effspec.report.sections.summary import HeadlineView
from effspec.report.sections.views import ClaimView, InputView, MetricView, Row, Table, bare
from effspec.report.sections.walltime import BreakdownView


@dataclass(frozen=True)
class RunView:
    id: str
    title: str
    source: str
    headline: tuple[HeadlineView, ...]
    inputs: tuple[InputView, ...]
    knobs: tuple[KnobView, ...]
    preset_note: str
    conventions: tuple[ConventionRow, ...]
    metrics: tuple[MetricView, ...]
    missing: tuple[Row, ...]
    claims: tuple[ClaimView, ...]
    breakdown: BreakdownView | None
    calendar: tuple[Row, ...]
    step_stats: tuple[Row, ...]
    diagnosis: tuple[Row, ...]
    diagnosis_tables: tuple[Table, ...]
    charts: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    # The run's local GEMM shapes (from the scalings it is in), shown with the run, not with the scaling.
    gemms: tuple[Table, ...] = ()
    gemm_notes: tuple[str, ...] = ()

    @property
    def claims_only(self) -> bool:
        """A run of quoted claims and figures only (a paper's table row): no step samples,
        breakdown, calendar or per-rank data.  The report sets it compactly and drops nothing:
        every input, figure, formula and claim is still printed."""
        return bool(self.claims) and not (self.step_stats or self.breakdown or self.calendar or self.diagnosis)

    @property
    def derivation_inputs(self) -> tuple[InputView, ...]:
        """Every input of the run's derivations, each once (in order of first use): a claims-only
        run lists them after its derivations rather than under each derivation it feeds."""
        return tuple(dict.fromkeys(i for metric in self.metrics for i in metric.inputs))

    @property
    def derivation_extra_inputs(self) -> tuple[InputView, ...]:
        """The inputs of a claims-only run's derivations that its other parts do not already print
        with the same value: not a declared input (section 2), a convention knob (section 3), a
        figure of its derivations or a claim (section 5).  What is left is what only the
        derivations know: a default such as ``model.head_dim``, the catalog peak with its source."""
        declared = {i.name: i.value for i in self.inputs}
        knobs = {"convention." + k.knob: k.value for k in self.knobs}
        figures = {m.name: m.value for m in self.metrics}
        claims = {"claim " + c.written: c.claimed for c in self.claims}
        shown = {**declared, **knobs, **figures, **claims}
        return tuple(i for i in self.derivation_inputs
                     if i.name not in shown or bare(shown[i.name]) != bare(i.value))

    @property
    def input_lines(self) -> str:
        """The lines the run's declared inputs are written on, as a range ("24–35"), or ""."""
        lines = [i.line for i in self.inputs if i.line]
        return "" if not lines else str(min(lines)) if min(lines) == max(lines) else f"{min(lines)}–{max(lines)}"

    @property
    def headline_notes(self) -> tuple[tuple[str, HeadlineView], ...]:
        """A claims-only run's page-1 notes, each distinct note once, with the figures it applies to
        (``"MFU, Step time"``, and the first such figure for its note and causes)."""
        shared: dict[tuple[str, tuple[Cause, ...]], list[HeadlineView]] = {}
        for h in self.headline:
            if h.note or h.causes:
                shared.setdefault((h.note, h.causes), []).append(h)
        return tuple((", ".join(h.label for h in hs), hs[0]) for hs in shared.values())


@dataclass(frozen=True)
class Earlier:
    """The earlier claims-only run whose derivations have, figure by figure, the same formulas."""

    place: int  # its 1-based place in the report (its anchors: #inputs-N, #derivations-N)
    run: RunView

    @property
    def id(self) -> str:
        return self.run.id


def earlier_runs(runs: tuple[RunView, ...]) -> tuple[Earlier | None, ...]:
    """For each run, the first earlier claims-only run with its formulas, when it is claims-only too; else None."""
    seen: dict[tuple[tuple[str, str], ...], int] = {}
    out: list[Earlier | None] = []
    for n, run in enumerate(runs):
        if not run.claims_only:
            out.append(None)
            continue
        formulas = tuple((m.name, m.formula) for m in run.metrics)
        first = seen.get(formulas)
        out.append(None if first is None else Earlier(first + 1, runs[first]))
        seen.setdefault(formulas, n)
    return tuple(out)


def differing(items: tuple[InputView, ...], earlier: Earlier | None, derivations: bool = False) -> tuple[InputView, ...]:
    """The items the earlier run lacks with the same name, value, provenance and citation (lines aside)."""
    if earlier is None:
        return items
    theirs = {(i.name, bare(i.value), i.provenance, i.citation)
              for i in (earlier.run.derivation_extra_inputs if derivations else earlier.run.inputs)}
    return tuple(i for i in items if (i.name, bare(i.value), i.provenance, i.citation) not in theirs)
