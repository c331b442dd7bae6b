"""Sensitivity of a verdict: the inputs whose smallest relative change makes a claim consistent.

For a claim that is a mismatch (EFF601) or inconclusive (EFF606), each
measured input of its run (every quantity and peak the run writes, a catalog
peak included, and the step-time samples, scaled together) is changed alone,
by the relative amount ``r`` that takes the point figure to the nearer edge of
the claim's tolerance interval. The figure is re-evaluated with the run's own
functions, numbers only (:func:`effspec.engine.gap.reevaluate`), so the
answer holds for every figure, not only the products of inputs:

1. one probe at ``x × 1.01`` gives the figure's local elasticity ``e`` in the
   input (``−1`` for a step time in a rate, ``+1`` for a numerator);
2. where the figure is a power of the input (a product or quotient of inputs,
   the common case), ``1 + r = (target / F)^(1/e)`` is exact; it is checked by
   one re-evaluation, and refined by the secant method (at most
   :data:`REFINE` steps) where it is not;
3. the change is rounded *up* in magnitude to two significant digits, and the
   rounded change is checked to flip the verdict, so "consistent if
   step_time were 2.3 % lower" is true as printed.

The inputs whose change is within :data:`NEAR` of the smallest are named
together, at most :data:`SHOWN` of them. Inputs the figure does not depend on
(the probe leaves it unchanged) are skipped, as are counts (integers: layers,
devices), which have no relative change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.engine.intervals import MEMO, Budget, EvaluateRun, Evaluator
from effspec.engine.results import ClaimResult, RunResult
from effspec.front.ir import Run, Samples, evolve

if TYPE_CHECKING:
    from effspec.engine.scaling import ScalingResult

PROBE = 0.01
REFINE = 4
NEAR = 1.25  # inputs whose change is within 1.25× the smallest are named with it
SHOWN = 3
MAX_CHANGE = 10.0  # a change beyond ×10 (or to zero) is no sensitivity worth printing


@dataclass(frozen=True)
class Flip:
    """``input`` changed by the fraction ``change`` (−0.023: 2.3 % lower) makes the claim consistent."""

    input: str  # the key as the note names it: step_time, peak, hardware.peak (several pools)
    change: float
    figure: float  # the figure under the change

    def to_json(self) -> dict[str, object]:
        return {"input": self.input, "change": self.change, "figure": self.figure}

    digits: int = 2  # significant digits the change is printed to

    @property
    def words(self) -> str:
        return f"{self.input} {percent_change(abs(self.change), self.digits)} {'lower' if self.change < 0 else 'higher'}"


def percent_change(fraction: float, digits: int = 2) -> str:
    """A change as printed, to ``digits`` significant digits of a percentage (`2.3 %`, `0.41 %`, `12 %`)."""
    pct = fraction * 100
    decimals = max(0, digits - 1 - math.floor(math.log10(pct))) if pct > 0 else 1
    return f"{pct:.{decimals}f} %"


def round_up(fraction: float, digits: int = 2) -> float:
    """|fraction| rounded up to ``digits`` significant digits (of its percentage), its sign kept."""
    if fraction == 0:
        return 0.0
    mag = abs(fraction)
    step = 10.0 ** (math.floor(math.log10(mag * 100)) - (digits - 1)) / 100
    rounded = round(math.ceil(mag / step - 1e-9) * step, 12)
    return math.copysign(rounded, fraction)


@dataclass(frozen=True)
class _Knob:
    name: str
    block: int
    key: str
    value: float  # the input's point value (a catalog peak: the catalog's figure)
    samples: bool = False


# What the run is configured with, not what it measured: a relative change of these is no error of measurement.
CONFIGURATION = frozenset({("work", "seq_len"), ("work", "global_batch"), ("parallelism", "micro_batch"),
                           ("ranks", "alpha")})


def _measured(block: str, key: str) -> bool:
    from effspec.front import keys as K

    spec = K.BLOCKS.get(block, {}).get(key)
    return (block not in ("convention", "target") and (block, key) not in CONFIGURATION
            and not (spec is not None and spec.whole))


def _knobs(run: Run, result: RunResult) -> list[_Knob]:
    out = []
    seen: dict[str, int] = {}
    for block in run.blocks:
        for entry in block.entries:
            seen[entry.key] = seen.get(entry.key, 0) + 1
    pools = iter(result.pools)
    for b, block in enumerate(run.blocks):
        pool = next(pools) if block.name == "hardware" else None
        for entry in block.entries:
            name = entry.key if seen[entry.key] == 1 else f"{block.name}.{entry.key}"
            if not _measured(block.name, entry.key):
                continue
            if isinstance(entry.value, Samples):
                out.append(_Knob(name, b, entry.key, 1.0, samples=True))
            elif entry.kind == "peak" and entry.value == "catalog" and pool is not None and pool.peak:
                out.append(_Knob(name, b, entry.key, float(pool.peak)))
            elif entry.kind in ("quantity", "peak") and isinstance(entry.value, (int, float)) \
                    and not isinstance(entry.value, bool) and entry.value > 0:
                out.append(_Knob(name, b, entry.key, float(entry.value)))
    return out


def _changed(run: Run, knob: _Knob, r: float) -> Run:
    blocks = list(run.blocks)
    block = blocks[knob.block]
    entries = []
    for e in block.entries:
        if e.key == knob.key:
            if knob.samples and isinstance(e.value, Samples):
                e = evolve(e, value=evolve(e.value, values=tuple(v * (1 + r) for v in e.value.values)))
            else:
                e = evolve(e, value=knob.value * (1 + r))
        entries.append(e)
    blocks[knob.block] = evolve(block, entries=tuple(entries))
    return evolve(run, blocks=tuple(blocks))


class _Solver:
    def __init__(self, result: RunResult, results: dict[str, RunResult], evaluate_run: EvaluateRun,
                 budget: Budget) -> None:
        self.result, self.results, self.evaluate_run, self.budget = result, results, evaluate_run, budget
        self.fast: dict[str, Evaluator] = {}

    def alone(self) -> bool:
        """Every figure the search read came from the run's numbers alone, none cut short by the budget."""
        return all(ev.alone for ev in self.fast.values())

    def spent(self) -> int:
        return sum(ev.spent for ev in self.fast.values())

    def figure(self, knob: _Knob, r: float, name: str) -> float | None:
        if name not in self.fast:
            self.fast[name] = Evaluator(self.result, self.results, self.evaluate_run, self.budget, names={name})
        got = self.fast[name].figures(_changed(self.result.run, knob, r))
        v = got.get(name) if got is not None else None
        return v if v is not None and math.isfinite(v) else None

    def solve(self, knob: _Knob, name: str, point: float, cr: ClaimResult) -> Flip | None:
        assert cr.claimed is not None and cr.tolerance is not None
        edge = cr.claimed - cr.tolerance if point < cr.claimed else cr.claimed + cr.tolerance
        target = edge + (cr.claimed - edge) * 1e-6  # just inside the tolerance
        probe = self.figure(knob, PROBE, name)
        if probe is None or probe <= 0 or point <= 0 or target <= 0 or probe == point:
            return None
        e = math.log(probe / point) / math.log1p(PROBE)
        if abs(e) < 1e-9:
            return None
        try:  # a near-flat figure (|e| tiny) asks for a change past any float: no flip there
            r = (target / point) ** (1 / e) - 1
        except OverflowError:
            return None
        got = None
        prev_r, prev_v = PROBE, probe
        for _ in range(REFINE):
            if not (-1 < r < MAX_CHANGE):
                return None
            got = self.figure(knob, r, name)
            if got is None:
                return None
            if abs(got - cr.claimed) <= cr.tolerance:
                break
            if got == prev_v or got <= 0:
                return None
            # secant on log F against log(1 + r)
            slope = (math.log(got) - math.log(prev_v)) / (math.log1p(r) - math.log1p(prev_r))
            if slope == 0:
                return None
            prev_r, prev_v = r, got
            step = math.log1p(r) + (math.log(target) - math.log(got)) / slope
            if not step < math.log1p(MAX_CHANGE):
                return None
            r = math.expm1(step)
        else:
            return None
        for digits in (2, 3, 4, 5):  # the printed (rounded-up) change must flip the verdict too
            shown = round_up(r, digits)
            if not (-1 < shown < MAX_CHANGE):
                continue
            v = self.figure(knob, shown, name)
            if v is not None and abs(v - cr.claimed) <= cr.tolerance:
                return Flip(knob.name, shown, v, digits)
        return None


def flips(cr: ClaimResult, result: RunResult, results: dict[str, RunResult], evaluate_run: EvaluateRun,
          budget: Budget) -> tuple[Flip, ...]:
    """The inputs whose smallest relative change makes the claim consistent, smallest first."""
    if cr.claimed is None or cr.reconstructed is None or cr.tolerance is None or cr.claim.name.startswith("breakdown."):
        return ()
    signature = (cr.claim.name, cr.claimed, cr.reconstructed, cr.tolerance, cr.status)
    recalled: tuple[Flip, ...] | None = MEMO.recall(result.run, f"flips {cr.claim.name}", signature, budget)
    if recalled is not None:
        return recalled
    solver = _Solver(result, results, evaluate_run, budget)
    found = [f for knob in _knobs(result.run, result)
             if (f := solver.solve(knob, cr.claim.name, cr.reconstructed, cr)) is not None]
    found.sort(key=lambda f: abs(f.change))
    least = abs(found[0].change) if found else 0.0
    shown = tuple(f for f in found if abs(f.change) <= least * NEAR)[:SHOWN]
    if solver.alone():
        MEMO.remember(result.run, f"flips {cr.claim.name}", signature, solver.spent(), shown)
    return shown


def note(cr: ClaimResult) -> str | None:
    """``consistent if step_time were 2.3 % lower, or peak 2.3 % higher``."""
    if not cr.flips:
        return None
    first, *rest = cr.flips
    return "consistent if " + f"{first.input} were {first.words.removeprefix(first.input + ' ')}" + "".join(
        f", or {f.words}" for f in rest)


def apply(result: RunResult, results: dict[str, RunResult], evaluate_run: EvaluateRun, budget: Budget) -> None:
    for cr in result.claims.values():
        if cr.status in ("mismatch", "inconclusive"):
            cr.flips = flips(cr, result, results, evaluate_run, budget)


def scaling_flips(cr: ClaimResult, figure: str, run_id: str, base_id: str) -> tuple[Flip, ...]:
    """A scaling's speedup or efficiency is a quotient of the two runs' step times (the weak efficiency through
    their achieved FLOP/s, each inversely the run's step time): the figure goes as base_step / run_step, so the
    run's step time must change by F / target − 1 and the baseline's by target / F − 1 (exact, analytic)."""
    if cr.claimed is None or cr.reconstructed is None or cr.tolerance is None or cr.reconstructed <= 0:
        return ()
    point = cr.reconstructed
    edge = cr.claimed - cr.tolerance if point < cr.claimed else cr.claimed + cr.tolerance
    if edge <= 0:
        return ()
    out = []
    for name, exponent in ((f"run.{run_id}.step_time", -1), (f"run.{base_id}.step_time", 1)):
        r = (edge / point) ** (1 / exponent) - 1  # exponent is ±1: a quotient, finite for finite inputs
        for digits in (2, 3, 4, 5):
            shown = round_up(r, digits)
            if not -1 < shown < MAX_CHANGE:
                continue
            value = point * (1 + shown) ** exponent
            if abs(value - cr.claimed) <= cr.tolerance:
                out.append(Flip(name, shown, value, digits))
                break
    out.sort(key=lambda f: abs(f.change))
    return tuple(out)


def apply_scaling(sr: ScalingResult) -> None:
    """The sensitivity of each mismatched or inconclusive claim of a scaling (engine.scaling.ScalingResult)."""
    if sr.baseline is None:
        return
    for cr in sr.claims.values():
        if cr.status not in ("mismatch", "inconclusive"):
            continue
        claim = cr.claim
        target = (next((r for r in sr.runs if r.run_id == claim.point), None) if claim.point is not None
                  else sr.final_point)
        if target is not None:
            cr.flips = scaling_flips(cr, claim.name, target.run_id, sr.baseline.run_id)
