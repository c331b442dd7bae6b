"""EFF105: the declared parameter count disagrees with the shape."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.rules import AuditContext, Rule

# Norms, biases and positional tables are not in the shape count; they stay
# well under 2 % for any model large enough to report an MFU for.
TOLERANCE = 0.02


def _params(value: float) -> str:
    """A parameter count the way papers write it: 6.74B, 350M."""
    if value >= 1e9:
        return f"{value / 1e9:.4g}B"
    return f"{value / 1e6:.4g}M" if value >= 1e6 else f"{value:,.0f}"


def _literal(value: float) -> str:
    """The same count as a `.eff` literal: 6.74e9."""
    exponent = 9 if value >= 1e9 else 6 if value >= 1e6 else 0
    return f"{value / 10 ** exponent:.4g}e{exponent}" if exponent else f"{value:.0f}"


class EFF105(Rule):
    """## What it does

    Compares `model.params` with the parameter count the declared shape
    implies (attention and FFN weights of every layer, plus the embedding and
    output matrices, one of them if `tied_embeddings = true`) and flags a
    difference above 2 %.

    ## Why is this bad?

    The compiler counts FLOPs from the shape, while papers often quote a
    rounded or differently counted parameter total (with or without
    embeddings, tied or untied). When the two disagree by more than rounding,
    one of them is wrong: a mistyped `d_ff`, a missed `kv_heads`, SwiGLU written
    as `gelu`, or a headline count for another model size. Each of those changes
    the numerator, and so every MFU figure derived from it.

    ## Example

    ```eff
    eff 1

    run llm7b {
      model {
        kind = dense_transformer  layers = 32  d_model = 4096  heads = 32  ffn = gelu
        d_ff = 11008  vocab = 32000  params = 6.74e9 param from paper "Table 1"
      }
      convention { preset = palm }
      work { seq_len = 4096 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 2048 device  dtype = bf16  peak = catalog }
    }
    ```

    ## Use instead

    The 6.74e9 figure is a SwiGLU model: three FFN matrices, not two.

    ```eff
    eff 1

    run llm7b {
      model {
        kind = dense_transformer  layers = 32  d_model = 4096  heads = 32  ffn = swiglu
        d_ff = 11008  vocab = 32000  params = 6.74e9 param from paper "Table 1"
      }
      convention { preset = palm }
      work { seq_len = 4096 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 2048 device  dtype = bf16  peak = catalog }
    }
    ```
    """

    code = "EFF105"
    title = "declared parameter count disagrees with the shape"
    severity = "warning"
    name = "params-disagree-with-shape"
    nodes = ("run.model.params",)

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            model = run.block("model")
            entry = model.get("params") if model is not None else None
            if entry is None or result is None or not result.params_from_shape:
                continue
            assert isinstance(entry.value, (int, float)) and result.shape is not None  # a quantity; the count needs a shape
            declared, shape = float(entry.value), result.params_from_shape
            diff = (declared - shape) / shape
            if abs(diff) <= TOLERANCE:
                continue
            tied = "tied" if result.shape.tied_embeddings else "untied"
            yield self.diag(
                entry.value_span,
                f"declared params {_params(declared)} differ from the {_params(shape)} the shape implies "
                f"({diff * 100:+.1f} %)",
                "check layers, d_model, heads, kv_heads, ffn, d_ff, vocab and tied_embeddings against the source; "
                f"if the shape is right, write `params = {_literal(shape)} param`",
                label=f"the shape gives {_params(shape)}",
                notes=(f"shape count: attention and FFN weights of {result.shape.layers} layers plus {tied} "
                       f"embeddings (norms and biases ignored); FLOPs are counted from the shape, not from `params`",),
            )
