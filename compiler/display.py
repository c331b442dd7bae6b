"""Number formatting shared by diagnostics, derivations and every report."""

from __future__ import annotations

import math

_PREFIXES = ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def sig(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits, without exponent noise for ordinary sizes."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    if -4 <= magnitude < 9:
        decimals = max(0, digits - 1 - magnitude)
        text = f"{value:.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{value:.{digits - 1}e}".replace("e+", "e")


def quantity(value: float, unit: str, digits: int = 4) -> str:
    """A value in its unit, with an SI prefix for FLOP units: ``137.7 TFLOP/s``."""
    if unit == "":
        return sig(value, digits)
    if unit.startswith("FLOP") and abs(value) >= 1e3:
        for factor, prefix in _PREFIXES:
            if abs(value) >= factor:
                return f"{sig(value / factor, digits)} {prefix}{unit}"
    if unit in ("token", "sequence", "device", "param", "step") and abs(value) >= 1e4 and value == int(value):
        return f"{int(value):,} {unit}"
    if unit == "token/s" and abs(value) >= 1e4:  # rates read best as whole tokens per second
        return f"{value:,.0f} {unit}"
    return f"{sig(value, digits)} {unit}"


def percent(ratio: float, digits: int = 4) -> str:
    return f"{sig(ratio * 100, digits)} %"


def metric_value(value: float, unit: str) -> str:
    """How a metric reads in prose: ratios as percent, others with their unit."""
    return percent(value) if unit == "" else quantity(value, unit)
