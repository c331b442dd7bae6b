"""Family 2, imbalance: ranks finish unevenly with no single outlier, and the
wait is dominated by waiting for the slowest ranks."""

from __future__ import annotations

from effspec.ranks.significance import p_text
from effspec.ranks.stats import (
    IMBALANCE_SPREAD,
    IMBALANCE_WAIT_DOMINANCE,
    IMBALANCE_WAIT_MIN,
    Diagnosis,
    RankStats,
)


def find(s: RankStats) -> Diagnosis | None:
    """The imbalance diagnosis, or None."""
    import numpy as np

    if not (sized(s) and s.imbalance_significant):
        return None
    top = s.rank_compute.max()
    critical = np.flatnonzero(s.rank_compute >= top * (1 - 0.25 * s.spread))
    nodes = np.unique(s.node_of_rank[critical])
    reason = (f"ranks finish unevenly: per-rank mean compute spreads {s.spread:.0%} with no single outlier, "
              f"and {s.imbalance_wait_share:.0%} of the step is spent waiting for the slowest ranks "
              f"(of {s.wait_share:.0%} not computing)")
    f = s.friedman
    assert f is not None
    reason += (f"; the rank effect is significant ({p_text(f.p)} over {f.steps} steps, Friedman; "
               f"Kendall's W = {f.kendall_w:.2f})")
    if s.stages:
        reason += "; pipeline stages: " + ", ".join(f"{g.name} {g.compute_mean:.3g} s" for g in s.stages)
    return s.diagnosis("imbalance", critical, nodes, reason, critical_ranks=int(len(critical)), p_value=f.p,
                       effect_size={"measure": "Kendall's W of per-step compute ranks", "value": f.kendall_w,
                                    "compute_spread": s.spread})


def sized(s: RankStats) -> bool:
    """The imbalance rule on the size of the effect (before its significance): spread and wait."""
    return (s.spread >= IMBALANCE_SPREAD and s.imbalance_wait_share >= IMBALANCE_WAIT_MIN
            and s.imbalance_wait_share >= IMBALANCE_WAIT_DOMINANCE * s.wait_share)
