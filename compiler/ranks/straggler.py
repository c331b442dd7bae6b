"""Family 1, straggler: a few ranks compute or communicate slower than the rest,
consistently or in bursts, or stall (time with neither compute nor
communication: a host stall, a data loader), while the others wait for them."""

from __future__ import annotations

import math
from typing import Any, SupportsIndex

from effspec.ranks.stats import (
    BURST_EXCESS,
    BURST_OTHERS_FACTOR,
    LISTED,
    STRAGGLER_EXCESS,
    STRAGGLER_MAX_FRACTION,
    Diagnosis,
    RankStats,
    _robust_outliers,
)


def _bursty(np: Any, counts_per_rank: Any, floor: int) -> Any:
    typical = float(np.quantile(counts_per_rank, 0.9))
    return (counts_per_rank >= floor) & (counts_per_rank > BURST_OTHERS_FACTOR * typical)


def _how(s: RankStats, i: SupportsIndex, consistent: Any, consistent_comm: Any, burst_compute: Any, burst_comm: Any,
         stall: Any) -> dict[str, Any]:
    how = []
    if consistent[i]:
        how.append(f"compute {s.rank_excess[i]:+.0%} vs the step median on average")
    if consistent_comm[i]:
        how.append(f"communication {s.rank_comm_excess[i]:+.0%} on average")
    if burst_compute[i]:
        how.append(f"compute bursts ≥ {BURST_EXCESS:.0%} slower in {int(s.bursts[i])} of {s.steps} steps")
    if burst_comm[i]:
        how.append(f"communication bursts in {int(s.comm_bursts[i])} of {s.steps} steps")
    if stall[i]:
        how.append(f"stalls {s.rank_stall_excess[i]:.0%} of a step more than the typical rank (neither computing nor communicating)")
    return {"rank": int(s.ranks[i]), "node": s.node_name(i),
            "compute_excess": float(s.rank_excess[i]), "comm_excess": float(s.rank_comm_excess[i]),
            "burst_steps": int(s.bursts[i]), "comm_burst_steps": int(s.comm_bursts[i]),
            "stall_excess": float(s.rank_stall_excess[i]),
            "pattern": "consistent" if consistent[i] or consistent_comm[i] or stall[i] else "bursts",
            "resource": "compute" if consistent[i] or burst_compute[i] else "comm" if consistent_comm[i] or burst_comm[i] else "stall",
            "how": "; ".join(how)}


def find(s: RankStats) -> Diagnosis | None:
    """The straggler diagnosis, or None when no small group of ranks stands out."""
    import numpy as np

    R, N = s.rank_count, s.node_count
    consistent = _robust_outliers(np, s.rank_excess, STRAGGLER_EXCESS)[0]
    consistent_comm = (_robust_outliers(np, s.rank_comm_excess, STRAGGLER_EXCESS)[0] if s.any_comm
                       else np.zeros(R, bool))
    burst_compute, burst_comm = _bursty(np, s.bursts, s.burst_floor), _bursty(np, s.comm_bursts, s.burst_floor)
    stall = _robust_outliers(np, s.rank_stall_excess, STRAGGLER_EXCESS)[0]
    flagged = consistent | consistent_comm | burst_compute | burst_comm | stall
    flagged_ranks = np.flatnonzero(flagged)
    flagged_nodes = np.unique(s.node_of_rank[flagged_ranks])
    few = (0 < len(flagged_ranks) <= max(1, math.floor(STRAGGLER_MAX_FRACTION * R))
           and len(flagged_nodes) <= max(1, math.floor(STRAGGLER_MAX_FRACTION * N)))
    if not few:
        return None
    details = [_how(s, i, consistent, consistent_comm, burst_compute, burst_comm, stall) for i in flagged_ranks]
    node_wide = [s.table.node_names[k] for k in flagged_nodes if np.all(flagged[s.node_of_rank == k])]
    others_wait = float(np.mean(s.rank_wait[~flagged])) if np.any(~flagged) else 0.0
    names = ", ".join(f"rank {d['rank']} ({d['node']})" for d in details[:LISTED])
    reason = (f"{len(details)} of {R} ranks are slower than the rest ({names}"
              f"{', …' if len(details) > LISTED else ''}); the other ranks wait "
              f"{others_wait:.0%} of their step on average")
    return s.diagnosis("straggler", flagged_ranks, flagged_nodes, reason, stragglers=details,
                       node_wide=node_wide, others_wait_share=others_wait)
