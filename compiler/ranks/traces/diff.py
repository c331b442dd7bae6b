"""`effspec traces --diff A B`: what changed between two reductions (spec/traces.md, "Comparing two runs").

A and B are each a table `effspec traces` wrote, or traces (files or folders) reduced here first with the
default options.  The comparison is per rank-step: the step time's median and a bootstrap interval on its
change, the mean per rank-step of each family (compute, exposed communication, other, idle and its split),
of each kernel type, and per rank; the largest change among the families is named.

Nothing here is written to disk; the text goes to the caller.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass

from effspec.ranks.traces.parse import TraceError

FAMILIES = ("compute", "comm_exposed", "other", "idle")
IDLE_SPLIT = ("idle_host_wait", "idle_kernel_wait", "idle_other")
KINDS = ("gemm", "attention", "comm", "memory", "elementwise_other")
BOOTSTRAP = 2000  # resamples; seeded, so the interval is the same on every run
MAX_ROWS = 10_000_000


@dataclass
class Side:
    """One run's rank-steps: column → values in µs (seconds in a table, µs from traces: both made µs)."""

    name: str
    rank: list[int]
    step: list[int]
    columns: dict[str, list[float]]

    @property
    def rows(self) -> int:
        return len(self.rank)


def load(path: str, shown: str) -> Side:
    """A table (any file whose name has no trace format's suffix: .json, .json.gz…) or traces; TraceError for
    anything that is neither."""
    from effspec.ranks.traces.formats import suffixes

    if os.path.isdir(path) or path.endswith(suffixes()):
        return _from_traces(path, shown)
    return _from_table(path, shown)


def _from_traces(path: str, shown: str) -> Side:
    from effspec.ranks.traces import run

    items, problems = run.discover([path])
    if problems:
        raise TraceError(problems[0].code, f"{problems[0].message}", problems[0].help)
    results = run.run_map(items, run.Options(), "serial")
    bad = [r for r in results if isinstance(r, run.Failure)]
    if bad:
        raise TraceError(bad[0].code, f"`{bad[0].file}`: {bad[0].message}", bad[0].help, bad[0].line, bad[0].column)
    side = Side(shown, [], [], {})
    names = ("step_time", *FAMILIES, "comm", *IDLE_SPLIT, *KINDS)
    for c in names:
        side.columns[c] = []
    for s in results:
        for r in s.rows:  # type: ignore[union-attr]
            side.rank.append(s.rank)  # type: ignore[union-attr]
            side.step.append(r.step)
            for c in names:
                side.columns[c].append(float(getattr(r, c)))
    return side


def _from_table(path: str, shown: str) -> Side:
    """The table read by the ranks loader (every check and code of `ranks { samples = file }`), then the
    columns after the first ten, when there, each cell a finite number of seconds."""
    from effspec.ranks.loader import _Bad, _comments, _read, load_rank_table

    diags: list = []
    table = load_rank_table(path, shown, None, diags)
    if table is None:
        d = diags[0]
        raise TraceError(d.code, d.message, d.help)
    side = Side(shown, table.rank.tolist(), table.step.tolist(), {})
    for c in ("step_time", "compute", "comm", "comm_exposed", "idle", "other"):
        values = getattr(table, c, None)
        if values is not None:
            side.columns[c] = [v * 1e6 for v in values.tolist()]
    if "step_time" not in side.columns:
        side.columns["step_time"] = [(a + b + s) * 1e6 for a, b, s in
                                     zip(table.compute.tolist(), table.comm.tolist(), table.stall.tolist(), strict=True)]
    if "comm_exposed" not in side.columns:  # an older table: its comm, and its stall as idle
        side.columns["comm_exposed"] = side.columns["comm"]
    if "idle" not in side.columns:
        side.columns["idle"] = [v * 1e6 for v in table.stall.tolist()]
        side.columns.setdefault("other", [0.0] * side.rows)
    try:
        _, body = _comments(_read(path, shown), shown)
    except _Bad as bad:
        raise TraceError(bad.code, bad.message, bad.help) from None
    reader = csv.reader(io.StringIO(body.decode("utf-8")))
    header = next(reader, [])
    extra = [c for c in (*IDLE_SPLIT, *KINDS) if c in header and c != "comm"]
    at = {c: header.index(c) for c in extra}
    cols: dict[str, list[float]] = {c: [] for c in extra}
    for line, cells in enumerate(reader, table.first_row):
        for c, j in at.items():
            try:
                v = float(cells[j]) * 1e6
            except (IndexError, ValueError):
                raise TraceError("EFF003", f"`{shown}` line {line}: `{c}` is not a number") from None
            if not math.isfinite(v) or v < 0:
                raise TraceError("EFF011", f"`{shown}` line {line}: `{c}` is not a finite time of 0 or more")
            cols[c].append(v)
    side.columns.update(cols)
    return side


def _any(a: Side, b: Side, columns: tuple[str, ...]) -> bool:
    """Whether either run has any time in these columns (a CPU trace has none)."""
    return any(v > 0 for side in (a, b) for c in columns for v in side.columns.get(c, ()))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _median(np, values) -> float:
    return float(np.median(values)) if len(values) else 0.0


def bootstrap(np, a: list[float], b: list[float], n: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float]:
    """A 95 % percentile bootstrap interval on median(B) − median(A), rank-steps resampled on each side."""
    rng = np.random.default_rng(seed)
    A, B = np.asarray(a), np.asarray(b)
    da = np.median(A[rng.integers(0, len(A), (n, len(A)))], axis=1)
    db = np.median(B[rng.integers(0, len(B), (n, len(B)))], axis=1)
    lo, hi = np.percentile(db - da, [2.5, 97.5])
    return float(lo), float(hi)


def _ms(us: float) -> str:
    return f"{us / 1e3:,.3f}"


def _pct(change: float, base: float) -> str:
    return f"{100 * change / base:+.1f} %" if base else "n/a"


def compare(a: Side, b: Side) -> str:
    """The comparison as text."""
    import numpy as np

    for side in (a, b):
        if side.rows == 0:
            raise TraceError("EFF003", f"`{side.name}` has no rank-steps to compare")
        if side.rows > MAX_ROWS:
            raise TraceError("EFF030", f"`{side.name}` has more than {MAX_ROWS:,} rank-steps")
    sa, sb = a.columns["step_time"], b.columns["step_time"]
    ma, mb = _median(np, sa), _median(np, sb)
    lo, hi = bootstrap(np, sa, sb)
    lines = [f"effspec traces --diff: A = {a.name} -> B = {b.name}",
             f"  A: {len(set(a.rank))} ranks, {len(set(a.step))} steps ({a.rows} rank-steps); "
             f"B: {len(set(b.rank))} ranks, {len(set(b.step))} steps ({b.rows} rank-steps)",
             f"  step time, median of the rank-steps: {_ms(ma)} ms -> {_ms(mb)} ms: {'+' if mb >= ma else '-'}"
             f"{_ms(abs(mb - ma))} ms ({_pct(mb - ma, ma)}), 95 % bootstrap interval {_ms(lo)} .. {_ms(hi)} ms"
             + ("" if lo <= 0 <= hi else " (excludes 0)"),
             "",
             f"  {'per rank-step, mean (ms)':<28}{'A':>14}{'B':>14}{'change':>14}"]
    changes: dict[str, float] = {}

    def row(label: str, column: str, indent: str = "  ") -> None:
        if column not in a.columns or column not in b.columns:
            return
        x, y = _mean(a.columns[column]), _mean(b.columns[column])
        changes.setdefault(column, y - x)
        lines.append(f"{indent}{label:<{30 - len(indent)}}{_ms(x):>14}{_ms(y):>14}{('+' if y >= x else '-') + _ms(abs(y - x)):>14}")

    row("step time", "step_time")
    for c in FAMILIES:
        row(c.replace("comm_exposed", "communication (exposed)"), c)
        if c == "idle" and _any(a, b, ("idle_host_wait", "idle_kernel_wait")):
            for s in IDLE_SPLIT:
                row(s.replace("idle_", "").replace("_", " "), s, "      ")
    if all(k in a.columns and k in b.columns for k in KINDS) and _any(a, b, ("gemm", "attention", "memory",
                                                                            "elementwise_other")):
        lines.append("  kernel types (the union of each type's device time; types may overlap):")
        for k in KINDS:
            row(k.replace("comm", "communication").replace("_", "/"), k, "      ")
    lines += ["", "  the change: " + cause(a, b)]
    return "\n".join(lines) + "\n"


def _rank_means(side: Side) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, list[float]]] = {}
    for i, r in enumerate(side.rank):
        d = out.setdefault(r, {})
        for c in ("step_time", *FAMILIES):
            d.setdefault(c, []).append(side.columns[c][i])
    return {r: {c: _mean(v) for c, v in d.items()} for r, d in out.items()}


def _signed(us: float) -> str:
    return ("+" if us >= 0 else "-") + _ms(abs(us)) + " ms"


CAUSE_SHARE = 0.5  # a rank's own time (compute, other, idle) that moved by half the step-time change is its cause


def cause(a: Side, b: Side) -> str:
    """What changed, per rank: in synchronous training every rank's step moves together (the others wait in
    exposed communication), so the cause is the rank whose own time (compute, other, idle) moved by at
    least half the step-time change; else, when exposed communication moved on every rank, communication."""
    ma, mb = _rank_means(a), _rank_means(b)
    common = sorted(set(ma) & set(mb))
    if not common:
        return "no rank is in both runs: nothing to compare rank by rank"
    step = _mean([mb[r]["step_time"] - ma[r]["step_time"] for r in common])
    own = [(mb[r][c] - ma[r][c], r, c) for r in common for c in ("compute", "other", "idle")]
    delta, rank, family = max(own, key=lambda x: (abs(x[0]), -x[1], x[2]))
    comm = {r: mb[r]["comm_exposed"] - ma[r]["comm_exposed"] for r in common}
    if step and abs(delta) >= CAUSE_SHARE * abs(step):
        others = [comm[r] for r in common if r != rank]
        waited = (f"; the other ranks' exposed communication {_signed(_mean(others))} (waiting for it)"
                  if others and abs(_mean(others)) >= CAUSE_SHARE * abs(delta) else "")
        return f"rank {rank}'s {family} {_signed(delta)} per step (step time {_signed(step)}){waited}"
    low, high = min(comm.values()), max(comm.values())
    if step and min(abs(low), abs(high)) >= CAUSE_SHARE * abs(step) and (low > 0) == (high > 0):
        return f"exposed communication on every rank, {_signed(low)} to {_signed(high)} per step (step time {_signed(step)})"
    return f"no single rank or family: step time {_signed(step)}; the largest own change is rank {rank}'s {family} {_signed(delta)}"
