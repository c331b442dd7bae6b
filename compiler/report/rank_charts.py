"""The per-rank charts: each rank's split of its step time, and the straggler's timeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.report.chart_style import INK, STYLES, _styled, markup, new_figure, short_label, svg
from effspec.report.step_charts import MAX_SERIES_POINTS, SERIES_BUCKETS

if TYPE_CHECKING:
    from typing import Any

    from markupsafe import Markup

    from effspec.ranks.stats import RankProfile


MAX_RANK_BARS = 64  # bars in the per-rank chart: past it, ranks are averaged in bins (a straggler keeps its own bar)
MAX_RANK_TICKS = 64  # a rank id under every bar up to this many bars
MAX_MARKED = 3  # flagged ranks the caption names (the chart marks every one)
RANK_PARTS = ("compute", "comm", "stall")


@dataclass(frozen=True)
class RankBars:
    """The bars of the per-rank chart, left to right: one per rank, or a bin of consecutive ranks in the order."""

    ids: tuple[str, ...]  # "rank-37" or "bin-3": each bar's segments are drawn with the gid ID-compute, ID-comm, ID-stall
    labels: tuple[str, ...]  # under the bar: the rank id, or the bin's positions in the order ("17–32")
    values: dict[str, list[float]]  # compute, comm, stall seconds of each bar
    flagged: tuple[int, ...]  # bar indexes of flagged ranks
    sort_by: str
    singles: int  # bars of one rank before the bins (all of them when nothing is binned)
    bin_size: int  # 0: no bins


def rank_bars(profile: RankProfile, sort_by: str) -> RankBars:
    """Ranks sorted by their mean ``sort_by`` seconds, slowest first (ties by rank id); past
    ``MAX_RANK_BARS`` ranks the flagged ones keep a bar each and the rest are averaged in bins."""
    import numpy as np

    means = {"compute": np.asarray(profile.compute), "comm": np.asarray(profile.comm), "stall": np.asarray(profile.stall)}
    ranks = np.asarray(profile.ranks)
    order = [int(i) for i in np.lexsort((ranks, -means[sort_by]))]
    flagged_ids = set(profile.flagged)
    if len(order) <= MAX_RANK_BARS:
        groups = [[i] for i in order]
        singles, size = len(order), 0
    else:
        first = [i for i in order if int(ranks[i]) in flagged_ids][:MAX_RANK_BARS // 8]
        rest = [i for i in order if i not in first]
        size = -(-len(rest) // (MAX_RANK_BARS - len(first)))
        groups = [[i] for i in first] + [rest[k:k + size] for k in range(0, len(rest), size)]
        singles = len(first)
    ids, labels = [], []
    for n, members in enumerate(groups):
        if n < singles:
            ids.append(f"rank-{int(ranks[members[0]])}")
            labels.append(str(int(ranks[members[0]])))
        else:
            start = singles + (n - singles) * size + 1
            ids.append(f"bin-{n - singles + 1}")
            labels.append(f"{start}\u2013{start + len(members) - 1}")
    values = {p: [float(np.mean(means[p][m])) for m in groups] for p in RANK_PARTS}
    flagged = tuple(n for n in range(singles) if int(ranks[groups[n][0]]) in flagged_ids)
    return RankBars(tuple(ids), tuple(labels), values, flagged, sort_by, singles, size)


def _quantity(profile: RankProfile, name: str) -> str:
    return profile.comm_label if name == "comm" else name


def _spread_labels(ys: list[float], gap: float) -> list[float]:
    """Label heights at least ``gap`` apart, in the order given (bottom to top), as near their points as that allows."""
    out: list[float] = []
    for y in ys:
        out.append(max(y, out[-1] + gap) if out else y)
    return out


def rank_split_caption(profile: RankProfile, bars: RankBars) -> str:
    parts = [f"Each rank's mean seconds per step, split into compute (dark), {profile.comm_label} (hatched) and stall "
             f"(light); the {len(profile.ranks):,} ranks sorted by mean {_quantity(profile, bars.sort_by)} time, slowest first"]
    if bars.flagged:
        named = ", ".join(f"rank {bars.labels[n]} ({short_label(profile.nodes[_rank_index(profile, bars.labels[n])])})"
                          for n in bars.flagged[:MAX_MARKED])
        more = f" and {len(bars.flagged) - MAX_MARKED} more" if len(bars.flagged) > MAX_MARKED else ""
        parts.append(f"the straggler{'s' if len(bars.flagged) > 1 else ''}, {named}{more}, marked with a triangle")
    if bars.bin_size:
        kept = "the other" if bars.singles else "the"
        parts.append(f"{kept} ranks averaged in bins of up to {bars.bin_size} consecutive ranks in that order "
                     "(labelled by their positions in it)")
    return "; ".join(parts) + "."


def _rank_index(profile: RankProfile, label: str) -> int:
    import numpy as np

    return int(np.flatnonzero(np.asarray(profile.ranks) == int(label))[0])


def rank_split_chart(profile: RankProfile | None, salt: str) -> tuple[Markup, str] | None:
    """The per-rank split (compute, communication, stall) of every rank, sorted slowest first; (svg, caption),
    or None below two ranks."""
    if profile is None or len(profile.ranks) < 2:
        return None
    bars = rank_bars(profile, profile.timeline_quantity or "compute")
    n = len(bars.ids)
    with _styled(salt):
        fig, ax = new_figure(6.4, 2.5)
        bottom = [0.0] * n
        for j, part in enumerate(RANK_PARTS):
            color, hatch = STYLES[j]
            heights = bars.values[part]
            drawn = ax.bar(range(n), heights, bottom=bottom, width=0.8, color=color, hatch=hatch, edgecolor=INK, linewidth=0.3)
            for rect, bar_id in zip(drawn, bars.ids, strict=True):
                rect.set_gid(f"{bar_id}-{part}")
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        top = max(bottom) or 1.0
        if bars.flagged:  # a triangle over each flagged bar, and one word beside the last
            marks = list(bars.flagged)
            (drawn_marks,) = ax.plot(marks, [bottom[k] + top * 0.07 for k in marks], ls="none", marker="v", color=INK,
                                     markersize=4)
            drawn_marks.set_gid("flagged")
            ax.annotate("straggler" + ("s" if len(marks) > 1 else ""), (marks[-1], bottom[marks[-1]] + top * 0.07),
                        xytext=(5, 0), textcoords="offset points", ha="left", va="center", fontsize=6.5)
        # Direct labels at the right edge, beside the last bar's segments, kept apart.
        mids, level = [], 0.0
        for part in RANK_PARTS:
            mids.append(level + bars.values[part][-1] / 2)
            level += bars.values[part][-1]
        for part, y in zip(RANK_PARTS, _spread_labels(mids, top * 0.09), strict=True):
            ax.annotate(_quantity(profile, part), (1.0, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=6.5)
        ticks = range(n) if n <= MAX_RANK_TICKS else range(0, n, -(-n // 8))
        ax.set_xticks(list(ticks))
        ax.set_xticklabels([bars.labels[k] for k in ticks], rotation=90 if n > 16 or bars.bin_size else 0,
                           fontsize=5 if n > 24 else 6.5)
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_ylim(0, top * (1.15 if bars.flagged else 1.05))
        binned = f" (bins of up to {bars.bin_size}: positions in that order)" if bars.bin_size else ""
        ax.set_xlabel(f"rank, slowest mean {_quantity(profile, bars.sort_by)} first" + binned)
        ax.set_ylabel("seconds per step (mean)")
        fig.subplots_adjust(left=0.08, right=0.84, bottom=0.27, top=0.96)
        return markup(svg(fig, salt)), rank_split_caption(profile, bars)


def timeline_drawn(timeline: Any) -> list[int]:
    """The indexes of the steps the straggler's timeline draws: every step up to
    MAX_SERIES_POINTS, else the straggler's fastest and slowest step in each of SERIES_BUCKETS
    runs of consecutive steps (min/max bucketing, as the step-time series; a run without a row
    of that rank by its first step)."""
    import numpy as np

    n = len(timeline)
    if n <= MAX_SERIES_POINTS:
        return list(range(n))
    values = np.asarray(timeline, float)
    out: list[int] = []
    for b in range(SERIES_BUCKETS):
        lo, hi = b * n // SERIES_BUCKETS, (b + 1) * n // SERIES_BUCKETS
        chunk = values[lo:hi]
        if np.all(np.isnan(chunk)):
            out.append(lo)
        else:
            out.extend(sorted({lo + int(np.nanargmin(chunk)), lo + int(np.nanargmax(chunk))}))
    return out


def straggler_timeline_caption(profile: RankProfile) -> str:
    qty = _quantity(profile, profile.timeline_quantity)
    n, drawn = len(profile.steps), len(timeline_drawn(profile.timeline))
    bucketed = (f" {drawn:,} of {n:,} steps drawn: in each of {SERIES_BUCKETS:,} runs of about "
                f"{round(n / SERIES_BUCKETS):,} consecutive steps, the straggler's fastest and slowest step "
                "(min/max bucketing), and the other ranks' median and band at those steps." if drawn < n else "")
    return (f"{qty[:1].upper() + qty[1:]} seconds at each step of rank {profile.timeline_rank} "
            f"({short_label(profile.timeline_node)}), the straggler (dashed), against the median of the other "
            f"{profile.others:,} rank{'s' if profile.others != 1 else ''} (solid) and their 10th to 90th percentile "
            "band (shaded)." + bucketed)


def straggler_timeline_chart(profile: RankProfile | None, salt: str) -> tuple[Markup, str] | None:
    """The straggler's seconds per step against the other ranks' median and p10–p90 band; (svg, caption),
    or None without a straggler or below two steps."""
    if profile is None or profile.timeline is None or len(profile.steps) < 2:
        return None
    import numpy as np

    drawn = timeline_drawn(profile.timeline)
    steps = [int(profile.steps[i]) for i in drawn]
    series = {"rank": np.asarray(profile.timeline, float)[drawn], "median": np.asarray(profile.others_median, float)[drawn],
              "p10": np.asarray(profile.others_p10, float)[drawn], "p90": np.asarray(profile.others_p90, float)[drawn]}
    with _styled(salt):
        fig, ax = new_figure(6.4, 2.2)
        band = ax.fill_between(steps, series["p10"], series["p90"], facecolor="#d9d9d9", edgecolor="#9a9a9a", lw=0.3)
        band.set_gid("others-band")
        (median,) = ax.plot(steps, series["median"], color="#6a6a6a", lw=1.0)
        median.set_gid("others-median")
        (line,) = ax.plot(steps, series["rank"], color=INK, lw=1.0, ls="--")
        line.set_gid("straggler")
        lo = float(np.nanmin([np.nanmin(v) for v in series.values()]))
        hi = float(np.nanmax([np.nanmax(v) for v in series.values()]))
        pad = (hi - lo) * 0.12 or abs(hi) * 0.01 or 1e-6
        ax.set_ylim(lo - pad, hi + pad)
        last = {k: float(v[~np.isnan(v)][-1]) if np.any(~np.isnan(v)) else lo for k, v in series.items()}
        names = {"p10": "10th percentile", "median": f"median of {profile.others:,} others",
                 "p90": "90th percentile", "rank": f"rank {profile.timeline_rank}"}
        keys = sorted(names, key=lambda k: last[k])
        for key, y in zip(keys, _spread_labels([last[k] for k in keys], (hi - lo + 2 * pad) * 0.09), strict=True):
            ax.annotate(names[key], (1.0, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=6.5)
        ax.set_xlim(steps[0] - 0.5, steps[-1] + 0.5)
        ax.set_xlabel("step")
        ax.set_ylabel(f"{_quantity(profile, profile.timeline_quantity)} seconds")
        fig.subplots_adjust(left=0.08, right=0.82, bottom=0.2, top=0.95)
        return markup(svg(fig, salt)), straggler_timeline_caption(profile)
