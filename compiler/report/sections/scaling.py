"""Section 7, scaling: each comparison's runs against its baseline (devices, tokens, speedup,
efficiency), its claims, its chart and derivations.  Each run's local GEMM shapes per rank are
shown with the run, in its derivations; the scaling links to them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from effspec.display import percent, sig
from effspec.engine.scaling import ScalingResult, ScalingRun
from effspec.report.sections.views import ClaimView, MetricView, Table, cell, claim_views, generic_table, metric_view
from effspec.report.words import clean, label, title, value_text

if TYPE_CHECKING:
    from effspec.engine.gemm import LocalShapes
    from effspec.engine.results import Evaluation, RunResult
    from effspec.report.sections.run import RunView

_LAYOUT_FIELDS = ("tp", "pp", "cp", "ep", "dp", "micro_batch", "tokens_per_microbatch", "layers_per_stage")


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
    charts: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    claims: tuple[ClaimView, ...] = ()
    gemm_runs: tuple[tuple[str, int], ...] = ()  # (run id, its 1-based place in the report): where its GEMM table is


@dataclass(frozen=True)
class ScalingSection:
    scalings: tuple[ScalingView, ...]


def _shape_table(run_id: str, shapes: LocalShapes) -> tuple[Table | None, tuple[str, ...]]:
    layout = ", ".join(f"{f} = {cell(getattr(shapes, f))}" for f in _LAYOUT_FIELDS if getattr(shapes, f) is not None)
    heading = f"{title(run_id)}: local GEMM shapes per rank" + (f" ({layout})" if layout else "")
    notes = tuple(f"{title(run_id)}: {clean(n)}" for n in shapes.notes)
    return generic_table(heading, list(shapes.gemms)), notes


def run_shapes(sr: ScalingResult) -> dict[str, tuple[Table | None, tuple[str, ...]]]:
    """{run id: (its local GEMM shapes table, notes)} for the baseline and each run of a scaling."""
    out: dict[str, tuple[Table | None, tuple[str, ...]]] = {}
    runs: list[ScalingRun] = ([sr.baseline] if sr.baseline is not None else []) + list(sr.runs)
    for run in runs:
        table: Table | None = None
        notes: tuple[str, ...] = ()
        if run.gemms is not None:
            table, notes = _shape_table(run.run_id, run.gemms)
        if run.gemms_missing:
            notes += (f"{title(run.run_id)}: local shapes need " + ", ".join(clean(m) for m in run.gemms_missing),)
        out.setdefault(run.run_id, (table, notes))
    return out


def _shapes(sr: ScalingResult) -> tuple[tuple[Table, ...], str]:
    per_run = run_shapes(sr).values()
    tables = [t for t, _ in per_run if t]
    notes = [n for _, ns in per_run for n in ns]
    if not tables:
        notes.insert(0, "Local GEMM shapes are not available for this comparison.")
    return tuple(tables), "; ".join(notes)


def _tokens(value: float | None) -> str:
    return value_text(value, "token") if value is not None else "—"


def scaling_view(sr: ScalingResult, runs: dict[str, RunResult], charts: bool = False) -> ScalingView:
    eff_name = "weak_scaling_efficiency" if sr.scaling.kind == "weak" else "strong_scaling_efficiency"
    rows = []
    base = sr.baseline
    if base is not None:
        rows.append(ScalingRunView(title(base.run_id) + " (baseline)", f"{base.devices:g}", _tokens(base.valid_tokens_per_step),
                                   _tokens(base.tokens_per_device), "1", "100 %", ""))
    metrics = []
    for r in sr.runs:
        sp, ef = r.metrics.get("speedup"), r.metrics.get(eff_name)
        rows.append(ScalingRunView(
            title(r.run_id), f"{r.devices:g}", _tokens(r.valid_tokens_per_step), _tokens(r.tokens_per_device),
            sig(sp.value) if sp else "—", percent(ef.value) if ef else "—",
            "; ".join(f"{label(n)}: needs {', '.join(map(clean, v))}" for n, v in r.missing.items())))
        metrics += [metric_view(m, name=f"{title(r.run_id)}.{n}", title=f"{label(n)}: {title(r.run_id)}")
                    for n, m in r.metrics.items()]
    shapes, note = _shapes(sr)
    kind = sr.scaling.kind or "—"
    if sr.scaling.kind == "weak" and sr.scaling.per_device == "flops":
        kind = "weak (model FLOPs per device fixed)"
    view = ScalingView(title(sr.scaling.id), clean(kind), title(sr.scaling.baseline or "—"),
                       tuple(rows), tuple(metrics), shapes, note, claims=claim_views(sr.claims.values()))
    if charts:
        from effspec.report import charts as ch

        view.charts.update(ch.scaling_charts(sr, runs))
    return view


def with_gemms(ev: Evaluation | None, runs: tuple[RunView, ...],
               scalings: Iterable[ScalingView]) -> tuple[tuple[RunView, ...], tuple[ScalingView, ...]]:
    """Each run's GEMM shapes move to the run (its derivations); the scaling links to them."""
    if ev is None:
        return runs, tuple(scalings)
    per_run: dict[str, tuple[Table | None, tuple[str, ...]]] = {}
    for sr in ev.scalings.values():
        for run_id, found in run_shapes(sr).items():
            per_run.setdefault(run_id, found)
    ids = list(ev.runs)

    def moved(rid: str, view: RunView) -> RunView:
        table, notes = per_run.get(rid, (None, ()))
        return replace(view, gemms=(table,) if table is not None else (), gemm_notes=notes)

    return (tuple(moved(rid, v) for rid, v in zip(ids, runs, strict=True)),
            tuple(replace(v, gemm_runs=tuple((title(rid), ids.index(rid) + 1) for rid in run_shapes(sr)
                                             if rid in ids and per_run[rid][0]))
                  for sr, v in zip(ev.scalings.values(), scalings, strict=True)))
