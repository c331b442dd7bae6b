"""An interval for every reconstructed figure, and the claim status it decides.

Where each figure's uncertainty comes from (its *sources*):

- **sampling**: the step-time samples' statistic (the median, or the mean, as
  `timing.statistic` declares) is known to its 95 % confidence interval: a
  seeded percentile bootstrap (:mod:`effspec.engine.stats`), the order-statistic
  interval above ``BOOTSTRAP_MAX_SAMPLES``; with 2 to 4 samples, the samples'
  range (coverage ``1 − 2^(1−n)`` for the median), with one none;
- **written precision**: a value written ``13.7`` is known to ``±0.05`` (half a
  unit in its last written digit) where it is written with a decimal point or
  an exponent; a whole number without either (``64 device``, ``2048
  token/sequence``, ``624 TFLOP/s``) is exact, and so are catalog peaks;
  inline step-time samples carry the precision of their least precise item;
- **explicit `±`**: ``step_time = 13.7 s ± 0.2 s``, ``params = 1.7e9 param ± 2 %``
  replaces the written precision.

They are combined by interval arithmetic, evaluated by the vertex method: the
run is re-evaluated with each source at each end of its interval alone (the
same evaluation, numbers only: :func:`effspec.engine.gap.reevaluate`), which
gives each figure's direction in each source, then once at each figure's lower
and upper corner (every source at the end that lowers, resp. raises, the
figure). Every figure effspec reconstructs is monotone in each input on its
domain (products, quotients and positive polynomials of them), so the corners
are the exact interval-arithmetic bounds, and the interval is that of the
formula, not a first-order estimate. Written precision and `±` are treated as
bounds, the sampling interval as a 95 % interval: the figure's interval then
covers its true value whenever the step-time interval covers the true
statistic, so it has at least 95 % coverage (spec/language.md, Uncertainty).

A figure with no source keeps an exact interval (``[v, v]``, method
``exact``): the point figures never change, and a claim against exact inputs
is judged as before. A claim is ``consistent`` when it lies within its
tolerance of the point figure, ``mismatch`` when its tolerance interval and
the figure's interval do not overlap, and ``inconclusive`` otherwise (EFF606),
with what would decide it (:func:`deciding`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from effspec.diagnostics import Diagnostic
from effspec.engine import gap
from effspec.engine import stats as stats_mod
from effspec.engine.results import ClaimResult, Metric, RunResult
from effspec.front import lexicon
from effspec.front.expr import refs_in
from effspec.front.ir import Block, Entry, Run, Samples, evolve

# Re-evaluations per spec for the intervals: about 2 per source and 2 per distinct corner, so
# a run of 6 sources costs ~16; past the budget a run's figures say their interval was not computed.
BUDGET = 4_000
LEVEL = stats_mod.CI_LEVEL

EvaluateRun = Callable[[Run, list[Diagnostic]], RunResult]

@functools.cache
def _literal() -> re.Pattern[str]:
    """One literal: the grammar's NUMBER (effspec.front.lexicon), then a unit if any."""
    return re.compile(rf"^\s*(?P<number>{lexicon.terminal('NUMBER')})\s*(?P<unit>%|[A-Za-z][A-Za-z0-9^*/-]*)?\s*$")


class Budget:
    """Re-evaluations left for one spec's intervals."""

    def __init__(self, left: int | None = None) -> None:
        self.left = BUDGET if left is None else left


def written_half(number: str, unit: str = "") -> float | None:
    """Half a unit in the last written digit of ``number`` (in base units of ``unit``), for a number written
    with a decimal point or an exponent; None for a whole number written without either (taken as exact)."""
    text = number.replace("_", "").lower()
    if "." not in text and "e" not in text:
        return None
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    half = 0.5 * 10.0 ** (int(exponent or 0) - decimals)
    if unit:
        from effspec.front.units import UnitError, parse_unit
        try:
            half *= parse_unit(unit)[0]
        except (UnitError, ValueError):
            return None
    return half


def literal_half(text: str) -> float | None:
    """:func:`written_half` of a value written as one literal with its unit (``"989.4 TFLOP/s"``); None for
    an expression (``14.8e12 token / (2664000 h / 2048)``: its precision is not inferred) or a whole number."""
    m = _literal().match(text or "")
    return written_half(m["number"], m["unit"] or "") if m else None


def samples_half(text: str) -> float | None:
    """The written precision of inline samples (``[1.11, 1.10, 1.12] s``, ``13.7 s``): the largest half-unit
    of their items, in seconds; None when any item is not a plain literal, or all are whole numbers."""
    body, unit = text.strip(), ""
    if body.startswith("["):
        close = body.rfind("]")
        if close < 0:
            return None
        body, unit = body[1:close], body[close + 1:].strip()
    halves = []
    for item in body.split(","):
        if not item.strip():
            continue
        m = _literal().match(item)
        if m is None:
            return None
        h = written_half(m["number"], m["unit"] or unit)
        if h is not None:
            halves.append(h)
    return max(halves) if halves else None


# ----------------------------------------------------------------------------
# Sources


@dataclass(frozen=True)
class Source:
    """One input known only to an interval. ``lo``/``hi`` are the input's bounds (for sampling, the
    statistic's; for samples' rounding, the shift of each sample)."""

    name: str  # hardware.peak, timing.step_time
    kind: str  # sampling | written | plus_minus | sample_rounding
    point: float
    lo: float
    hi: float
    detail: str  # how the bounds were formed, in words
    block: int = -1  # index of the entry's block in run.blocks
    key: str = ""
    relative: bool = False  # sample_rounding given in % of each sample
    samples: int = 0  # sampling and sample_rounding: the count of samples
    unit: str = "s"  # the input's canonical unit

    def to_json(self) -> dict[str, object]:
        return {"input": self.name, "kind": self.kind, "value": self.point, "interval": [self.lo, self.hi],
                "detail": self.detail}


def _statistic(run: Run) -> str:
    timing = run.block("timing")
    return str(timing.value("statistic", "median")) if timing is not None else "median"


def sampling_interval(st: stats_mod.StepStats, statistic: str) -> tuple[float, float, str] | None:
    """The step-time statistic's interval and how it was formed; None for a single sample."""
    n = st.count
    if n < 2:
        return None
    if n < stats_mod.MIN_CI_SAMPLES:
        coverage = 1 - 2.0 ** (1 - n)
        return st.min, st.max, (f"the range of the {n} samples, too few for a bootstrap: it covers the median "
                                f"with probability {coverage * 100:.1f} %")
    if statistic == "mean":
        lo, hi, mean_how = stats_mod.mean_ci(list(st.kept))
        return lo, hi, f"{LEVEL * 100:.0f} % CI of the mean of {n} samples, {mean_how}"
    ci, how = st.median_ci, st.median_ci_method
    assert ci is not None  # n >= MIN_CI_SAMPLES
    detail = (f"seeded bootstrap, {stats_mod.BOOTSTRAP_RESAMPLES} resamples" if how == "bootstrap"
              else "order statistics at binomial ranks")
    return ci[0], ci[1], f"{LEVEL * 100:.0f} % CI of the median of {n} samples, {detail}"


def sources(run: Run, result: RunResult) -> list[Source]:
    """Every input of ``run`` known only to an interval, in the order the run writes them."""
    out: list[Source] = []
    for b, block in enumerate(run.blocks):
        if block.name == "convention":  # a counting convention's numbers are definitions, not measurements
            continue
        for entry in block.entries:
            name = f"{block.name}.{entry.key}"
            if isinstance(entry.value, Samples):
                out += _sample_sources(run, result, b, entry, name)
                continue
            if entry.kind not in ("quantity", "peak") or isinstance(entry.value, (bool, str)) \
                    or not isinstance(entry.value, (int, float)):
                continue
            v = float(entry.value)
            if entry.plus_minus is not None:
                half, kind, detail = entry.plus_minus.half, "plus_minus", f"± {entry.plus_minus.text} as written"
            else:
                h = literal_half(entry.text)
                if h is None or h == 0:
                    continue
                half, kind, detail = h, "written", f"written `{entry.text}`: ±{_g(h)}, half its last digit"
            if half > 0:
                out.append(Source(name, kind, v, v - half, v + half, detail, b, entry.key, unit=entry.unit))
    return out


def _sample_sources(run: Run, result: RunResult, b: int, entry: Entry, name: str) -> list[Source]:
    st = result.step_stats
    if st is None:
        return []
    statistic = _statistic(run)
    point = st.statistic(statistic)
    out = []
    sampled = sampling_interval(st, statistic)
    if sampled is not None and (sampled[0] < point or sampled[1] > point):
        out.append(Source(f"{name} ({statistic})", "sampling", point, min(sampled[0], point), max(sampled[1], point),
                          sampled[2], b, entry.key, samples=st.count))
    samples = entry.value
    assert isinstance(samples, Samples)
    if entry.plus_minus is not None:
        pm = entry.plus_minus
        if pm.relative:
            out.append(Source(f"{name} (each sample)", "sample_rounding", point, point * (1 - pm.half),
                              point * (1 + pm.half), f"± {pm.text} on each sample, as written", b, entry.key,
                              relative=True))
        else:
            out.append(Source(f"{name} (each sample)", "sample_rounding", point, point - pm.half, point + pm.half,
                              f"± {pm.text} on each sample, as written", b, entry.key))
    elif samples.origin == "inline":
        h = samples_half(entry.text)
        if h:
            out.append(Source(f"{name} (each sample)", "sample_rounding", point, point - h, point + h,
                              f"each sample written to ±{_g(h)} s, half its last digit", b, entry.key,
                              samples=st.count))
    return out


def _g(x: float) -> str:
    return f"{x:.3g}"


# ----------------------------------------------------------------------------
# Variants of the run


def variant(run: Run, settings: dict[Source, int], scale: dict[Source, float] | None = None) -> Run:
    """``run`` with each source of ``settings`` at its lower (-1) or upper (+1) end. ``scale`` shrinks a
    source's half-widths (what-if: more samples, more digits)."""
    scale = scale or {}
    per_block: dict[int, dict[str, float]] = {}
    sample_ops: dict[int, list[tuple[Source, int]]] = {}
    for src, side in settings.items():
        if side == 0:
            continue
        k = scale.get(src, 1.0)
        if src.kind in ("sampling", "sample_rounding"):
            sample_ops.setdefault(src.block, []).append((src, side))
            continue
        end = src.lo if side < 0 else src.hi
        per_block.setdefault(src.block, {})[src.key] = src.point + (end - src.point) * k
    blocks = list(run.blocks)
    for b, values in per_block.items():
        block = blocks[b]
        blocks[b] = evolve(block, entries=tuple(
            evolve(e, value=values[e.key]) if e.key in values else e for e in block.entries))
    for b, ops in sample_ops.items():
        blocks[b] = _samples_block(blocks[b], ops, scale)
    return evolve(run, blocks=tuple(blocks))


def _samples_block(block: Block, ops: list[tuple[Source, int]], scale: dict[Source, float]) -> Block:
    factor, shift = 1.0, 0.0
    key = ops[0][0].key
    for src, side in ops:
        end = src.lo if side < 0 else src.hi
        moved = (end - src.point) * scale.get(src, 1.0)
        if src.kind == "sampling" or src.relative:
            factor *= (src.point + moved) / src.point  # scaling every sample scales the median and the mean
        else:
            shift += moved  # shifting every sample shifts them alike
    entries = []
    for e in block.entries:
        if e.key == key and isinstance(e.value, Samples):
            values = tuple(v * factor + shift for v in e.value.values)
            e = evolve(e, value=evolve(e.value, values=values))
        entries.append(e)
    return evolve(block, entries=tuple(entries))


# ----------------------------------------------------------------------------
# Figure intervals


@dataclass(frozen=True)
class Contribution:
    """One source's share of a figure's interval: the figure with that source alone at each end."""

    source: Source
    lo: float
    hi: float

    def to_json(self) -> dict[str, object]:
        return {**self.source.to_json(), "figure": [self.lo, self.hi]}


@dataclass(frozen=True)
class FigureInterval:
    lo: float
    hi: float
    method: str  # exact | interval arithmetic | not computed
    contributions: tuple[Contribution, ...] = ()

    @property
    def exact(self) -> bool:
        return self.method == "exact"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"interval": [self.lo, self.hi], "method": self.method}
        if self.contributions:
            out["interval_sources"] = [c.to_json() for c in self.contributions]
        return out


EXACT = "exact"
ARITHMETIC = "interval arithmetic"
NOT_COMPUTED = "not computed"


def _figures(result: RunResult) -> dict[str, float]:
    out = {name: m.value for name, m in result.implied.items()}
    out.update({name: m.value for name, m in result.metrics.items()})
    return out


class Evaluator:
    """Re-evaluations of one run with its sources moved, counted against the spec's budget.

    Where every figure of the run is one explain-the-gap computes from numbers alone
    (:class:`effspec.engine.gap.Figures`: the same floats, no derivation text), a variant's figures
    come from there; a variant it cannot follow is re-evaluated in full (:func:`reevaluate`)."""

    def __init__(self, result: RunResult, results: dict[str, RunResult], evaluate_run: EvaluateRun,
                 budget: Budget, names: Iterable[str] | None = None) -> None:
        self.result, self.results, self.evaluate_run, self.budget = result, results, evaluate_run, budget
        wanted = set(names) if names is not None else set(_figures(result))
        self.fast = numbers_alone(result, wanted)
        # FLOPs per token the claims imply (engine.claims): claimed MFU × the variant's peak / claimed rate.
        implied = result.implied.get(FROM_CLAIMS) if FROM_CLAIMS in wanted else None
        self.from_claims: tuple[float, float] | None = None
        if implied is not None:
            mfu, tp = implied.inputs[0].value, implied.inputs[2].value
            assert isinstance(mfu, int | float) and isinstance(tp, int | float)  # the claims' magnitudes (engine.claims)
            self.from_claims = mfu, tp
        self.alive: list[Run] = []  # Figures caches by the blocks' identity: the variants must outlive the search
        self.spent = 0
        self.alone = self.fast is not None  # every variant from the run's numbers alone: the search may be remembered

    def figures(self, run: Run) -> dict[str, float] | None:
        if self.budget.left <= 0:
            self.alone = False  # cut short by the budget
            return None
        self.budget.left -= 1
        self.spent += 1
        if self.fast is not None:
            self.alive.append(run)
            got = self.fast.values(run)
            if got is not None and (self.from_claims is None or "aggregate_peak" in got):
                if self.from_claims is not None:
                    mfu, tp = self.from_claims
                    got[FROM_CLAIMS] = mfu * got["aggregate_peak"] / tp  # claims.py's arithmetic, in its order
                return got
        self.alone = False  # a full re-evaluation checks the claims, which may read the other runs
        return _figures(reevaluate(run, self.results, self.evaluate_run))


FROM_CLAIMS = "flops_per_token_from_claims"


def numbers_alone(result: RunResult, names: set[str]) -> gap.Figures | None:
    """A :class:`gap.Figures` for variants of ``result``'s run, where it computes every figure in ``names``
    (the FLOPs per token the claims imply aside, which :meth:`Evaluator.figures` adds): the run has no other
    implied figure, none that is not finite, and no claim that reads another figure (as explain-the-gap's
    own test), so a variant's claimed values are the run's."""
    if not (gap.NUMBERS_ONLY and names and names - {FROM_CLAIMS} <= gap.FAST_FIGURES and not result.nonfinite
            and set(result.implied) <= {FROM_CLAIMS} and not any(refs_in(cr.claim.expr) for cr in result.claims.values())):
        return None
    return gap.Figures(names - {FROM_CLAIMS}, gap.Budget(0))


def reevaluate(run: Run, results: dict[str, RunResult], evaluate_run: EvaluateRun) -> RunResult:
    """The run evaluated afresh with its claims checked, numbers only, diagnostics dropped: the
    evaluation's own functions, as explain-the-gap re-evaluates (engine.gap.reevaluate)."""
    from effspec.display import numbers_only
    from effspec.engine.claims import check_claims

    sink: list[Diagnostic] = []
    with numbers_only():
        changed = evaluate_run(run, sink)
        check_claims(changed, results, sink)
    return changed


def compute(result: RunResult, results: dict[str, RunResult], evaluate_run: EvaluateRun,
            budget: Budget) -> dict[str, FigureInterval]:
    """The interval of every figure of ``result`` (metrics and implied figures)."""
    point = _figures(result)
    signature = tuple(sorted(point.items()))
    recalled = MEMO.recall(result.run, "intervals", signature, budget)  # before the sources: their bootstrap too
    if recalled is not None:
        return dict(recalled)
    srcs = sources(result.run, result)
    if not srcs:
        exact = {name: FigureInterval(v, v, EXACT) for name, v in point.items()}
        MEMO.remember(result.run, "intervals", signature, 0, dict(exact))
        return exact
    if budget.left < 2 * len(srcs) + 2:
        return {name: FigureInterval(v, v, NOT_COMPUTED) for name, v in point.items()}
    ev = Evaluator(result, results, evaluate_run, budget)
    oat: dict[Source, tuple[dict[str, float], dict[str, float]]] = {}
    for src in srcs:
        lo = ev.figures(variant(result.run, {src: -1}))
        hi = ev.figures(variant(result.run, {src: +1}))
        oat[src] = (lo or {}, hi or {})
    found = _combine(result.run, point, srcs, oat, ev)
    if ev.alone:
        MEMO.remember(result.run, "intervals", signature, ev.spent, dict(found), need=2 * len(srcs) + 2)
    return found


class RunMemo:
    """Searches on one run remembered by the run object itself, as explain-the-gap's are (engine.gap's memo:
    the language server's incremental parser hands an unchanged run back as the same object at each edit).

    An entry is kept only for a search whose every variant came from the run's numbers alone (no full
    re-evaluation, which may read the other runs) and which the budget did not cut short; it is recalled
    for the same run, the same tag and the same signature (the run's figures, a claim's verdict), charging
    the budget what the search spent, and only where the budget still holds that much (else the search runs
    and is cut short as it would be: ``need``, the least budget it must find left). Bounded as gap's memo
    is, least recently used first out."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[int, str], tuple[Run, tuple[object, ...], int, object, int, int]] = OrderedDict()
        self._samples = 0
        self._lock = threading.Lock()

    def recall(self, run: Run, tag: str, signature: tuple[object, ...], budget: Budget) -> Any:
        with self._lock:
            hit = self._entries.get((id(run), tag))
            if hit is None or hit[0] is not run or hit[1] != signature or max(hit[2], hit[5]) > budget.left:
                return None
            self._entries.move_to_end((id(run), tag))
        budget.left -= hit[2]
        return hit[3]

    def remember(self, run: Run, tag: str, signature: tuple[object, ...], spent: int, value: object,
                 need: int = 0) -> None:
        held = gap.samples_held(run)
        with self._lock:
            if held > gap.MEMO_SAMPLES // 10 or (id(run), tag) in self._entries:
                return
            self._entries[id(run), tag] = (run, signature, spent, value, held, need)
            self._samples += held
            while len(self._entries) > gap.MEMO_SIZE or self._samples > gap.MEMO_SAMPLES:
                self._samples -= self._entries.popitem(last=False)[1][4]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._samples = 0


MEMO = RunMemo()
gap.also_forget(MEMO.clear)


def _combine(run: Run, point: dict[str, float], srcs: list[Source],
             oat: dict[Source, tuple[dict[str, float], dict[str, float]]], ev: Evaluator) -> dict[str, FigureInterval]:
    corners: dict[tuple[int, ...], dict[str, float] | None] = {}
    wanted: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    for name, v in point.items():
        low, high = [], []
        for src in srcs:
            a, b = oat[src][0].get(name, v), oat[src][1].get(name, v)
            low.append(-1 if a <= b else +1)
            high.append(+1 if a <= b else -1)
        wanted[name] = (tuple(low), tuple(high))
        for c in wanted[name]:
            corners.setdefault(c, None)
    for c in corners:
        corners[c] = ev.figures(variant(run, dict(zip(srcs, c, strict=True))))
    out = {}
    for name, v in point.items():
        contributions = []
        values = [v]
        for src in srcs:
            a, b = oat[src][0].get(name, v), oat[src][1].get(name, v)
            if a != v or b != v:
                contributions.append(Contribution(src, min(a, b, v), max(a, b, v)))
                values += [a, b]
        if not contributions:
            out[name] = FigureInterval(v, v, EXACT)
            continue
        for c in wanted[name]:
            got = corners[c]
            if got is not None and name in got and math.isfinite(got[name]):
                values.append(got[name])
        out[name] = FigureInterval(min(values), max(values), ARITHMETIC, tuple(contributions))
    return out


_LEAVE_OUT_UNRESOLVED: contextvars.ContextVar[bool] = contextvars.ContextVar("leave_out_unresolved", default=False)


@contextlib.contextmanager
def unresolved_left_out() -> Iterator[None]:
    """Inside, a figure's JSON leaves out an interval not computed yet: for the finiteness guard, which walks
    every figure's JSON and must not force the intervals (their bounds are finite by construction: :func:`_finite`),
    and for `check`'s terminal summary, which shows an interval only where a verdict already needed it."""
    token = _LEAVE_OUT_UNRESOLVED.set(True)
    try:
        yield
    finally:
        _LEAVE_OUT_UNRESOLVED.reset(token)


def _finite(fi: FigureInterval, value: float) -> FigureInterval:
    """An interval whose bounds left the floats (a corner that overflowed) is not computed, never inf."""
    if math.isfinite(fi.lo) and math.isfinite(fi.hi):
        return fi
    return FigureInterval(value, value, NOT_COMPUTED)


def left_out(fi: object) -> bool:
    """Whether a figure's interval is one not computed yet, inside :func:`unresolved_left_out` (left out there)."""
    return isinstance(fi, LazyInterval) and fi._done is None and _LEAVE_OUT_UNRESOLVED.get()


class LazyInterval:
    """A figure's interval computed on first use (JSON, reports, a finding's note): a check whose verdicts do
    not rest on the intervals never pays for the re-evaluations, nor for the bootstrap (numpy)."""

    def __init__(self, make: Callable[[], FigureInterval | None], value: float) -> None:
        self._make, self._value = make, value
        self._done: FigureInterval | None = None

    def resolve(self) -> FigureInterval:
        if self._done is None:
            got = self._make()
            self._done = _finite(got, self._value) if got is not None else FigureInterval(
                self._value, self._value, NOT_COMPUTED)
        return self._done

    lo = property(lambda self: self.resolve().lo)
    hi = property(lambda self: self.resolve().hi)
    method = property(lambda self: self.resolve().method)
    contributions = property(lambda self: self.resolve().contributions)
    exact = property(lambda self: self.resolve().exact)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled (a result sent between processes, `check -j`) as the interval itself, computed first."""
        fi = self.resolve()
        return (FigureInterval, (fi.lo, fi.hi, fi.method, fi.contributions))

    def to_json(self) -> dict[str, object]:
        if self._done is None and _LEAVE_OUT_UNRESOLVED.get():
            return {}
        return self.resolve().to_json()


Interval = FigureInterval | LazyInterval


def resolved(fi: Interval | None) -> FigureInterval | None:
    return fi.resolve() if isinstance(fi, LazyInterval) else fi


class RunIntervals:
    """Every figure interval of one run, computed together on the first request."""

    def __init__(self, result: RunResult, results: dict[str, RunResult], evaluate_run: EvaluateRun,
                 budget: Budget) -> None:
        self.args = (result, results, evaluate_run, budget)
        self.done: dict[str, FigureInterval] | None = None

    def get(self, name: str) -> FigureInterval | None:
        if self.done is None:
            self.done = compute(*self.args)
        return self.done.get(name)


def with_intervals(metrics: dict[str, Metric], table: RunIntervals) -> dict[str, Metric]:
    def make(name: str) -> Callable[[], FigureInterval | None]:
        return lambda: table.get(name)

    return {name: evolve(m, interval=LazyInterval(make(name), m.value)) for name, m in metrics.items()}


# ----------------------------------------------------------------------------
# Claims


def undecided(cr: ClaimResult) -> bool:
    """A claim whose status rests on the figure's interval: outside its tolerance of the point figure."""
    return (cr.claimed is not None and cr.reconstructed is not None and cr.tolerance is not None
            and abs(cr.reconstructed - cr.claimed) > cr.tolerance)


def judge(cr: ClaimResult, interval: Interval | None) -> None:
    """The claim's status from the point figure, its tolerance and the figure's interval."""
    if cr.claimed is None or cr.reconstructed is None or cr.tolerance is None:
        return
    cr.interval = (interval.lo, interval.hi) if interval is not None else None
    if abs(cr.reconstructed - cr.claimed) <= cr.tolerance:
        cr.status = "consistent"
        return
    lo, hi = (interval.lo, interval.hi) if interval is not None else (cr.reconstructed, cr.reconstructed)
    overlaps = lo <= cr.claimed + cr.tolerance and hi >= cr.claimed - cr.tolerance
    cr.status = "inconclusive" if overlaps else "mismatch"


def deciding(cr: ClaimResult, fi: FigureInterval) -> str:
    """What would decide an inconclusive claim: the one source whose narrowing takes the figure's interval off
    the claim's tolerance interval (the point figure holding), estimated from the sources' one-at-a-time
    contributions (their effects add, to first order, in a product of inputs)."""
    assert cr.claimed is not None and cr.reconstructed is not None and cr.tolerance is not None
    p = cr.reconstructed
    above = p > cr.claimed
    edge = cr.claimed + cr.tolerance if above else cr.claimed - cr.tolerance
    gap = abs(p - edge)  # how far the interval may reach toward the claim and stay off it
    reach = [(c, (p - c.lo) if above else (c.hi - p)) for c in fi.contributions]
    total = sum(d for _, d in reach)
    options = []
    for c, d in sorted(reach, key=lambda x: -x[1]):
        if d <= 0:
            continue
        allowed = gap - (total - d)  # this source's reach once the others stay as they are
        if allowed <= 0:
            continue
        shrink = allowed / d
        options.append(_what(c.source, shrink))
    if not options:
        return ("no single input decides it: every input's uncertainty would have to shrink (" +
                ", ".join(c.source.name for c, _ in reach) + ")")
    return " or ".join(options[:2])


def _what(src: Source, shrink: float) -> str:
    """The narrowing that shrinks ``src``'s half-width by the factor ``shrink`` (< 1), in the words it has."""
    if src.kind == "sampling":
        n = src.samples
        needed = math.ceil(n / (shrink * shrink))  # a CI's width goes as 1/sqrt(n)
        return f"about {needed - n} more samples ({needed} in all, if the {src.name.split('(')[-1].rstrip(')')} holds)"
    if src.kind == "plus_minus":
        half = (src.hi - src.lo) / 2 * shrink
        return f"`{src.name}` known to ±{_g(half)} (in its canonical unit) rather than {src.detail.split(' as')[0]}"
    half = (src.hi - src.lo) / 2
    digits = math.ceil(math.log10(1 / shrink)) if shrink < 1 else 0
    significant = _significant(src.point, half) + max(digits, 1)
    what = (("a step time" if src.samples == 1 else "each step-time sample") if src.kind == "sample_rounding"
            else f"a `{src.key}`")
    if src.name.startswith("run."):  # a scaling's figure: say whose
        what += f" of `{src.name.split('.')[1]}`"
    return f"{what} to {significant} significant digits"


def _significant(value: float, half: float) -> int:
    """Significant digits of a value known to ±``half`` (half a unit in its last digit)."""
    if value == 0 or half <= 0:
        return 1
    return max(1, int(round(math.log10(abs(value) / (2 * half)))) + 1)


def apply(result: RunResult, results: dict[str, RunResult], evaluate_run: EvaluateRun, budget: Budget) -> None:
    """Compute the run's figure intervals, attach them to its metrics, and judge its claims with them."""
    table = RunIntervals(result, results, evaluate_run, budget)
    result.metrics = with_intervals(result.metrics, table)
    result.implied = with_intervals(result.implied, table)
    for name, cr in result.claims.items():
        if name.startswith("breakdown.") or not undecided(cr):
            continue  # consistent on the point figure (or not checked): the interval cannot change it
        fi = table.get(name)
        judge(cr, fi)
        if cr.status == "inconclusive" and fi is not None:
            cr.decided_by = deciding(cr, fi)


# ----------------------------------------------------------------------------
# Wording (rules and reports)


def bounds_text(lo: float, hi: float, unit: str) -> str:
    """``[49.8 %, 51.5 %]``: an interval as prose reads it (ratios as percent)."""
    from effspec.display import metric_value

    return f"[{metric_value(lo, unit)}, {metric_value(hi, unit)}]"


def formation(fi: FigureInterval, name: str, unit: str) -> str:
    """How an interval was formed: each source, its bounds, and the figure's range under it alone."""
    parts = []
    for c in fi.contributions:
        src = c.source
        parts.append(f"{src.name} {bounds_text(src.lo, src.hi, src.unit if src.unit != '' else '')} "
                     f"({src.detail}) gives {name} {bounds_text(c.lo, c.hi, unit)}")
    if len(fi.contributions) == 1:  # one uncertain input: the figure's interval is its image
        src = fi.contributions[0].source
        return (f"{name} {bounds_text(fi.lo, fi.hi, unit)} from {src.name} "
                f"{bounds_text(src.lo, src.hi, src.unit)} ({src.detail})")
    return f"{name} {bounds_text(fi.lo, fi.hi, unit)} by interval arithmetic over its inputs' intervals: " + "; ".join(parts)


# ----------------------------------------------------------------------------
# Scalings: quotients of two runs' figures


_SCALING_OPERANDS = {  # figure -> (numerator's run and figure, denominator's run and figure)
    "speedup": (("base", "step_time"), ("run", "step_time")),
    "strong_scaling_efficiency": (("base", "step_time"), ("run", "step_time")),
    "weak_scaling_efficiency": (("run", "achieved_flops_per_device"), ("base", "achieved_flops_per_device")),
}


def _quotient(metric: Metric, num: FigureInterval | None, den: FigureInterval | None,
              num_value: float, den_value: float) -> FigureInterval:
    num, den = resolved(num), resolved(den)
    """``metric`` = c × num / den over two runs' independent inputs: [c·num.lo / den.hi, c·num.hi / den.lo]."""
    if num is None or den is None or (num.exact and den.exact) or not (num.lo > 0 and den.lo > 0):
        method = NOT_COMPUTED if (num is None or den is None) else EXACT
        return FigureInterval(metric.value, metric.value, method)
    c = metric.value * den_value / num_value
    # Each source's share in the quotient's own terms: the numerator's range scales it, the denominator's inverts.
    contributions = tuple(Contribution(x.source, metric.value * x.lo / num_value, metric.value * x.hi / num_value)
                          for x in num.contributions) + tuple(
        Contribution(x.source, metric.value * den_value / x.hi, metric.value * den_value / x.lo)
        for x in den.contributions if x.lo > 0)
    return FigureInterval(c * num.lo / den.hi, c * num.hi / den.lo, ARITHMETIC, contributions)


def _of_run(lazy: Interval | None, run_id: str) -> FigureInterval | None:
    """``fi`` with its sources named by their run (`run.base.timing.step_time`), for a figure of two runs."""
    fi = resolved(lazy)
    if fi is None or not fi.contributions:
        return fi
    return evolve(fi, contributions=tuple(
        evolve(c, source=evolve(c.source, name=f"run.{run_id}.{c.source.name}"))
        for c in fi.contributions))


def apply_scaling(sr: object, results: dict[str, RunResult]) -> None:
    """Intervals of a scaling's speedup and efficiencies from its runs' intervals, and its claims judged with them.
    The two runs' inputs are separate declarations, so their intervals combine as independent ones."""
    from effspec.engine.scaling import ScalingResult

    assert isinstance(sr, ScalingResult)
    base = results.get(sr.baseline.run_id) if sr.baseline is not None else None
    if base is None:
        return
    for point in sr.runs:
        run = results.get(point.run_id)
        if run is None:
            continue
        sides = {"base": base, "run": run}
        for name, ((na, nf), (da, df)) in _SCALING_OPERANDS.items():
            metric = point.metrics.get(name)
            num, den = sides[na].metrics.get(nf), sides[da].metrics.get(df)
            if metric is None or num is None or den is None:
                continue
            def make(metric: Metric = metric, num: Metric = num, den: Metric = den, na: str = na, da: str = da,
                     sides: dict[str, RunResult] = sides) -> FigureInterval:
                return _quotient(metric, _of_run(num.interval, sides[na].run.id), _of_run(den.interval, sides[da].run.id),
                                 num.value, den.value)
            point.metrics[name] = evolve(metric, interval=LazyInterval(make, metric.value))
    for cr in sr.claims.values():
        claim = cr.claim
        target = (next((r for r in sr.runs if r.run_id == claim.point), None) if claim.point is not None
                  else sr.final_point)
        metric = target.metrics.get(claim.name) if target is not None else None
        if metric is None or cr.reconstructed is None or metric.value != cr.reconstructed or not undecided(cr):
            continue
        judge(cr, metric.interval)
        fi = resolved(metric.interval)
        if cr.status == "inconclusive" and fi is not None:
            cr.decided_by = deciding(cr, fi)
