"""Step-time statistics: the summary that becomes `step_time`, and the evidence
behind EFF502/EFF503 (spread, tail share, predicted vs actual completion)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

STALL_FACTOR = 1.5  # a step slower than 1.5x the median is a stall
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261129


def percentile(sorted_values: list[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default 'linear' method)."""
    if not sorted_values:
        raise ValueError("no values")
    k = (len(sorted_values) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def median(values) -> float:
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
    median_ci: tuple[float, float] | None  # 95 % bootstrap CI of the median, None below 5 samples
    stall_threshold: float  # STALL_FACTOR x median
    stall_steps: int
    stall_time_share: float  # share of the summed time spent in stall steps
    total_time: float  # sum of the samples
    predicted_time: float  # count x median: what the median predicts

    def statistic(self, name: str) -> float:
        return self.mean if name == "mean" else self.median


def bootstrap_median_ci(values: list[float], resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the median, seeded (reproducible)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    data = np.asarray(values, dtype=float)
    idx = rng.integers(0, len(data), size=(resamples, len(data)))
    medians = np.median(data[idx], axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(medians, [alpha, 1 - alpha])
    return float(lo), float(hi)


def step_statistics(samples: tuple[float, ...], warmup: int) -> StepStats | None:
    """Summary of the samples after the first ``warmup`` are dropped; None if none remain."""
    kept = list(samples[warmup:])
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
        median_ci=bootstrap_median_ci(kept) if len(kept) >= 5 else None,
        stall_threshold=threshold, stall_steps=len(stall),
        stall_time_share=math.fsum(stall) / total if total else 0.0,
        total_time=total, predicted_time=med * len(kept),
    )
