"""The finiteness boundary: every figure an output sees is a finite number.

Inputs each in range can still combine into a figure that is not one:
`step_time = 5e-324 s` makes an infinite throughput and an infinite scaling
speedup; a subnormal peak times a subnormal step underflows to 0 s·FLOP/s,
and the MFU divides by it.  Two pieces keep such a figure out of every
output format (text, JSON, SARIF, the reports):

- :func:`divide` is the quotient of the engine's formulas: IEEE 754's, so a
  divisor that underflowed to 0 gives ±inf (0 / 0 NaN), a figure that is not
  finite, instead of a ZeroDivisionError that would end the check;
- :func:`guard` runs once, at the end of the evaluation, over everything an
  output reads: each run's figures (``drop_nonfinite`` has taken its metrics),
  its time-to-target, step statistics, breakdown, calendar and per-rank
  diagnosis, and each scaling's figures, series and claims.  A figure that is
  not finite is taken out (a claim on it is not recoverable) and kept, with
  its derivation, in ``nonfinite`` of its run or scaling: EFF702 names it at
  the input it rests on, with that input's line and column.

An evaluation that still raises an ArithmeticError (a division no formula
foresaw) is EFF702 too (:func:`arithmetic_error`), at the spec's number
nearest zero, and no figure is computed: never an internal error (EFF099).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from effspec.diagnostics import Diagnostic
from effspec.engine.results import ClaimResult, Evaluation, Input, Metric, RunResult
from effspec.front.ir import Spec

if TYPE_CHECKING:
    from effspec.engine.scaling import ScalingResult, ScalingRun, SeriesStep

NOT_FINITE = ("finite inputs (see EFF702)",)


def divide(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` as IEEE 754 defines it: x / 0 is ±inf and 0 / 0 (or a NaN) is NaN."""
    if denominator != 0:
        return numerator / denominator
    if numerator == 0 or math.isnan(numerator):
        return math.nan
    return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)


def first_nonfinite(value: object, path: str = "") -> tuple[str, float] | None:
    """The path and value of the first number in ``value`` that is not finite, else None.

    Walks what an output reads: numbers, dicts, lists and tuples, an object's
    ``to_json()`` where it has one, else a dataclass' fields.  The spec's own
    objects (`effspec.front`) are inputs, checked where they are read, and are
    not walked."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        for key, item in value.items():
            found = first_nonfinite(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = first_nonfinite(item, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if type(value).__module__.startswith("effspec.front"):
        return None
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return first_nonfinite(to_json(), path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.compare:  # a field left out of comparison (samples, a chart's profile) is no figure
                found = first_nonfinite(getattr(value, f.name), f"{path}.{f.name}" if path else f.name)
                if found is not None:
                    return found
    return None


def guard(evaluation: Evaluation) -> None:
    """Take every figure that is not finite out of ``evaluation`` (see the module docstring)."""
    for result in evaluation.runs.values():
        _guard_run(result)
    for scaling in evaluation.scalings.values():
        _guard_scaling(scaling)


# What each part of a run rests on: the input EFF702 points at when one of its numbers is not finite.
_PARTS = (("step_stats", "step_statistics", "timing", "step_time"), ("breakdown", "breakdown", "breakdown", ""),
          ("calendar_table", "calendar", "calendar", ""), ("diagnosis", "diagnosis", "ranks", "samples"))


def _guard_run(result: RunResult) -> None:
    ttt = result.time_to_target
    if ttt is not None and first_nonfinite(ttt) is not None:
        result.nonfinite["time_to_target"], result.time_to_target = ttt, None
        result.missing.setdefault("time_to_target", NOT_FINITE)
    for attr, name, block_name, key in _PARTS:
        found = first_nonfinite(getattr(result, attr))
        if found is None:
            continue
        setattr(result, attr, None)
        if attr == "calendar_table":
            result.calendar = None
        block = result.run.block(block_name)
        entry = block.get(key) if block is not None and key else None
        span = entry.value_span if entry is not None else block.span if block is not None else None
        path, value = found
        written = entry.text if entry is not None else f"the `{block_name}` block"
        result.nonfinite[f"{name}.{path}"] = Metric(
            f"{name}.{path}", value, "", f"{name} of {written}", f"{path} = {value}",
            (Input(f"{block_name}.{key}" if key else block_name, written, "", "declared", None, span),))
    _guard_claims(result.claims.values())


def _guard_claims(claims: Iterable[ClaimResult]) -> None:
    for cr in claims:
        if cr.reconstructed is not None and not math.isfinite(cr.reconstructed):
            cr.reconstructed, cr.status = None, "unrecoverable"
            cr.missing = cr.missing or NOT_FINITE


def _guard_scaling(result: ScalingResult) -> None:
    for run in ([result.baseline] if result.baseline is not None else []) + result.runs:
        _guard_scaling_run(result, run)
    result.cumulative = [_guard_step(result, s) for s in result.cumulative]
    result.incremental = [_guard_step(result, s) for s in result.incremental]
    _guard_claims(result.claims.values())


def _guard_scaling_run(result: ScalingResult, run: ScalingRun) -> None:
    for name in [n for n, m in run.metrics.items() if first_nonfinite(m) is not None]:
        result.nonfinite[f"{name}[{run.run_id}]"] = run.metrics.pop(name)
        run.missing.setdefault(name, NOT_FINITE)
    for f in dataclasses.fields(run):
        value = getattr(run, f.name)
        if f.name != "devices" and isinstance(value, float) and not math.isfinite(value):  # work over the devices
            setattr(run, f.name, None)
    if run.time_to_target is not None and first_nonfinite(run.time_to_target) is not None:
        run.time_to_target = None


def _guard_step(result: ScalingResult, step: SeriesStep) -> SeriesStep:
    """A step of the series with its figures that are not finite taken out (and kept for EFF702)."""
    bad = [name for name in ("speedup", "efficiency") if (v := getattr(step, name)) is not None and not math.isfinite(v)]
    if not bad:
        return step
    times = {m.run_id: m.step_time for m in result.series}
    inputs = tuple(Input(f"run.{r}.step_time", times.get(r) or 0.0, "s", "derived") for r in (step.from_run, step.to_run))
    for name in bad:
        result.nonfinite.setdefault(f"series {name} {step.from_run} → {step.to_run}", Metric(
            name, getattr(step, name), "", f"series {name}: `{step.to_run}` against `{step.from_run}`",
            f"{name} = {getattr(step, name)}", inputs))
    return dataclasses.replace(step, speedup=None if "speedup" in bad else step.speedup,
                               efficiency=None if "efficiency" in bad else step.efficiency)


def arithmetic_error(spec: Spec, exc: ArithmeticError) -> Diagnostic:
    """EFF702 for an evaluation that raised (a ZeroDivisionError or OverflowError no formula
    foresaw): at the spec's number nearest zero (0 or a subnormal: the divisor that
    underflowed), else its largest, else its first run; no figure of the spec is computed."""
    numbers = [(abs(float(e.value)), e) for run in spec.runs for block in run.blocks for e in block.entries
               if isinstance(e.value, int | float) and not isinstance(e.value, bool)]
    tiny = [(v, e) for v, e in numbers if v < sys.float_info.min]
    entry = (min(tiny, key=lambda p: p[0])[1] if tiny else max(numbers, key=lambda p: p[0])[1] if numbers else None)
    span = entry.value_span if entry is not None else spec.runs[0].name_span if spec.runs else None
    shown = f"`{entry.key} = {entry.text}`" if entry is not None else "its inputs"
    return Diagnostic(
        "EFF702", "error", span,
        f"the figures could not be computed: an intermediate result left the floating-point range "
        f"({type(exc).__name__}: {exc}); the input nearest zero or largest is {shown}",
        "check the inputs' units and magnitudes (a time in s written for ms, a count with the wrong prefix, "
        "a placeholder left in the spec); no figure of this spec is computed until then",
        label="the figures are not finite from here")
