"""Step-time statistics: the summary that becomes `step_time`, and the evidence
behind EFF502/EFF503 (spread, tail share, predicted vs actual completion).

Percentiles interpolate linearly between order statistics (numpy's default).
The median's 95 % confidence interval is a percentile bootstrap with a fixed
seed, so a report is reproducible; above ``BOOTSTRAP_MAX_SAMPLES`` samples the
resampling would cost seconds, and the distribution-free order-statistic
interval (binomial ranks) is used instead, and named as such.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

STALL_FACTOR = 1.5  # a step slower than 1.5x the median is a stall
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261129
BOOTSTRAP_MAX_SAMPLES = 1_000  # 2000 resamples × 1000 samples stays well under a second; beyond, the binomial interval is as good
CI_LEVEL = 0.95
MIN_CI_SAMPLES = 5
# Below this many samples after warm-up, percentiles and a bootstrap interval
# of the median rest on too few points to mean anything (EFF502 flags such a
# run; the report prints no spread for it).
MIN_SAMPLES = 10


def percentile(sorted_values: list[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default 'linear' method)."""
    if not sorted_values:
        raise ValueError("no values")
    k = (len(sorted_values) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def median(values: Iterable[float]) -> float:
    return percentile(sorted(values), 50.0)


@dataclass(frozen=True)
class StepStats:
    rows: int  # samples before warm-up removal
    warmup_excluded: int
    count: int
    median: float
    mean: float
    p5: float
    p95: float
    p99: float
    min: float
    max: float
    stall_threshold: float  # STALL_FACTOR x median
    stall_steps: int
    stall_time_share: float  # share of the summed time spent in stall steps
    total_time: float  # sum of the samples
    predicted_time: float  # count x median: what the median predicts
    # The samples after warm-up, in order, kept for the confidence interval.
    kept: tuple[float, ...] = field(default=(), repr=False, compare=False)
    # Samples (0-based, in file or list order) left out after warm-up as implausible: faster than the
    # hardware's peak allows (EFF505).  ``count`` and every figure above are of the rest.
    implausible_excluded: tuple[int, ...] = ()

    @functools.cached_property
    def _ci(self) -> tuple[tuple[float, float] | None, str | None]:
        # Computed on first use (JSON, reports): a text-mode check never pays
        # for the resampling, nor for importing numpy.
        return median_ci(list(self.kept), sorted(self.kept))

    @property
    def median_ci(self) -> tuple[float, float] | None:
        """95 % confidence interval of the median; None below MIN_CI_SAMPLES samples."""
        return self._ci[0]

    @property
    def median_ci_method(self) -> str | None:
        """"bootstrap" or "order statistic" (above BOOTSTRAP_MAX_SAMPLES)."""
        return self._ci[1]

    def statistic(self, name: str) -> float:
        """The summary a `timing.statistic` names: mean, or the median otherwise."""
        return self.mean if name == "mean" else self.median

    @property
    def unpredicted_time(self) -> float:
        """Actual summed time minus what the median predicts: time the statistic hides."""
        return self.total_time - self.predicted_time

    @property
    def predicted_share(self) -> float:
        """predicted_time / total_time: below 1 when tail steps lengthen the run."""
        return self.predicted_time / self.total_time if self.total_time else 1.0


# The resampling indices depend on the sample count, the resample count and the seed alone: the same for
# every run with as many samples, so they are drawn once (a run's search re-reads its bootstrap, and a spec's
# runs mostly hold as many samples). Kept for small counts only (2000 x 64 indices is 1 MiB), a few at a time.
_INDEX_CACHE_MAX_VALUES = 2000 * 64


def _resample_batches(n: int, resamples: int, seed: int) -> list[Any]:
    """The seeded generator's index batches for ``n`` samples, as the bootstrap draws them (read-only arrays)."""
    if n * resamples <= _INDEX_CACHE_MAX_VALUES:
        return _cached_batches(n, resamples, seed)
    return _draw_batches(n, resamples, seed)


def _draw_batches(n: int, resamples: int, seed: int) -> list[Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    # Resample in batches so memory stays near 2e6 values whatever n is.
    batch = max(1, min(resamples, 2_000_000 // max(n, 1)))
    out = []
    for start in range(0, resamples, batch):
        idx = rng.integers(0, n, size=(min(resamples, start + batch) - start, n))
        idx.setflags(write=False)
        out.append(idx)
    return out


@functools.lru_cache(maxsize=16)
def _cached_batches(n: int, resamples: int, seed: int) -> list[Any]:
    return _draw_batches(n, resamples, seed)


def _row_medians(resampled: Any) -> Any:
    """np.median(resampled, axis=1), from a sort: the middle value, or the two middle values' sum halved,
    which is the float np.median's mean of the two gives (tests/engine/test_stats.py compares them)."""
    import numpy as np

    ordered = np.sort(resampled, axis=1)
    k = ordered.shape[1] // 2
    if ordered.shape[1] % 2:
        return ordered[:, k]
    return (ordered[:, k - 1] + ordered[:, k]) / 2


def bootstrap_median_ci(values: list[float], resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the median, seeded (reproducible)."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    medians = np.concatenate([_row_medians(data[idx]) for idx in _resample_batches(len(data), resamples, seed)])
    alpha = (1 - level) / 2
    lo, hi = np.quantile(medians, [alpha, 1 - alpha])
    return float(lo), float(hi)


def bootstrap_mean_ci(values: list[float], resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = BOOTSTRAP_SEED, level: float = CI_LEVEL) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the mean, seeded as the median's."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    means = np.concatenate([data[idx].mean(axis=1) for idx in _resample_batches(len(data), resamples, seed)])
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def mean_ci(kept: list[float], level: float = CI_LEVEL) -> tuple[float, float, str]:
    """The mean's CI and how it was computed: the seeded bootstrap up to ``BOOTSTRAP_MAX_SAMPLES`` samples,
    the normal interval (mean ± z·s/√n) above, where the central limit theorem has long taken hold."""
    if len(kept) > BOOTSTRAP_MAX_SAMPLES:
        n = len(kept)
        mean = math.fsum(kept) / n
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in kept) / (n - 1))
        half = (1.959963984540054 if level == 0.95 else _z(level)) * sd / math.sqrt(n)
        return mean - half, mean + half, "normal interval, mean ± 1.96 s/√n"
    lo, hi = bootstrap_mean_ci(kept, level=level)
    return lo, hi, f"seeded bootstrap, {BOOTSTRAP_RESAMPLES} resamples"


def order_statistic_median_ci(sorted_values: list[float], level: float = CI_LEVEL) -> tuple[float, float]:
    """Distribution-free CI of the median: order statistics at binomial(n, 1/2) ranks (normal approximation)."""
    n = len(sorted_values)
    z = 1.959963984540054 if level == 0.95 else _z(level)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return sorted_values[lo], sorted_values[hi]


def _z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2)


def median_ci(kept: list[float], ordered: list[float]) -> tuple[tuple[float, float] | None, str | None]:
    """The median's CI and how it was computed; None below MIN_CI_SAMPLES."""
    if len(kept) < MIN_CI_SAMPLES:
        return None, None
    if len(kept) > BOOTSTRAP_MAX_SAMPLES:
        return order_statistic_median_ci(ordered), "order statistic"
    return bootstrap_median_ci(kept), "bootstrap"


def step_statistics(samples: tuple[float, ...], warmup: int, excluded: Iterable[int] = ()) -> StepStats | None:
    """Summary of the samples after the first ``warmup`` are dropped, and those at the 0-based
    positions ``excluded`` (implausible samples); None if none remain."""
    dropped = tuple(sorted({i for i in excluded if warmup <= i < len(samples)}))
    skip = set(dropped)
    kept = [v for i, v in enumerate(samples) if i >= warmup and i not in skip]
    if not kept:
        return None
    ordered = sorted(kept)
    med = percentile(ordered, 50)
    threshold = STALL_FACTOR * med
    total = math.fsum(kept)
    stall = [v for v in kept if v > threshold]
    return StepStats(
        rows=len(samples), warmup_excluded=min(warmup, len(samples)), count=len(kept),
        median=med, mean=total / len(kept),
        p5=percentile(ordered, 5), p95=percentile(ordered, 95), p99=percentile(ordered, 99),
        min=ordered[0], max=ordered[-1],
        stall_threshold=threshold, stall_steps=len(stall),
        stall_time_share=math.fsum(stall) / total if total else 0.0,
        total_time=total, predicted_time=med * len(kept), kept=tuple(kept), implausible_excluded=dropped,
    )
