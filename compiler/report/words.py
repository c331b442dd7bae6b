"""How the reports and the check's claims summary word a figure: labels, values, and spec text made safe to show."""

from __future__ import annotations

from typing import TYPE_CHECKING

from effspec.diagnostics import sanitize
from effspec.display import metric_value, sig

if TYPE_CHECKING:
    from effspec.engine.results import Metric

METRIC_LABELS = {
    "flops_per_token": "Model FLOPs per token",
    "model_flops_per_step": "Model FLOPs per step",
    "executed_flops_per_step": "Executed FLOPs per step",
    "valid_tokens_per_step": "Valid tokens per step",
    "step_time": "Step time",
    "valid_tokens_per_second": "Valid tokens per second",
    "achieved_flops_per_device": "Achieved model FLOP/s per device",
    "aggregate_flops": "Achieved model FLOP/s, all devices",
    "aggregate_peak": "Aggregate peak",
    "mfu": "MFU",
    "hfu": "HFU",
    "mfu_measured_peak": "MFU against the measured peak",
    "speedup": "Speedup",
    "strong_scaling_efficiency": "Strong scaling efficiency",
    "weak_scaling_efficiency": "Weak scaling efficiency",
    "goodput": "Goodput",
    "calendar_efficiency": "Calendar efficiency",
    "compute_interval_efficiency": "Compute-interval efficiency",
    "flops_per_token_from_claims": "FLOPs per token the claims imply",
}


def label(name: str) -> str:
    return METRIC_LABELS.get(name, name.replace("_", " "))


_COUNTED_UNITS = ("token", "token/s", "sequence", "step", "device", "param")


def value_text(value: float, unit: str, name: str = "") -> str:
    """A figure as the report prints it: :func:`fmt.metric_value`, with two
    presentational refinements: large token counts and rates are grouped by
    thousands (``1,850,479 token/s``), and a speedup reads as a multiple."""
    if name == "speedup":
        return sig(value) + "×"
    if unit in _COUNTED_UNITS and abs(value) >= 1e4:
        return f"{round(value):,} {unit}"
    return metric_value(value, unit)


def interval_text(metric: Metric, name: str = "") -> str:
    """``[46.44 %, 50.86 %]``: a figure's interval as the report prints it, "" for an exact figure (no clutter)."""
    from effspec.engine.intervals import left_out

    fi = getattr(metric, "interval", None)
    if fi is None or left_out(fi) or fi.method != "interval arithmetic":
        return ""
    lo, hi = value_text(fi.lo, metric.unit, name), value_text(fi.hi, metric.unit, name)
    for digits in (5, 6):  # ends that print alike get the digits that tell them apart; none at 6: not shown
        if lo != hi:
            break
        lo, hi = _digits(fi.lo, metric.unit, digits), _digits(fi.hi, metric.unit, digits)
    if lo == hi:
        return ""
    (lo_num, _, lo_unit), (hi_num, _, hi_unit) = lo.partition(" "), hi.partition(" ")
    if lo_unit == hi_unit and lo_unit:  # one unit for both ends: `[47.09–47.15 %]`, short enough for a card
        return f"[{lo_num}–{hi_num} {lo_unit}]"
    return f"[{lo}, {hi}]"


def _digits(value: float, unit: str, digits: int) -> str:
    """A figure to ``digits`` significant digits, as :func:`value_text` prints it at four."""
    from effspec.display import percent, quantity

    return percent(value, digits) if unit == "" else quantity(value, unit, digits)


def interval_how(metric: Metric) -> str:
    """How a figure's interval was formed (engine.intervals.formation), "" for an exact figure."""
    from effspec.engine.intervals import formation

    fi = getattr(metric, "interval", None)
    if fi is None or fi.method != "interval arithmetic":
        return ""
    return formation(fi, metric.name, metric.unit)


# A long unbroken string made PDF layout superlinear (a 20,000-character title
# took 12.7 s), and CSS break opportunities (overflow-wrap: anywhere) made it
# slower still.  Every spec string shown outside the Source section is cut, the
# cut marked with "…" and the full length; the Source section shows it whole.
MAX_SHOWN_CHARS = 1000  # a value, citation, formula or note
MAX_TITLE_CHARS = 200  # a title, run or scaling id: headings, the contents, <title>


def elide(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text``, or its first ``limit`` characters and "… (N characters)" when it is longer."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def clean(text: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """Spec text for display: control and bidi characters dropped (Trojan Source), cut to ``limit``."""
    return elide(sanitize(str(text)), limit) if text is not None else ""


def title(text: object) -> str:
    return clean(text, MAX_TITLE_CHARS)
