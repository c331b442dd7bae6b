"""EFF101: the MFU numerator convention is undeclared."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import percent, quantity
from effspec.rules import AuditContext, Rule


def preset_spread(result) -> tuple[str, ...]:
    """Notes with the FLOPs per token, and the MFU where known, under each standard preset."""
    rows = [(label, row) for label, row in result.conventions.items() if label != "declared"]
    if not rows:
        return ()
    with_mfu = [(label, row) for label, row in rows if row.get("mfu")]  # (an MFU that underflowed to 0 compares nothing)
    if with_mfu:
        values = [row["mfu"] for _, row in with_mfu]
        shown = ", ".join(f"{label} {percent(row['mfu'])}" for label, row in with_mfu)
        basis = with_mfu[0][1].get("basis", "inputs")
        where = "" if basis == "inputs" else f" (step time implied by {basis})"
        return (f"MFU under each standard preset{where}: {shown}; "
                f"the choice moves MFU by a factor of {max(values) / min(values):.3g}",)
    shown = ", ".join(f"{label} {quantity(row['flops_per_token'], 'FLOP/token')}"
                      for label, row in rows if row.get("flops_per_token"))
    return (f"FLOPs per token under each standard preset: {shown}",) if shown else ()


class EFF101(Rule):
    """## What it does

    Flags a run that has no `convention` block. Without one the compiler cannot
    know what the MFU numerator counts, so it evaluates the run under the `palm`
    preset and marks every derived figure as assumed.

    ## Why is this bad?

    "MFU" is only defined once the numerator is: whether attention scores are
    counted (and halved for causal masking), whether the output logits and the
    input embeddings count as matmuls, and whether recomputation is included.
    For a 13B model at 2K context the four standard presets span roughly 37 %
    to 53 % MFU for the same measured throughput, so an MFU without its
    convention cannot be compared with any other.

    ## Example

    ```eff
    eff 1

    run vendor {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 32000 }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = catalog }
      timing { throughput = 390000 token/s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    Write the convention the source used, and every knob it overrides:

    ```eff
    eff 1

    run vendor {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 32000 }
      convention { preset = palm  attention = causal }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = catalog }
      timing { throughput = 390000 token/s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF101"
    title = "numerator convention undeclared"
    severity = "warning"
    name = "undeclared-numerator-convention"
    nodes = ("run.convention",)

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            if run.block("convention") is not None:
                continue
            model = run.block("model")
            # A `custom` model gives its FLOPs per token directly: no preset is
            # applied to it, so there is no assumed convention to report.
            if model is not None and model.value("kind") == "custom":
                continue
            result = ctx.evaluation.runs.get(run.id)
            notes = preset_spread(result) if result is not None else ()
            yield self.diag(
                run.name_span,
                f"run `{run.id}` declares no `convention`: the MFU numerator is undeclared, "
                f"so every figure is evaluated under `palm` (assumed)",
                "add `convention { preset = palm }` (or megatron, kaplan, chinchilla) naming the convention the "
                "source used, plus any knob it overrides, e.g. `attention = causal`",
                label="no `convention` block",
                notes=notes,
            )
