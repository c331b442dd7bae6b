"""Machine and terminal output of a check: text and the JSON contract."""

from __future__ import annotations

import dataclasses

from .diagnostics import render_text


def text(result) -> str:
    """rustc-style diagnostics, then a one-line summary."""
    parts = [render_text(d, result.source, result.file) for d in result.diagnostics]
    counts = {s: sum(d.severity == s for d in result.diagnostics) for s in ("error", "warning", "info")}
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n) or "no findings"
    parts.append(f"{result.file}: {summary}")
    return "\n\n".join(parts)


def _stats_json(st) -> dict | None:
    if st is None:
        return None
    out = dataclasses.asdict(st)
    out["median_ci"] = list(st.median_ci) if st.median_ci else None
    return out


def _breakdown_json(rec) -> dict | None:
    if rec is None:
        return None
    return {
        "rows": [{"category": r.category, "share": r.share, "seconds": r.seconds, "written": r.entry.text,
                  "line": r.entry.span.line} for r in rec.rows],
        "total": rec.total,
        "remainder": rec.remainder,
        "has_unclassified": rec.has_unclassified,
        "step_time": rec.step_time,
        "compute_interval_efficiency": rec.compute_interval_efficiency.to_json() if rec.compute_interval_efficiency else None,
    }


def run_json(rr) -> dict:
    out = {
        "title": rr.run.title,
        "metrics": {name: m.to_json() for name, m in rr.metrics.items()},
        "claims": {c.claim.written: c.to_json() for c in rr.claims.values()},
        "missing": {name: list(v) for name, v in rr.missing.items()},
        "implied": {name: m.to_json() for name, m in rr.implied.items()},
        "convention": {
            "preset": rr.knobs.preset,
            "knobs": {k: getattr(rr.knobs, k) for k in ("multiply_add", "attention", "logits", "embeddings",
                                                          "backward", "recompute", "padding", "moe", "optimizer")},
            "origin": dict(rr.knobs.origin),
        },
        "conventions": rr.conventions,
        "step_statistics": _stats_json(rr.step_stats),
        "breakdown": _breakdown_json(rr.breakdown),
    }
    if rr.diagnosis is not None:
        out["diagnosis"] = rr.diagnosis.to_json()
    return out


def scaling_json(sr) -> dict:
    return {
        "kind": sr.scaling.kind,
        "baseline": sr.scaling.baseline,
        "metrics": {name: m.to_json() for name, m in sr.metrics.items()},
        "runs": {r.run_id: {"devices": r.devices, "valid_tokens_per_step": r.valid_tokens_per_step,
                            "tokens_per_device": r.tokens_per_device,
                            "metrics": {n: m.to_json() for n, m in r.metrics.items()},
                            "missing": {n: list(v) for n, v in r.missing.items()}} for r in sr.runs},
    }


def result_json(result) -> dict:
    ev = result.evaluation
    return {
        "file": result.file,
        "diagnostics": [d.to_json() for d in result.diagnostics],
        "runs": {rid: run_json(rr) for rid, rr in ev.runs.items()} if ev else {},
        "scalings": {sid: scaling_json(sr) for sid, sr in ev.scalings.items()} if ev else {},
    }
