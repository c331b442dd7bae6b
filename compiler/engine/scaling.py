"""Scaling comparisons: speedup, strong and weak efficiency, the work check,
local GEMM shapes and time-to-target.

strong: global useful work per step is fixed; efficiency = speedup / device ratio.
weak:   per-device work is fixed; efficiency = achieved model FLOP/s per device,
        run over baseline.

Each run is compared with the declared baseline (``ScalingResult.runs``; the
contract's `metrics` are the last run's).  Beside that, the runs form a
*series* ordered by device count, measured against its smallest valid member
(one with a step time and devices), with the incremental efficiency between
neighbours: where scaling is lost, step by step.  When the compared runs
declare a `target` (metric, value, reached_at), ``time_to_target`` =
reached_at × step_time, and ``time_to_target_speedup`` = baseline / run: the
comparison that stays fair when numerics (dtype) change the tokens needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from effspec.diagnostics import Diagnostic
from effspec.display import exact_operands, quantity, shown
from effspec.engine.claims import tolerance
from effspec.engine.finite import divide
from effspec.engine.gemm import LocalShapes, local_shapes
from effspec.engine.results import ClaimResult, Input, Metric, RunResult
from effspec.front import keys as K
from effspec.front.expr import evaluate as eval_expr
from effspec.front.ir import Scaling, Spec
from effspec.front.units import UnitError, dims_of

SAME_WORK_TOLERANCE = 1e-9  # relative: declared token counts are exact integers
# Weak scaling by model size (`per_device = flops`): model shapes come in discrete
# sizes (layers, widths divisible by the heads and the tensor split), so the model
# FLOPs per device are held only approximately. Megatron-LM's 2019 series (1.2B on
# 1 GPU … 8.3B on 8) stays within 19 % under palm counting (+1.0, −15.9, −18.1 %);
# beyond 20 % the per-device work has changed.
FLOPS_PER_DEVICE_TOLERANCE = 0.20


@dataclass
class ScalingRun:
    run_id: str
    devices: float
    metrics: dict[str, Metric] = field(default_factory=dict)
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    valid_tokens_per_step: float | None = None
    tokens_per_device: float | None = None
    step_time: float | None = None
    achieved_flops_per_device: float | None = None
    flops_per_token: float | None = None
    model_flops_per_step: float | None = None
    flops_per_device: float | None = None  # model FLOPs per step per active device: weak scaling by model size
    seq_len: float | None = None
    dtypes: tuple[str, ...] = ()
    model: tuple[object, ...] | None = None  # the model shape as a comparable tuple (None: custom or incomplete)
    gemms: LocalShapes | None = None
    gemms_missing: tuple[str, ...] = ()
    time_to_target: Metric | None = None
    target: tuple[str, float] | None = None  # (metric, value)


@dataclass(frozen=True)
class SeriesStep:
    """One neighbour pair of the series, or one member against the series baseline."""

    from_run: str
    to_run: str
    device_ratio: float
    speedup: float | None
    efficiency: float | None  # strong: speedup / device ratio; weak: achieved per device ratio

    def to_json(self) -> dict[str, object]:
        return {"from": self.from_run, "to": self.to_run, "device_ratio": self.device_ratio,
                "speedup": self.speedup, "efficiency": self.efficiency}


@dataclass(frozen=True)
class WorkChange:
    """A difference between a run and the baseline that the scaling kind forbids or should note."""

    run_id: str
    what: str  # valid_tokens_per_step | tokens_per_device | flops_per_device | model | seq_len | dtype
    baseline: object
    run: object


@dataclass
class ScalingResult:
    scaling: Scaling
    baseline: ScalingRun | None
    runs: list[ScalingRun]
    series: list[ScalingRun] = field(default_factory=list)  # baseline and runs, by device count
    series_baseline: str | None = None  # the smallest member with a step time and devices
    cumulative: list[SeriesStep] = field(default_factory=list)  # each later member against series_baseline
    incremental: list[SeriesStep] = field(default_factory=list)  # neighbours in the series
    claims: dict[str, ClaimResult] = field(default_factory=dict)  # by the claim as written: `efficiency[scaled_64]`
    # Figures that are not finite (a speedup over a subnormal step time), taken out by
    # engine.finite.guard and kept with their derivation for EFF702: `speedup[RUN]`, `series …`.
    nonfinite: dict[str, Metric] = field(default_factory=dict)

    @property
    def metrics(self) -> dict[str, Metric]:
        """The contract's `metrics`: those of the last (largest) run compared."""
        return self.runs[-1].metrics if self.runs else {}

    @property
    def final_point(self) -> ScalingRun | None:
        """The compared run with the most active devices (the last listed among equals): what an
        unqualified scaling claim (`claim efficiency = …`) is checked against."""
        best = None
        for run in self.runs:
            if best is None or run.devices >= best.devices:
                best = run
        return best

    def work_changes(self) -> list[WorkChange]:
        """What differs from the baseline: the evidence behind EFF301, EFF302, EFF303 and EFF701.

        strong scaling must keep valid_tokens_per_step, weak scaling
        tokens_per_device; either must keep model, seq_len and dtype.
        """
        base = self.baseline
        if base is None:
            return []
        out = []
        kind = self.scaling.kind
        by_flops = self.scaling.per_device == "flops"
        for run in self.runs:
            if kind == "strong" and not _same(base.valid_tokens_per_step, run.valid_tokens_per_step):
                out.append(WorkChange(run.run_id, "valid_tokens_per_step", base.valid_tokens_per_step, run.valid_tokens_per_step))
            if kind == "weak" and not by_flops and not _same(base.tokens_per_device, run.tokens_per_device):
                out.append(WorkChange(run.run_id, "tokens_per_device", base.tokens_per_device, run.tokens_per_device))
            if kind == "weak" and by_flops and not _close(base.flops_per_device, run.flops_per_device, FLOPS_PER_DEVICE_TOLERANCE):
                out.append(WorkChange(run.run_id, "flops_per_device", base.flops_per_device, run.flops_per_device))
            for what in ("model", "seq_len", "dtypes"):
                a, b = getattr(base, what), getattr(run, what)
                if a is not None and b is not None and a != b and not (what == "seq_len" and _same(a, b)):
                    out.append(WorkChange(run.run_id, "dtype" if what == "dtypes" else what, a, b))
        return out


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return True  # unknown is not evidence of a change
    return abs(a - b) <= SAME_WORK_TOLERANCE * max(abs(a), abs(b))


def _close(a: float | None, b: float | None, tolerance: float) -> bool:
    """Within ``tolerance`` relative to ``a`` (the baseline); unknown is not evidence of a change."""
    if a is None or b is None or a == 0:
        return True
    return abs(b / a - 1.0) <= tolerance


def _devices(result: RunResult) -> float:
    return sum(p.active for p in result.pools)


def time_to_target(result: RunResult) -> Metric | None:
    """reached_at × step_time, where the run declares a `target` and has a step time."""
    target = result.run.block("target")
    step = result.figure("step_time")
    if target is None or step is None or target.get("reached_at") is None:
        return None
    reached, declared = target.get("reached_at"), target.get("value")
    assert reached is not None and isinstance(reached.value, (int, float))  # checked above; a quantity key
    assert declared is not None  # a required key of `target`
    v = float(reached.value) * step.value
    metric = target.value("metric")
    return Metric("time_to_target", v, "s", "target.reached_at × step_time",
                  "{} × {} = {}".format(*exact_operands([(float(reached.value), "step"), (step.value, "s")],
                                                        lambda x: x[0] * x[1], (v, "s")), quantity(v, "s")),
                  (Input("target.reached_at", reached.value, "step", reached.provenance.kind,
                         reached.provenance.citation, reached.span),
                   step.as_input(), Input("target.metric", f"{metric} = {declared.text}", "", "declared",
                                          None, target.span)),
                  step.assumed, step.basis)


def _scaling_run(result: RunResult) -> ScalingRun:
    tokens = result.metrics.get("valid_tokens_per_step")
    devices = _devices(result)
    step = result.figure("step_time")
    achieved = result.figure("achieved_flops_per_device")
    work = result.run.block("work")
    seq_len = work.number("seq_len") if work is not None else None
    gemms, gemms_missing = local_shapes(result.shape, result.run.block("parallelism"), seq_len)
    shape = result.shape
    target = result.run.block("target")
    target_value = target.number("value") if target is not None else None
    ttt = result.time_to_target or time_to_target(result)
    fpt, model_flops = result.metrics.get("flops_per_token"), result.metrics.get("model_flops_per_step")
    return ScalingRun(result.run.id, devices, valid_tokens_per_step=tokens.value if tokens else None,
                      tokens_per_device=tokens.value / devices if tokens and devices else None,
                      step_time=step.value if step else None,
                      achieved_flops_per_device=achieved.value if achieved else None,
                      flops_per_token=fpt.value if fpt else None,
                      model_flops_per_step=model_flops.value if model_flops else None,
                      flops_per_device=model_flops.value / devices if model_flops and devices else None,
                      seq_len=float(seq_len) if seq_len is not None else None,
                      dtypes=tuple(sorted({p.dtype for p in result.pools})),
                      model=shape.as_tuple() if shape is not None else None,
                      gemms=gemms, gemms_missing=gemms_missing, time_to_target=ttt,
                      target=(str(target.value("metric")), float(target_value))
                      if target is not None and target_value is not None else None)


def compare(base: RunResult, run: RunResult, kind: str | None) -> ScalingRun:
    """Speedup and the efficiency of ``run`` against ``base``, and time-to-target where both declare one."""
    out = _scaling_run(run)
    base_run = _scaling_run(base)
    b_step, r_step = base.metrics.get("step_time"), run.metrics.get("step_time")
    b_dev, r_dev = _devices(base), _devices(run)
    if b_step is None or r_step is None:
        out.missing["speedup"] = tuple(f"run.{x.run.id}.step_time" for x, s in ((base, b_step), (run, r_step)) if s is None)
    else:
        v = b_step.value / r_step.value
        out.metrics["speedup"] = speedup = Metric(
            "speedup", v, "", "baseline step_time / run step_time",
            "{} / {} = {}".format(*exact_operands([(b_step.value, "s"), (r_step.value, "s")], lambda x: x[0] / x[1],
                                                  (v, "")), shown(v, "")),
            (_named(base, b_step), _named(run, r_step)), b_step.assumed or r_step.assumed)
        if kind == "strong" and b_dev > 0 and r_dev > 0:
            ratio = r_dev / b_dev
            e = v / ratio
            out.metrics["strong_scaling_efficiency"] = Metric(
                "strong_scaling_efficiency", e, "", "speedup / (run devices / baseline devices)",
                "{} / ({} / {}) = {}".format(*exact_operands([(v, ""), (r_dev, ""), (b_dev, "")],
                                                             lambda x: x[0] / (x[1] / x[2]), (e, "%")), shown(e, "%")),
                (speedup.as_input(), Input(f"run.{run.run.id}.devices", r_dev, "device", "derived"),
                 Input(f"run.{base.run.id}.devices", b_dev, "device", "derived")), speedup.assumed)
    if kind == "weak":
        b_ach, r_ach = base.metrics.get("achieved_flops_per_device"), run.metrics.get("achieved_flops_per_device")
        if b_ach is None or r_ach is None:
            out.missing["weak_scaling_efficiency"] = tuple(
                f"run.{x.run.id}.achieved_flops_per_device" for x, s in ((base, b_ach), (run, r_ach)) if s is None)
        else:
            e = r_ach.value / b_ach.value
            out.metrics["weak_scaling_efficiency"] = Metric(
                "weak_scaling_efficiency", e, "", "run achieved_flops_per_device / baseline achieved_flops_per_device",
                "{} / {} = {}".format(*exact_operands([(r_ach.value, "FLOP/s"), (b_ach.value, "FLOP/s")],
                                                      lambda x: x[0] / x[1], (e, "%")), shown(e, "%")),
                (_named(run, r_ach), _named(base, b_ach)), r_ach.assumed or b_ach.assumed)
    _time_to_target_speedup(base_run, out)
    return out


def _time_to_target_speedup(base: ScalingRun, out: ScalingRun) -> None:
    b, r = base.time_to_target, out.time_to_target
    if b is None and r is None:
        return  # no targets declared: per-token rates are the comparison
    if b is None or r is None:
        out.missing["time_to_target_speedup"] = tuple(
            f"run.{rid}.target" for rid, t in ((base.run_id, b), (out.run_id, r)) if t is None)
        return
    if base.target != out.target:
        out.missing["time_to_target_speedup"] = (
            f"the same target in both runs (baseline {base.target}, run {out.target})",)
        return
    v = divide(b.value, r.value)  # a time-to-target that underflowed to 0 s: infinite, and taken out (EFF702)
    out.metrics["time_to_target_speedup"] = Metric(
        "time_to_target_speedup", v, "", "baseline time_to_target / run time_to_target",
        "{} / {} = {}".format(*exact_operands([(b.value, "s"), (r.value, "s")], lambda x: x[0] / x[1], (v, "")),
                              shown(v, "")),
        (Input(f"run.{base.run_id}.time_to_target", b.value, "s", "derived", None, None, b.assumed),
         Input(f"run.{out.run_id}.time_to_target", r.value, "s", "derived", None, None, r.assumed)),
        b.assumed or r.assumed)


def _named(result: RunResult, metric: Metric) -> Input[float]:
    return Input(f"run.{result.run.id}.{metric.name}", metric.value, metric.unit, "derived", None, None, metric.assumed)


def _step(a: ScalingRun, b: ScalingRun, kind: str | None) -> SeriesStep:
    assert a.step_time is not None and b.step_time is not None  # series members have a step time
    ratio = b.devices / a.devices
    speedup = a.step_time / b.step_time
    if kind == "weak":
        eff = (b.achieved_flops_per_device / a.achieved_flops_per_device
               if a.achieved_flops_per_device and b.achieved_flops_per_device is not None else None)
    else:
        eff = speedup / ratio
    return SeriesStep(a.run_id, b.run_id, ratio, speedup, eff)


def series(result: ScalingResult) -> None:
    """Order baseline and runs by devices; efficiency against the smallest valid member and between neighbours."""
    members, seen = [], set()
    for member in ([result.baseline] if result.baseline else []) + result.runs:
        if member.run_id not in seen:
            seen.add(member.run_id)
            members.append(member)
    members.sort(key=lambda m: m.devices)
    result.series = members
    valid = [m for m in members if m.step_time and m.devices > 0]
    if not valid:
        return
    first = valid[0]
    result.series_baseline = first.run_id
    result.cumulative = [_step(first, m, result.scaling.kind) for m in valid[1:]]
    result.incremental = [_step(a, b, result.scaling.kind) for a, b in zip(valid, valid[1:], strict=False)]


def evaluate_scaling(scaling: Scaling, spec: Spec, results: dict[str, RunResult],
                     diags: list[Diagnostic] | None = None) -> ScalingResult:
    """Compare every run of ``scaling`` with its baseline, lay the runs out as a series, check its claims."""
    base = results.get(scaling.baseline) if scaling.baseline else None
    if base is None:
        out = ScalingResult(scaling, None, [])
    else:
        runs = [compare(base, results[r], scaling.kind) for r in scaling.runs if r in results]
        out = ScalingResult(scaling, _scaling_run(base), runs)
        series(out)
    check_scaling_claims(out, diags if diags is not None else [])
    return out


def check_scaling_claims(result: ScalingResult, diags: list[Diagnostic]) -> None:
    """Each `claim` of the scaling against the reconstructed figure, with the tolerance and
    statuses of run claims: the final point's figure, or the named run's (`claim efficiency[RUN]`).
    The baseline named as the point is its own reference: speedup and efficiency 1."""
    for claim in result.scaling.claims:
        try:
            q = eval_expr(claim.expr, lambda ref: (_ for _ in ()).throw(LookupError(ref.dotted)))
        except (UnitError, LookupError) as exc:
            diags.append(Diagnostic("EFF010", "error", claim.value_span, f"claim `{claim.key}`: {exc}", ""))
            continue
        except ZeroDivisionError:
            diags.append(Diagnostic("EFF011", "error", claim.value_span, f"claim `{claim.key}` divides by zero", ""))
            continue
        if q.dims != dims_of(""):
            diags.append(Diagnostic("EFF010", "error", claim.value_span,
                                    f"claim `{claim.key}` expects a ratio or %, found `{q.unit}`",
                                    f"write e.g. `claim {claim.key} = 91.7 %`", label=f"this is {q.unit}"))
            continue
        if not math.isfinite(q.magnitude):
            diags.append(Diagnostic("EFF011", "error", claim.value_span, f"claim `{claim.key}` is not finite", ""))
            continue
        claimed, tol = q.magnitude, tolerance(claim.expr, q.magnitude)
        cr = ClaimResult(claim, claimed, None, "unrecoverable", "", tol)
        result.claims[claim.key] = cr
        if claim.name not in K.SCALING_CLAIMABLE:  # `efficiency` of a scaling without a kind
            cr.missing = ("scaling.kind",)
            continue
        baseline = result.baseline
        if claim.point is not None and baseline is not None and claim.point == baseline.run_id \
                and claim.point not in {r.run_id for r in result.runs}:
            cr.reconstructed, cr.basis = 1.0, f"`{claim.point}` is the baseline"
        else:
            point = (next((r for r in result.runs if r.run_id == claim.point), None) if claim.point is not None
                     else result.final_point)
            if point is None:
                cr.missing = (f"scaling.baseline = {result.scaling.baseline}" if baseline is None else "scaling.runs",)
                continue
            metric = point.metrics.get(claim.name)
            if metric is None:
                cr.missing = tuple(point.missing.get(claim.name, ())) or (f"run.{point.run_id}.step_time",)
                continue
            cr.reconstructed = metric.value
            cr.basis = f"`{point.run_id}` against `{baseline.run_id}`" if baseline is not None else "inputs"
        cr.status = "consistent" if abs(cr.reconstructed - claimed) <= tol else "mismatch"
