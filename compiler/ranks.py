"""Per-rank timing split (`ranks { samples = file "…" }`) and the diagnosis of
an MFU collapse into its cause family.

The CSV has a header row naming at least the columns ``rank``, ``node``,
``step``, ``compute``, ``comm`` and ``stall`` (any order; other columns are
ignored), then one row per rank and step; times are seconds.

Definitions, for rank r at step t (C compute, M comm, S stall seconds):

- ``total = C + M + S``; a rank's **wait share** is ``(M + S) / total``: the
  part of its step it was not computing.
- **compute excess** ``X[r, t] = C[r, t] / median_r C[·, t] − 1``: how much
  slower than the typical rank of the same step a rank computed.
- **imbalance wait** ``(max_r C[·, t] − C[r, t]) / total[r, t]``: the share of
  a rank's step spent waiting for the slowest computing rank.
- **compute spread** ``(max − min) / max`` of the per-rank mean compute.

The diagnosis, in this order (constants below):

1. ``straggler``: a few ranks compute or communicate slower than the rest,
   consistently (mean excess ≥ ``STRAGGLER_EXCESS`` and ≥ ``OUTLIER_Z`` robust
   standard deviations above the typical rank) or in bursts (compute or comm
   at least ``BURST_EXCESS`` above the step's median in ≥ ``BURST_SHARE`` of
   the steps, while almost no other rank does).  The flagged ranks must be
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

Loading is vectorized (numpy, imported lazily so that a spec without `ranks`
never imports it): 16,384 ranks × 100 steps (1.6 M rows) load and diagnose in
a few seconds (see ``benchmarks/ranks_bench.py``).  Plain CSV (no quotes) takes
the fast path; anything else (quoted cells, stray whitespace, exponents) is
still read exactly, cell by cell.  A bad cell is EFF003 (EFF011 for a negative
or non-finite time) naming the file row and column.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

from .diagnostics import Diagnostic, Span
from .limits import LIMITS

COLUMNS = ("rank", "node", "step", "compute", "comm", "stall")
TIME_COLUMNS = ("compute", "comm", "stall")

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
MAX_NODE_NAME = 128
LISTED = 10  # slowest ranks and nodes shown in the evidence


@dataclass(frozen=True)
class RankTable:
    """The CSV's rows as arrays (numpy), one entry per row."""

    rank: object  # int64
    node: object  # int64 index into node_names
    node_names: tuple[str, ...]
    step: object  # int64
    compute: object  # float64 seconds
    comm: object
    stall: object

    @property
    def rows(self) -> int:
        return int(len(self.rank))


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

    def to_json(self) -> dict:
        """The contract's `diagnosis` object: family, ranks, nodes, then the evidence."""
        return {"family": self.family, "ranks": list(self.ranks), "nodes": list(self.nodes),
                "reason": self.reason, **self.evidence,
                "slowest_ranks": [g.to_json() for g in self.slowest_ranks],
                "slowest_nodes": [g.to_json() for g in self.slowest_nodes],
                "stages": [g.to_json() for g in self.stages]}


# ----------------------------------------------------------------------------
# Loading


class _Bad(Exception):
    """A coded problem with the CSV, raised inside the loader."""

    def __init__(self, code: str, message: str, help: str = ""):
        super().__init__(message)
        self.code, self.message, self.help = code, message, help


def load_rank_table(path: str, rel: str, span: Span | None, diags: list[Diagnostic]) -> RankTable | None:
    """Read the per-rank CSV strictly; a problem becomes one diagnostic at ``span``."""
    try:
        return _load(path, rel)
    except _Bad as bad:
        diags.append(Diagnostic(bad.code, "error", span, bad.message, bad.help))
        return None


def _load(path: str, rel: str) -> RankTable:
    import numpy as np

    from .build import read_regular_file

    try:  # non-blocking, no final symlink, regular files only: a FIFO swapped in is refused
        raw = read_regular_file(path, LIMITS.max_csv_bytes)
    except OSError as exc:
        raise _Bad("EFF020", f"`{rel}` cannot be read: {exc.strerror}")
    if len(raw) > LIMITS.max_csv_bytes:
        raise _Bad("EFF030", f"`{rel}` is larger than {LIMITS.max_csv_bytes:,} bytes")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise _Bad("EFF003", f"`{rel}` line {line}: not valid UTF-8", "save the CSV as UTF-8")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if b"\x00" in raw:
        raise _Bad("EFF003", f"`{rel}` contains NUL bytes: not a CSV file")
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n")
    end = raw.find(b"\n")
    header_text = (raw if end < 0 else raw[:end]).decode("utf-8")
    try:
        header = [h.strip() for h in next(csv.reader([header_text]))] if header_text.strip() else []
    except csv.Error as exc:
        raise _Bad("EFF003", f"`{rel}` row 1: malformed header ({exc})")
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise _Bad("EFF020", f"`{rel}` has no column{'s' if len(missing) > 1 else ''} "
                   + ", ".join(f"`{c}`" for c in missing),
                   "the header must name rank, node, step, compute, comm, stall; found: "
                   + (", ".join(f"`{h}`" for h in header) or "an empty first row"))
    if len(header) > LIMITS.max_csv_columns:
        raise _Bad("EFF030", f"`{rel}` has {len(header)} columns; the limit is {LIMITS.max_csv_columns}")
    body = b"" if end < 0 else raw[end + 1:]
    if body and not body.endswith(b"\n"):
        body += b"\n"
    index = {c: header.index(c) for c in COLUMNS}
    plain = b'"' not in body and b"\r" not in body and not body.startswith(b"\n") and b"\n\n" not in body
    cells = _split_fast(np, body, len(header), rel) if plain else None
    if cells is None:
        cells = _split_slow(np, body, len(header), rel)
    starts, ends, buf = cells
    rows = len(starts)
    if rows == 0:
        raise _Bad("EFF003", f"`{rel}` has a header but no rows", "one row per rank and step")
    if rows > LIMITS.max_csv_rows:
        raise _Bad("EFF030", f"`{rel}` has more than {LIMITS.max_csv_rows:,} rows")
    values = {}
    for name in ("rank", "step", *TIME_COLUMNS):
        j = index[name]
        values[name] = _parse_numbers(np, buf, starts[:, j], ends[:, j], rel, name)
    for name in ("rank", "step"):
        v = values[name]
        bad = np.flatnonzero((v != np.floor(v)) | (v < 0) | (v > 2**53))
        if bad.size:
            r = int(bad[0])
            raise _Bad("EFF003", f"`{rel}` row {r + 2}, column `{name}`: `{_cell(buf, starts[r, index[name]], ends[r, index[name]])}` "
                       "is not a whole number ≥ 0", f"`{name}` is an integer index")
    for name in TIME_COLUMNS:
        v = values[name]
        bad = np.flatnonzero(~np.isfinite(v) | (v < 0))
        if bad.size:
            r = int(bad[0])
            raise _Bad("EFF011", f"`{rel}` row {r + 2}, column `{name}`: `{_cell(buf, starts[r, index[name]], ends[r, index[name]])}` "
                       "is not a finite time ≥ 0 s", "times are seconds, never negative")
    rank = values["rank"].astype(np.int64)
    step = values["step"].astype(np.int64)
    node, node_names = _nodes(np, buf, starts[:, index["node"]], ends[:, index["node"]], rank, rel)
    return RankTable(rank, node, node_names, step, values["compute"], values["comm"], values["stall"])


def _cell(buf, start, end) -> str:
    return bytes(buf[int(start):int(end)]).decode("utf-8", "replace")[:40]


def _split_fast(np, body: bytes, ncols: int, rel: str):
    """Cell boundaries of a quote-free CSV, found with array operations."""
    buf = np.frombuffer(body, dtype=np.uint8)
    seps = np.flatnonzero((buf == 44) | (buf == 10))
    newline_at = np.flatnonzero(buf[seps] == 10)  # which separators end a line
    rows = len(newline_at)
    if rows == 0:
        return np.zeros((0, ncols), np.int64), np.zeros((0, ncols), np.int64), buf
    per_line = np.diff(newline_at, prepend=-1)  # cells per line
    wrong = np.flatnonzero(per_line != ncols)
    if wrong.size:
        r = int(wrong[0])
        raise _Bad("EFF003", f"`{rel}` row {r + 2}: {int(per_line[r])} cells, the header names {ncols}",
                   "every row needs one cell per header column")
    seps = seps.reshape(rows, ncols)
    starts = np.empty_like(seps)
    starts.flat[0] = 0
    starts.flat[1:] = seps.flat[:-1] + 1
    return starts, seps, buf


def _split_slow(np, body: bytes, ncols: int, rel: str):
    """The csv module's reading (quotes, blank lines), re-encoded as one buffer with boundaries."""
    out = bytearray()
    starts, ends = [], []
    reader = csv.reader(io.StringIO(body.decode("utf-8")))
    row_number = 1
    try:
        for row in reader:
            row_number = reader.line_num + 1
            if not row or all(not c.strip() for c in row) and len(row) == 1:
                continue
            if len(row) != ncols:
                raise _Bad("EFF003", f"`{rel}` row {row_number}: {len(row)} cells, the header names {ncols}",
                           "every row needs one cell per header column")
            for cell in row:
                b = cell.strip().encode("utf-8")
                starts.append(len(out))
                out += b
                ends.append(len(out))
                out += b","
    except csv.Error as exc:
        raise _Bad("EFF003", f"`{rel}` row {row_number}: malformed CSV ({exc})")
    buf = np.frombuffer(bytes(out) or b"\n", dtype=np.uint8)
    n = len(starts) // ncols
    return (np.asarray(starts, np.int64).reshape(n, ncols), np.asarray(ends, np.int64).reshape(n, ncols), buf)


_POW10 = tuple(10.0 ** k for k in range(23))


def _parse_numbers(np, buf, starts, ends, rel: str, column: str):
    """Decimal cells to float64, exactly as ``float()`` reads them.

    Plain decimals of up to 15 digits take the vectorized path: the digits
    form an integer below 2**53 and one division by an exact power of ten
    rounds once, so the result is the correctly rounded value.  Any other cell
    (exponent, spaces, more digits) is read by ``float()`` one by one.
    """
    n = len(starts)
    starts = np.ascontiguousarray(starts)
    length = ends - starts
    width = min(int(length.max()) if n else 0, 24)
    padded = buf if len(buf) > int(starts.max(initial=0)) + width else np.concatenate((buf, np.zeros(width + 1, np.uint8)))
    mantissa = np.zeros(n, np.float64)  # exact: at most 15 digits stay below 2**53
    digits = np.zeros(n, np.int8)
    frac = np.zeros(n, np.int8)
    dots = np.zeros(n, np.int8)
    odd = length == 0
    negative = np.zeros(n, bool)
    for j in range(width):
        inside = length > j
        ch = padded[starts + j]
        d = ch - np.uint8(48)  # wraps below '0', so one comparison tests for a digit
        is_digit = (d < 10) & inside
        is_dot = (ch == 46) & inside
        if j == 0:
            negative = inside & (ch == 45)
            odd |= inside & ~(is_digit | is_dot | negative)
        else:
            odd |= inside & ~(is_digit | is_dot)
        mantissa = np.where(is_digit, mantissa * 10.0 + d, mantissa)
        digits += is_digit
        frac += is_digit & (dots > 0)
        dots += is_dot
    odd |= (length > 24) | (digits == 0) | (digits > 15) | (dots > 1)
    pow10 = np.asarray(_POW10)
    value = mantissa / pow10[np.minimum(frac, 22)]
    value = np.where(negative, -value, value)
    for r in np.flatnonzero(odd).tolist():
        text = _cell(buf, starts[r], ends[r]) if length[r] <= 40 else bytes(buf[starts[r]:ends[r]]).decode("utf-8", "replace")
        try:
            value[r] = float(text.strip())
        except ValueError:
            raise _Bad("EFF003", f"`{rel}` row {r + 2}, column `{column}`: `{text[:40]}` is not a number",
                       "every row needs a number in this column")
    return value


def _nodes(np, buf, starts, ends, rank, rel: str):
    """Node index per row, and the node names; each rank must stay on one node."""
    length = ends - starts
    empty = np.flatnonzero(length == 0)
    if empty.size:
        raise _Bad("EFF003", f"`{rel}` row {int(empty[0]) + 2}, column `node`: empty", "name the node of every row")
    width = int(length.max())
    if width > MAX_NODE_NAME:
        r = int(np.argmax(length))
        raise _Bad("EFF003", f"`{rel}` row {r + 2}, column `node`: longer than {MAX_NODE_NAME} bytes")
    ranks, first, rank_index = np.unique(rank, return_index=True, return_inverse=True)
    ref = first[rank_index]  # the first row of the same rank
    differs = length != length[ref]
    last = len(buf) - 1
    for j in range(width):
        inside = j < length
        differs |= inside & (buf[np.minimum(starts + j, last)] != buf[np.minimum(starts[ref] + j, last)])
    if differs.any():
        r = int(np.flatnonzero(differs)[0])
        raise _Bad("EFF003", f"`{rel}` row {r + 2}: rank {int(rank[r])} is on node `{_cell(buf, starts[r], ends[r])}`, "
                   f"but on `{_cell(buf, starts[ref[r]], ends[ref[r]])}` in row {int(ref[r]) + 2}",
                   "a rank stays on one node for the whole file")
    names_per_rank = [bytes(buf[s:e]).decode("utf-8") for s, e in zip(starts[first].tolist(), ends[first].tolist())]
    node_names = tuple(sorted(set(names_per_rank)))
    lookup = {name: i for i, name in enumerate(node_names)}
    node_of_rank = np.asarray([lookup[n] for n in names_per_rank], np.int64)
    return node_of_rank[rank_index], node_names


# ----------------------------------------------------------------------------
# Diagnosis


def _robust_outliers(np, values, minimum: float):
    """Values at least ``minimum`` and OUTLIER_Z robust deviations above the median."""
    center = float(np.median(values))
    scale = max(1.4826 * float(np.median(np.abs(values - center))), ROBUST_SCALE_FLOOR)
    return (values - center >= minimum) & (values - center >= OUTLIER_Z * scale), center, scale


def diagnose(table: RankTable, mfu: float | None = None, pp: int | None = None) -> Diagnosis:
    """The cause family of ``table``'s timing (see the module docstring for the rules)."""
    import numpy as np

    ranks, rank_index = np.unique(table.rank, return_inverse=True)
    steps, step_index = np.unique(table.step, return_inverse=True)
    R, S = len(ranks), len(steps)
    cell = rank_index * S + step_index
    counts = np.bincount(cell, minlength=R * S)
    if counts.max() > 1:
        dup = int(np.flatnonzero(counts > 1)[0])
        rows = np.flatnonzero(cell == dup)[:2] + 2
        raise ValueError(f"rank {int(ranks[dup // S])} step {int(steps[dup % S])} appears twice (rows {rows[0]} and {rows[1]})")
    complete = bool(counts.min() == 1)

    def matrix(values):
        out = np.full(R * S, np.nan)
        out[cell] = values
        return out.reshape(R, S)

    C, M, T = matrix(table.compute), matrix(table.comm), matrix(table.stall)
    mean = np.mean if complete else np.nanmean
    median = np.median if complete else np.nanmedian
    big = np.max if complete else np.nanmax
    total = C + M + T
    with np.errstate(invalid="ignore", divide="ignore"):
        step_median_compute = median(C, axis=0)
        X = C / step_median_compute - 1.0
        step_median_comm = median(M, axis=0)
        Y = np.where(step_median_comm > 0, M / step_median_comm - 1.0, 0.0)
        wait = np.where(total > 0, (M + T) / total, 0.0)
        imbalance_wait = np.where(total > 0, (big(C, axis=0) - C) / total, 0.0)
    rank_compute, rank_comm, rank_stall = mean(C, axis=1), mean(M, axis=1), mean(T, axis=1)
    rank_wait = mean(wait, axis=1)
    rank_excess = mean(X, axis=1)
    rank_comm_excess = mean(Y, axis=1)
    bursts = np.sum(np.nan_to_num(X) >= BURST_EXCESS, axis=1)
    comm_bursts = np.sum(np.nan_to_num(Y) >= BURST_EXCESS, axis=1)
    node_of_rank = np.zeros(R, np.int64)
    node_of_rank[rank_index] = table.node
    N = len(table.node_names)

    # 1. stragglers: consistent outliers, or ranks that burst where others do not.
    consistent, center, scale = _robust_outliers(np, rank_excess, STRAGGLER_EXCESS)
    consistent_comm = _robust_outliers(np, rank_comm_excess, STRAGGLER_EXCESS)[0] if np.any(step_median_comm > 0) else np.zeros(R, bool)
    burst_floor = max(BURST_MIN_STEPS, math.ceil(BURST_SHARE * S))

    def bursty(counts_per_rank):
        typical = float(np.quantile(counts_per_rank, 0.9))
        return (counts_per_rank >= burst_floor) & (counts_per_rank > BURST_OTHERS_FACTOR * typical)

    burst_compute, burst_comm = bursty(bursts), bursty(comm_bursts)
    flagged = consistent | consistent_comm | burst_compute | burst_comm
    flagged_ranks = np.flatnonzero(flagged)
    flagged_nodes = np.unique(node_of_rank[flagged_ranks])
    few = (0 < len(flagged_ranks) <= max(1, math.floor(STRAGGLER_MAX_FRACTION * R))
           and len(flagged_nodes) <= max(1, math.floor(STRAGGLER_MAX_FRACTION * N)))

    compute_share = float(np.nansum(C) / np.nansum(total)) if np.nansum(total) > 0 else 0.0
    spread = float((rank_compute.max() - rank_compute.min()) / rank_compute.max()) if rank_compute.max() > 0 else 0.0
    wait_share = float(np.nanmean(wait))
    imbalance_wait_share = float(np.nanmean(imbalance_wait))
    step_span = big(total, axis=0)
    evidence: dict = {
        "rows": table.rows, "ranks_count": R, "nodes_count": N, "steps_count": S,
        "complete": complete,
        "compute_mean": float(np.nanmean(C)), "comm_mean": float(np.nanmean(M)), "stall_mean": float(np.nanmean(T)),
        "compute_share": compute_share, "wait_share": wait_share, "imbalance_wait_share": imbalance_wait_share,
        "compute_spread": spread,
        "rank_compute_cv": float(np.std(rank_compute) / np.mean(rank_compute)) if np.mean(rank_compute) > 0 else 0.0,
        "typical_compute_excess": center, "robust_scale": scale,
        "slowest_rank_step_median": float(np.median(step_span)),
        "mfu": mfu,
        "compute_interval_efficiency": (mfu / compute_share) if mfu is not None and compute_share > 0 else None,
        "thresholds": {"straggler_excess": STRAGGLER_EXCESS, "outlier_z": OUTLIER_Z, "burst_excess": BURST_EXCESS,
                       "burst_steps": burst_floor, "imbalance_spread": IMBALANCE_SPREAD,
                       "imbalance_wait_dominance": IMBALANCE_WAIT_DOMINANCE, "compute_bound_share": COMPUTE_BOUND_SHARE,
                       "low_mfu": LOW_MFU, "low_compute_efficiency": LOW_COMPUTE_EFFICIENCY},
    }

    def group(name, members) -> GroupStat:
        return GroupStat(name, int(len(members)), float(np.mean(rank_compute[members])), float(np.mean(rank_comm[members])),
                         float(np.mean(rank_stall[members])), float(np.mean(rank_wait[members])),
                         float(np.mean(rank_excess[members])), int(np.max(bursts[members] + comm_bursts[members])))

    order = np.argsort(-np.maximum(rank_excess, rank_comm_excess), kind="stable")[:LISTED]
    # The slowest rank beside the typical one, mean seconds per step: what the
    # report's per-rank chart draws.
    median_rank = int(np.argsort(rank_compute + rank_comm, kind="stable")[R // 2])
    for role, i in (("worst_rank", int(order[0])), ("median_rank", median_rank)):
        evidence[role] = {"rank": int(ranks[i]), "node": table.node_names[node_of_rank[i]],
                          "compute": float(rank_compute[i]), "comm": float(rank_comm[i]), "stall": float(rank_stall[i])}
    slowest_ranks = tuple(group(f"{int(ranks[i])} ({table.node_names[node_of_rank[i]]})", np.array([i])) for i in order)
    node_excess = np.bincount(node_of_rank, weights=rank_excess, minlength=N) / np.maximum(np.bincount(node_of_rank, minlength=N), 1)
    slowest_nodes = tuple(group(table.node_names[k], np.flatnonzero(node_of_rank == k))
                          for k in np.argsort(-node_excess, kind="stable")[:LISTED])
    stages: tuple[GroupStat, ...] = ()
    if pp and pp > 1 and R % pp == 0 and np.array_equal(ranks, np.arange(R)):
        per = R // pp
        stages = tuple(group(f"stage {k}", np.arange(k * per, (k + 1) * per)) for k in range(pp))

    def result(family, rank_ids, node_ids, reason, **extra) -> Diagnosis:
        return Diagnosis(family, tuple(int(ranks[i]) for i in rank_ids), tuple(table.node_names[k] for k in node_ids),
                         reason, {**evidence, **extra}, slowest_ranks, slowest_nodes, stages)

    if few:
        details = []
        for i in flagged_ranks:
            how = []
            if consistent[i]:
                how.append(f"compute {rank_excess[i]:+.0%} vs the step median on average")
            if consistent_comm[i]:
                how.append(f"communication {rank_comm_excess[i]:+.0%} on average")
            if burst_compute[i]:
                how.append(f"compute bursts ≥ {BURST_EXCESS:.0%} slower in {int(bursts[i])} of {S} steps")
            if burst_comm[i]:
                how.append(f"communication bursts in {int(comm_bursts[i])} of {S} steps")
            details.append({"rank": int(ranks[i]), "node": table.node_names[node_of_rank[i]],
                            "compute_excess": float(rank_excess[i]), "comm_excess": float(rank_comm_excess[i]),
                            "burst_steps": int(bursts[i]), "comm_burst_steps": int(comm_bursts[i]),
                            "pattern": "consistent" if consistent[i] or consistent_comm[i] else "bursts",
                            "resource": "compute" if consistent[i] or burst_compute[i] else "comm",
                            "how": "; ".join(how)})
        node_wide = [table.node_names[k] for k in flagged_nodes
                     if np.all(flagged[node_of_rank == k])]
        others_wait = float(np.mean(rank_wait[~flagged])) if np.any(~flagged) else 0.0
        names = ", ".join(f"rank {d['rank']} ({d['node']})" for d in details[:LISTED])
        reason = (f"{len(details)} of {R} ranks are slower than the rest ({names}"
                  f"{', …' if len(details) > LISTED else ''}); the other ranks wait "
                  f"{others_wait:.0%} of their step on average")
        return result("straggler", flagged_ranks, flagged_nodes, reason, stragglers=details,
                      node_wide=node_wide, others_wait_share=others_wait)

    if (spread >= IMBALANCE_SPREAD and imbalance_wait_share >= IMBALANCE_WAIT_MIN
            and imbalance_wait_share >= IMBALANCE_WAIT_DOMINANCE * wait_share):
        top = rank_compute.max()
        critical = np.flatnonzero(rank_compute >= top * (1 - 0.25 * spread))
        nodes = np.unique(node_of_rank[critical])
        reason = (f"ranks finish unevenly: per-rank mean compute spreads {spread:.0%} with no single outlier, "
                  f"and {imbalance_wait_share:.0%} of the step is spent waiting for the slowest ranks "
                  f"(of {wait_share:.0%} not computing)")
        if stages:
            reason += "; pipeline stages: " + ", ".join(f"{g.name} {g.compute_mean:.3g} s" for g in stages)
        return result("imbalance", critical, nodes, reason, critical_ranks=int(len(critical)))

    uniform = spread < IMBALANCE_SPREAD and compute_share >= COMPUTE_BOUND_SHARE
    if uniform and mfu is None:
        return result("none", [], [], f"every rank is uniformly busy computing ({compute_share:.0%} of the step), "
                      "but the run has no MFU: a slow device cannot be told from a healthy one by timing alone",
                      note="no MFU: declare model, work, hardware and timing to tell single_device from healthy")
    cie = evidence["compute_interval_efficiency"]
    if uniform and (mfu < LOW_MFU or (cie is not None and cie < LOW_COMPUTE_EFFICIENCY)):
        reason = (f"every rank is uniformly busy computing ({compute_share:.0%} of the step, spread {spread:.1%}), "
                  f"yet MFU is {mfu:.1%}: each device converts only {cie:.0%} of its compute time into model FLOPs"
                  if cie is not None else f"uniform compute, yet MFU is {mfu:.1%}")
        return result("single_device", np.arange(R), np.arange(N), reason)
    if spread < IMBALANCE_SPREAD and compute_share < COMPUTE_BOUND_SHARE:
        return result("none", [], [], f"ranks are even, but only {compute_share:.0%} of the step is compute on every rank: "
                      "uniform communication or stalls are none of the three families (see the breakdown)")
    return result("none", [], [], f"no straggler, no imbalance (compute spread {spread:.1%}), "
                  + (f"MFU {mfu:.1%}" if mfu is not None else "no MFU"))


def analyse(result, diags: list[Diagnostic]) -> Diagnosis | None:
    """Load the run's `ranks` samples and diagnose them; problems go to ``diags``."""
    block = result.run.block("ranks")
    entry = block.get("samples") if block is not None else None
    ref = entry.value if entry is not None else None
    if ref is None or not hasattr(ref, "path"):
        return None
    table = load_rank_table(ref.path, ref.file, entry.value_span, diags)
    if table is None:
        return None
    mfu = result.metrics.get("mfu")
    par = result.run.block("parallelism")
    pp = par.value("pp") if par is not None else None
    try:
        return diagnose(table, mfu.value if mfu is not None else None, int(pp) if pp else None)
    except ValueError as exc:
        diags.append(Diagnostic("EFF003", "error", entry.value_span, f"`{ref.file}`: {exc}",
                                "one row per rank and step"))
        return None
