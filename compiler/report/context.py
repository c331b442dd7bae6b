"""The report's view-model: everything a template shows, already formatted.

Templates hold no logic beyond loops and conditionals, so every number is
formatted here with :mod:`effspec.fmt` (the same functions the diagnostics use,
so a figure reads the same in the terminal and in the appendix).  Every string
that comes from the spec stays a plain ``str``: the HTML templates escape it.

Attributes that other engineers are still adding (GEMM shapes on scaling runs,
rank-diagnosis evidence, the calendar table) are read with ``getattr`` and
degrade to "not available" rather than failing the render.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

from effspec.diagnostics import ELLIPSIS, EXCERPT_COLUMNS, excerpt_window, printable, sanitize, source_lines
from effspec.display import exact_digits, metric_value, percent, quantity, sig
from effspec.engine.flops import EXTRA_KNOBS, KNOB_DEFAULTS, PRESET_NOTES, recompute_text
from effspec.engine.stats import MIN_SAMPLES
from effspec.report.assumptions import Cause, RunCauses, assumed_inputs, named
from effspec.report.claim_summary import ClaimLine, LeadSentence, claim_lines
from effspec.report.claim_summary import hfu_like as _hfu_like
from effspec.report.mapping import as_mapping
from effspec.report.rulepages import effective_base, rule_page
from effspec.report.verdict import PEAK_FIGURES, peak_corrections
from effspec.report.words import MAX_SHOWN_CHARS, MAX_TITLE_CHARS, METRIC_LABELS, elide, interval_how, interval_text, label, value_text  # noqa: F401 (re-exported)
from effspec.report.words import clean as _clean
from effspec.report.words import title as _title
from effspec.rules import code_table

SEVERITIES = ("error", "warning", "info")

# The order of the derivation section: the numerator, the denominator, then rates.
METRIC_ORDER = ("flops_per_token", "valid_tokens_per_step", "model_flops_per_step", "executed_flops_per_step",
                "aggregate_peak", "step_time", "valid_tokens_per_second", "achieved_flops_per_device", "aggregate_flops", "mfu",
                "hfu", "mfu_measured_peak", "calendar_efficiency", "goodput")
# The headline row of the summary: MFU first, valid tokens/s right beside it.
HEADLINE_LABELS = {"valid_tokens_per_second": "Valid tokens/s", "achieved_flops_per_device": "Model FLOP/s per device"}
HEADLINE = ("mfu", "valid_tokens_per_second", "hfu", "step_time", "achieved_flops_per_device", "goodput",
            "calendar_efficiency")
KNOB_ORDER = ("preset", "multiply_add", "attention", "logits", "embeddings", "backward", "recompute", "padding",
              "moe", "optimizer")
KNOB_MEANING = {
    "preset": "the named convention the knobs start from",
    "multiply_add": "FLOPs counted per multiply-add",
    "attention": "attention scores and weighted sum: full, causal (half) or excluded",
    "logits": "output projection to the vocabulary, once per token",
    "embeddings": "input embedding counted as a matmul, once per token",
    "backward": "backward pass as a multiple of the forward pass",
    "recompute": "recomputed forward work counted in the numerator",
    "padding": "padded tokens counted as work",
    "moe": "MoE experts counted: the active ones or all",
    "optimizer": "optimizer FLOPs counted",
    "windows": "sliding windows counted, or every layer at full length",
    "router": "MoE router matmul counted",
    "formula": "term by term from the shape, or a framework's closed form",
}


# The Source section shows every line whole (it is the spec as written), so a
# long unbroken run of characters gets break opportunities: <wbr> every
# BREAK_EVERY characters inside it.  Without them WeasyPrint's overflow-wrap
# search was quadratic in the unbroken run.  Runs with spaces break at their
# spaces (a <wbr> every 64 characters regardless broke words mid-way).  A
# listed line is a block (for its hanging indent), where WeasyPrint breaks
# only at a <wbr> once there is one: every 16 characters fills a row to
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

    parts, last = [], 0
    for match in _UNBROKEN.finditer(text):
        parts += [escape(text[last:match.start()]), broken(match.group())]
        last = match.end()
    return Markup("").join([*parts, escape(text[last:])])


def _shown(value: object, unit: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value_text(float(value), unit) if unit else quantity(float(value), unit)
    return _clean(value)


# ----------------------------------------------------------------------------
# View dataclasses


@dataclass(frozen=True)
class InputView:
    name: str
    value: str
    provenance: str
    citation: str
    line: int | None
    assumed: bool


@dataclass(frozen=True)
class MetricView:
    name: str
    label: str
    value: str
    formula: str
    substituted: str
    inputs: tuple[InputView, ...]
    assumed: bool
    basis: str  # "inputs", or the claim an implied figure rests on
    implied: bool
    causes: tuple[Cause, ...] = ()  # what makes it assumed: links to a finding or an input row
    interval: str = ""  # "[46.44 %, 50.86 %]"; "" for an exact figure
    interval_how: str = ""  # how it was formed: each uncertain input and the figure's range under it


@dataclass(frozen=True)
class HeadlineView:
    label: str
    value: str  # "—" when not recoverable
    note: str
    # Page 1 as the verdict (issue 14): the figure's standing, and what to read beside it.
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


@dataclass(frozen=True)
class ClaimView:
    written: str
    claimed: str
    reconstructed: str
    status: str
    basis: str
    tolerance: str
    missing: str
    provenance: str
    citation: str
    line: int

    @property
    def status_text(self) -> str:
        """The status as shown: a claim that agrees with a figure another claim implies says so."""
        return "agrees with a claim" if self.status == "consistent" and self.basis.startswith("claim") else self.status


@dataclass(frozen=True)
class KnobView:
    knob: str
    value: str
    origin: str
    meaning: str


@dataclass(frozen=True)
class ConventionRow:
    label: str
    preset: str
    attention: str
    logits: str
    embeddings: str
    recompute: str
    flops_per_token: str
    mfu: str
    declared: bool


@dataclass(frozen=True)
class Row:
    """A generic label/value row (statistics, calendar, diagnosis evidence)."""

    label: str
    value: str
    note: str = ""


@dataclass(frozen=True)
class Table:
    """A generic table for structures whose fields are not fixed here."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class BreakdownRowView:
    category: str
    share: str
    seconds: str
    written: str
    line: int


@dataclass(frozen=True)
class BreakdownView:
    rows: tuple[BreakdownRowView, ...]
    total: str
    remainder: str
    has_unclassified: bool
    step_time: str
    unconverted: tuple[str, ...]
    compute_interval_efficiency: MetricView | None


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
    charts: dict = field(default_factory=dict, hash=False, compare=False)
    # The run's local GEMM shapes (from the scalings it is in), shown with the run, not with the scaling.
    gemms: tuple[Table, ...] = ()
    gemm_notes: tuple[str, ...] = ()

    @property
    def claims_only(self) -> bool:
        """A run of quoted claims and figures only (a paper's table row): no step samples,
        breakdown, calendar or per-rank data.  The report sets it compactly (issue 14's
        page budget: at most about a page each) and drops nothing: every input, figure,
        formula and claim is still printed."""
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
                     if i.name not in shown or _bare(shown[i.name]) != _bare(i.value))

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
class ScalingRunView:
    run_id: str
    devices: str
    valid_tokens_per_step: str
    tokens_per_device: str
    speedup: str
    efficiency: str
    missing: str


@dataclass(frozen=True)
class ScalingView:
    id: str
    kind: str
    baseline: str
    rows: tuple[ScalingRunView, ...]
    metrics: tuple[MetricView, ...]
    shapes: tuple[Table, ...]
    shapes_note: str
    charts: dict = field(default_factory=dict, hash=False, compare=False)
    claims: tuple[ClaimView, ...] = ()
    gemm_runs: tuple[tuple[str, int], ...] = ()  # (run id, its index in the report): where its GEMM table is


@dataclass(frozen=True)
class ExcerptLine:
    number: int
    text: str
    target: bool


@dataclass(frozen=True)
class FindingView:
    code: str
    severity: str
    title: str
    line: int | None
    column: int | None
    message: str
    help: str
    label: str
    notes: tuple[str, ...]
    excerpt: tuple[ExcerptLine, ...]
    rule_url: str  # the rule's page under the configured documentation base; "" without one
    rule_page: str = ""  # the page shipped with the package (effspec/spec/rules/EFFnnn.md)
    explain: str = ""  # `effspec explain EFFnnn`, which prints it


@dataclass(frozen=True)
class FindingGroup:
    """One rule's findings, set as one block (issue 14's page budget: the same finding on
    three quoted runs reads once, with each run's own place, message, lines and notes).

    ``members`` pairs each finding with its place in the findings (its ``#finding-N``
    anchor, which the "assumed" badges link to).  ``help`` is the help every member
    shares, printed once; a member whose help differs prints its own."""

    code: str
    severity: str
    title: str
    members: tuple[tuple[int, FindingView], ...]
    help: str
    rule_url: str
    label: str  # the caret label every member shares, printed once; "" when they differ
    rule_page: str
    explain: str
    notes: tuple[str, ...] = ()  # the notes every member has, word for word: printed once, not with each

    def own_notes(self, finding: FindingView) -> tuple[str, ...]:
        """A member's notes but those every member shares (:attr:`notes`)."""
        return tuple(n for n in finding.notes if n not in self.notes)


def _bare(value: str) -> str:
    """A value without its digit grouping or multiplication sign: ``16,384 device`` as ``16384 device``."""
    return value.replace(",", "").replace("×", "").strip()


def _differing(items: tuple[InputView, ...], sibling: RunView | None, derivations: bool = False) -> tuple[InputView, ...]:
    """The items the sibling run lacks with the same name, value, provenance and citation (lines aside)."""
    if sibling is None:
        return items
    theirs = {(i.name, _bare(i.value), i.provenance, i.citation)
              for i in (sibling.derivation_extra_inputs if derivations else sibling.inputs)}
    return tuple(i for i in items if (i.name, _bare(i.value), i.provenance, i.citation) not in theirs)


def _figure_key(metric: MetricView) -> tuple[object, ...]:
    """What makes two runs' figures the same figure: name, formula, values put in, result and standing."""
    return (metric.name, metric.formula, metric.substituted, metric.value, metric.implied, metric.assumed, metric.basis)


_LINE_REF = re.compile(r"\(line (\d+)\)")


def _moved(ours: list[str], theirs: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The lines one run's text cites where another's cites different ones, each pair once, in order:
    ((this run's lines), (the other's lines))."""
    pairs = [pair for pair in dict.fromkeys(zip(ours, theirs, strict=True)) if pair[0] != pair[1]]
    return tuple(a for a, _ in pairs), tuple(b for _, b in pairs)


def _without_lines(text: str) -> tuple[str, list[str]]:
    """``text`` with the lines it cites ("(line 37)") taken out, and those lines in order."""
    return _LINE_REF.sub("(line)", text), _LINE_REF.findall(text)


def _standing_key(metric: MetricView) -> tuple[tuple[object, ...], list[str]]:
    """What a figure rests on, with the lines of the claim it is implied by taken out, and those lines."""
    basis, lines = _without_lines(metric.basis)
    return (metric.implied, basis, metric.assumed, tuple(c.text for c in metric.causes)), lines


def _notes_key(run: RunView) -> tuple[tuple[tuple[str, str, tuple[str, ...]], ...], list[str]]:
    """A run's page-1 notes with the lines they cite taken out, and those lines in order."""
    key, lines = [], []
    for labels, h in run.headline_notes:
        note, cited = _without_lines(h.note)
        key.append((labels, note, tuple(c.text for c in h.causes)))
        lines += cited
    return tuple(key), lines


def _consecutive(count: int, joins: Callable[[int, int], bool]) -> tuple[tuple[int, ...], ...]:
    """Places 0 to ``count`` - 1 cut into runs of consecutive places: a place joins the run before
    it when ``joins(the run's last place, place)``."""
    groups: list[list[int]] = []
    for n in range(count):
        if groups and joins(groups[-1][-1], n):
            groups[-1].append(n)
        else:
            groups.append([n])
    return tuple(tuple(g) for g in groups)


def group_findings(findings: tuple[FindingView, ...]) -> tuple[FindingGroup, ...]:
    """The findings grouped by rule and severity, in the order each group first occurs; nothing dropped."""
    by_rule: dict[tuple[str, str], list[tuple[int, FindingView]]] = {}
    for n, f in enumerate(findings, 1):
        by_rule.setdefault((f.code, f.severity), []).append((n, f))
    groups = []
    for (code, severity), members in by_rule.items():
        first = members[0][1]
        helps, labels = {f.help for _, f in members}, {f.label for _, f in members}
        shared = tuple(n for n in first.notes if len(members) > 1 and all(n in f.notes for _, f in members))
        groups.append(FindingGroup(code, severity, first.title, tuple(members), first.help if len(helps) == 1 else "",
                                   first.rule_url, first.label if len(labels) == 1 and len(members) > 1 else "",
                                   first.rule_page, first.explain, shared))
    return tuple(groups)


@dataclass(frozen=True)
class SuppressedView:
    """A finding a pragma or the configuration dropped or lowered, and what did it."""

    code: str
    severity: str  # as the rule reported it
    title: str
    line: int | None
    column: int | None
    message: str
    effect: str  # "ignored", "lowered to warning"
    by: str  # the pragma and its line, or the configuration key and file


@dataclass(frozen=True)
class SourceLine:
    number: int
    text: str
    flagged: bool


@dataclass(frozen=True)
class Report:
    title: str
    file: str
    runs: tuple[RunView, ...]
    scalings: tuple[ScalingView, ...]
    findings: tuple[FindingView, ...]
    counts: tuple[tuple[str, int], ...]
    source: tuple[SourceLine, ...]
    evaluated: bool
    suppressed: tuple[SuppressedView, ...] = ()
    config: str = ""  # the configuration file that applied, relative to the spec; "" for none
    not_applied: tuple[str, ...] = ()  # pragmas in the spec that were not applied (inline configuration off)
    off_by: str = ""  # what turned inline configuration off: `--no-inline-config`, or the configuration key
    suppressed_omitted: int = 0  # suppressed findings beyond the per-file cap, not in ``suppressed``
    verdicts: tuple[LeadSentence, ...] = ()  # page 1's opening: a sentence a run or scaling, and each claim

    def shared_formulas(self, index: int) -> tuple[int, str] | None:
        """(1-based place, id) of the first claims-only run whose derivations have, figure by figure,
        the same formulas as run ``index``'s, when that is an earlier run: then the later run prints
        each figure's values under the formulas printed once (issue 14's page budget)."""
        first = self._first_with_formulas[index]
        return None if first is None else (first + 1, self.runs[first].id)

    @cached_property
    def _first_with_formulas(self) -> tuple[int | None, ...]:
        """For each run, the 0-based place of the earlier claims-only run with its formulas, or None:
        worked out once, in one pass (the template asks for every run in several sections)."""
        seen: dict[tuple[tuple[str, str], ...], int] = {}
        out: list[int | None] = []
        for n, run in enumerate(self.runs):
            if not run.claims_only:
                out.append(None)
                continue
            formulas = tuple((m.name, m.formula) for m in run.metrics)
            out.append(seen.get(formulas))
            seen.setdefault(formulas, n)
        return tuple(out)

    def sibling(self, index: int) -> RunView | None:
        """The earlier claims-only run whose formulas run ``index`` shares (:meth:`shared_formulas`):
        its inputs, knobs and the derivations' other inputs are printed as what differs from that run."""
        shared = self.shared_formulas(index)
        return self.runs[shared[0] - 1] if shared else None

    def changed_inputs(self, index: int) -> tuple[InputView, ...]:
        """Run ``index``'s declared inputs that its sibling run does not have as they are here (value,
        provenance and citation; the line is this run's own): the rest read as under the sibling."""
        return _differing(self.runs[index].inputs, self.sibling(index))

    def numbered_inputs(self, index: int) -> tuple[tuple[int, InputView, bool], ...]:
        """Run ``index``'s inputs with their 1-based place (their ``#input-R-K`` anchor, which
        "assumed" badges link to) and whether the run prints them (not those as under its sibling)."""
        changed = set(self.changed_inputs(index))
        return tuple((n, i, i in changed) for n, i in enumerate(self.runs[index].inputs, 1))

    def inputs_not_here(self, index: int) -> tuple[str, ...]:
        """The sibling run's declared inputs that run ``index`` does not declare at all."""
        sibling = self.sibling(index)
        ours = {i.name for i in self.runs[index].inputs}
        return () if sibling is None else tuple(i.name for i in sibling.inputs if i.name not in ours)

    def changed_derivation_inputs(self, index: int) -> tuple[InputView, ...]:
        """Like :meth:`changed_inputs`, for the derivations' other inputs (:attr:`RunView.derivation_extra_inputs`)."""
        sibling = self.sibling(index)
        extra = self.runs[index].derivation_extra_inputs
        return extra if sibling is None else _differing(extra, sibling, derivations=True)

    def counted_like(self, index: int) -> bool:
        """Whether run ``index`` has its sibling's knobs and counts every preset with the sibling's
        knobs: section 3 then gives only its FLOPs per token and MFU under each, a row of a table."""
        return bool(self.runs[index].conventions) and self.same_knobs(index) and self.same_presets(index)

    @cached_property
    def convention_blocks(self) -> tuple[tuple[int, ...], ...]:
        """Section 3's blocks, as 0-based run places: consecutive runs counted like the same sibling
        (:meth:`counted_like`) share one table; every other run is set alone."""
        return _consecutive(len(self.runs), lambda before, n: self.counted_like(before) and self.counted_like(n)
                            and self.sibling(before) is self.sibling(n))

    def same_figures(self, index: int) -> tuple[MetricView, ...]:
        """Run ``index``'s figures that its sibling run has with the same result from the same values
        put in (the same standing too): printed as that run's results, by name and value."""
        sibling = self.sibling(index)
        if sibling is None:
            return ()
        theirs = {_figure_key(m) for m in sibling.metrics}
        return tuple(m for m in self.runs[index].metrics if _figure_key(m) in theirs)

    def own_figures(self, index: int) -> tuple[MetricView, ...]:
        """Run ``index``'s other figures (all of them, without a sibling): each with its own values put in."""
        same = set(self.same_figures(index))
        return tuple(m for m in self.runs[index].metrics if m not in same)

    def standings_like(self, index: int) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """When each of run ``index``'s own figures (:meth:`own_figures`) rests on what the sibling's
        figure of that name rests on, but for the lines of the claims it is implied by: (this run's
        lines, the sibling's lines), each pair once.  None when some standing differs."""
        sibling = self.sibling(index)
        if sibling is None:
            return None
        theirs = {m.name: m for m in sibling.metrics}
        ours_lines: list[str] = []
        their_lines: list[str] = []
        for m in self.own_figures(index):
            other = theirs.get(m.name)
            if other is None:
                return None
            (here, a), (there, b) = _standing_key(m), _standing_key(other)
            if here != there or len(a) != len(b):
                return None
            ours_lines += a
            their_lines += b
        return _moved(ours_lines, their_lines)

    def own_causes(self, index: int) -> tuple[Cause, ...]:
        """The causes of :meth:`own_figures`' assumptions, each once (links to this run's findings and inputs)."""
        return tuple(dict.fromkeys(c for m in self.own_figures(index) for c in m.causes))

    def own_standings(self, index: int) -> tuple[tuple[str, MetricView], ...]:
        """What :meth:`own_figures` rest on, each distinct standing once with the figures it applies to
        (``"Step time, MFU"``, and the first such figure): the table of values then needs a line a figure."""
        shared: dict[tuple[object, ...], list[MetricView]] = {}
        for m in self.own_figures(index):
            if m.implied or m.assumed:
                shared.setdefault((m.implied, m.basis, m.assumed, m.causes), []).append(m)
        return tuple((", ".join(m.label for m in ms), ms[0]) for ms in shared.values())

    def same_missing(self, index: int) -> bool:
        """Whether run ``index``'s figures not recoverable, and what each lacks, are its sibling's."""
        sibling = self.sibling(index)
        return sibling is not None and sibling.missing == self.runs[index].missing

    def same_knobs(self, index: int) -> bool:
        """Whether run ``index`` has its sibling's knobs, each with the same value, set the same way."""
        sibling = self.sibling(index)
        return sibling is not None and sibling.knobs == self.runs[index].knobs

    def same_presets(self, index: int) -> bool:
        """Whether run ``index`` counts each preset with its sibling's knobs (the same rows but for
        FLOPs and MFU): then only its own FLOPs per token and MFU are printed beside each preset."""
        sibling = self.sibling(index)
        def knobs(run: RunView) -> list[tuple[str, ...]]:
            return [(c.label, c.attention, c.logits, c.embeddings, c.recompute) for c in run.conventions]
        return sibling is not None and knobs(sibling) == knobs(self.runs[index])

    @cached_property
    def summary_groups(self) -> tuple[tuple[int, ...], ...]:
        """Page 1's blocks, as 0-based run places: consecutive claims-only runs with the same
        headline figures share one table, a row a run (a paper's table reads as one table);
        every other run has a block of its own.  The runs keep their order.  Section 5 sets
        each block's claims as one table too."""
        runs = self.runs
        return _consecutive(len(runs), lambda before, n: runs[before].claims_only and runs[n].claims_only
                            and [h.label for h in runs[before].headline] == [h.label for h in runs[n].headline])

    def notes_like(self, index: int) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple[Cause, ...]] | None:
        """For a later run of a page-1 table (:attr:`summary_groups`) whose notes read as the first
        run's but for the lines they cite: (the first run's id, this run's lines, the first run's
        lines, this run's causes, each once).  None when its notes differ, or it is first."""
        group = next(g for g in self.summary_groups if index in g)
        if group[0] == index:
            return None
        here, ours = _notes_key(self.runs[index])
        there, theirs = _notes_key(self.runs[group[0]])
        if here != there or len(ours) != len(theirs):
            return None
        causes = dict.fromkeys(c for _, h in self.runs[index].headline_notes for c in h.causes)
        return (self.runs[group[0]].id, *_moved(ours, theirs), tuple(causes))

    @property
    def finding_groups(self) -> tuple[FindingGroup, ...]:
        return group_findings(self.findings)


# ----------------------------------------------------------------------------
# Builders


def input_view(inp) -> InputView:
    return InputView(_clean(inp.name), _shown(inp.value, inp.unit), _clean(inp.provenance), _clean(inp.citation),
                     inp.span.line if inp.span else None, bool(inp.assumed))


def metric_view(metric, implied: bool = False, name: str | None = None, title: str | None = None,
                causes: RunCauses | None = None) -> MetricView:
    key = name or metric.name
    return MetricView(key, title or label(key), value_text(metric.value, metric.unit, metric.name), _clean(metric.formula),
                      _clean(metric.substituted), tuple(input_view(i) for i in metric.inputs if i is not None),
                      bool(metric.assumed), _clean(metric.basis), implied,
                      causes.of(metric) if causes is not None and metric.assumed else (),
                      interval_text(metric, metric.name), _clean(interval_how(metric)))


def _claimed(rr, name: str, verdicts: dict[str, ClaimLine]) -> str:
    """"61 % claimed: not supported", "43 % claimed: agrees with claim `x` (line 9), not with measurements"."""
    cr, line = rr.claims.get(name), verdicts.get(name)
    if cr is None or cr.claimed is None:
        return ""
    return f"{value_text(cr.claimed, cr.unit, name)} claimed: {line.card_verdict if line is not None else cr.status}"


def _headline(rr, correction=None, causes: RunCauses | None = None,
              verdicts: dict[str, ClaimLine] | None = None) -> tuple[HeadlineView, ...]:
    verdicts = verdicts or {}
    implied_by = {m.basis for m in rr.implied.values()}
    rows = []
    for name in HEADLINE:
        metric = rr.figure(name)
        head = HEADLINE_LABELS.get(name, label(name))
        if metric is None:
            if name in ("goodput", "calendar_efficiency") and name not in rr.missing:
                continue  # no calendar declared: nothing to say
            missing = rr.missing.get(name, ())
            needs = ": needs " + ", ".join(map(_clean, missing)) if missing else ""
            cr = rr.claims.get(name)
            if cr is not None and cr.claimed is not None:  # the claim stands in: not a second, contradicting verdict
                rests = any(b.startswith(f"claim `{cr.claim.written}` ") for b in implied_by)
                note = "claimed, not checked" + needs + ("; the figures marked implied rest on it" if rests else "")
                rows.append(HeadlineView(head, value_text(cr.claimed, cr.unit, name), note, "claimed",
                                         claimed=_claimed(rr, name, verdicts)))
                continue
            rows.append(HeadlineView(head, "—", "not recoverable" + needs, "not recoverable",
                                     claimed=_claimed(rr, name, verdicts)))
            continue
        implied = name not in rr.metrics
        note = "implied by " + _clean(metric.basis) if implied else ""
        status = "implied" if implied else "from inputs"
        why: tuple[Cause, ...] = ()
        if metric.assumed:
            why = causes.of(metric) if causes is not None else ()
            roots = list(assumed_inputs(rr, metric))
            if not why:  # the causes, when linked, are shown as links beside the note
                named_roots = ": " + named([_clean(n) for n in roots]) if roots else ""
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


SHOWN_SAMPLES = 5  # an inline list longer than twice this shows its first and last this many


def _samples_text(text: str, count: int) -> str:
    """An inline list of samples as written, or for a long one its head and tail: the table's
    size stays bounded whatever the list's length (the statistics use every sample)."""
    start, end = text.find("["), text.rfind("]")
    items = text[start + 1:end].split(",") if 0 <= start < end else []
    if count <= 2 * SHOWN_SAMPLES or len(items) != count:
        return f"{count} samples: {text}"
    head = ", ".join(i.strip() for i in items[:SHOWN_SAMPLES])
    tail = ", ".join(i.strip() for i in items[-SHOWN_SAMPLES:])
    return (f"{count:,} samples, the first and last {SHOWN_SAMPLES} shown: "
            f"{text[:start + 1]}{head}, … {count - 2 * SHOWN_SAMPLES:,} more …, {tail}{text[end:]}")


def _inputs(run) -> tuple[InputView, ...]:
    out = []
    for block in run.blocks:
        for e in block.entries:
            text = e.text
            value = getattr(e.value, "values", None)
            if value is not None and getattr(e.value, "origin", "") == "file":
                text = f"{e.text} ({len(value)} rows)"
            elif value is not None:
                text = _samples_text(e.text, len(value))
            out.append(InputView(f"{block.name}.{e.key}", _clean(text), _clean(e.provenance.kind),
                                 _clean(e.provenance.citation), e.span.line, False))
    return tuple(out)


def _knobs(rr) -> tuple[KnobView, ...]:
    k = rr.knobs
    out = []
    extra = tuple(x for x in EXTRA_KNOBS if getattr(k, x) != KNOB_DEFAULTS[x])  # shown where a preset or the spec sets them
    for knob in KNOB_ORDER + extra:
        value = getattr(k, knob)
        if knob == "recompute":
            shown = recompute_text(value) + (f" (ran: {recompute_text(k.ran)})" if value == "executed" else "")
        else:
            shown = f"{sig(value)} FLOP" if knob == "multiply_add" else (sig(value) + "×" if knob == "backward" else str(value))
        out.append(KnobView(knob, _clean(shown), _clean(k.origin.get(knob, "")), KNOB_MEANING[knob]))
    return tuple(out)


def _conventions(rr) -> tuple[ConventionRow, ...]:
    out = []
    for lbl, row in rr.conventions.items():
        knobs = row.get("knobs", {})
        fpt = row.get("flops_per_token")
        mfu = row.get("mfu")
        attention, logits, embeddings, recompute = (_clean(recompute_text(knobs.get(x, "")))
                                                    for x in ("attention", "logits", "embeddings", "recompute"))
        out.append(ConventionRow(
            "declared (" + row.get("preset", "") + ")" if lbl == "declared" else lbl, _clean(row.get("preset", "")),
            attention, logits, embeddings, recompute,
            quantity(fpt, "FLOP/token") if fpt is not None else "—",
            percent(mfu) if mfu is not None else "—", lbl == "declared"))
    return tuple(out)


def _metrics(rr, causes: RunCauses | None = None) -> tuple[MetricView, ...]:
    names = [n for n in METRIC_ORDER if n in rr.metrics] + sorted(n for n in rr.metrics if n not in METRIC_ORDER)
    out = [metric_view(rr.metrics[n], causes=causes) for n in names]
    for name in sorted(rr.implied, key=lambda n: (METRIC_ORDER.index(n) if n in METRIC_ORDER else 99, n)):
        if name in rr.metrics:
            continue
        out.append(metric_view(rr.implied[name], implied=True, name=name, causes=causes))
    return tuple(out)


def _claims(rr) -> tuple[ClaimView, ...]:
    return claim_views(rr.claims.values())


def claim_views(claims) -> tuple[ClaimView, ...]:
    """Run claims, or a scaling's (`efficiency[scaled_64]`: the claim with the run it names)."""
    out = []
    for cr in claims:
        c = cr.claim
        unit = cr.unit
        name = "speedup" if c.name.endswith("speedup") else ""
        out.append(ClaimView(
            _clean(c.key), value_text(cr.claimed, unit, name) if cr.claimed is not None else _clean(c.text),
            value_text(cr.reconstructed, unit, name) if cr.reconstructed is not None else "—",
            cr.status, _clean(cr.basis),
            ("± " + (sig(cr.tolerance) if name else metric_value(cr.tolerance, unit))) if cr.tolerance is not None else "",
            ", ".join(_clean(m) for m in cr.missing), _clean(c.provenance.kind), _clean(c.provenance.citation),
            c.span.line))
    return tuple(out)


def _breakdown(rr) -> BreakdownView | None:
    rec = rr.breakdown
    if rec is None:
        return None
    rows = tuple(BreakdownRowView(r.category, percent(r.share), quantity(r.seconds, "s") if r.seconds is not None else "—",
                                  _clean(r.entry.text), r.entry.span.line) for r in rec.rows)
    cie = rec.compute_interval_efficiency
    return BreakdownView(rows, percent(rec.total), percent(rec.remainder), bool(rec.has_unclassified),
                         quantity(rec.step_time, "s") if rec.step_time is not None else "—",
                         tuple(_clean(e.key) for e in rec.unconverted), metric_view(cie) if cie else None)


def _calendar(rr) -> tuple[Row, ...]:
    """Wall clock split into steady steps, declared losses and an explicit remainder."""
    cal = rr.run.block("calendar")
    if cal is None:
        return ()
    wall = cal.value("wall_clock")
    step = rr.metrics.get("step_time")
    steps = cal.value("steps")
    rows = []

    def share(seconds: float) -> str:
        return percent(seconds / wall) + " of wall clock" if wall else ""

    if wall is not None:
        rows.append(Row("wall clock (calendar.wall_clock)", quantity(float(wall), "s"), "100 %"))
    accounted = 0.0
    if steps is not None and step is not None:
        steady = float(steps) * step.value
        accounted += steady
        rows.append(Row("steady-state steps (calendar.steps × step_time)",
                        quantity(steady, "s"), f"{quantity(float(steps), 'step')} × {quantity(step.value, 's')}; " + share(steady)))
    for key in ("lost_time", "checkpoint_time"):
        v = cal.value(key)
        if v is not None:
            accounted += float(v)
            rows.append(Row(f"calendar.{key}", quantity(float(v), "s"), share(float(v))))
    if wall is not None and steps is not None and step is not None:
        rest = float(wall) - accounted
        rows.append(Row("unclassified remainder (wall clock − the rows above)", quantity(rest, "s"), share(rest)))
    for key in ("interruptions", "repeated_tokens"):
        e = cal.get(key)
        if e is not None:
            rows.append(Row(f"calendar.{key}", _clean(e.text), ""))
    return tuple(rows)


def _step_stats(rr) -> tuple[Row, ...]:
    st = rr.step_stats
    if st is None:
        return ()
    s = lambda v: quantity(v, "s", exact_digits(v))  # noqa: E731 - a local shorthand
    # Below EFF502's count a bootstrap interval and tail percentiles rest on too few points: not printed.
    spread = st.count >= MIN_SAMPLES
    why = (f"not reported: {st.count} sample{'s' if st.count != 1 else ''} after warm-up, "
           f"and a spread needs at least {MIN_SAMPLES} (EFF502)")
    rows = [
        Row("samples", f"{st.rows}", f"{st.warmup_excluded} warm-up excluded, "
            + (f"{len(st.implausible_excluded)} implausible excluded (EFF505), " if st.implausible_excluded else "") + f"{st.count} kept"),
        Row("median", s(st.median),
            ("95 % bootstrap CI " + f"{s(st.median_ci[0])} – {s(st.median_ci[1])}" if st.median_ci else "no CI")
            if spread else "confidence interval " + why),
        Row("mean", s(st.mean), ""),
        Row("min / max", f"{s(st.min)} / {s(st.max)}", ""),
        Row("p5 / p95 / p99", f"{s(st.p5)} / {s(st.p95)} / {s(st.p99)}", "") if spread
        else Row("p5 / p95 / p99", "—", "percentiles " + why),
        Row("stall threshold", s(st.stall_threshold), "1.5 × median"),
        Row("stall steps", f"{st.stall_steps}", percent(st.stall_time_share) + " of the summed step time"),
        Row("summed step time", s(st.total_time), f"the median predicts {s(st.predicted_time)} (count × median)"),
    ]
    return tuple(rows)


def _cell(value) -> str:
    if isinstance(value, float):
        return sig(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{_clean(k)}: {_cell(v)}" for k, v in value.items())
    return _clean(value)


def generic_table(title: str, items) -> Table | None:
    """A table from a list of dataclasses or dicts whose fields this module does not fix."""
    maps = [m for m in (as_mapping(i) for i in (items or ())) if m]
    if not maps:
        return None
    columns: list[str] = []
    for m in maps:
        columns += [k for k in m if k not in columns]
    return Table(title, tuple(_clean(c) for c in columns), tuple(tuple(_cell(m.get(c, "")) for c in columns) for m in maps))


# The evidence figures a reader needs to follow the diagnosis, in reading
# order; the full evidence is in the JSON output.
_DIAGNOSIS_EVIDENCE = (
    ("compute_share", "compute share of rank time", "ratio"),
    ("wait_share", "wait share (comm + stall)", "ratio"),
    ("imbalance_wait_share", "wait for the slowest rank's compute", "ratio"),
    ("compute_spread", "compute spread across ranks (max − min) / max", "ratio"),
    ("mfu", "MFU", "ratio"),
    ("compute_interval_efficiency", "MFU / compute share", "ratio"),
    ("rows", "rows read", "count"),
    ("ranks_count", "ranks", "count"),
    ("nodes_count", "nodes", "count"),
    ("steps_count", "steps", "count"),
)


def _diagnosis(rr) -> tuple[tuple[Row, ...], tuple[Table, ...]]:
    diag = rr.diagnosis
    if diag is None:
        return (), ()
    evidence = getattr(diag, "evidence", {}) or {}
    # Values sit in a numeric, unwrapped column: the reason is the family's note.
    rows = [
        Row("family", _clean(diag.family), _clean(diag.reason)),
        Row("ranks named", ", ".join(str(r) for r in diag.ranks[:10]) + (", …" if len(diag.ranks) > 10 else "") or "—"),
        Row("nodes named", ", ".join(_clean(n) for n in diag.nodes[:10]) + (", …" if len(diag.nodes) > 10 else "") or "—"),
    ]
    significance = _diagnosis_significance(evidence)
    if significance is not None:
        rows.append(significance)
    for key, name, kind in _DIAGNOSIS_EVIDENCE:
        value = evidence.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            rows.append(Row(name, percent(value) if kind == "ratio" else f"{value:,}"))
    tables = []
    for title, groups in (("slowest ranks", getattr(diag, "slowest_ranks", ())),
                          ("slowest nodes", getattr(diag, "slowest_nodes", ())),
                          ("pipeline stages", getattr(diag, "stages", ()))):
        if groups:
            tables.append(Table(title, ("name", "ranks", "compute s", "comm s", "stall s", "wait share", "compute excess"),
                                tuple((_clean(g.name), str(g.ranks), sig(g.compute_mean), sig(g.comm_mean),
                                       sig(g.stall_mean), percent(g.wait_share), f"{g.compute_excess:+.1%}")
                                      for g in groups)))
    rows += _breakdown_rows(evidence.get("breakdown"))
    lines = list(evidence.get("provenance", ()))
    checks = list(evidence.get("provenance_checks", ()))
    checks += ["declared"] * (len(lines) - len(checks))  # what no check says: the CSV's claim
    rows += [Row("provenance", _clean(line)) for line in lines if " file=" not in line]
    files = [(line, check) for line, check in zip(lines, checks, strict=False) if " file=" in line]
    if files:
        rows.append(Row("provenance checked", _provenance_summary([check for _, check in files])))
    provenance = _provenance_table(files)
    return tuple(rows), tuple(tables) + ((provenance,) if provenance else ())


_IDLE_CAUSES = (("idle_host_wait", "host wait"), ("idle_kernel_wait", "kernel wait"), ("idle_other", "other"))
_KERNEL_TYPES = (("gemm", "GEMM"), ("attention", "attention"), ("comm", "communication"), ("memory", "memory"),
                 ("elementwise_other", "elementwise/other"))


def _duration(seconds: float) -> str:
    """A summed trace time in the unit that keeps it short: µs, ms or s, four significant digits."""
    if seconds == 0:
        return "0 s"
    scale, unit = (1e6, "µs") if seconds < 1e-3 else (1e3, "ms") if seconds < 1 else (1.0, "s")
    return f"{sig(seconds * scale)} {unit}"


def _breakdown_rows(breakdown: object) -> list[Row]:
    """The trace table's idle split (shares of the idle time) and kernel types (seconds; each the union of its
    type's device events, so types that overlap on two streams count in both), summed over ranks and steps."""
    if not isinstance(breakdown, dict):
        return []
    rows = []
    idle = sum(float(breakdown.get(k) or 0.0) for k, _ in _IDLE_CAUSES)
    if any(k in breakdown for k, _ in _IDLE_CAUSES) and idle > 0:
        parts = [f"{name} {_duration(float(breakdown.get(k) or 0.0))} ({percent(float(breakdown.get(k) or 0.0) / idle)})"
                 for k, name in _IDLE_CAUSES]
        rows.append(Row("idle by cause", ", ".join(parts),
                        f"of {_duration(idle)} idle, summed over ranks and steps: host wait is the device waiting for a "
                        "launch, kernel wait is queued work that did not start (another stream, a sync)"))
    if any(k in breakdown for k in ("gemm", "attention", "memory", "elementwise_other")):
        parts = [f"{name} {_duration(float(breakdown.get(k) or 0.0))}" for k, name in _KERNEL_TYPES]
        rows.append(Row("device time by kernel type", ", ".join(parts),
                        "summed over ranks and steps; each type is the union of its kernels' time, so two types "
                        "running on two streams at once both count it"))
    return rows


def _diagnosis_significance(evidence: dict) -> Row | None:
    """The family's p-value and effect size (the imbalance test's when the family has none)."""
    sig = evidence.get("significance")
    if not isinstance(sig, dict) or not isinstance(sig.get("imbalance"), dict):
        return None
    imb = sig["imbalance"]
    p, effect = evidence.get("p_value"), evidence.get("effect_size")
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        p = imb.get("p_value")
        effect = {"measure": "Kendall's W of per-step compute ranks (imbalance test)", "value": imb.get("kendall_w")}
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        return None
    value = (f"p < {p:.1e}" if p <= 1e-12 or evidence.get("p_is_bound") is True
             else f"p = {p:.2g}" if p >= 1e-3 else f"p = {p:.1e}")
    note = [f"α = {float(sig.get('alpha', 0)):.0%} for the diagnosis, {float(imb.get('alpha', 0)):.1%} per family"]
    if isinstance(effect, dict) and isinstance(effect.get("value"), (int, float)):
        note.append(f"effect: {_clean(str(effect.get('measure', '')))} = {float(effect['value']):.3g}")
    need = imb.get("steps_to_detect")
    if p == imb.get("p_value") and not imb.get("significant") and isinstance(need, int):
        note.append(f"about {need:,} steps would detect this spread")
    return Row("significance", value, "; ".join(note))


def _provenance_summary(checks: list) -> str:
    """Whether the CSV's trace hashes are its claim or were checked against the traces beside it."""
    n = len(checks)
    counts = {k: sum(c == k for c in checks) for k in ("verified", "differs", "declared")}
    if counts["verified"] == n:
        return (f"verified: {'the trace' if n == 1 else f'all {n:,} traces'} beside the CSV "
                "have the recorded size and SHA-256")
    if counts["declared"] == n:
        return "declared: the CSV's own claim; no trace beside the CSV was checked"
    parts = [f"{counts[k]:,} {k}" for k in ("verified", "differs", "declared") if counts[k]]
    return f"{', '.join(parts)} (of {n:,} traces; differs: the file beside the CSV has another size or SHA-256)"


def _provenance_table(files: list, shown: int = 20) -> Table | None:
    """The trace files a per-rank CSV came from (its `# effspec-traces` lines): name, size, SHA-256, and whether
    that hash was checked against the file beside the CSV (verified, differs) or is the CSV's claim (declared)."""
    from urllib.parse import unquote

    rows: list[tuple[str, ...]] = []
    parsed = [(dict(t.split("=", 1) for t in str(line).split(": ", 1)[-1].split() if "=" in t), check)
              for line, check in files[:shown]]
    # GPU traces with launches also give the launch delay (device start - launch call start), µs: its own column
    delays = any("launch_delay_p50" in kv for kv, _ in parsed)
    for kv, check in parsed:
        size = kv.get("bytes", "")
        row: tuple[str, ...] = (
            _clean(printable(unquote(kv.get("file", "")))), f"{int(size):,}" if size.isdigit() else _clean(size),
            _clean(kv.get("sha256", "")), _clean(kv.get("rank", "")), _clean(kv.get("node", "")))
        if delays:
            p50, p95 = kv.get("launch_delay_p50"), kv.get("launch_delay_p95")
            row += (f"{_clean(p50)} / {_clean(p95)}" if p50 and p95 else "—",)
        rows.append((*row, _clean(str(check))))
    if len(files) > shown:
        rows.append((f"… {len(files) - shown:,} more (all listed in the CSV)", *("",) * (6 if delays else 5)))
    head = ("file", "bytes", "sha256", "rank", "node", *(("launch delay p50 / p95 µs",) if delays else ()), "checked")
    return Table("Provenance", head, tuple(rows)) if rows else None


def _assumed_rows(causes: RunCauses) -> tuple[InputView, ...]:
    """The defaults a figure rests on that the spec does not write: rows of the inputs table, marked assumed."""
    rows = []
    for name, inp in causes.added.items():
        value, unit, provenance, citation = (getattr(inp, k, None) for k in ("value", "unit", "provenance", "citation"))
        rows.append(InputView(_clean(name), _shown(value, str(unit or "")), _clean(provenance) + " (assumed)",
                              _clean(citation) or "not written in the spec: effspec's default", None, True))
    return tuple(rows)


def run_view(rr, charts: bool = False, correction=None, index: int = 1, diagnostics=(),
             verdicts: dict[str, ClaimLine] | None = None) -> RunView:
    diag_rows, diag_tables = _diagnosis(rr)
    inputs = _inputs(rr.run)
    causes = RunCauses(rr, index, diagnostics, [i.name for i in inputs])
    headline, metrics = _headline(rr, correction, causes, verdicts), _metrics(rr, causes)
    view = RunView(
        _title(rr.run.id), _title(rr.run.title), _clean(rr.run.source), headline, inputs + _assumed_rows(causes), _knobs(rr),
        _clean(PRESET_NOTES.get(rr.knobs.preset, "")),
        _conventions(rr), metrics,
        tuple(Row(label(n), ", ".join(_clean(x) for x in miss)) for n, miss in rr.missing.items() if n not in rr.implied),
        _claims(rr), _breakdown(rr), _calendar(rr), _step_stats(rr), diag_rows, diag_tables,
    )
    if charts:
        from effspec.report import charts as ch

        view.charts.update(ch.run_charts(rr))
    return view


# GEMM shapes come from scaling.py / gemm.py (another engineer's, still moving):
# a run's `gemms` may be a LocalShapes (with its own `.gemms`), a list, or a
# dict; anything else, or nothing, degrades to a note.
_SHAPE_ATTRS = ("gemms", "gemm_shapes", "local_shapes")
_LAYOUT_FIELDS = ("tp", "pp", "cp", "ep", "dp", "micro_batch", "tokens_per_microbatch", "layers_per_stage")


def _shape_table(run_id: str, items) -> tuple[Table | None, tuple[str, ...]]:
    notes: tuple[str, ...] = ()
    title = f"{_title(run_id)}: local GEMM shapes per rank"
    inner = getattr(items, "gemms", None)
    if inner is not None and not isinstance(items, (list, tuple, dict)):
        layout = ", ".join(f"{f} = {_cell(getattr(items, f))}" for f in _LAYOUT_FIELDS
                           if getattr(items, f, None) is not None)
        title += f" ({layout})" if layout else ""
        notes = tuple(f"{_title(run_id)}: {_clean(n)}" for n in (getattr(items, "notes", ()) or ()))
        items = inner
    if isinstance(items, dict):
        items = [{"gemm": k, **(as_mapping(v) or {"shape": v})} for k, v in items.items()]
    try:
        return generic_table(title, list(items)), notes
    except TypeError:  # not iterable: a structure this report does not know yet
        return None, notes


def run_shapes(sr) -> dict[str, tuple[Table | None, tuple[str, ...]]]:
    """{run id: (its local GEMM shapes table, notes)} for the baseline and each run of a scaling."""
    out: dict[str, tuple[Table | None, tuple[str, ...]]] = {}
    runs = ([sr.baseline] if sr.baseline is not None else []) + list(sr.runs)
    for run in runs:
        table: Table | None = None
        notes: tuple[str, ...] = ()
        for attr in _SHAPE_ATTRS:
            items = getattr(run, attr, None)
            if items:
                table, notes = _shape_table(run.run_id, items)
                break
        missing = getattr(run, "gemms_missing", ())
        if missing:
            notes += (f"{_title(run.run_id)}: local shapes need " + ", ".join(_clean(m) for m in missing),)
        out.setdefault(run.run_id, (table, notes))
    return out


def _shapes(sr) -> tuple[tuple[Table, ...], str]:
    per_run = run_shapes(sr).values()
    tables = [t for t, _ in per_run if t]
    notes = [n for _, ns in per_run for n in ns]
    if not tables:
        notes.insert(0, "Local GEMM shapes are not available for this comparison.")
    return tuple(tables), "; ".join(notes)


def scaling_view(sr, runs: dict, charts: bool = False) -> ScalingView:
    eff_name = "weak_scaling_efficiency" if sr.scaling.kind == "weak" else "strong_scaling_efficiency"
    rows = []
    base = sr.baseline
    if base is not None:
        rows.append(ScalingRunView(_title(base.run_id) + " (baseline)", f"{base.devices:g}",
                                   value_text(base.valid_tokens_per_step, "token") if base.valid_tokens_per_step is not None else "—",
                                   value_text(base.tokens_per_device, "token") if base.tokens_per_device is not None else "—",
                                   "1", "100 %", ""))
    metrics = []
    for r in sr.runs:
        sp, ef = r.metrics.get("speedup"), r.metrics.get(eff_name)
        rows.append(ScalingRunView(
            _title(r.run_id), f"{r.devices:g}",
            value_text(r.valid_tokens_per_step, "token") if r.valid_tokens_per_step is not None else "—",
            value_text(r.tokens_per_device, "token") if r.tokens_per_device is not None else "—",
            sig(sp.value) if sp else "—", percent(ef.value) if ef else "—",
            "; ".join(f"{label(n)}: needs {', '.join(map(_clean, v))}" for n, v in r.missing.items())))
        metrics += [metric_view(m, name=f"{_title(r.run_id)}.{n}", title=f"{label(n)}: {_title(r.run_id)}")
                    for n, m in r.metrics.items()]
    shapes, note = _shapes(sr)
    kind = sr.scaling.kind or "—"
    if sr.scaling.kind == "weak" and sr.scaling.per_device == "flops":
        kind = "weak (model FLOPs per device fixed)"
    view = ScalingView(_title(sr.scaling.id), _clean(kind), _title(sr.scaling.baseline or "—"),
                       tuple(rows), tuple(metrics), shapes, note, claims=claim_views(getattr(sr, "claims", {}).values()))
    if charts:
        from effspec.report import charts as ch

        view.charts.update(ch.scaling_charts(sr, runs))
    return view


def _excerpt(lines: list[str], span) -> tuple[ExcerptLine, ...]:
    """The finding's lines and one either side; a long line is cut to the
    columns around the caret (``excerpt_window``), the cuts marked with "…"."""
    if span is None or not (1 <= span.line <= len(lines)):
        return ()
    last = min(max(span.end_line, span.line), span.line + 4, len(lines))
    first = max(1, span.line - 1)
    start = excerpt_window(len(lines[span.line - 1]), span.column)[0]  # the same columns on every line
    stop = start + EXCERPT_COLUMNS

    def shown(text: str) -> str:
        if start == 0 and len(text) <= stop:
            return text
        return (ELLIPSIS if start > 0 else "") + text[start:stop] + (ELLIPSIS if len(text) > stop else "")

    return tuple(ExcerptLine(n, _clean(shown(lines[n - 1]).replace("\t", "    ")), span.line <= n <= last)
                 for n in range(first, min(len(lines), last + 1) + 1) if n <= len(lines))


def finding_view(d, lines: list[str], doc_base: str | None = None) -> FindingView:
    s = d.span if not getattr(d, "file", "") else None  # in another file (the configuration): no spec line to link
    message = d.message + (f" (at {d.file}:{d.span.line}:{d.span.column})" if s is None and d.span else "")
    # Only codes from our own table get a page: never a link built from other text.
    page = rule_page(d.code, doc_base)
    return FindingView(d.code, d.severity, code_table().get(d.code, ("", ""))[0], s.line if s else None,
                       s.column if s else None, _clean(message), _clean(d.help), _clean(d.label),
                       tuple(_clean(n) for n in d.notes), _excerpt(lines, s),
                       page.url if page else "", page.shipped if page else "", page.explain if page else "")


def suppressed_view(s) -> SuppressedView:
    d = s.diagnostic
    return SuppressedView(d.code, d.severity, code_table().get(d.code, ("", ""))[0], d.span.line if d.span else None,
                          d.span.column if d.span else None, _clean(d.message), _clean(s.effect), _clean(s.by))


def report_title(result) -> str:
    """The spec's title: its run's title when it declares one run, else its file name."""
    spec = result.spec
    name = os.path.basename(result.file)
    if spec is not None and len(spec.runs) == 1 and spec.runs[0].title:
        return _title(spec.runs[0].title)
    if spec is not None and spec.runs:
        return f"{elide(printable(name), MAX_TITLE_CHARS)}: {len(spec.runs)} runs"
    return elide(printable(name), MAX_TITLE_CHARS)


def _gemms_with_their_runs(ev, runs: tuple[RunView, ...], scalings: tuple[ScalingView, ...]):
    """Each run's GEMM shapes move to the run (its derivations); the scaling links to them."""
    if ev is None:
        return runs, scalings
    per_run: dict[str, tuple[Table | None, tuple[str, ...]]] = {}
    for sr in ev.scalings.values():
        for run_id, found in run_shapes(sr).items():
            per_run.setdefault(run_id, found)
    ids = list(ev.runs)

    def with_gemms(rid: str, view: RunView) -> RunView:
        table, notes = per_run.get(rid, (None, ()))
        return replace(view, gemms=(table,) if table is not None else (), gemm_notes=notes)

    runs = tuple(with_gemms(rid, v) for rid, v in zip(ids, runs, strict=True))
    scalings = tuple(replace(v, gemm_runs=tuple((_title(rid), ids.index(rid) + 1) for rid in run_shapes(sr)
                                                if rid in ids and per_run[rid][0]))
                     for sr, v in zip(ev.scalings.values(), scalings, strict=True))
    return runs, scalings


def build(result, charts: bool = False, doc_base: str | None = None) -> Report:
    """The view-model of one checked spec (``charts`` adds the SVG figures; ``doc_base``, the
    documentation base rule pages link to, else the configuration's, else none)."""
    # The parser's line model (split at "\n" only); a final newline ends the
    # last line rather than opening an empty one in the listing.
    lines = source_lines(result.source)
    if lines and lines[-1] == "":
        lines.pop()
    flagged = {d.span.line for d in result.diagnostics if d.span}
    ev = result.evaluation
    corrections = peak_corrections(result)
    leads = claim_lines(result, corrections)
    by_run = {lead.owner: {c.metric: c for c in lead.claims} for lead in leads if not lead.scaling}
    runs = tuple(run_view(rr, charts, corrections.get(rid), n, result.diagnostics, by_run.get(rid))
                 for n, (rid, rr) in enumerate(ev.runs.items(), 1)) if ev else ()
    scalings = tuple(scaling_view(sr, ev.runs, charts) for sr in ev.scalings.values()) if ev else ()
    runs, scalings = _gemms_with_their_runs(ev, runs, scalings)
    if charts:
        from effspec.report.charts import number_charts

        number_charts((*runs, *scalings))
    base = effective_base(doc_base, (result,))
    findings = tuple(finding_view(d, lines, base) for d in result.diagnostics)
    omitted = getattr(result, "omitted", {})  # findings beyond the per-file cap
    counts = tuple((s, sum(d.severity == s for d in result.diagnostics) + omitted.get(s, 0)) for s in SEVERITIES)
    source = tuple(SourceLine(n, source_text(t), n in flagged) for n, t in enumerate(lines, 1))
    suppressed = tuple(suppressed_view(s) for s in getattr(result, "suppressed", ()))
    config = printable(getattr(getattr(result, "settings", None), "name", None) or "")
    not_applied = tuple(_clean(p.written()) for p in getattr(result, "pragmas_not_applied", ()))
    off_by = _clean(getattr(result, "pragmas_off_by", "") or "") if not_applied else ""
    return Report(report_title(result), elide(printable(os.path.basename(result.file)), MAX_TITLE_CHARS), runs, scalings,
                  findings, counts, source, ev is not None, suppressed, config, not_applied, off_by,
                  getattr(result, "suppressed_omitted", 0), leads)
