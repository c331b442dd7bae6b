"""EFF209: an FP4 run declared as FP8, or an FP8 run measured against an FP4 peak."""

from __future__ import annotations

import re
from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import quantity
from effspec.engine import catalog
from effspec.engine.peaks import FP4, dtype_name, peak_readings, row_kind
from effspec.front.ir import Run
from effspec.rules import AuditContext, Rule
from effspec.rules.denominator.EFF201 import catalog_fix, catalog_help, mfu_note

# NVFP4, MXFP4 or FP4 as a word (not MXFP8, FP16 or a longer name).
_FP4_WORD = re.compile(r"(?<![A-Za-z0-9])(nv|mx)?fp4(?![0-9])", re.IGNORECASE)


def fp4_mention(run: Run) -> str | None:
    """The first place the run's own words name an FP4 format (its title, source, a citation), or None."""
    texts = [("its title", run.title), ("its `source`", run.source)]
    texts += [(f"the source of claim `{c.written}`", c.provenance.citation) for c in run.claims]
    texts += [(f"the source of `{b.name}.{e.key}`", e.provenance.citation) for b in run.blocks for e in b.entries]
    for where, text in texts:
        match = _FP4_WORD.search(text or "")
        if match:
            return f"{where} says {match.group(0)}"
    return None


class EFF209(Rule):
    """## What it does

    Flags an FP8 run (`dtype = fp8`) on an accelerator with FP4 figures in
    the catalog when either its written per-device `peak` is an FP4 figure
    of that accelerator and none of the FP8 ones (the 15 PFLOP/s dense
    NVFP4 figure of a GB300 in an FP8 run's denominator), or the run's own
    words (its `title`, `source`, or the `from` of a claim or value) call it
    NVFP4, MXFP4 or FP4.

    ## Why is this bad?

    Before `dtype = nvfp4 | mxfp4` existed, an NVFP4 row had to be declared
    `fp8`, and its MFU was computed against the FP8 peak: two times (B200,
    GB200) or three times (B300, GB300) what the FP4 peak gives, with nothing
    saying so. The other way round, an FP8 run divided by the FP4 peak reads
    two or three times too low. Either way the figure is not comparable with
    runs that used their own datatype's column.

    ## Example

    ```eff
    eff 1

    run nvfp4 {
      title = "Llama 3 70B, NVFP4, 64 GB200"
      model { kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8  ffn = swiglu  d_ff = 28672  vocab = 128256 }
      convention { preset = nemo }
      work { seq_len = 8192 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "GB200"  count = 64 device  dtype = fp8  peak = catalog }
      timing { throughput = 313472 token/s }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run nvfp4 {
      title = "Llama 3 70B, NVFP4, 64 GB200"
      model { kind = dense_transformer  layers = 80  d_model = 8192  heads = 64  kv_heads = 8  ffn = swiglu  d_ff = 28672  vocab = 128256 }
      convention { preset = nemo }
      work { seq_len = 8192 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "GB200"  count = 64 device  dtype = nvfp4  peak = catalog }
      timing { throughput = 313472 token/s }
    }
    ```
    """

    code = "EFF209"
    title = "FP4 run declared as FP8, or FP8 run against an FP4 peak"
    severity = "warning"
    name = "fp8-run-fp4-peak"
    nodes = ("run.hardware.dtype", "run.hardware.peak")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        flagged: set[int] = set()
        for run, reading in peak_readings(ctx):
            row, pool = reading.fp4_fp8_swap, reading.pool
            if row is None or pool.dtype != "fp8":
                continue
            flagged.add(id(pool.block))
            own = reading.own
            correct = f"; the {own.sparsity} FP8 peak is {quantity(own.flops, 'FLOP/s')}" if own is not None else ""
            notes = mfu_note(ctx.evaluation.runs.get(run.id), reading.peak / own.flops, "the FP8 peak") if own else ()
            yield self.diag(
                reading.entry.value_span,
                f"the peak {quantity(reading.peak, 'FLOP/s')} is the {row_kind(row)} for {row.accelerator}, "
                f"but the run's matmuls are FP8{correct}",
                catalog_help(reading) + "; if the matmuls were FP4, write `dtype = nvfp4` (or `mxfp4`) instead",
                label=row_kind(row), notes=notes, fixes=catalog_fix(ctx, reading))
        yield from self._described_fp4(ctx, flagged)

    def _described_fp4(self, ctx: AuditContext, flagged: set[int]) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            mention = fp4_mention(run) if result is not None else None
            if result is None or mention is None:
                continue
            for pool in result.pools:
                entry = pool.block.get("dtype")
                if entry is None or pool.dtype != "fp8" or id(pool.block) in flagged or not pool.accelerator:
                    continue
                fp4 = catalog.lookup(pool.accelerator, "nvfp4", pool.sparsity)
                if fp4 is None:
                    continue
                notes = mfu_note(result, pool.peak / fp4.flops, f"the {fp4.sparsity} {dtype_name(FP4[0])} peak "
                                 f"({quantity(fp4.flops, 'FLOP/s')})") if pool.peak else ()
                yield self.diag(
                    entry.value_span,
                    f"the run is declared FP8, but {mention}: on {fp4.accelerator} MFU is then computed against the "
                    f"FP8 peak, not the {dtype_name(FP4[0])} one ({quantity(fp4.flops, 'FLOP/s')} {fp4.sparsity})",
                    "write `dtype = nvfp4` (or `mxfp4`) if the matmuls were FP4; if they were FP8, say so where the "
                    "run is described", label="declared FP8", notes=notes)
