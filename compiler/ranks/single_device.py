"""Family 3, single_device: every rank is uniformly busy computing, yet MFU is
low, so each device itself is slow (kernels, clocks, memory), not the fleet."""

from __future__ import annotations

from effspec.ranks.stats import (
    COMPUTE_BOUND_SHARE,
    IMBALANCE_SPREAD,
    LOW_COMPUTE_EFFICIENCY,
    LOW_MFU,
    Diagnosis,
    RankStats,
)


def find(s: RankStats) -> Diagnosis | None:
    """The single-device diagnosis; a uniform run without an MFU is `none`
    with a note (timing alone cannot tell a slow device from a healthy one)."""
    import numpy as np

    uniform = s.spread < IMBALANCE_SPREAD and s.compute_share >= COMPUTE_BOUND_SHARE
    if not uniform:
        return None
    mfu, share = s.mfu, s.compute_share
    if mfu is None:
        return s.diagnosis("none", [], [], f"every rank is uniformly busy computing ({share:.0%} of the step), "
                           "but the run has no MFU: a slow device cannot be told from a healthy one by timing alone",
                           note="no MFU: declare model, work, hardware and timing to tell single_device from healthy")
    cie = s.evidence["compute_interval_efficiency"]
    if not (mfu < LOW_MFU or (cie is not None and cie < LOW_COMPUTE_EFFICIENCY)):
        return None
    reason = (f"every rank is uniformly busy computing ({share:.0%} of the step, spread {s.spread:.1%}), "
              f"yet MFU is {mfu:.1%}: each device converts only {cie:.0%} of its compute time into model FLOPs"
              if cie is not None else f"uniform compute, yet MFU is {mfu:.1%}")
    return s.diagnosis("single_device", np.arange(s.rank_count), np.arange(s.node_count), reason)
