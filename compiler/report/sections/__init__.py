"""The report's sections, each a frozen view built once from the checked spec; every format lays them out.

:func:`build` makes the :class:`ReportView` of one result: each run's parts
(:class:`~effspec.report.sections.run.RunView`), then the sections in the
order the report prints them, 1 Summary to 10 Source.  The HTML templates
(``templates/sections/``), the Markdown comment and the terminal text read
these views and compute nothing.

A section is added with one module in this package that defines ``SECTION``
(a :class:`Section`): it is found by its file, built after the built-in ones,
and printed after them in HTML, Markdown, the terminal summary, the JSON report
and the LaTeX macros (CONTRIBUTING.md, "Add a report section"). The JSON
report and the LaTeX macros are the figures themselves, read from the result
(a schema-stable interchange and a paper's numbers, not prose); an added
section appears there through its own ``json`` and ``latex``.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from effspec.diagnostics import printable, source_lines
from effspec.engine.flops import PRESET_NOTES
from effspec.report.assumptions import RunCauses
from effspec.report.claim_summary import ClaimLine, LeadSentence, claim_lines
from effspec.report.rulepages import effective_base
from effspec.report.sections import claims, convention, derivations, findings, inputs, ranks, scaling, source, summary, walltime
from effspec.report.sections.claims import ClaimsView
from effspec.report.sections.convention import ConventionView
from effspec.report.sections.derivations import DerivationsView
from effspec.report.sections.findings import FindingsView, FindingView, SuppressedView
from effspec.report.sections.inputs import InputsView
from effspec.report.sections.run import RunView, earlier_runs
from effspec.report.sections.scaling import ScalingSection, ScalingView
from effspec.report.sections.source import SourceView
from effspec.report.sections.summary import SummaryView
from effspec.report.sections.walltime import MeasuredRuns
from effspec.report.verdict import Correction, peak_corrections
from effspec.report.words import MAX_TITLE_CHARS, clean, elide, title

if TYPE_CHECKING:
    from effspec import Result
    from effspec.engine.results import Evaluation, RunResult
    from effspec.front.ir import Spec

SEVERITIES = ("error", "warning", "info")
# The modules of this package that are not added sections.
BUILT_IN = frozenset({"claims", "convention", "derivations", "findings", "inputs", "ranks", "run", "scaling", "source",
                      "summary", "views", "walltime"})


@dataclass(frozen=True)
class Section:
    """A section added to the report by one module of this package (its ``SECTION``).

    ``build`` makes its view from the checked result (a frozen dataclass); ``html`` is a
    Jinja template of the section's body (autoescaped; ``view`` is the view), ``markdown``
    its lines in the pull-request comment, ``text`` its paragraph in the terminal summary
    (``effspec check``), ``json`` its value under ``"sections"`` in the JSON report (strict
    JSON: no NaN), ``latex`` its macros in the .tex file, each (name without the backslash,
    body, what it is), defined like the figures' (a name already defined is skipped with a
    comment); a format it leaves out does not show it."""

    id: str  # its anchor, letters, digits and hyphens: #id
    title: str
    build: Callable[[Result], Any]
    html: str = ""
    markdown: Callable[[Any], list[str]] | None = None
    text: Callable[[Any], str] | None = None
    json: Callable[[Any], Any] | None = None
    latex: Callable[[Any], list[tuple[str, str, str]]] | None = None


@dataclass(frozen=True)
class Added:
    """An added section with its view, and its number in the report."""

    section: Section
    view: Any
    number: int


@dataclass(frozen=True)
class SectionViews:
    summary: SummaryView
    inputs: InputsView
    convention: ConventionView
    derivations: DerivationsView
    claims: ClaimsView
    findings: FindingsView
    scaling: ScalingSection
    walltime: MeasuredRuns
    steps: MeasuredRuns
    source: SourceView
    added: tuple[Added, ...] = ()


@dataclass(frozen=True)
class ReportView:
    title: str
    file: str
    runs: tuple[RunView, ...]
    scalings: tuple[ScalingView, ...]
    findings: tuple[FindingView, ...]
    counts: tuple[tuple[str, int], ...]
    sections: SectionViews
    evaluated: bool
    suppressed: tuple[SuppressedView, ...] = ()
    config: str = ""  # the configuration file that applied, relative to the spec; "" for none
    not_applied: tuple[str, ...] = ()  # pragmas in the spec that were not applied (inline configuration off)
    off_by: str = ""  # what turned inline configuration off: `--no-inline-config`, or the configuration key
    suppressed_omitted: int = 0  # suppressed findings beyond the per-file cap, not in ``suppressed``
    verdicts: tuple[LeadSentence, ...] = ()  # page 1's opening: a sentence a run or scaling, and each claim


def added_in(result: Result, fmt: str) -> list[tuple[Section, Any]]:
    """The added sections that ``fmt`` (a field of :class:`Section`: "json", "latex") lays out, each with
    its view of ``result``."""
    return [(s, s.build(result)) for s in added_sections() if getattr(s, fmt) is not None]


@cache
def added_sections() -> tuple[Section, ...]:
    """The sections added by modules of this package (each module's ``SECTION``), by module name."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in BUILT_IN and not m.name.startswith("_"))
    found = (getattr(importlib.import_module(f"{__name__}.{name}"), "SECTION", None) for name in names)
    return tuple(s for s in found if isinstance(s, Section))


def run_view(rr: RunResult, charts: bool = False, correction: Correction | None = None, index: int = 1,
             diagnostics: tuple[Any, ...] | list[Any] = (), verdicts: dict[str, ClaimLine] | None = None) -> RunView:
    """The parts of one run (the ``index``-th of the report, from 1), each formatted once."""
    diag_rows, diag_tables = ranks.diagnosis(rr)
    declared = inputs.declared_inputs(rr.run)
    causes = RunCauses(rr, index, diagnostics, [i.name for i in declared])
    headline, metrics = summary.headline(rr, correction, causes, verdicts), derivations.metrics(rr, causes)
    view = RunView(
        title(rr.run.id), title(rr.run.title), clean(rr.run.source), headline,
        declared + inputs.assumed_rows(causes), convention.knobs(rr), clean(PRESET_NOTES.get(rr.knobs.preset, "")),
        convention.conventions(rr), metrics, derivations.missing(rr), claims.claims(rr), walltime.breakdown(rr),
        walltime.calendar(rr), ranks.step_stats(rr), diag_rows, diag_tables)
    if charts:
        from effspec.report import charts as ch

        view.charts.update(ch.run_charts(rr))
    return view


def report_title(result: Result) -> str:
    """The spec's title: its run's title when it declares one run, else its file name."""
    spec = cast("Spec | None", result.spec)
    name = os.path.basename(result.file)
    if spec is not None and len(spec.runs) == 1 and spec.runs[0].title:
        return title(spec.runs[0].title)
    if spec is not None and spec.runs:
        return f"{elide(printable(name), MAX_TITLE_CHARS)}: {len(spec.runs)} runs"
    return elide(printable(name), MAX_TITLE_CHARS)


def build(result: Result, charts: bool = False, doc_base: str | None = None) -> ReportView:
    """The views of one checked spec (``charts`` adds the SVG figures; ``doc_base``, the
    documentation base rule pages link to, else the configuration's, else none)."""
    # The parser's line model (split at "\n" only); a final newline ends the
    # last line rather than opening an empty one in the listing.
    lines = source_lines(result.source)
    if lines and lines[-1] == "":
        lines.pop()
    ev = cast("Evaluation | None", result.evaluation)
    corrections = peak_corrections(result)
    leads = claim_lines(result, corrections)
    by_run = {lead.owner: {c.metric: c for c in lead.claims} for lead in leads if not lead.scaling}
    runs = tuple(run_view(rr, charts, corrections.get(rid), n, result.diagnostics, by_run.get(rid))
                 for n, (rid, rr) in enumerate(ev.runs.items(), 1)) if ev else ()
    scaling_views = tuple(scaling.scaling_view(sr, ev.runs, charts) for sr in ev.scalings.values()) if ev else ()
    runs, scaling_views = scaling.with_gemms(ev, runs, scaling_views)
    if charts:
        from effspec.report.charts import number_charts

        number_charts((*runs, *scaling_views))
    base = effective_base(doc_base, (result,))
    found = tuple(findings.finding_view(d, lines, base) for d in result.diagnostics)
    counts = tuple((s, sum(d.severity == s for d in result.diagnostics) + result.omitted.get(s, 0)) for s in SEVERITIES)
    suppressed = tuple(findings.suppressed_view(s) for s in result.suppressed)
    config = printable(getattr(result.settings, "name", None) or "")
    not_applied = tuple(clean(p.written()) for p in result.pragmas_not_applied)
    off_by = clean(result.pragmas_off_by or "") if not_applied else ""
    name = elide(printable(os.path.basename(result.file)), MAX_TITLE_CHARS)
    earlier = earlier_runs(runs)
    summary_view = summary.build(runs, leads, counts, len(suppressed) + result.suppressed_omitted if suppressed else 0,
                                 ev is not None)
    measured = walltime.measured(runs)
    added = tuple(Added(s, s.build(result), number) for number, s in enumerate(added_sections(), 11))
    views = SectionViews(
        summary_view, inputs.build(runs, earlier), convention.build(runs, earlier), derivations.build(runs, earlier),
        claims.build(runs, summary_view.groups),
        findings.build(found, suppressed, result.suppressed_omitted, config, not_applied, off_by),
        scaling.ScalingSection(scaling_views), measured, measured,
        source.build(name, lines, {d.span.line for d in result.diagnostics if d.span}), added)
    return ReportView(report_title(result), name, runs, scaling_views, found, counts, views, ev is not None, suppressed,
                      config, not_applied, off_by, result.suppressed_omitted, leads)
