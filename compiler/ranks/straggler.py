"""Family 1, straggler: a few ranks compute or communicate slower than the rest,
consistently or in bursts, or stall (time with neither compute nor
communication: a host stall, a data loader), while the others wait for them."""

from __future__ import annotations

import math
from typing import Any, SupportsIndex

from effspec.ranks.significance import P_FLOOR, p_text, poisson_binomial_sf
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


def _burst_p(s: RankStats, cells: Any, i: int) -> float:
    """P(this many bursts or more) for rank ``i`` if bursts fell on the ranks of a step at random (a permutation
    test within steps): at each step where rank ``i`` has a row, it bursts with probability (bursts of the step) /
    (ranks with a row), independently across steps: a Poisson-binomial tail, uncorrected."""
    burst, present = cells
    mine = present[i]
    probabilities = burst.sum(axis=0)[mine] / present.sum(axis=0)[mine]
    return poisson_binomial_sf(int(burst[i][mine].sum()), probabilities)


def _significant(np: Any, s: RankStats, candidates: Any, p_of: Any, p_adjusted: Any) -> Any:
    """``candidates`` (a rank mask) kept where the Bonferroni-adjusted p-value is ≤ the family's α; each kept
    rank's adjusted p goes into ``p_adjusted`` (the smallest of its signals)."""
    m = s.straggler_tests
    out = np.zeros(s.rank_count, bool)
    for i in np.flatnonzero(candidates):
        raw = p_of(int(i))
        p = min(1.0, raw * m)
        if p <= s.family_alpha:
            out[i] = True
            # At the floor the tail is a bound (P_FLOOR × m), not a value: kept as the floor's multiple.
            p_adjusted[int(i)] = min(p, p_adjusted.get(int(i), 1.0))
    return out


def _at_floor(s: RankStats, p: float) -> bool:
    """The corrected p is a bound: the uncorrected tail was at its floor (P_FLOOR × tests)."""
    return p <= P_FLOOR * s.straggler_tests * (1 + 1e-9)


def _p_text_adjusted(s: RankStats, p: float) -> str:
    """``p = 3.7e-08``, or ``p < 3.2e-10`` when the uncorrected tail was at its floor (P_FLOOR × tests)."""
    return f"p < {p:.1e}" if _at_floor(s, p) else p_text(p)


def _how(s: RankStats, i: SupportsIndex, consistent: Any, consistent_comm: Any, burst_compute: Any, burst_comm: Any,
         stall: Any, p_adjusted: dict[int, float]) -> dict[str, Any]:
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
            "how": "; ".join(how), "p_value": p_adjusted[int(i)],
            "rank_sum_z": s.rank_sum_z(0 if consistent[i] or burst_compute[i] else 1 if consistent_comm[i] or burst_comm[i]
                                       else 2, int(i))}


def find(s: RankStats) -> Diagnosis | None:
    """The straggler diagnosis, or None when no small group of ranks stands out."""
    import numpy as np

    R, N = s.rank_count, s.node_count
    # Each signal's rule on the size of the effect, then its significance against step-to-step noise.
    consistent = _robust_outliers(np, s.rank_excess, STRAGGLER_EXCESS)[0]
    consistent_comm = (_robust_outliers(np, s.rank_comm_excess, STRAGGLER_EXCESS)[0] if s.any_comm
                       else np.zeros(R, bool))
    burst_compute = _bursty(np, s.bursts, s.burst_floor)
    burst_comm = _bursty(np, s.comm_bursts, s.burst_floor) if s.any_comm else np.zeros(R, bool)
    stall = _robust_outliers(np, s.rank_stall_excess, STRAGGLER_EXCESS)[0]
    sized = consistent | consistent_comm | burst_compute | burst_comm | stall
    p_adjusted: dict[int, float] = {}
    consistent = _significant(np, s, consistent, lambda i: s.rank_sum_p(0, [i])[0], p_adjusted)
    consistent_comm = _significant(np, s, consistent_comm, lambda i: s.rank_sum_p(1, [i])[0], p_adjusted)
    stall = _significant(np, s, stall, lambda i: s.rank_sum_p(2, [i])[0], p_adjusted)
    burst_compute = _significant(np, s, burst_compute, lambda i: _burst_p(s, s.burst_cells(0), i), p_adjusted)
    burst_comm = _significant(np, s, burst_comm, lambda i: _burst_p(s, s.burst_cells(1), i), p_adjusted)
    s.evidence["significance"]["straggler"]["ranks_sized"] = int(sized.sum())
    flagged = consistent | consistent_comm | burst_compute | burst_comm | stall
    flagged_ranks = np.flatnonzero(flagged)
    flagged_nodes = np.unique(s.node_of_rank[flagged_ranks])
    few = (0 < len(flagged_ranks) <= max(1, math.floor(STRAGGLER_MAX_FRACTION * R))
           and len(flagged_nodes) <= max(1, math.floor(STRAGGLER_MAX_FRACTION * N)))
    if not few:
        return None
    details = [_how(s, i, consistent, consistent_comm, burst_compute, burst_comm, stall, p_adjusted)
               for i in flagged_ranks]
    node_wide = [s.table.node_names[k] for k in flagged_nodes if np.all(flagged[s.node_of_rank == k])]
    others_wait = float(np.mean(s.rank_wait[~flagged])) if np.any(~flagged) else 0.0
    names = ", ".join(f"rank {d['rank']} ({d['node']})" for d in details[:LISTED])
    reason = (f"{len(details)} of {R} ranks are slower than the rest ({names}"
              f"{', …' if len(details) > LISTED else ''}); the other ranks wait "
              f"{others_wait:.0%} of their step on average")
    p = max(d["p_value"] for d in details)  # every named rank is significant at this level or better
    top = min(details, key=lambda d: d["p_value"])  # the strongest evidence
    effect = {"compute": top["compute_excess"], "comm": top["comm_excess"], "stall": top["stall_excess"]}[top["resource"]]
    reason += (f" ({_p_text_adjusted(s, p)} over {s.steps} steps, Bonferroni over {s.straggler_tests:,} tests; "
               f"rank {top['rank']}: {top['resource']} {effect:+.0%})")
    return s.diagnosis("straggler", flagged_ranks, flagged_nodes, reason, stragglers=details,
                       node_wide=node_wide, others_wait_share=others_wait, p_value=p, p_is_bound=_at_floor(s, p),
                       effect_size={"measure": f"mean {top['resource']} excess of rank {top['rank']}", "value": effect})
