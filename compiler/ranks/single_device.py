"""Family 3, single_device: every rank is uniformly busy computing, yet MFU is
low, so each device itself is slow (kernels, clocks, memory), not the fleet."""

from __future__ import annotations

from effspec.ranks.imbalance import sized
from effspec.ranks.stats import (
    COMPUTE_BOUND_SHARE,
    IMBALANCE_SPREAD,
    LOW_COMPUTE_EFFICIENCY,
    LOW_MFU,
    Diagnosis,
    RankStats,
)

NO_MFU_NOTE = "no MFU: declare model, work, hardware and timing to tell single_device from healthy"


def find(s: RankStats) -> Diagnosis | None:
    """The single-device diagnosis; a uniform run without an MFU is `none`
    with a note (timing alone cannot tell a slow device from a healthy one)."""
    import numpy as np

    # Even: a spread under IMBALANCE_SPREAD, or one that step-to-step noise explains (stats.RankStats.even).
    uniform = s.even and s.compute_share >= COMPUTE_BOUND_SHARE
    if not uniform:
        return None
    mfu, share = s.mfu, s.compute_share
    if mfu is None and sized(s):
        return None  # a spread within noise: diagnose() says so, with the no-MFU note
    if mfu is None:
        return s.diagnosis("none", [], [], f"every rank is uniformly busy computing ({share:.0%} of the step), "
                           "but the run has no MFU: a slow device cannot be told from a healthy one by timing alone",
                           note=NO_MFU_NOTE)
    cie = s.evidence["compute_interval_efficiency"]
    if not (mfu < LOW_MFU or (cie is not None and cie < LOW_COMPUTE_EFFICIENCY)):
        return None
    reason = (f"every rank is uniformly busy computing ({share:.0%} of the step, spread {s.spread:.1%}"
              f"{_within_noise(s)}), "
              f"yet MFU is {mfu:.1%}: each device converts only {cie:.0%} of its compute time into model FLOPs"
              if cie is not None else f"uniform compute, yet MFU is {mfu:.1%}")
    # Not a test against noise: MFU comes from the spec's inputs, and the ranks' evenness is the imbalance test's
    # (its p-value in `significance`).
    return s.diagnosis("single_device", np.arange(s.rank_count), np.arange(s.node_count), reason, p_value=None,
                       effect_size={"measure": "MFU", "value": mfu})


def _within_noise(s: RankStats) -> str:
    from effspec.ranks.significance import p_text

    f = s.friedman
    if f is None or s.spread < IMBALANCE_SPREAD:
        return ""
    return f", within noise: {p_text(f.p)} over {f.steps} steps"
