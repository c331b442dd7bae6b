"""Scaling comparisons: speedup, strong and weak efficiency, and the work check.

strong: global useful work per step is fixed; efficiency = speedup / device ratio.
weak:   per-device work is fixed; efficiency = achieved model FLOP/s per device,
        run over baseline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .evaluate import Input, Metric, RunResult
from .fmt import metric_value, quantity
from .ir import Scaling, Spec


@dataclass
class ScalingRun:
    run_id: str
    devices: float
    metrics: dict[str, Metric] = field(default_factory=dict)
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    valid_tokens_per_step: float | None = None
    tokens_per_device: float | None = None


@dataclass
class ScalingResult:
    scaling: Scaling
    baseline: ScalingRun | None
    runs: list[ScalingRun]

    @property
    def metrics(self) -> dict[str, Metric]:
        """The contract's `metrics`: those of the last (largest) run compared."""
        return self.runs[-1].metrics if self.runs else {}


def _devices(result: RunResult) -> float:
    return sum(p.active for p in result.pools)


def _scaling_run(result: RunResult) -> ScalingRun:
    tokens = result.metrics.get("valid_tokens_per_step")
    devices = _devices(result)
    return ScalingRun(result.run.id, devices, valid_tokens_per_step=tokens.value if tokens else None,
                      tokens_per_device=tokens.value / devices if tokens and devices else None)


def compare(base: RunResult, run: RunResult, kind: str | None) -> ScalingRun:
    """Speedup and the efficiency of ``run`` against ``base``."""
    out = _scaling_run(run)
    b_step, r_step = base.metrics.get("step_time"), run.metrics.get("step_time")
    b_dev, r_dev = _devices(base), _devices(run)
    if b_step is None or r_step is None:
        out.missing["speedup"] = tuple(f"run.{x.run.id}.step_time" for x, s in ((base, b_step), (run, r_step)) if s is None)
    else:
        v = b_step.value / r_step.value
        out.metrics["speedup"] = speedup = Metric(
            "speedup", v, "", "baseline step_time / run step_time",
            f"{quantity(b_step.value, 's')} / {quantity(r_step.value, 's')} = {v:.4g}",
            (_named(base, b_step), _named(run, r_step)), b_step.assumed or r_step.assumed)
        if kind == "strong" and b_dev > 0 and r_dev > 0:
            ratio = r_dev / b_dev
            e = v / ratio
            out.metrics["strong_scaling_efficiency"] = Metric(
                "strong_scaling_efficiency", e, "", "speedup / (run devices / baseline devices)",
                f"{v:.4g} / ({r_dev:g} / {b_dev:g}) = {metric_value(e, '')}",
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
                f"{quantity(r_ach.value, 'FLOP/s')} / {quantity(b_ach.value, 'FLOP/s')} = {metric_value(e, '')}",
                (_named(run, r_ach), _named(base, b_ach)), r_ach.assumed or b_ach.assumed)
    return out


def _named(result: RunResult, metric: Metric) -> Input:
    return Input(f"run.{result.run.id}.{metric.name}", metric.value, metric.unit, "derived", None, None, metric.assumed)


def evaluate_scaling(scaling: Scaling, spec: Spec, results: dict[str, RunResult]) -> ScalingResult:
    base = results.get(scaling.baseline) if scaling.baseline else None
    if base is None:
        return ScalingResult(scaling, None, [])
    runs = [compare(base, results[r], scaling.kind) for r in scaling.runs if r in results]
    return ScalingResult(scaling, _scaling_run(base), runs)
