"""The run's device pools: one per `hardware` block, with its peak from the catalog or as written.

Read by evaluation and by the explainer's numbers-only figures (engine/gap.py), which is why it sits below both.
"""

from __future__ import annotations

from effspec.diagnostics import Diagnostic, Span
from effspec.engine import catalog
from effspec.engine.rates import required_input
from effspec.engine.results import Input, Pool
from effspec.front.ir import Run


def hardware_pools(run: Run, diags: list[Diagnostic]) -> list[Pool]:
    """Each `hardware` block as a pool: its devices, dtype, sparsity and peak (the catalog's row or the written
    quantity), with EFF020 / EFF011 appended to ``diags``."""
    pools = []
    for hw in run.blocks_named("hardware"):
        accel = hw.text("accelerator")
        dtype = hw.text("dtype")
        sparsity = hw.text("sparsity", "dense")
        count = float(hw.number("count", 0))
        unavailable = float(hw.number("unavailable", 0))
        row = catalog.lookup(accel, dtype or "bf16", sparsity) if accel else None
        peak_entry = hw.get("peak")
        peak: float | None = None
        peak_input: Input[float] | None = None
        if peak_entry is not None and peak_entry.value == "catalog":
            if accel and catalog.canonical_accelerator(accel) is None:
                diags.append(_not_in_catalog(accel, peak_entry.value_span))
            elif row is None:
                diags.append(Diagnostic(
                    "EFF020", "error", peak_entry.value_span,
                    f"the catalog has no {dtype or 'bf16'} {sparsity} peak for `{accel}`",
                    "declare the peak as a quantity with its source",
                ))
            else:
                peak = row.flops
                peak_input = Input("hardware.peak", row.flops, "FLOP/s", "catalog",
                                   f"{row.accelerator} {row.dtype} {row.sparsity}: {row.citation}", peak_entry.span,
                                   assumed=dtype is None)
        elif peak_entry is not None:
            peak_input = required_input(hw, "peak")
            peak = float(peak_input.value)
        if unavailable > count:
            e = hw.get("unavailable")
            diags.append(Diagnostic("EFF011", "error", e.value_span if e else hw.span,
                                    f"`unavailable` ({unavailable:g}) exceeds `count` ({count:g})", ""))
            unavailable = count
        measured = hw.number("measured_peak")
        pools.append(Pool(hw, accel, count, unavailable, dtype or "bf16", dtype is None, sparsity, peak, peak_input,
                          row, float(measured) if measured is not None else None))
    return pools


def _not_in_catalog(accel: str, span: Span | None) -> Diagnostic:
    """EFF020 for `peak = catalog` with a name the catalog does not resolve; a bare
    family name (`"H100"`) is told the parts it could be, and how to name one."""
    parts = catalog.candidates(accel)
    if not parts:
        return Diagnostic("EFF020", "error", span, f"`{accel}` is not in the peak catalog",
                          "write the peak as a quantity with its source, e.g. `peak = 989.4 TFLOP/s from datasheet \"…\"`; "
                          "catalog names: " + ", ".join(catalog.known_accelerators()))
    return Diagnostic("EFF020", "error", span,
                      f"`{accel}` names no single part of the peak catalog (catalogued parts of that name: "
                      f"{_either(parts, 'and')}), and a peak is not guessed",
                      f"write the part, e.g. `accelerator = \"{parts[0]}\"` (`effspec catalog` lists the names), "
                      "or the peak as a quantity with its source")


def _either(parts: tuple[str, ...], conjunction: str) -> str:
    """`A`, `B` and `C`."""
    named = [f"`{p}`" for p in parts]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + f" {conjunction} " + named[-1]
