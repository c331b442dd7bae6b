"""Section 9, step-time statistics and ranks: each run's step samples (median with its bootstrap
interval, percentiles, stalls) and its per-rank diagnosis (the family, the ranks and nodes it
names, its significance and evidence, the trace breakdown and the traces' provenance)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from effspec.diagnostics import printable
from effspec.display import exact_digits, percent, quantity, sig
from effspec.engine.stats import MIN_SAMPLES
from effspec.report.sections.views import Row, Table
from effspec.report.words import clean

if TYPE_CHECKING:
    from effspec.engine.results import RunResult


def step_stats(rr: RunResult) -> tuple[Row, ...]:
    st = rr.step_stats
    if st is None:
        return ()

    def s(v: float) -> str:
        return quantity(v, "s", exact_digits(v))

    # Below EFF502's count a bootstrap interval and tail percentiles rest on too few points: not printed.
    spread = st.count >= MIN_SAMPLES
    why = (f"not reported: {st.count} sample{'s' if st.count != 1 else ''} after warm-up, "
           f"and a spread needs at least {MIN_SAMPLES} (EFF502)")
    rows = [
        Row("samples", f"{st.rows}", f"{st.warmup_excluded} warm-up excluded, "
            + (f"{len(st.implausible_excluded)} implausible excluded (EFF505), " if st.implausible_excluded else "") + f"{st.count} kept"),
        Row("median", s(st.median),
            ("95 % bootstrap CI " + f"{s(st.median_ci[0])} – {s(st.median_ci[1])}" if st.median_ci else "no CI")
            if spread else "confidence interval " + why),
        Row("mean", s(st.mean), ""),
        Row("min / max", f"{s(st.min)} / {s(st.max)}", ""),
        Row("p5 / p95 / p99", f"{s(st.p5)} / {s(st.p95)} / {s(st.p99)}", "") if spread
        else Row("p5 / p95 / p99", "—", "percentiles " + why),
        Row("stall threshold", s(st.stall_threshold), "1.5 × median"),
        Row("stall steps", f"{st.stall_steps}", percent(st.stall_time_share) + " of the summed step time"),
        Row("summed step time", s(st.total_time), f"the median predicts {s(st.predicted_time)} (count × median)"),
    ]
    return tuple(rows)


# The evidence figures a reader needs to follow the diagnosis, in reading
# order; the full evidence is in the JSON output.
_DIAGNOSIS_EVIDENCE = (
    ("compute_share", "compute share of rank time", "ratio"),
    ("wait_share", "wait share (comm + stall)", "ratio"),
    ("imbalance_wait_share", "wait for the slowest rank's compute", "ratio"),
    ("compute_spread", "compute spread across ranks (max − min) / max", "ratio"),
    ("mfu", "MFU", "ratio"),
    ("compute_interval_efficiency", "MFU / compute share", "ratio"),
    ("rows", "rows read", "count"),
    ("ranks_count", "ranks", "count"),
    ("nodes_count", "nodes", "count"),
    ("steps_count", "steps", "count"),
)


def diagnosis(rr: RunResult) -> tuple[tuple[Row, ...], tuple[Table, ...]]:
    diag = rr.diagnosis
    if diag is None:
        return (), ()
    evidence: dict[str, Any] = diag.evidence or {}
    # Values sit in a numeric, unwrapped column: the reason is the family's note.
    rows = [
        Row("family", clean(diag.family), clean(diag.reason)),
        Row("ranks named", ", ".join(str(r) for r in diag.ranks[:10]) + (", …" if len(diag.ranks) > 10 else "") or "—"),
        Row("nodes named", ", ".join(clean(n) for n in diag.nodes[:10]) + (", …" if len(diag.nodes) > 10 else "") or "—"),
    ]
    significance = significance_row(evidence)
    if significance is not None:
        rows.append(significance)
    for key, name, kind in _DIAGNOSIS_EVIDENCE:
        value = evidence.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            rows.append(Row(name, percent(value) if kind == "ratio" else f"{value:,}"))
    tables = []
    for title, groups in (("slowest ranks", diag.slowest_ranks), ("slowest nodes", diag.slowest_nodes),
                          ("pipeline stages", diag.stages)):
        if groups:
            tables.append(Table(title, ("name", "ranks", "compute s", "comm s", "stall s", "wait share", "compute excess"),
                                tuple((clean(g.name), str(g.ranks), sig(g.compute_mean), sig(g.comm_mean),
                                       sig(g.stall_mean), percent(g.wait_share), f"{g.compute_excess:+.1%}")
                                      for g in groups)))
    rows += _breakdown_rows(evidence.get("breakdown"))
    lines = list(evidence.get("provenance", ()))
    checks = list(evidence.get("provenance_checks", ()))
    checks += ["declared"] * (len(lines) - len(checks))  # what no check says: the CSV's claim
    rows += [Row("provenance", clean(line)) for line in lines if " file=" not in line]
    files = [(line, check) for line, check in zip(lines, checks, strict=False) if " file=" in line]
    if files:
        rows.append(Row("provenance checked", _provenance_summary([check for _, check in files])))
    provenance = _provenance_table(files)
    return tuple(rows), tuple(tables) + ((provenance,) if provenance else ())


_IDLE_CAUSES = (("idle_host_wait", "host wait"), ("idle_kernel_wait", "kernel wait"), ("idle_other", "other"))
_KERNEL_TYPES = (("gemm", "GEMM"), ("attention", "attention"), ("comm", "communication"), ("memory", "memory"),
                 ("elementwise_other", "elementwise/other"))


def _duration(seconds: float) -> str:
    """A summed trace time in the unit that keeps it short: µs, ms or s, four significant digits."""
    if seconds == 0:
        return "0 s"
    scale, unit = (1e6, "µs") if seconds < 1e-3 else (1e3, "ms") if seconds < 1 else (1.0, "s")
    return f"{sig(seconds * scale)} {unit}"


def _breakdown_rows(breakdown: object) -> list[Row]:
    """The trace table's idle split (shares of the idle time) and kernel types (seconds; each the union of its
    type's device events, so types that overlap on two streams count in both), summed over ranks and steps."""
    if not isinstance(breakdown, dict):
        return []
    rows = []
    idle = sum(float(breakdown.get(k) or 0.0) for k, _ in _IDLE_CAUSES)
    if any(k in breakdown for k, _ in _IDLE_CAUSES) and idle > 0:
        parts = [f"{name} {_duration(float(breakdown.get(k) or 0.0))} ({percent(float(breakdown.get(k) or 0.0) / idle)})"
                 for k, name in _IDLE_CAUSES]
        rows.append(Row("idle by cause", ", ".join(parts),
                        f"of {_duration(idle)} idle, summed over ranks and steps: host wait is the device waiting for a "
                        "launch, kernel wait is queued work that did not start (another stream, a sync)"))
    if any(k in breakdown for k in ("gemm", "attention", "memory", "elementwise_other")):
        parts = [f"{name} {_duration(float(breakdown.get(k) or 0.0))}" for k, name in _KERNEL_TYPES]
        rows.append(Row("device time by kernel type", ", ".join(parts),
                        "summed over ranks and steps; each type is the union of its kernels' time, so two types "
                        "running on two streams at once both count it"))
    return rows


def significance_row(evidence: dict[str, Any]) -> Row | None:
    """The family's p-value and effect size (the imbalance test's when the family has none)."""
    sig = evidence.get("significance")
    if not isinstance(sig, dict) or not isinstance(sig.get("imbalance"), dict):
        return None
    imb = sig["imbalance"]
    p, effect = evidence.get("p_value"), evidence.get("effect_size")
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        p = imb.get("p_value")
        effect = {"measure": "Kendall's W of per-step compute ranks (imbalance test)", "value": imb.get("kendall_w")}
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        return None
    value = (f"p < {p:.1e}" if p <= 1e-12 or evidence.get("p_is_bound") is True
             else f"p = {p:.2g}" if p >= 1e-3 else f"p = {p:.1e}")
    note = [f"α = {float(sig.get('alpha', 0)):.0%} for the diagnosis, {float(imb.get('alpha', 0)):.1%} per family"]
    if isinstance(effect, dict) and isinstance(effect.get("value"), (int, float)):
        note.append(f"effect: {clean(str(effect.get('measure', '')))} = {float(effect['value']):.3g}")
    need = imb.get("steps_to_detect")
    if p == imb.get("p_value") and not imb.get("significant") and isinstance(need, int):
        note.append(f"about {need:,} steps would detect this spread")
    return Row("significance", value, "; ".join(note))


def _provenance_summary(checks: list[str]) -> str:
    """Whether the CSV's trace hashes are its claim or were checked against the traces beside it."""
    n = len(checks)
    counts = {k: sum(c == k for c in checks) for k in ("verified", "differs", "declared")}
    if counts["verified"] == n:
        return (f"verified: {'the trace' if n == 1 else f'all {n:,} traces'} beside the CSV "
                "have the recorded size and SHA-256")
    if counts["declared"] == n:
        return "declared: the CSV's own claim; no trace beside the CSV was checked"
    parts = [f"{counts[k]:,} {k}" for k in ("verified", "differs", "declared") if counts[k]]
    return f"{', '.join(parts)} (of {n:,} traces; differs: the file beside the CSV has another size or SHA-256)"


def _provenance_table(files: list[tuple[str, str]], shown: int = 20) -> Table | None:
    """The trace files a per-rank CSV came from (its `# effspec-traces` lines): name, size, SHA-256, and whether
    that hash was checked against the file beside the CSV (verified, differs) or is the CSV's claim (declared)."""
    from urllib.parse import unquote

    rows: list[tuple[str, ...]] = []
    parsed = [(dict(t.split("=", 1) for t in str(line).split(": ", 1)[-1].split() if "=" in t), check)
              for line, check in files[:shown]]
    # GPU traces with launches also give the launch delay (device start - launch call start), µs: its own column
    delays = any("launch_delay_p50" in kv for kv, _ in parsed)
    for kv, check in parsed:
        size = kv.get("bytes", "")
        row: tuple[str, ...] = (
            clean(printable(unquote(kv.get("file", "")))), f"{int(size):,}" if size.isdigit() else clean(size),
            clean(kv.get("sha256", "")), clean(kv.get("rank", "")), clean(kv.get("node", "")))
        if delays:
            p50, p95 = kv.get("launch_delay_p50"), kv.get("launch_delay_p95")
            row += (f"{clean(p50)} / {clean(p95)}" if p50 and p95 else "—",)
        rows.append((*row, clean(str(check))))
    if len(files) > shown:
        rows.append((f"… {len(files) - shown:,} more (all listed in the CSV)", *("",) * (6 if delays else 5)))
    head = ("file", "bytes", "sha256", "rank", "node", *(("launch delay p50 / p95 µs",) if delays else ()), "checked")
    return Table("Provenance", head, tuple(rows)) if rows else None
