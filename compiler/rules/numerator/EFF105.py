"""EFF105: the declared parameter count disagrees with the shape."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.engine import flops
from effspec.engine.claims import written_precision
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


def active_params_from_shape(shape) -> float | None:
    """Parameters one token uses: the shape's total with only top_k of the routed experts.

    Counted through ``flops.params_from_shape`` on the shape with ``experts = top_k``, so
    whatever that function counts (attention variants included) stays counted once; the
    router, which every token passes through, keeps its ``d_model × experts`` weights.
    """
    if shape is None:
        return None
    if not shape.moe_layers or not shape.experts:
        return flops.params_from_shape(shape)
    active = dataclasses.replace(shape, experts=min(shape.top_k, shape.experts))
    router_rest = shape.moe_layers * shape.d_model * (shape.experts - active.experts)
    return flops.params_from_shape(active) + router_rest


class EFF105(Rule):
    """## What it does

    Compares `model.params` with the parameter count the declared shape
    implies (attention and FFN weights of every layer, plus the embedding and
    output matrices, one of them if `tied_embeddings = true`) and flags a
    difference beyond the written precision of `params` plus 2 %: half a unit
    in the last written digit, relative to the value (a `1.7e9` is ±2.9 %, so
    its tolerance is ±4.9 %; a `6.74e9` is ±0.07 %, so ±2.07 %), plus 2 % for
    the norms and biases the shape count leaves out. An expression has no
    written precision and gets the 2 % alone.

    `model.active_params`, where the source gives it (MoE papers quote "671B
    total, 37B activated"), is compared the same way with the parameters one
    token uses: the total minus the routed experts it is not sent to (every
    layer's attention, the dense FFNs, `top_k` routed and the shared experts
    of each MoE layer, the routers and the embeddings).

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
            if model is None or result is None or not result.params_from_shape:
                continue
            for key, shape_count in (("params", result.params_from_shape),
                                     ("active_params", active_params_from_shape(result.shape))):
                entry = model.get(key)
                if entry is None or not shape_count:
                    continue
                assert isinstance(entry.value, (int, float))  # a quantity
                diag = self._compare(result, entry, key, float(entry.value), shape_count)
                if diag is not None:
                    yield diag

    def _compare(self, result, entry, key: str, declared: float, shape: float) -> Diagnostic | None:
        diff = (declared - shape) / shape
        precision = (written_precision(entry.text) or 0.0) / declared
        allowed = precision + TOLERANCE
        if abs(diff) <= allowed:
            return None
        tied = "tied" if result.shape.tied_embeddings else "untied"
        what = "params" if key == "params" else "active params"
        counted = (f"attention and FFN weights of {result.shape.layers} layers plus {tied} embeddings" if key == "params"
                   else f"attention of {result.shape.layers} layers, the dense FFNs, top_k + shared experts per MoE "
                        f"layer, the routers and {tied} embeddings")
        return self.diag(
            entry.value_span,
            f"declared {what} {_params(declared)} differ from the {_params(shape)} the shape implies "
            f"({diff * 100:+.1f} %, tolerance ±{allowed * 100:.2g} %)",
            "check layers, d_model, heads, kv_heads, ffn, d_ff, vocab and tied_embeddings"
            + (", experts, top_k, shared_experts and d_ff_expert" if key == "active_params" else "")
            + f" against the source; if the shape is right, write `{key} = {_literal(shape)} param`",
            label=f"the shape gives {_params(shape)}",
            notes=(f"shape count: {counted} (norms and biases ignored); FLOPs are counted from the shape, not from `{key}`",
                   f"tolerance: the written precision of `{entry.text}` (±{precision * 100:.2g} %) + {TOLERANCE * 100:g} % "
                   "for norms and biases"),
        )
