"""Section 4, the derivations: each figure's formula, the formula with values and units put in,
the result, and its inputs with provenance.

A claims-only run lists its derivations' inputs once, after them, and only
those its other parts do not print.  A later claims-only run with an earlier
run's formulas names the figures it has from the same values by result, and
prints each other figure's values put in under the formulas printed once.
"""

from __future__ import annotations

from dataclasses import dataclass

from effspec.engine.results import RunResult
from effspec.report.assumptions import Cause, RunCauses
from effspec.report.sections.run import Earlier, RunView, differing
from effspec.report.sections.summary import moved, without_lines
from effspec.report.sections.views import InputView, MetricView, Row, metric_view
from effspec.report.words import clean, label

# The order of the derivation section: the numerator, the denominator, then rates.
METRIC_ORDER = ("flops_per_token", "valid_tokens_per_step", "model_flops_per_step", "executed_flops_per_step",
                "aggregate_peak", "step_time", "valid_tokens_per_second", "achieved_flops_per_device", "aggregate_flops", "mfu",
                "hfu", "mfu_measured_peak", "calendar_efficiency", "goodput")


def metrics(rr: RunResult, causes: RunCauses | None = None) -> tuple[MetricView, ...]:
    """The run's figures from inputs, in :data:`METRIC_ORDER`, then those a claim implies."""
    names = [n for n in METRIC_ORDER if n in rr.metrics] + sorted(n for n in rr.metrics if n not in METRIC_ORDER)
    out = [metric_view(rr.metrics[n], causes=causes) for n in names]
    for name in sorted(rr.implied, key=lambda n: (METRIC_ORDER.index(n) if n in METRIC_ORDER else 99, n)):
        if name in rr.metrics:
            continue
        out.append(metric_view(rr.implied[name], implied=True, name=name, causes=causes))
    return tuple(out)


def missing(rr: RunResult) -> tuple[Row, ...]:
    """The figures not recoverable, each with the inputs it lacks."""
    return tuple(Row(label(n), ", ".join(clean(x) for x in miss)) for n, miss in rr.missing.items() if n not in rr.implied)


def _figure_key(metric: MetricView) -> tuple[object, ...]:
    """What makes two runs' figures the same figure: name, formula, values put in, result and standing."""
    return (metric.name, metric.formula, metric.substituted, metric.value, metric.implied, metric.assumed, metric.basis)


def _standing_key(metric: MetricView) -> tuple[tuple[object, ...], list[str]]:
    """What a figure rests on, with the lines of the claim it is implied by taken out, and those lines."""
    basis, lines = without_lines(metric.basis)
    return (metric.implied, basis, metric.assumed, tuple(c.text for c in metric.causes)), lines


def same_figures(run: RunView, earlier: Earlier | None) -> tuple[MetricView, ...]:
    """The run's figures that the earlier run has with the same result from the same values put in
    (the same standing too): printed as that run's results, by name and value."""
    if earlier is None:
        return ()
    theirs = {_figure_key(m) for m in earlier.run.metrics}
    return tuple(m for m in run.metrics if _figure_key(m) in theirs)


def own_figures(run: RunView, earlier: Earlier | None) -> tuple[MetricView, ...]:
    """The run's other figures (all of them, without an earlier run): each with its own values put in."""
    same = set(same_figures(run, earlier))
    return tuple(m for m in run.metrics if m not in same)


def standings_like(run: RunView, earlier: Earlier | None) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """When each of the run's own figures rests on what the earlier run's figure of that name rests on,
    but for the lines of the claims it is implied by: (this run's lines, the earlier run's lines), each
    pair once.  None when some standing differs."""
    if earlier is None:
        return None
    theirs = {m.name: m for m in earlier.run.metrics}
    ours_lines: list[str] = []
    their_lines: list[str] = []
    for m in own_figures(run, earlier):
        other = theirs.get(m.name)
        if other is None:
            return None
        (here, a), (there, b) = _standing_key(m), _standing_key(other)
        if here != there or len(a) != len(b):
            return None
        ours_lines += a
        their_lines += b
    return moved(ours_lines, their_lines)


def own_standings(run: RunView, earlier: Earlier | None) -> tuple[tuple[str, MetricView], ...]:
    """What the run's own figures rest on, each distinct standing once with the figures it applies to
    (``"Step time, MFU"``, and the first such figure)."""
    shared: dict[tuple[object, ...], list[MetricView]] = {}
    for m in own_figures(run, earlier):
        if m.implied or m.assumed:
            shared.setdefault((m.implied, m.basis, m.assumed, m.causes), []).append(m)
    return tuple((", ".join(m.label for m in ms), ms[0]) for ms in shared.values())


@dataclass(frozen=True)
class DerivationsRun:
    run: RunView
    place: int  # 1-based: the run's #derivations-N and #gemms-N anchors
    earlier: Earlier | None
    same: tuple[MetricView, ...]  # with an earlier run: figures named by result
    own: tuple[MetricView, ...]  # with an earlier run: figures with their own values put in
    extra: tuple[InputView, ...]  # a claims-only run's inputs printed nowhere else
    standings: tuple[tuple[str, MetricView], ...]  # with an earlier run: what its own figures rest on
    standings_like: tuple[tuple[str, ...], tuple[str, ...]] | None  # (this run's lines, the earlier run's)
    own_causes: tuple[Cause, ...]  # the causes of its own figures' assumptions, each once
    same_missing: bool  # what is not recoverable, and why, is the earlier run's


@dataclass(frozen=True)
class DerivationsView:
    runs: tuple[DerivationsRun, ...]


def derivations_run(run: RunView, place: int, earlier: Earlier | None) -> DerivationsRun:
    own = own_figures(run, earlier)
    extra = (run.derivation_extra_inputs if earlier is None
             else differing(run.derivation_extra_inputs, earlier, derivations=True)) if run.claims_only else ()
    standings = own_standings(run, earlier) if earlier is not None and run.claims_only else ()
    like = standings_like(run, earlier) if standings else None
    causes = tuple(dict.fromkeys(c for m in own for c in m.causes)) if like else ()
    return DerivationsRun(run, place, earlier, same_figures(run, earlier), own, extra, standings, like, causes,
                          earlier is not None and earlier.run.missing == run.missing)


def build(runs: tuple[RunView, ...], earlier: tuple[Earlier | None, ...]) -> DerivationsView:
    return DerivationsView(tuple(derivations_run(run, n, e) for n, (run, e) in enumerate(zip(runs, earlier, strict=True), 1)))
