"""EFF204: unavailable devices, power caps or mixed pools not reflected in the denominator."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import percent, quantity
from effspec.engine import catalog
from effspec.engine.peaks import dtype_name, peak_readings
from effspec.rules import AuditContext, Rule


class EFF204(Rule):
    """## What it does

    Checks that the MFU denominator, the aggregate peak
    Σ (`count` − `unavailable`) × `peak`, describes the hardware that did the
    work, and flags:

    - a `power_cap` declared while the peak is the datasheet figure (from the
      catalog, or equal to it) and no `measured_peak` says what the capped part
      reaches;
    - a `peak` above ten times the catalog's per-device figure: a pool's or a
      cluster's peak written where one device's belongs;
    - in a run with hardware pools of different accelerators, a pool whose
      `peak` is the figure of the other pool's accelerator, or a claimed MFU
      that only an aggregate of one accelerator type reproduces;
    - a claimed MFU that is the reconstruction times the device count (one
      device's peak used as the denominator of the whole job's rate), or that
      only an aggregate counting the `unavailable` devices reproduces.

    ## Why is this bad?

    Every one of these moves MFU by a factor the reader cannot see. A 400 W cap
    on a 700 W H100 lowers the clock, so the datasheet peak is out of reach and
    MFU understates how well the capped part is used; a pool peak in the
    per-device slot divides MFU by the device count; an H100 peak written for
    A100 devices, or a whole mixed cluster priced at one part's figure, makes
    the aggregate wrong by the ratio of the two parts; a single GPU's peak under
    a global rate multiplies MFU by the device count (a 16x error on 16 GPUs).

    ## Example

    ```eff
    eff 1

    run capped {
      model { kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }
      convention { preset = palm  attention = causal }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware { accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog  power_cap = 400 W }
      timing { step_time = 1.4 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    Keep the datasheet peak for MFU, and measure what the capped part reaches:

    ```eff
    eff 1

    run capped {
      model { kind = dense_transformer  layers = 32  d_model = 2560  heads = 32  kv_heads = 8  ffn = swiglu  d_ff = 6912  vocab = 50304 }
      convention { preset = palm  attention = causal }
      work { seq_len = 4096 token/sequence  global_batch = 512 sequence }
      hardware {
        accelerator = "H100-SXM5-80GB"  count = 64 device  dtype = bf16  peak = catalog  power_cap = 400 W
        measured_peak = 610 TFLOP/s from measured "8192^3 BF16 GEMM at 400 W"
      }
      timing { step_time = 1.4 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF204"
    title = "denominator ignores unavailable devices, power caps or mixed pools"
    severity = "warning"
    name = "denominator-misses-hardware-state"
    nodes = ("run.hardware.power_cap", "run.hardware.peak", "run.hardware.unavailable", "run.hardware", "run.claim.mfu")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        yield from self._power_caps(ctx)
        yield from self._peaks(ctx)
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is not None:
                yield from self._claims(result)

    def _power_caps(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            for pool in result.pools if result is not None else ():
                cap = pool.block.get("power_cap")
                if cap is None or pool.measured_peak is not None or pool.peak is None:
                    continue
                row = pool.catalog_row
                datasheet = pool.peak_input is not None and pool.peak_input.provenance in ("catalog", "datasheet")
                if row is not None and abs(pool.peak - row.flops) <= 0.01 * row.flops:
                    datasheet = True
                if not datasheet:
                    continue
                yield self.diag(
                    cap.value_span,
                    f"`power_cap = {cap.text}` lowers the clock, but the peak {quantity(pool.peak, 'FLOP/s')} is the "
                    f"datasheet figure at full power{f' for {pool.accelerator}' if pool.accelerator else ''}: "
                    f"no `measured_peak` says what the capped part reaches",
                    "keep `peak` (MFU is defined against the datasheet), and add `measured_peak = … TFLOP/s from "
                    "measured \"large BF16 GEMM at the cap\"`, which gives `mfu_measured_peak` beside it",
                    label="cap not reflected in any peak",
                )

    def _peaks(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for _run, reading in peak_readings(ctx):
            pool, own = reading.pool, reading.own
            if reading.looks_aggregate:
                assert own is not None  # looks_aggregate compares with the catalog row
                ratio = reading.peak / own.flops
                whole = abs(ratio - pool.count) <= 0.02 * pool.count
                shape = (f"exactly `count` ({pool.count:g}) × the per-device figure: the pool's aggregate"
                         if whole else f"{ratio:.3g}× the per-device figure, likely an aggregate")
                yield self.diag(
                    reading.entry.value_span,
                    f"the peak {quantity(reading.peak, 'FLOP/s')} is {shape}; `peak` is per device "
                    f"(the {own.sparsity} {dtype_name(own.dtype)} figure for {own.accelerator} is "
                    f"{quantity(own.flops, 'FLOP/s')}), and the compiler multiplies it by `count`",
                    f"write the per-device figure: `peak = catalog` or `peak = {own.flops / 1e12:g} TFLOP/s from datasheet \"…\"`",
                    label="an aggregate in the per-device slot",
                    notes=(f"as written the aggregate peak is {pool.active:g} × {quantity(reading.peak, 'FLOP/s')} = "
                           f"{quantity(pool.active * reading.peak, 'FLOP/s')}, dividing every MFU by {ratio:.3g}",),
                )
            elif reading.other_pool is not None:
                row = reading.other_pool
                yield self.diag(
                    reading.entry.value_span,
                    f"this pool's devices are {pool.accelerator}, but its peak {quantity(reading.peak, 'FLOP/s')} is the "
                    f"{row.sparsity} {dtype_name(row.dtype)} figure of {row.accelerator}, the run's other pool",
                    "give each `hardware` block the peak of its own accelerator: `peak = catalog`"
                    + (f" ({quantity(own.flops, 'FLOP/s')} here)" if own is not None else ""),
                    label=f"{row.accelerator} figure on {pool.accelerator} devices",
                )

    def _claims(self, result) -> Iterable[Diagnostic]:
        cr = result.claims.get("mfu")
        agg = result.metrics.get("aggregate_peak")
        if cr is None or cr.status != "mismatch" or not cr.reconstructed or agg is None or cr.tolerance is None:
            return
        claimed, rebuilt = cr.claimed, cr.reconstructed
        span = cr.claim.value_span
        active = sum(p.active for p in result.pools)
        # One device's peak under the whole job's rate: MFU × devices.
        if active > 1 and abs(claimed - rebuilt * active) <= cr.tolerance + 0.01 * rebuilt * active:
            yield self.diag(
                span,
                f"the claimed MFU {percent(claimed)} is the reconstruction {percent(rebuilt)} × {active:g} devices: "
                f"the whole job's FLOP/s divided by one device's peak",
                f"divide by the aggregate peak of all {active:g} devices ({quantity(agg.value, 'FLOP/s')}); "
                f"the MFU is {percent(rebuilt)}",
                label=f"{active:g}× the reconstruction",
            )
            return
        # Unavailable devices kept in the denominator.
        if any(p.unavailable for p in result.pools) and all(p.peak is not None for p in result.pools):
            full = sum(p.count * p.peak for p in result.pools)
            with_all = rebuilt * agg.value / full
            if abs(claimed - with_all) <= cr.tolerance:
                down = sum(p.unavailable for p in result.pools)
                yield self.diag(
                    span,
                    f"the claimed MFU {percent(claimed)} matches an aggregate peak over all devices "
                    f"({quantity(full, 'FLOP/s')}), including the {down:g} declared unavailable; over the devices "
                    f"that worked ({quantity(agg.value, 'FLOP/s')}) the MFU is {percent(rebuilt)}",
                    "state which devices the claim divides by; the MFU denominator counts `count − unavailable` "
                    "devices, and the idle ones belong in goodput",
                    label="denominator counts unavailable devices",
                )
                return
        # A mixed cluster priced at one accelerator type's peak.
        kinds = {catalog.canonical_accelerator(p.accelerator) or p.accelerator for p in result.pools if p.accelerator}
        if len(kinds) < 2:
            return
        for pool in result.pools:
            if pool.peak is None:
                continue
            one_type = active * pool.peak
            as_if = rebuilt * agg.value / one_type
            if abs(claimed - as_if) <= cr.tolerance:
                mix = ", ".join(f"{p.active:g} × {p.accelerator}" for p in result.pools)
                yield self.diag(
                    span,
                    f"the claimed MFU {percent(claimed)} matches an aggregate peak of {active:g} × "
                    f"{quantity(pool.peak, 'FLOP/s')}, as if every device were a {pool.accelerator}; the run mixes {mix}",
                    f"divide by Σ pools (count − unavailable) × peak = {quantity(agg.value, 'FLOP/s')}: "
                    f"the MFU is {percent(rebuilt)}",
                    label=f"priced as {pool.accelerator} only",
                )
                return
