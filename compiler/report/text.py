"""Machine and terminal output of a check: text and the JSON contract."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from effspec.diagnostics import printable, render_text, sanitize, source_lines
from effspec.front.ir import Samples

if TYPE_CHECKING:
    from effspec import Result
    from effspec.engine.breakdown import Reconciliation
    from effspec.engine.flops import FlopCount, Knobs
    from effspec.engine.results import Evaluation, RunResult
    from effspec.engine.scaling import ScalingResult, ScalingRun
    from effspec.engine.stats import StepStats
    from effspec.front.config import Suppression
    from effspec.front.ir import Block


def text(result: Result, show_suppressed: bool = False, quiet: bool = False) -> str:
    """rustc-style diagnostics, the claims summary (effspec.report.claim_summary: each claim's verdict, figure
    and basis), then a one-line summary and what was suppressed, by what.

    ``show_suppressed`` also prints each suppressed finding in full."""
    lines = source_lines(result.source)  # once, not per diagnostic
    parts = [render_text(d, result.source, result.file, lines) for d in result.diagnostics]
    suppressed = getattr(result, "suppressed", [])
    if show_suppressed:
        parts += [_suppressed_text(s, result, lines) for s in suppressed if not s.lowered]
    if quiet:  # `--quiet`: the findings only
        return "\n\n".join(parts)
    omitted = getattr(result, "omitted", {})
    counts = {s: sum(d.severity == s for d in result.diagnostics) + omitted.get(s, 0) for s in ("error", "warning", "info")}
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
    summary = summary or ("no findings shown" if suppressed else "no findings")
    from effspec.engine.intervals import unresolved_left_out
    from effspec.report.claim_summary import claim_lines, summary_text

    with unresolved_left_out():  # an interval no verdict needed is not computed for the terminal (numpy stays out)
        claims = summary_text(claim_lines(result), printable(result.file))
    if claims:
        parts.append(claims)
    parts += _added_sections(result)
    parts.append(f"{printable(result.file)}: {summary}" + _suppression_summary(result, suppressed))
    return "\n\n".join(parts)


def _added_sections(result: Result) -> list[str]:
    """The paragraphs of the sections added by modules of effspec.report.sections that print one here."""
    from effspec.report.sections import added_sections

    shown = (section.text(section.build(result)) for section in added_sections() if section.text is not None)
    return [paragraph for paragraph in shown if paragraph]


def _suppressed_text(s: Suppression, result: Result, lines: list[str]) -> str:
    d = s.diagnostic
    return "suppressed " + render_text(dataclasses.replace(d, notes=d.notes + (f"{s.effect} by {s.by}",)), result.source,
                                       result.file, lines)


def _suppression_summary(result: Result, suppressed: Sequence[Suppression], most: int = 8) -> str:
    """'; 3 suppressed …' and one line per pragma or setting that suppressed findings, naming them."""
    ignored = sum(not s.lowered for s in suppressed)
    lowered = len(suppressed) - ignored
    unapplied = len(getattr(result, "pragmas_not_applied", ()))
    words = [f"{ignored} suppressed"] * bool(ignored) + [f"{lowered} with severity lowered"] * bool(lowered)
    more = getattr(result, "suppressed_omitted", 0)
    words += [f"{more:,} more suppressed or lowered, not listed"] * bool(more)
    head = f"; {', '.join(words)} (`effspec check --show-suppressed` shows them)" if words else ""
    if unapplied:
        off_by = sanitize(getattr(result, "pragmas_off_by", "") or "configuration")
        head += f"; {unapplied} pragma{'s' if unapplied != 1 else ''} not applied (inline configuration is off: {off_by})"
    groups: dict[tuple[str, str], list[str]] = {}
    for s in suppressed:
        d = s.diagnostic
        where = f" at {d.span.line}:{d.span.column}" if d.span else ""
        groups.setdefault((s.effect, s.by), []).append(f"{d.code} ({d.severity}){where}" if s.lowered else f"{d.code}{where}")
    lines = []
    for (effect, by), items in groups.items():
        more = f" and {len(items) - most} more" if len(items) > most else ""
        lines.append(f"  {effect} by {sanitize(by)}: {', '.join(items[:most])}{more}")
    return head + "".join("\n" + line for line in lines)


def _stats_json(st: StepStats | None, timing: Block | None = None) -> dict[str, Any] | None:
    if st is None:
        return None
    out = {f.name: getattr(st, f.name) for f in dataclasses.fields(st) if f.name != "kept"}
    out["median_ci"] = list(st.median_ci) if st.median_ci else None
    out["median_ci_method"] = st.median_ci_method
    out["unpredicted_time"] = st.unpredicted_time
    out["predicted_share"] = st.predicted_share
    entry = timing.get("step_time") if timing is not None else None
    samples = entry.value if entry is not None else None
    if isinstance(samples, Samples):
        out["origin"] = samples.origin
        out["source"] = f"{samples.file}, column {samples.column}" if samples.origin == "file" else "inline list"
    return out


def _breakdown_json(rec: Reconciliation | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    return {
        "rows": [{"category": r.category, "share": r.share, "seconds": r.seconds, "written": r.entry.text,
                  "line": r.entry.span.line} for r in rec.rows],
        "total": rec.total,
        "remainder": rec.remainder,
        "remainder_seconds": rec.remainder_seconds,
        "reconciles": rec.reconciles,
        "has_unclassified": rec.has_unclassified,
        "unclassified": rec.unclassified,
        "unconverted": [e.key for e in rec.unconverted],
        "step_time": rec.step_time,
        "table": rec.table(),
        "mfu_required_share": rec.mfu_required_share,
        "consistent_with_mfu": rec.consistent_with_mfu,
        "compute_interval_efficiency": rec.compute_interval_efficiency.to_json() if rec.compute_interval_efficiency else None,
    }


def _knobs_json(knobs: Knobs) -> dict[str, Any]:
    """The knobs; `windows`, `router` and `formula` only where they differ from their default."""
    from effspec.engine.flops import EXTRA_KNOBS, KNOB_DEFAULTS

    out = {k: getattr(knobs, k) for k in ("multiply_add", "attention", "logits", "embeddings",
                                            "backward", "recompute", "padding", "moe", "optimizer")}
    out.update({k: getattr(knobs, k) for k in EXTRA_KNOBS if getattr(knobs, k) != KNOB_DEFAULTS[k]})
    return out


# The terms every count had before MLA, MTP, windows and extra FLOPs: a run with only these
# keeps its JSON outline (they are named in flops_per_token's `substituted`).
_CLASSIC_TERMS = frozenset(("qkv_projection", "attention_output", "attention_scores", "ffn", "moe_ffn", "moe_router",
                            "moe_ffn_all_experts", "logits", "embeddings"))


def _terms_json(count: FlopCount | None) -> dict[str, Any] | None:
    """flops_per_token term by term (forward FLOPs per token; training multiplies by 1 + backward),
    for a count with a term beyond the classic ones."""
    if count is None or (not count.extra and all(n in _CLASSIC_TERMS for n, _, _ in count.terms)):
        return None
    out = {name: {"formula": formula, "forward_flops_per_token": value} for name, formula, value in count.terms}
    out["recompute"] = {"formula": "extra forward work counted by `recompute`", "forward_flops_per_token": count.recompute}
    if count.extra:
        out["extra_flops_per_token"] = {"formula": "model.extra_flops_per_token (training FLOPs, added as written)",
                                        "training_flops_per_token": count.extra}
    return out


def run_json(rr: RunResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "title": rr.run.title,
        "metrics": {name: m.to_json() for name, m in rr.metrics.items()},
        # a metric claimed again from another source: `throughput#2` (engine.claims.claim_keys)
        "claims": {c.claim.written + (f"#{k.partition('#')[2]}" if "#" in k else ""): c.to_json()
                   for k, c in rr.claims.items()},
        "missing": {name: list(v) for name, v in rr.missing.items()},
        "implied": {name: m.to_json() for name, m in rr.implied.items()},
        "convention": {
            "preset": rr.knobs.preset,
            "knobs": _knobs_json(rr.knobs),
            "origin": dict(rr.knobs.origin),
        },
        "conventions": rr.conventions,
        "step_statistics": _stats_json(rr.step_stats, rr.run.block("timing")),
        "breakdown": _breakdown_json(rr.breakdown),
    }
    terms = _terms_json(rr.flop_count)
    if terms is not None:
        out["terms"] = terms
    table = rr.calendar_table
    if table is not None:
        out["calendar"] = table.to_json()
    ttt = rr.time_to_target
    if ttt is not None:
        out["time_to_target"] = ttt.to_json()
    if rr.diagnosis is not None:
        out["diagnosis"] = rr.diagnosis.to_json()
    return out


def _scaling_run_json(r: ScalingRun) -> dict[str, Any]:
    return {"devices": r.devices, "valid_tokens_per_step": r.valid_tokens_per_step,
            "tokens_per_device": r.tokens_per_device,
            "step_time": r.step_time,
            "metrics": {n: m.to_json() for n, m in r.metrics.items()},
            "missing": {n: list(v) for n, v in r.missing.items()},
            "gemms": r.gemms.to_json() if r.gemms is not None else None,
            "gemms_missing": list(r.gemms_missing),
            "time_to_target": r.time_to_target.to_json() if r.time_to_target is not None else None}


def scaling_json(sr: ScalingResult) -> dict[str, Any]:
    return {
        "kind": sr.scaling.kind,
        "baseline": sr.scaling.baseline,
        "metrics": {name: m.to_json() for name, m in sr.metrics.items()},
        "runs": {r.run_id: _scaling_run_json(r) for r in sr.runs},
        "baseline_run": _scaling_run_json(sr.baseline) if sr.baseline is not None else None,
        "series": [r.run_id for r in sr.series],
        "series_baseline": sr.series_baseline,
        "cumulative": [s.to_json() for s in sr.cumulative],
        "incremental": [s.to_json() for s in sr.incremental],
        "work_changes": [{"run": w.run_id, "what": w.what, "baseline": _plain(w.baseline), "value": _plain(w.run)}
                         for w in sr.work_changes()],
        "claims": {key: cr.to_json() for key, cr in sr.claims.items()},
    }


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def result_json(result: Result) -> dict[str, Any]:
    ev = cast("Evaluation | None", result.evaluation)
    return {
        "file": result.file,
        "diagnostics": [d.to_json() for d in result.diagnostics],
        **_omitted_json(result),
        "runs": {rid: run_json(rr) for rid, rr in ev.runs.items()} if ev else {},
        "scalings": {sid: scaling_json(sr) for sid, sr in ev.scalings.items()} if ev else {},
        # What a pragma or the configuration dropped or lowered, and by what;
        # the configuration file that applied, relative to the spec's folder.
        "suppressed": [s.to_json() for s in result.suppressed],
        **({"suppressed_omitted": n} if (n := result.suppressed_omitted) else {}),
        "config": getattr(result.settings, "name", None),
        "pragmas_not_applied": [{"line": p.line, "column": p.column, "pragma": p.written()}
                                for p in result.pragmas_not_applied],
        "pragmas_off_by": result.pragmas_off_by or None,
        **_added_json(result),
    }


def _added_json(result: Result) -> dict[str, Any]:
    """``{"sections": {id: value}}`` of the sections added by modules of effspec.report.sections that
    give one (none by default: no key)."""
    from effspec.report.sections import added_in

    found = {section.id: cast("Any", section.json)(view) for section, view in added_in(result, "json")}
    return {"sections": found} if found else {}


def _omitted_json(result: Result) -> dict[str, Any]:
    """``{"omitted": {"total": n, "error": e, …}}`` when the per-file cap left findings out, else nothing."""
    omitted = result.omitted
    return {"omitted": {"total": sum(omitted.values()), **omitted}} if omitted else {}
