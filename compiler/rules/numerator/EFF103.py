"""EFF103: padded or dropped tokens counted as useful work."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import percent, quantity
from effspec.rules import AuditContext, Rule


class EFF103(Rule):
    """## What it does

    Flags a run whose numerator counts tokens that did no useful work:

    - `convention.padding = included` while the step has padded tokens, so the
      MFU numerator charges the padding as model FLOPs; or
    - `work.valid_tokens` declared equal to `seq_len × global_batch` although
      `padded_tokens` or `dropped_tokens` are declared non-zero, so the padding
      is counted as useful tokens.

    It shows the valid tokens per step, their share of the batch, and the valid
    tokens per second that follow.

    ## Why is this bad?

    Padding fills a sequence to a fixed length and is thrown away by the loss;
    dropped tokens (capacity overflow, truncation) are never trained on. A step
    that spends 12 % of its positions on padding does 12 % less useful work
    than its shape suggests. Counting those positions raises MFU and tokens per
    second without training the model any faster, and hides exactly the waste
    that packing or variable-length batching would remove.

    ## Example

    ```eff
    eff 1

    run packed_off {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm  padding = included }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence  padded_tokens = 62914 token }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```

    ## Use instead

    Count valid tokens only (the default), and let `valid_tokens` follow from
    the declared padding:

    ```eff
    eff 1

    run packed_off {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm  padding = excluded }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence  padded_tokens = 62914 token }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF103"
    title = "padded or dropped tokens counted as useful work"
    severity = "warning"
    name = "padding-counted-as-work"
    nodes = ("run.convention.padding", "run.work.valid_tokens")

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            work = run.block("work")
            if result is None or work is None:
                continue
            padded = float(work.number("padded_tokens", 0) or 0)
            dropped = float(work.number("dropped_tokens", 0) or 0)
            seq_len, batch = work.number("seq_len"), work.number("global_batch")
            full = seq_len * batch if seq_len is not None and batch is not None else None
            step = result.figure("step_time")
            convention = run.block("convention")
            padding = convention.get("padding") if convention is not None else None
            if padding is not None and padding.value == "included" and padded > 0:
                valid = result.metrics.get("valid_tokens_per_step")
                notes = []
                if valid is not None:
                    counted = valid.value + padded
                    notes.append(f"valid tokens per step: {quantity(valid.value, 'token')} of "
                                 f"{quantity(counted, 'token')} counted ({percent(valid.value / counted)} valid)")
                    mfu = result.figure("mfu")
                    if mfu is not None:
                        notes.append(f"MFU: {percent(mfu.value)} with padding counted, "
                                     f"{percent(mfu.value * valid.value / counted)} over valid tokens only")
                    if step is not None:
                        notes.append(f"valid tokens per second: {quantity(valid.value / step.value, 'token/s')}")
                yield self.diag(
                    padding.value_span,
                    f"`padding = included` counts the {padded:,.0f} padded tokens per step as model FLOPs",
                    "write `padding = excluded` (the default): the MFU numerator counts valid tokens only; "
                    "the padding's cost shows up in HFU",
                    label="padding counted as work",
                    notes=tuple(notes),
                )
            declared = work.get("valid_tokens")
            if declared is None or full is None or padded + dropped <= 0:
                continue
            assert isinstance(declared.value, (int, float)) and seq_len is not None and batch is not None  # a quantity; full needs both
            if abs(float(declared.value) - full) > 0.005 * full:
                continue
            valid_count = full - padded - dropped
            notes = [f"valid tokens per step = {quantity(seq_len, 'token/sequence')} × {quantity(batch, 'sequence')} − "
                     f"{quantity(padded, 'token')} − {quantity(dropped, 'token')} = {quantity(valid_count, 'token')} "
                     f"({percent(valid_count / full)} of the batch)"]
            if step is not None:
                notes.append(f"valid tokens per second: {quantity(valid_count / step.value, 'token/s')}, not "
                             f"{quantity(float(declared.value) / step.value, 'token/s')}")
            yield self.diag(
                declared.value_span,
                f"`valid_tokens` = {quantity(float(declared.value), 'token')} is every position of the batch "
                f"(seq_len × global_batch), although {quantity(padded + dropped, 'token')} per step are padded or dropped",
                f"remove `valid_tokens` (it defaults to seq_len × global_batch − padded_tokens − dropped_tokens), "
                f"or write `valid_tokens = {valid_count:.0f} token`",
                label="includes padded and dropped tokens",
                notes=tuple(notes),
            )
