"""Significance tests for the per-rank diagnosis, numpy and ``math`` only.

A cause family is named only when its evidence stands out from step-to-step
noise (spec/language.md, section 13):

- **imbalance**: the rank effect on compute is tested with the Friedman test,
  blocked by step: each step's ranks are ranked by compute (mid-ranks for
  ties), and the statistic ``Q = (k−1) Σ_j (R_j − n(k+1)/2)² / (Σ r² − n k (k+1)²/4)``
  (k ranks, n steps, R_j rank j's sum of ranks) is referred to χ² with k − 1
  degrees of freedom.  Blocking by step removes what every rank shares in a
  step (a slow step is slow for all).  The effect size is Kendall's
  ``W = Q / (n (k − 1))``: 0 for ranks that take turns, 1 for a fixed order.
- **straggler**: each rank's rank-sum over the steps, ``T_i``, is a robust z
  over steps and ranks: under the null hypothesis (ranks exchangeable within a
  step) its rank at each step is uniform on 1..k, independent across steps,
  so ``T_i − n`` is a sum of n discrete uniforms on 0..k−1, whose exact upper
  tail is computed by FFT (no normal approximation: the tail of a short sum is
  far lighter than the normal's).  Bursts are a permutation test within steps:
  under the same null, a step with b of its k ranks bursting bursts rank i with
  probability b / k, independently across steps, so rank i's count of bursts is
  Poisson-binomial, whose exact tail is summed.  The family's p-values are corrected for the
  number of tests with Bonferroni (ranks × signals tested).

Every test is deterministic (no resampling, no seed).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

P_FLOOR = 1e-12  # below this an FFT tail is rounding noise: reported as this bound


def normal_sf(z: float) -> float:
    """P(Z ≥ z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _gamma_p_series(a: float, x: float) -> float:
    term = total = 1.0 / a
    n = a
    for _ in range(1_000_000):
        n += 1.0
        term *= x / n
        total += term
        if abs(term) < abs(total) * 1e-16:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_q_fraction(a: float, x: float) -> float:
    # Modified Lentz evaluation of the continued fraction for Q(a, x).
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 1_000_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_sf(x: float, df: float) -> float:
    """P(χ²_df ≥ x): the regularized upper incomplete gamma Q(df/2, x/2)."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    if not x > 0:
        return 1.0
    a, y = df / 2.0, x / 2.0
    if y < a + 1.0:
        return min(1.0, max(0.0, 1.0 - _gamma_p_series(a, y)))
    return min(1.0, max(0.0, _gamma_q_fraction(a, y)))


def chi2_isf(p: float, df: float) -> float:
    """The x with P(χ²_df ≥ x) = p (0 < p < 1): Newton's method from the Wilson–Hilferty
    approximation, kept inside a bisection bracket."""
    lo, hi = 0.0, 1.0
    z_lo, z_hi = -40.0, 40.0  # the normal quantile of p, by bisection (cheap: erfc)
    for _ in range(80):
        z = 0.5 * (z_lo + z_hi)
        if normal_sf(z) > p:
            z_lo = z
        else:
            z_hi = z
    c = 2.0 / (9.0 * df)
    x = max(df * (1.0 - c + z * math.sqrt(c)) ** 3, 1e-8)
    while chi2_sf(hi, df) > p:
        hi *= 2.0
    a = df / 2.0
    for _ in range(100):
        sf = chi2_sf(x, df)
        if sf > p:
            lo = x
        else:
            hi = x
        pdf = math.exp((a - 1.0) * math.log(x / 2.0) - x / 2.0 - math.lgamma(a)) / 2.0
        step = (sf - p) / pdf if pdf > 0 else math.inf
        new = x + step
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        if abs(new - x) <= 1e-12 * max(x, 1.0):
            return new
        x = new
    return x


@functools.lru_cache(maxsize=8)
def _uniform_sum_sf(k: int, n: int) -> Any:
    """sf[t] = P(U_1 + … + U_n ≥ t), U_i uniform on 0..k−1, for t = 0..n(k−1) (exact up to rounding)."""
    import numpy as np

    length = n * (k - 1) + 1
    size = 1 << max(1, (length - 1).bit_length())
    pmf = np.fft.irfft(np.fft.rfft(np.full(k, 1.0 / k), size) ** n, size)[:length]
    pmf = np.clip(pmf, 0.0, None)
    sf = np.cumsum(pmf[::-1])[::-1]
    sf /= sf[0]
    sf.setflags(write=False)
    return sf


def rank_sum_sf(total: float, k: int, n: int) -> float:
    """P(T ≥ total) for T, the sum over n steps of a rank uniform on 1..k (one rank's
    rank-sum when ranks are exchangeable within each step); at least ``P_FLOOR``."""
    if k < 2 or n < 1:
        return 1.0
    t = math.ceil(total - n - 1e-9)
    if t <= 0:
        return 1.0
    if t > n * (k - 1):
        return P_FLOOR
    return max(float(_uniform_sum_sf(k, n)[t]), P_FLOOR)


def poisson_binomial_sf(successes: int, probabilities: Any) -> float:
    """P(X ≥ successes) for X a sum of independent Bernoulli(p_s): the exact tail, by the recursion over the
    trials on the counts below ``successes`` (the mass that crosses to ``successes`` is summed as it crosses,
    so that a small tail keeps its digits)."""
    import numpy as np

    if successes <= 0:
        return 1.0
    probs = np.asarray(probabilities, dtype=np.float64)
    probs = probs[probs > 0.0]
    if successes > len(probs):
        return 0.0
    below = np.zeros(successes)  # P(X = j) for j < successes, over the trials so far
    below[0] = 1.0
    tail = 0.0
    for q in probs.tolist():
        tail += below[-1] * q
        below[1:] = below[1:] * (1.0 - q) + below[:-1] * q
        below[0] *= 1.0 - q
    return float(min(1.0, tail))


def midranks(matrix: Any) -> Any:
    """Each column's values ranked 1..k down the rows, ties sharing their mean rank."""
    import numpy as np

    k, n = matrix.shape
    order = np.argsort(matrix, axis=0, kind="stable")
    ordered = np.take_along_axis(matrix, order, axis=0)
    new = np.ones((k, n), bool)
    new[1:] = ordered[1:] != ordered[:-1]
    group = np.cumsum(new.T.ravel()) - 1  # column by column, so that no group spans two columns
    position = np.tile(np.arange(1.0, k + 1.0), n)
    mean = np.bincount(group, weights=position) / np.bincount(group)
    ranks = np.empty((k, n))
    np.put_along_axis(ranks, order, mean[group].reshape(n, k).T, axis=0)
    return ranks


@dataclass(frozen=True)
class Friedman:
    """The Friedman test of a rank effect, blocked by step."""

    statistic: float  # Q
    df: int  # k − 1
    p: float
    steps: int  # n, the complete steps tested
    kendall_w: float  # effect size, 0..1

    def steps_to_detect(self, alpha: float) -> int | None:
        """About how many steps would make the observed effect significant at ``alpha``, if it persisted:
        Q grows by (Q − df) / n per step beyond its null mean df; None when Q ≤ df (no effect beyond noise)."""
        if self.steps < 1 or self.df < 1 or self.statistic <= self.df:
            return None
        per_step = (self.statistic - self.df) / self.steps
        need = chi2_isf(alpha, self.df) - self.df
        return max(2, math.ceil(need / per_step))


def friedman(matrix: Any) -> Friedman:
    """The Friedman test on a complete rank × step matrix (rows: ranks, the treatments; columns: steps, the blocks)."""
    return friedman_of_ranks(midranks(matrix))


def friedman_of_ranks(ranks: Any) -> Friedman:
    """The Friedman test from each step's mid-ranks (``midranks`` of the matrix)."""
    k, n = ranks.shape
    if k < 2 or n < 2:
        return Friedman(0.0, max(k - 1, 1), 1.0, n, 0.0)
    sums = ranks.sum(axis=1)
    denominator = float((ranks * ranks).sum()) - n * k * (k + 1) ** 2 / 4.0
    if denominator <= 1e-9 * n * k * k:  # every step's ranks all tied
        return Friedman(0.0, k - 1, 1.0, n, 0.0)
    q = (k - 1) * float(((sums - n * (k + 1) / 2.0) ** 2).sum()) / denominator
    return Friedman(q, k - 1, chi2_sf(q, k - 1), n, min(1.0, q / (n * (k - 1))))


def p_text(p: float) -> str:
    """``p = 0.43``, ``p = 3.1e-05``; ``p < 1e-12`` at the floor."""
    if p <= P_FLOOR:
        return f"p < {P_FLOOR:.0e}"
    return f"p = {p:.2g}" if p >= 1e-3 else f"p = {p:.1e}"
