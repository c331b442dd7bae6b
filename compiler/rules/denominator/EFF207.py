"""EFF207: an accelerator name that fits more than one catalogued part."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import quantity
from effspec.engine import catalog
from effspec.engine.peaks import dtype_name
from effspec.rules import AuditContext, Rule


class EFF207(Rule):
    """## What it does

    Reports, as information, an `accelerator` name that the peak catalog
    resolves although another catalogued part's name begins with it: a bare
    `"A100"` is the A100 SXM4, but the A100 PCIe is also an A100; `"Trainium"`
    is the first Trainium, and Trainium2 is also one. The finding names the
    row chosen, the other parts, their peaks for the run's datatype and
    sparsity, and how to write each.

    ## Why is this bad?

    The catalog row decides the peak `peak = catalog` takes, and the row a
    written peak is checked against (EFF201 to EFF204). A reader of the spec
    cannot tell which part the author meant, nor whether the choice moves a
    figure: for `"A100"` it does not (the SXM4 and PCIe datasheets print the
    same Tensor Core peaks), for `"Trainium"` it would (190 against 667
    TFLOP/s dense BF16). A name whose parts differ and that the catalog does
    not resolve at all (a bare `"H100"`: SXM5, PCIe or NVL) is EFF020 with
    `peak = catalog`, and EFF206 with a written peak.

    ## Example

    ```eff
    eff 1

    run a100 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = [1.6, 1.6, 1.7, 1.6, 1.6] s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    Name the form factor, so the row is the one the run used:

    ```eff
    eff 1

    run a100 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = [1.6, 1.6, 1.7, 1.6, 1.6] s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF207"
    title = "accelerator name fits more than one catalogued part"
    severity = "info"
    name = "ambiguous-accelerator-name"
    nodes = ("run.hardware.accelerator",)

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None:
                continue
            for pool in result.pools:
                entry = pool.block.get("accelerator")
                others = catalog.also_named(pool.accelerator) if pool.accelerator else ()
                chosen = catalog.canonical_accelerator(pool.accelerator) if others and pool.accelerator else None
                if entry is None or chosen is None:
                    continue
                yield self.diag(
                    entry.value_span,
                    f"`{pool.accelerator}` fits {len(others) + 1} catalogued parts: the {chosen} row was chosen, "
                    f"not {' or '.join(others)}; {_effect(pool, chosen, others)}",
                    f"to choose another, write `accelerator = \"{others[0]}\"`"
                    + "".join(f" or `\"{o}\"`" for o in others[1:])
                    + f"; `accelerator = \"{chosen}\"` keeps this row and says so",
                    label=f"read as {chosen}",
                    notes=tuple(_peak_note(part, pool) for part in (chosen, *others)),
                )


def _row_flops(part: str, pool) -> float | None:
    row = catalog.lookup(part, pool.dtype, pool.sparsity)
    return row.flops if row is not None else None


def _effect(pool, chosen: str, others: tuple[str, ...]) -> str:
    """Whether the choice moves the peak for the pool's datatype and sparsity."""
    mine = _row_flops(chosen, pool)
    if all(_row_flops(o, pool) == mine for o in others):
        return f"their {pool.sparsity} {dtype_name(pool.dtype)} peaks are the same, so no figure depends on the choice"
    return f"their {pool.sparsity} {dtype_name(pool.dtype)} peaks differ, so the peak and every MFU depend on the choice"


def _peak_note(part: str, pool) -> str:
    flops = _row_flops(part, pool)
    shown = quantity(flops, "FLOP/s") if flops is not None else "not catalogued"
    return f"{part}: {pool.sparsity} {dtype_name(pool.dtype)} peak {shown}"
