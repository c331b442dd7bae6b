"""The shared per-rank statistics every cause family reads, and the result types.

The table becomes rank × step matrices once (``RankStats.of``); each family
module (straggler, imbalance, single_device) then only decides.  A grid far
larger than the table's rows (distinct ranks and steps on every row) is
refused before a matrix is allocated: its memory would be ranks × steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, SupportsIndex

from effspec.ranks.significance import Friedman, friedman_of_ranks, midranks, rank_sum_sf
from effspec.ranks.table import RankTable

STRAGGLER_EXCESS = 0.10  # a rank computing 10 % slower than the typical rank, on average
OUTLIER_Z = 6.0  # ... and that far outside the ranks' robust spread
ROBUST_SCALE_FLOOR = 0.01  # the robust spread is never taken below 1 % (identical ranks)
BURST_EXCESS = 0.5  # a burst: one step 50 % slower than the step's median rank
BURST_SHARE = 0.05  # bursts in at least 5 % of the steps (and at least 3 steps)
BURST_MIN_STEPS = 3
BURST_OTHERS_FACTOR = 3.0  # ... and 3x the bursts of the 90th-percentile rank
STRAGGLER_MAX_FRACTION = 1 / 8  # of ranks and of nodes: more is a slow group, not a straggler
IMBALANCE_SPREAD = 0.10
IMBALANCE_WAIT_DOMINANCE = 0.5
IMBALANCE_WAIT_MIN = 0.05
COMPUTE_BOUND_SHARE = 0.6
LOW_MFU = 0.35
LOW_COMPUTE_EFFICIENCY = 0.5
LISTED = 10  # slowest ranks and nodes shown in the evidence
# A family is named only when its evidence is significant against step-to-step
# noise (ranks/significance.py): ALPHA is the diagnosis' false-positive rate on
# balanced tables, half for the imbalance test and half for the straggler tests
# (Bonferroni over ranks × signals), so that together they name a family on at
# most ALPHA of noise-only tables (measured: tests/ranks/test_ranks_significance.py).
ALPHA = 0.01

MAX_GRID_FACTOR = 4  # rank × step cells per row at most (a grid at least a quarter filled) ...
MAX_GRID_SLACK = 65_536  # ... beyond this many cells, so that small sparse tables still load


class SparseGridError(ValueError):
    """The rank × step grid is far larger than the table (EFF030)."""


@dataclass(frozen=True)
class GroupStat:
    """Means over the steps of one rank, one node or one pipeline stage."""

    name: str
    ranks: int
    compute_mean: float
    comm_mean: float
    stall_mean: float
    wait_share: float
    compute_excess: float  # mean compute over the typical rank's, minus 1
    burst_steps: int = 0

    def to_json(self) -> dict:
        return {"name": self.name, "ranks": self.ranks, "compute_mean": self.compute_mean,
                "comm_mean": self.comm_mean, "stall_mean": self.stall_mean, "wait_share": self.wait_share,
                "compute_excess": self.compute_excess, "burst_steps": self.burst_steps}


@dataclass(frozen=True)
class RankProfile:
    """What the report's per-rank charts draw; not part of the JSON (the table is the record).

    Per rank (in rank-id order): its node and its mean compute, communication and
    stall seconds per step.  For a straggler diagnosis, the timeline of the flagged
    rank that stands out most, in the quantity it stands out in (compute, comm or
    stall), against the other ranks (every rank not flagged) at each step: their
    median and their 10th and 90th percentiles.
    """

    ranks: Any  # rank ids, sorted (numpy int array)
    nodes: tuple[str, ...]  # the node of each rank
    compute: Any  # mean seconds per step, per rank (numpy float arrays)
    comm: Any
    stall: Any
    flagged: tuple[int, ...] = ()  # the diagnosis' ranks (ids), for a straggler
    comm_label: str = "communication"  # "exposed communication" when the table has `comm_exposed`
    steps: Any = None  # step ids of the timeline; None: no timeline
    timeline_rank: int | None = None
    timeline_node: str = ""
    timeline_quantity: str = ""  # compute | comm | stall
    timeline: Any = None  # that rank's seconds at each step (nan where it has no row)
    others: int = 0  # how many ranks the band is made of
    others_p10: Any = None
    others_median: Any = None
    others_p90: Any = None


@dataclass(frozen=True)
class Diagnosis:
    """The cause family of a run's per-rank timing, with the evidence behind it."""

    family: str  # straggler | imbalance | single_device | none
    ranks: tuple[int, ...]
    nodes: tuple[str, ...]
    reason: str
    evidence: dict = field(default_factory=dict)
    slowest_ranks: tuple[GroupStat, ...] = ()
    slowest_nodes: tuple[GroupStat, ...] = ()
    stages: tuple[GroupStat, ...] = ()
    profile: RankProfile | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict:
        """The contract's `diagnosis` object: family, ranks, nodes, then the evidence."""
        return {"family": self.family, "ranks": list(self.ranks), "nodes": list(self.nodes),
                "reason": self.reason, **self.evidence,
                "slowest_ranks": [g.to_json() for g in self.slowest_ranks],
                "slowest_nodes": [g.to_json() for g in self.slowest_nodes],
                "stages": [g.to_json() for g in self.stages]}


def _robust_outliers(np: Any, values: Any, minimum: float) -> tuple[Any, float, float]:
    """Values at least ``minimum`` and OUTLIER_Z robust deviations above the median."""
    center = float(np.median(values))
    scale = max(1.4826 * float(np.median(np.abs(values - center))), ROBUST_SCALE_FLOOR)
    return (values - center >= minimum) & (values - center >= OUTLIER_Z * scale), center, scale


@dataclass
class RankStats:
    """Per-rank means and per-step excesses of one table (numpy arrays)."""

    table: RankTable
    mfu: float | None
    ranks: Any  # the distinct rank ids, sorted
    node_of_rank: Any
    steps: int
    rank_compute: Any
    rank_comm: Any
    rank_stall: Any
    rank_wait: Any
    rank_excess: Any  # mean compute excess over the step's median rank
    rank_comm_excess: Any  # mean excess of the communication beyond the wait for the step's slowest compute
    bursts: Any  # steps with compute ≥ BURST_EXCESS above the step's median rank
    comm_bursts: Any
    any_comm: bool  # some step has a positive median communication time
    compute_share: float
    spread: float
    wait_share: float
    imbalance_wait_share: float
    evidence: dict[str, Any]
    slowest_ranks: tuple[GroupStat, ...] = ()
    slowest_nodes: tuple[GroupStat, ...] = ()
    stages: tuple[GroupStat, ...] = ()
    rank_stall_excess: Any = None  # mean stall above the step's median rank, as a share of the median step
    matrices: Any = None  # (C, M, T, step ids): rank × step seconds, for the profile's timeline
    alpha: float = ALPHA
    tested_steps: Any = None  # the steps every rank has a row in (the significance tests' blocks): a column mask
    friedman: Friedman | None = None  # the rank effect on compute (imbalance)
    comm_net: Any = None  # rank × step communication beyond the wait for the step's slowest compute
    _midranks: dict = field(default_factory=dict, repr=False)  # quantity index → each tested step's ranks

    @property
    def family_alpha(self) -> float:
        """The level of each family's test: half of ALPHA each for imbalance and stragglers."""
        return self.alpha / 2

    @property
    def imbalance_significant(self) -> bool:
        return self.friedman is not None and self.friedman.p <= self.family_alpha

    @property
    def even(self) -> bool:
        """No imbalance to speak of: a spread under IMBALANCE_SPREAD, or one step-to-step noise explains."""
        return self.spread < IMBALANCE_SPREAD or not self.imbalance_significant

    def ranked(self, which: int) -> Any:
        """Mid-ranks of compute (0), comm beyond the wait for the slowest compute (1) or stall (2) within each
        tested step (rank × step)."""
        import numpy as np

        if which not in self._midranks:
            matrix = (self.comm_net if which == 1 else self.matrices[which])[:, self.tested_steps]
            self._midranks[which] = midranks(matrix) if matrix.size else np.zeros(matrix.shape)
        return self._midranks[which]

    def burst_cells(self, which: int) -> tuple[Any, Any]:
        """(bursts, present): rank × step masks of compute (0) or communication (1) bursts, and of the cells
        the table has (the per-rank burst counts are these bursts' row sums)."""
        import numpy as np

        C, M, _, _ = self.matrices
        with np.errstate(invalid="ignore", divide="ignore"):
            if which == 0:
                median = np.nanmedian(C, axis=0) if np.isnan(C).any() else np.median(C, axis=0)
                excess = np.where(median > 0, C / median - 1.0, 0.0)
            else:
                net = self.comm_net
                median = np.nanmedian(net, axis=0) if np.isnan(net).any() else np.median(net, axis=0)
                excess = np.where(median > 0, net / median - 1.0, 0.0)
        present = ~np.isnan(C)
        return (np.nan_to_num(excess) >= BURST_EXCESS) & present, present

    def rank_sum_p(self, which: int, indices: Any) -> list[float]:
        """One-sided p-values of the ranks ``indices`` being slower than the rest in quantity ``which``:
        the exact tail of their rank-sum over the tested steps (significance.rank_sum_sf), uncorrected."""
        ranks = self.ranked(which)
        k, n = ranks.shape
        return [rank_sum_sf(float(ranks[i].sum()), k, n) for i in indices]

    def rank_sum_z(self, which: int, i: int) -> float:
        """The rank-sum of rank ``i`` in standard deviations above its null mean n(k+1)/2 (variance n(k²−1)/12)."""
        ranks = self.ranked(which)
        k, n = ranks.shape
        if k < 2 or n < 1:
            return 0.0
        return float((ranks[i].sum() - n * (k + 1) / 2) / math.sqrt(n * (k * k - 1) / 12))

    @property
    def rank_count(self) -> int:
        return len(self.ranks)

    @property
    def node_count(self) -> int:
        return len(self.table.node_names)

    def node_name(self, rank_index: SupportsIndex) -> str:
        return self.table.node_names[int(self.node_of_rank[rank_index])]

    def diagnosis(self, family: str, rank_ids: Any, node_ids: Any, reason: str, **extra: Any) -> Diagnosis:
        return Diagnosis(family, tuple(int(self.ranks[i]) for i in rank_ids),
                         tuple(self.table.node_names[k] for k in node_ids),
                         reason, {**self.evidence, **extra}, self.slowest_ranks, self.slowest_nodes, self.stages,
                         self.profile(rank_ids if family == "straggler" else ()))

    def profile(self, flagged: Any = ()) -> RankProfile:
        """The per-rank means, and for ``flagged`` ranks (indexes) the timeline of the one that stands out most."""
        import numpy as np

        base = RankProfile(self.ranks, tuple(self.node_name(i) for i in range(self.rank_count)), self.rank_compute,
                           self.rank_comm, self.rank_stall, tuple(int(self.ranks[i]) for i in flagged),
                           "exposed communication" if self.table.comm_exposed is not None else "communication")
        others = np.setdiff1d(np.arange(self.rank_count), np.asarray(flagged, dtype=np.int64))
        if not len(flagged) or not len(others) or self.matrices is None:
            return base
        excess = np.stack([self.rank_excess, self.rank_comm_excess, self.rank_stall_excess])[:, flagged]
        if np.all(np.isnan(excess)):
            return base
        which, k = np.unravel_index(int(np.nanargmax(excess)), excess.shape)
        i = int(flagged[k])
        matrix = self.matrices[which]
        with np.errstate(all="ignore"):
            p10, median, p90 = np.nanquantile(matrix[others], [0.1, 0.5, 0.9], axis=0)
        return replace(base, steps=self.matrices[3], timeline_rank=int(self.ranks[i]), timeline_node=self.node_name(i),
                       timeline_quantity=("compute", "comm", "stall")[which], timeline=matrix[i], others=int(len(others)),
                       others_p10=p10, others_median=median, others_p90=p90)

    def group(self, name: str, members: Any) -> GroupStat:
        import numpy as np

        return GroupStat(name, int(len(members)), float(np.mean(self.rank_compute[members])),
                         float(np.mean(self.rank_comm[members])), float(np.mean(self.rank_stall[members])),
                         float(np.mean(self.rank_wait[members])), float(np.mean(self.rank_excess[members])),
                         int(np.max(self.bursts[members] + self.comm_bursts[members])))

    @classmethod
    def of(cls, table: RankTable, mfu: float | None, pp: int | None, alpha: float = ALPHA) -> RankStats:
        """The statistics of ``table``; ValueError on a repeated (rank, step),
        SparseGridError on a grid far larger than the rows."""
        import numpy as np

        ranks, rank_index = np.unique(table.rank, return_inverse=True)
        steps, step_index = np.unique(table.step, return_inverse=True)
        R, S = len(ranks), len(steps)
        if MAX_GRID_FACTOR * table.rows + MAX_GRID_SLACK < R * S:
            raise SparseGridError(
                f"{R:,} ranks × {S:,} steps is a grid of {R * S:,} cells for {table.rows:,} rows; "
                f"the limit is {MAX_GRID_FACTOR} cells per row")
        cell = rank_index * S + step_index
        counts = np.bincount(cell, minlength=R * S)
        if counts.max() > 1:
            dup = int(np.flatnonzero(counts > 1)[0])
            rows = np.flatnonzero(cell == dup)[:2] + table.first_row
            raise ValueError(f"rank {int(ranks[dup // S])} step {int(steps[dup % S])} appears twice "
                             f"(rows {rows[0]} and {rows[1]})")
        complete = bool(counts.min() == 1)

        def matrix(values: Any) -> Any:
            out = np.full(R * S, np.nan)
            out[cell] = values
            return out.reshape(R, S)

        # With `comm_exposed` (written by `effspec traces`), the communication a
        # rank waits in is the part no compute hides: C + M + T is then the step.
        exposed = table.comm_exposed is not None
        C, M, T = matrix(table.compute), matrix(table.comm_exposed if exposed else table.comm), matrix(table.stall)
        mean = np.mean if complete else np.nanmean
        median = np.median if complete else np.nanmedian
        big = np.max if complete else np.nanmax
        total = C + M + T
        with np.errstate(invalid="ignore", divide="ignore"):
            # A step whose typical rank computes nothing (every rank at 0 s: perfectly
            # balanced) has no relative excess to measure: 0, as for communication below;
            # a missing cell stays NaN.
            step_median_compute = median(C, axis=0)
            X = np.where(step_median_compute > 0, C / step_median_compute - 1.0, np.where(np.isnan(C), np.nan, 0.0))
            step_median_comm = median(M, axis=0)
            # Communication beyond waiting in the collective for the step's slowest compute (that
            # wait is imbalance, not a slow link): a fast rank waits longest, and is no straggler.
            # The part of the wait that the table puts in `stall` (a barrier) is not in comm.
            comm_net = np.maximum(M - np.maximum(big(C, axis=0) - C - T, 0.0), 0.0)
            step_median_net = median(comm_net, axis=0)
            Y = np.where(step_median_net > 0, comm_net / step_median_net - 1.0, 0.0)
            wait = np.where(total > 0, (M + T) / total, 0.0)
            imbalance_wait = np.where(total > 0, (big(C, axis=0) - C) / total, 0.0)
            step_median_total = median(total, axis=0)
            Z = np.where(step_median_total > 0, (T - median(T, axis=0)) / step_median_total, 0.0)
        node_of_rank = np.zeros(R, np.int64)
        node_of_rank[rank_index] = table.node
        rank_compute = mean(C, axis=1)
        compute_total, all_total = np.nansum(C), np.nansum(total)
        stats = cls(
            table=table, mfu=mfu, ranks=ranks, node_of_rank=node_of_rank, steps=S,
            rank_compute=rank_compute, rank_comm=mean(M, axis=1), rank_stall=mean(T, axis=1),
            rank_wait=mean(wait, axis=1), rank_excess=mean(X, axis=1), rank_comm_excess=mean(Y, axis=1),
            bursts=np.sum(np.nan_to_num(X) >= BURST_EXCESS, axis=1),
            comm_bursts=np.sum(np.nan_to_num(Y) >= BURST_EXCESS, axis=1),
            any_comm=bool(np.any(step_median_comm > 0)),
            compute_share=float(compute_total / all_total) if all_total > 0 else 0.0,
            spread=float((rank_compute.max() - rank_compute.min()) / rank_compute.max()) if rank_compute.max() > 0 else 0.0,
            wait_share=float(np.nanmean(wait)), imbalance_wait_share=float(np.nanmean(imbalance_wait)),
            evidence={}, rank_stall_excess=mean(Z, axis=1), matrices=(C, M, T, steps), alpha=alpha,
            tested_steps=~np.any(np.isnan(total), axis=0), comm_net=comm_net)
        stats.friedman = friedman_of_ranks(stats.ranked(0))
        stats._fill_evidence(np, C, M, T, big(total, axis=0), complete)
        if exposed:
            stats.evidence["comm_column"] = "comm_exposed"
        if table.breakdown:  # the idle split and kernel types, seconds summed over every rank and step
            stats.evidence["breakdown"] = {name: float(np.sum(values)) for name, values in table.breakdown} | \
                {"comm": float(np.sum(table.comm)), "idle": float(np.sum(table.idle)) if table.idle is not None else None}
        if table.provenance:
            stats.evidence["provenance"] = list(table.provenance)
        if table.provenance_checks:
            stats.evidence["provenance_checks"] = list(table.provenance_checks)
        stats._fill_groups(np, pp)
        return stats

    def _fill_evidence(self, np: Any, C: Any, M: Any, T: Any, step_span: Any, complete: bool) -> None:
        mfu, R = self.mfu, self.rank_count
        center, scale = _robust_outliers(np, self.rank_excess, STRAGGLER_EXCESS)[1:]
        self.evidence.update({
            "rows": self.table.rows, "ranks_count": R, "nodes_count": self.node_count, "steps_count": self.steps,
            "complete": complete,
            "compute_mean": float(np.nanmean(C)), "comm_mean": float(np.nanmean(M)), "stall_mean": float(np.nanmean(T)),
            "compute_share": self.compute_share, "wait_share": self.wait_share,
            "imbalance_wait_share": self.imbalance_wait_share, "compute_spread": self.spread,
            "rank_compute_cv": float(np.std(self.rank_compute) / np.mean(self.rank_compute))
            if np.mean(self.rank_compute) > 0 else 0.0,
            "typical_compute_excess": center, "robust_scale": scale,
            "slowest_rank_step_median": float(np.median(step_span)),
            "mfu": mfu,
            "compute_interval_efficiency": (mfu / self.compute_share) if mfu is not None and self.compute_share > 0 else None,
            "thresholds": {"straggler_excess": STRAGGLER_EXCESS, "outlier_z": OUTLIER_Z, "burst_excess": BURST_EXCESS,
                           "burst_steps": self.burst_floor, "imbalance_spread": IMBALANCE_SPREAD,
                           "imbalance_wait_dominance": IMBALANCE_WAIT_DOMINANCE,
                           "compute_bound_share": COMPUTE_BOUND_SHARE,
                           "low_mfu": LOW_MFU, "low_compute_efficiency": LOW_COMPUTE_EFFICIENCY,
                           "alpha": self.alpha},
            "significance": self._significance(),
        })

    def _significance(self) -> dict[str, Any]:
        """The tests behind the families: the imbalance test always, the straggler tests' setting."""
        f = self.friedman
        assert f is not None
        a = self.family_alpha
        return {"alpha": self.alpha,
                "imbalance": {"test": "Friedman, blocked by step (chi-square approximation)", "alpha": a,
                              "statistic": f.statistic, "df": f.df, "p_value": f.p, "steps": f.steps,
                              "kendall_w": f.kendall_w, "significant": f.p <= a,
                              "steps_to_detect": f.steps_to_detect(a)},
                "straggler": {"test": "rank-sum over steps, exact tail; bursts: Poisson-binomial tail within steps",
                              "alpha": a,
                              "correction": "Bonferroni", "tests": self.straggler_tests,
                              "steps": f.steps}}

    @property
    def straggler_tests(self) -> int:
        """Bonferroni's m: every rank in every signal tested (compute, stall, compute bursts; comm and comm
        bursts when the table has communication)."""
        return self.rank_count * (5 if self.any_comm else 3)

    @property
    def burst_floor(self) -> int:
        return max(BURST_MIN_STEPS, math.ceil(BURST_SHARE * self.steps))

    def _fill_groups(self, np: Any, pp: int | None) -> None:
        R, N = self.rank_count, self.node_count
        order = np.argsort(-np.maximum(self.rank_excess, self.rank_comm_excess), kind="stable")[:LISTED]
        # The slowest rank beside the typical one, mean seconds per step: what
        # the report's per-rank chart draws.
        median_rank = int(np.argsort(self.rank_compute + self.rank_comm, kind="stable")[R // 2])
        for role, i in (("worst_rank", int(order[0])), ("median_rank", median_rank)):
            self.evidence[role] = {"rank": int(self.ranks[i]), "node": self.node_name(i),
                                   "compute": float(self.rank_compute[i]), "comm": float(self.rank_comm[i]),
                                   "stall": float(self.rank_stall[i])}
        self.slowest_ranks = tuple(self.group(f"{int(self.ranks[i])} ({self.node_name(i)})", np.array([i]))
                                   for i in order)
        node_excess = (np.bincount(self.node_of_rank, weights=self.rank_excess, minlength=N)
                       / np.maximum(np.bincount(self.node_of_rank, minlength=N), 1))
        self.slowest_nodes = tuple(self.group(self.table.node_names[k], np.flatnonzero(self.node_of_rank == k))
                                   for k in np.argsort(-node_excess, kind="stable")[:LISTED])
        if pp and pp > 1 and R % pp == 0 and np.array_equal(self.ranks, np.arange(R)):
            per = R // pp
            self.stages = tuple(self.group(f"stage {k}", np.arange(k * per, (k + 1) * per)) for k in range(pp))
