"""Per-rank timing split (`ranks { samples = file "…" }`) and the diagnosis of
an MFU collapse into its cause family.

The CSV has a header row naming at least the columns ``rank``, ``node``,
``step``, ``compute``, ``comm`` and ``stall`` (any order; other columns are
ignored), then one row per rank and step; times are seconds.

Definitions, for rank r at step t (C compute, M comm, S stall seconds):

- ``total = C + M + S``; a rank's **wait share** is ``(M + S) / total``: the
  part of its step it was not computing.
- **compute excess** ``X[r, t] = C[r, t] / median_r C[·, t] − 1``: how much
  slower than the typical rank of the same step a rank computed; 0 at a step
  whose median rank computes nothing (no relative excess to measure: ranks that
  all compute 0 s are perfectly balanced, not NaN).
- **imbalance wait** ``(max_r C[·, t] − C[r, t]) / total[r, t]``: the share of
  a rank's step spent waiting for the slowest computing rank.
- **compute spread** ``(max − min) / max`` of the per-rank mean compute.

The diagnosis, in this order (constants below):

1. ``straggler``: a few ranks compute or communicate slower than the rest,
   consistently (mean excess ≥ ``STRAGGLER_EXCESS`` and ≥ ``OUTLIER_Z`` robust
   standard deviations above the typical rank) or in bursts (compute or comm
   at least ``BURST_EXCESS`` above the step's median in ≥ ``BURST_SHARE`` of
   the steps, while almost no other rank does), or stall: their stall above
   the step's median rank, as a share of the median step, is ≥
   ``STRAGGLER_EXCESS`` on average and ≥ ``OUTLIER_Z`` robust deviations
   (the seed's third family is "stragglers and stalls").  The flagged ranks must be
   few: at most an eighth of the ranks and of the nodes; a larger slow group
   is imbalance, not a straggler.
2. ``imbalance``: the compute spread is at least ``IMBALANCE_SPREAD`` with no
   single outlier, and the wait is dominated by waiting for the slowest ranks
   (imbalance wait ≥ ``IMBALANCE_WAIT_DOMINANCE`` of the wait share, and
   ≥ ``IMBALANCE_WAIT_MIN`` of the step).  Where ``parallelism.pp`` divides
   the ranks, per-stage means are shown (stage = rank // (ranks / pp), the
   Megatron order with pipeline outermost).
3. ``single_device``: every rank is uniformly busy computing (compute share
   ≥ ``COMPUTE_BOUND_SHARE``, spread below ``IMBALANCE_SPREAD``), yet MFU is
   low: **MFU < 35 %** (``LOW_MFU``) **or** the compute-interval efficiency
   seen by the ranks, MFU / compute share, **< 50 %** (``LOW_COMPUTE_EFFICIENCY``).
   A run without an MFU cannot be told apart from a healthy one by timing
   alone: the evidence says so and the family is ``none``.
4. ``none``: none of the above.

The statistics live in ``stats``, each family in its own module, the
loader in ``loader``.  16,384 ranks × 100 steps (1.6 M rows) load and diagnose
in a few seconds (see ``benchmarks/ranks_bench.py``).
"""


from __future__ import annotations

from effspec.ranks import imbalance, single_device, straggler
from effspec.ranks.significance import p_text
from effspec.ranks.stats import (
    ALPHA,
    COMPUTE_BOUND_SHARE,
    Diagnosis,
    RankStats,
)
from effspec.ranks.table import RankTable

FAMILIES = (straggler, imbalance, single_device)  # tried in this order; the first that fits wins


def diagnose(table: RankTable, mfu: float | None = None, pp: int | None = None, alpha: float = ALPHA) -> Diagnosis:
    """The cause family of ``table``'s timing (see the module docstring for the rules); ``alpha`` is the
    false-positive rate on balanced tables (half for imbalance, half for stragglers)."""
    s = RankStats.of(table, mfu, pp, alpha)
    for family in FAMILIES:
        found = family.find(s)
        if found is not None:
            return found
    if imbalance.sized(s):  # uneven enough to be imbalance, but not distinguishable from step-to-step noise
        f = s.friedman
        assert f is not None
        need = f.steps_to_detect(s.family_alpha)
        more = (f"about {need:,} steps would make a spread this large significant, if it persisted" if need is not None
                else "the ranks take turns as noise does: no number of steps would make this spread significant")
        return s.diagnosis("none", [], [], f"balanced within noise ({p_text(f.p)} over {f.steps} steps): per-rank mean "
                           f"compute spreads {s.spread:.0%}, but the ranks' order changes from step to step "
                           f"(Friedman, Kendall's W = {f.kendall_w:.2f}, α = {s.family_alpha:.1%}); {more}",
                           p_value=f.p, effect_size={"measure": "Kendall's W of per-step compute ranks",
                                                     "value": f.kendall_w, "compute_spread": s.spread},
                           **({"note": single_device.NO_MFU_NOTE}
                              if s.mfu is None and s.compute_share >= COMPUTE_BOUND_SHARE else {}))
    if s.even and s.compute_share < COMPUTE_BOUND_SHARE:
        comm, stall = float(s.rank_comm.sum()), float(s.rank_stall.sum())
        if comm + stall > 0 and max(comm, stall) >= 2 * min(comm, stall):
            what = "communication" if comm > stall else "stalls"
            return s.diagnosis("none", [], [], f"ranks are even, but only {s.compute_share:.0%} of the step is compute "
                               f"on every rank, and {what} take{'s' if what == 'communication' else ''} "
                               f"{max(comm, stall) / (comm + stall):.0%} of the rest: uniform {what} "
                               f"{'is' if what == 'communication' else 'are'} none of the three families (see the breakdown)")
        return s.diagnosis("none", [], [], f"ranks are even, but only {s.compute_share:.0%} of the step is compute "
                           "on every rank: uniform communication or stalls are none of the three families (see the breakdown)")
    return s.diagnosis("none", [], [], f"no straggler, no imbalance (compute spread {s.spread:.1%}), "
                       + (f"MFU {mfu:.1%}" if mfu is not None else "no MFU"))
