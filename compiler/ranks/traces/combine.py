"""Many reduced traces to one per-rank table: the cross-file checks and the CSV.

Checks: two files claiming one rank (error), ranks missing from
0..world_size−1 (an error unless ``partial``, then recorded), files that
disagree on the world size (error), and clock skew across hosts (a warning:
each rank's figures are durations on its own clock and rows are matched by
step number, so the table is aligned on step boundaries whatever the clocks).

The CSV starts with ``# effspec-traces 2: …`` comment lines (the method, one
line per file with its size and SHA-256, and any skew), then the header
``rank,node,step,step_time,compute,comm,comm_exposed,idle,other,stall`` (then, since issue 32, the idle split
and the kernel types) and one
row per rank and step, in seconds, each float written in full (``repr``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from urllib.parse import quote

from effspec.ranks.traces import METHOD
from effspec.ranks.traces.reduce import TraceSummary

HEADER = ("rank", "node", "step", "step_time", "compute", "comm", "comm_exposed", "idle", "other", "stall",
          # Added by issue 32, after the old columns (readers of the first ten are unchanged):
          "idle_host_wait", "idle_kernel_wait", "idle_other", "gemm", "attention", "memory", "elementwise_other")
TOP_NAME_CHARS = 160  # a kernel name in a `kernel` line is cut to this many characters (templated names run to KBs)
SKEW_FRACTION = 0.5  # step boundaries further apart than half the median step time cannot be real


@dataclass(frozen=True)
class Problem:
    """A coded finding about the set of files (not one file's content)."""

    code: str
    severity: str
    message: str
    help: str = ""
    file: str = ""


def quote_name(name: str) -> str:
    """A file name in a provenance line: one token, printable ASCII, reversible, and no comma (a spreadsheet
    splits the comment line at commas, and a cell after one could start with ``=``, ``+``, ``-`` or ``@``)."""
    # Undecodable bytes of a file name (lone surrogates) are written as the bytes they were.
    return quote(name.encode("utf-8", "surrogateescape"), safe="/._-+@:~")


def ranges(values: list[int]) -> str:
    """``[0, 1, 2, 5]`` as ``0..2,5``."""
    return _spans(_runs(sorted(values)))


def _runs(values: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for v in values:
        if out and v == out[-1][1] + 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def _spans(runs: list[tuple[int, int]], limit: int | None = None) -> str:
    """``[(0, 2), (5, 5)]`` as ``0..2,5``; past ``limit`` characters, cut at a comma with ``,…``."""
    parts: list[str] = []
    size = 0
    for a, b in runs:
        part = str(a) if a == b else f"{a}..{b}"
        if limit is not None and parts and size + len(part) + 1 > limit:
            return ",".join(parts) + ",…"
        parts.append(part)
        size += len(part) + 1
    return ",".join(parts)


def gaps(present: list[int], world: int) -> list[tuple[int, int]]:
    """The runs of 0..world−1 with no trace, found from the ranks present
    (never by listing a world of millions rank by rank)."""
    out: list[tuple[int, int]] = []
    expected = 0
    for r in sorted(present):
        if r > expected:
            out.append((expected, r - 1))
        expected = r + 1
    if expected < world:
        out.append((expected, world - 1))
    return out


def count(runs: list[tuple[int, int]]) -> int:
    return sum(b - a + 1 for a, b in runs)


def check(summaries: list[TraceSummary], partial: bool) -> tuple[list[Problem], list[tuple[int, int]], int]:
    """The problems of the set, the missing ranks (as runs), and the world size."""
    problems: list[Problem] = [Problem("EFF003", "info", note, "", s.file) for s in summaries for note in s.notes]
    by_rank: dict[int, TraceSummary] = {}
    for s in summaries:
        other = by_rank.get(s.rank)
        if other is not None:
            problems.append(Problem("EFF003", "error", f"rank {s.rank} is claimed by two traces: `{other.file}` and `{s.file}`",
                                    "each rank writes one trace: remove the copy, or reduce the two runs separately", s.file))
        else:
            by_rank[s.rank] = s
    worlds = sorted({s.world_size for s in summaries if s.world_size is not None})
    if len(worlds) > 1:
        problems.append(Problem("EFF003", "error", "the traces disagree on the world size: "
                                + ", ".join(str(w) for w in worlds[:10]) + (", …" if len(worlds) > 10 else ""),
                                "reduce one run's traces at a time"))
    world = max([*worlds, max(by_rank) + 1]) if by_rank else 0
    missing = gaps(list(by_rank), world)
    if missing and not partial:
        problems.append(Problem("EFF003", "error", f"{count(missing):,} of ranks 0..{world - 1} have no trace: "
                                f"{_spans(missing, 200)}",
                                "pass every rank's trace, or --partial to reduce a sample (the missing ranks are recorded)"))
    problems += _skew(summaries)
    return problems, missing, world


def _skew(summaries: list[TraceSummary]) -> list[Problem]:
    """Nodes whose step boundaries sit far from the others' on the shared step numbers."""
    starts: dict[int, list[float]] = {}
    for s in summaries:
        for row, t in zip(s.rows, s.step_starts, strict=False):
            starts.setdefault(row.step, []).append(t)
    centre = {n: statistics.median(v) for n, v in starts.items() if len(v) > 1}
    if not centre:
        return []
    nodes: dict[str, list[float]] = {}
    for s in summaries:
        offsets = [t - centre[row.step] for row, t in zip(s.rows, s.step_starts, strict=False) if row.step in centre]
        if offsets:
            nodes.setdefault(s.node, []).append(statistics.median(offsets))
    node_offset = {n: statistics.median(v) for n, v in nodes.items()}
    typical = statistics.median(node_offset.values())
    step = statistics.median(r.step_time for s in summaries for r in s.rows)
    skewed = {n: o - typical for n, o in node_offset.items() if abs(o - typical) > SKEW_FRACTION * step}
    if not skewed:
        return []
    worst = max(skewed, key=lambda n: abs(skewed[n]))
    return [Problem("EFF011", "warning",
                    f"clock skew: the step boundaries of {len(skewed)} node{'s' if len(skewed) > 1 else ''} sit "
                    f"{skewed[worst] / 1e6:+.3f} s (node `{worst}`) from the other nodes', more than half a step "
                    f"({step / 1e6:.3f} s): their clocks disagree",
                    "aligned on step boundaries: every figure is a duration on its own rank's clock and rows are "
                    "matched by step number, so the table does not depend on the clocks (recorded in the CSV)")]


def skew_lines(problems: list[Problem], summaries: list[TraceSummary]) -> list[str]:
    return [f"{METHOD}: skew {p.message.split(': ', 1)[1]}; aligned=step-boundaries" for p in problems
            if p.message.startswith("clock skew")]


def quote_kernel(name: str) -> str:
    """A kernel name in a `kernel` line: percent-encoded like a file name (no comma, space or control
    character), any lone surrogate a JSON ``\\ud800`` escape made written as its bytes."""
    return quote(name.encode("utf-8", "surrogatepass"), safe="/._-+@:~")


def kernel_lines(summaries: list[TraceSummary], k: int = 10) -> list[str]:
    """The ``k`` kernels with the most device time over every trace (summed over launches and ranks), one
    line each: bounded whatever the number of ranks.  A name is percent-encoded (no comma, no leading
    formula character) and cut to TOP_NAME_CHARS characters first (``cut=yes``)."""
    total: dict[str, list] = {}
    for s in summaries:
        for name, kind, us, launches in s.top:
            t = total.setdefault(name, [kind, 0.0, 0, 0])
            t[1] += us
            t[2] += launches
            t[3] += 1
    best = sorted(total, key=lambda n: (-total[n][1], n))[:k]
    return [f"{METHOD}: kernel top={i} type={total[n][0]} time={_s(total[n][1])} launches={total[n][2]} "
            f"ranks={total[n][3]} name={quote_kernel(n[:TOP_NAME_CHARS])}" + (" cut=yes" if len(n) > TOP_NAME_CHARS else "")
            for i, n in enumerate(best, 1)]


def _s(us: float) -> str:
    return repr(us / 1e6)


MISSING_CHARS = 1000  # the missing ranks in the provenance line, then `,…` (their count is always there)


def _missing(missing: list[tuple[int, int]]) -> str:
    if not missing:
        return ""
    text = _spans(missing, MISSING_CHARS)
    return f" partial=yes missing={text}" + (f" missing_count={count(missing)}" if text.endswith(",…") else "")


def to_csv(summaries: list[TraceSummary], missing: list[tuple[int, int]], world: int, problems: list[Problem]) -> str:
    """The table with its provenance, deterministic for a given set of files (in any order)."""
    summaries = sorted(summaries, key=lambda s: (s.rank, s.file))
    steps = sorted({r.step for s in summaries for r in s.rows})
    kinds = ",".join(sorted({s.kind for s in summaries}))
    lines = [f"# {METHOD}: method=spec/traces.md files={len(summaries)} ranks={len(summaries)} world_size={world} "
             f"steps={ranges(steps) if len(steps) < 1000 else f'{steps[0]}..{steps[-1]}'} kind={kinds} "
             f"bytes={sum(s.bytes for s in summaries)}"
             + _missing(missing)]
    for s in summaries:
        lines.append(f"# {METHOD}: file={quote_name(s.file)} bytes={s.bytes} sha256={s.sha256} rank={s.rank} "
                     f"node={s.node} node_from={s.node_source} kind={s.kind} steps={len(s.rows)} events={s.events}"
                     + (f" skipped={s.skipped}" if s.skipped else "")
                     + (f" launch_delay_p50={s.launch_delay[0]:.3f} launch_delay_p95={s.launch_delay[1]:.3f}"
                        if s.launch_delay else "")
                     + (f" queue_mean={s.queue[0]:.3f} queue_max={s.queue[1]}" if s.queue else ""))
    lines += ["# " + line for line in skew_lines(problems, summaries)]
    lines += ["# " + line for line in kernel_lines(summaries)]
    lines.append(",".join(HEADER))
    for s in summaries:
        for r in s.rows:
            lines.append(f"{s.rank},{s.node},{r.step},{_s(r.step_time)},{_s(r.compute)},{_s(r.comm)},"
                         f"{_s(r.comm_exposed)},{_s(r.idle)},{_s(r.other)},{_s(r.idle + r.other)},"
                         f"{_s(r.idle_host_wait)},{_s(r.idle_kernel_wait)},{_s(r.idle_other)},{_s(r.gemm)},"
                         f"{_s(r.attention)},{_s(r.memory)},{_s(r.elementwise_other)}")
    return "\n".join(lines) + "\n"
