"""EFF603: MFU reported without valid tokens per second beside it."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import quantity
from effspec.rules import AuditContext, Rule


class EFF603(Rule):
    """## What it does

    Flags a run that claims `mfu` but states no valid tokens per second: no
    `claim throughput` (or `valid_tokens_per_second`, or one device's `tokens_per_second_per_device`) and no
    `timing.throughput` taken from the source. Where the compiler can
    reconstruct the rate, or a claim implies it, the help gives the figure to
    write.

    ## Why is this bad?

    MFU is a ratio whose numerator depends on a counting convention; valid
    tokens per second is what the run delivered, in units anyone can compare.
    An MFU alone hides both the convention and the padding: two runs at the
    same MFU can differ by a third in useful throughput. With the token rate
    beside it, a reader can re-derive the MFU under their own convention and
    catch a numerator that counts recomputation or padding.

    ## Example

    ```eff
    eff 1

    run headline {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = [4.02, 4.00, 4.05, 3.99, 4.01] s  warmup = 0 step  boundary = "optimizer step" }
      claim mfu = 47.5 % from paper "abstract"
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run headline {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = [4.02, 4.00, 4.05, 3.99, 4.01] s  warmup = 0 step  boundary = "optimizer step" }
      claim mfu        = 47.5 % from paper "abstract"
      claim throughput = 130700 token/s from paper "Table 3"
    }
    ```
    """

    code = "EFF603"
    title = "MFU reported without valid tokens per second"
    severity = "warning"
    name = "mfu-without-token-rate"
    nodes = ("run.claim.mfu", "run.claim.valid_tokens_per_second", "run.timing.throughput")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            mfu = next((c for c in run.claims if c.name == "mfu"), None)
            if mfu is None or any(c.name in ("valid_tokens_per_second", "tokens_per_second_per_device") for c in run.claims):
                continue
            timing = run.block("timing")
            if timing is not None and timing.get("throughput") is not None:
                continue
            result = ctx.evaluation.runs.get(run.id)
            rate = result.figure("valid_tokens_per_second") if result is not None else None
            if rate is not None:
                where = "reconstructed from the inputs" if rate.basis == "inputs" else f"implied by {rate.basis}"
                figure = str(int(float(f"{rate.value:.4g}")))  # four significant digits, as a literal
                help_ = (f"state the valid tokens per second beside the MFU: the figure {where} is "
                         f"{quantity(round(rate.value), 'token/s')}, e.g. `claim throughput = {figure} token/s from …`")
            else:
                help_ = ("state the valid tokens per second the source reports beside the MFU: "
                         "`claim throughput = … token/s from paper \"…\"`")
            yield self.diag(
                mfu.name_span,
                f"run `{run.id}` claims an MFU of {mfu.text} without valid tokens per second beside it",
                help_,
                label="MFU without a token rate",
            )
