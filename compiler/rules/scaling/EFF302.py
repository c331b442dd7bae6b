"""EFF302: a weak-scaling comparison whose work per device changed."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.display import quantity, sig
from effspec.engine.scaling import FLOPS_PER_DEVICE_TOLERANCE, ScalingRun
from effspec.rules import AuditContext, Rule
from effspec.rules.scaling import WORK_TOLERANCE, Comparison, change, comparisons, fixed, signed_percent, tokens


class EFF302(Rule):
    """Weak scaling with changed per-device work.

    ## What it does
    Compares the valid tokens per step per active device of every run in a
    `scaling` of `kind = weak` with its baseline's, and flags a run whose
    per-device work differs by more than 0.5 %, with the change in percent.
    The message says what the series is instead: strong scaling when the
    global work (tokens and model) stayed fixed; weak scaling by model size
    when the model grew with the devices and its FLOPs per device stayed
    about fixed (write `per_device = flops`).

    With `per_device = flops` (weak scaling by model size, as in Megatron-LM's
    1.2B-on-1-GPU to 8.3B-on-8-GPUs series) the model may grow with the
    devices, and what must stay fixed is the model FLOPs per step per device
    (`model_flops_per_step / devices`). Model sizes come in discrete shapes, so
    it is held to within 20 %; a run beyond that is flagged.

    ## Why is this bad?
    Weak-scaling efficiency divides the model FLOP/s each device achieves in the
    larger run by the baseline's.  That ratio isolates the cost of adding devices
    only while each device is handed the same work.  Give each device more tokens
    and its matrix multiplications grow and fixed costs amortize, so the ratio
    rises for reasons that have nothing to do with scaling; give it fewer and
    the ratio falls the same way.  When the global batch stayed fixed instead,
    the comparison is strong scaling.

    ## Example
    ```eff
    eff 1

    run base_8 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 8  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s }
    }

    run wide_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }   # 16 sequences per device, not 32
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 2.3 s }
    }

    scaling dp {
      kind     = weak
      baseline = base_8
      runs     = [wide_64]
    }
    ```

    ## Use instead
    Grow the global batch with the devices, so that each device does the
    baseline's work:
    ```eff
    eff 1

    run base_8 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 8  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s }
    }

    run wide_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 2048 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.4 s }
    }

    scaling dp {
      kind     = weak
      baseline = base_8
      runs     = [wide_64]
    }
    ```
    """

    code = "EFF302"
    title = "weak scaling with changed per-device work"
    severity = "error"
    name = "weak-scaling-changed-per-device-work"
    nodes = ("scaling.kind", "scaling.runs", "run.work", "run.hardware.count")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for c in comparisons(ctx, "weak"):
            diag = self._flops(c) if c.scaling.per_device == "flops" else self._tokens(c)
            if diag is not None:
                yield diag

    def _flops(self, c: Comparison) -> Diagnostic | None:
        """`per_device = flops`: the model grows with the devices; its FLOPs per device stay within 20 %."""
        scaling, base, run = c.scaling, c.base, c.run
        moved = change(run.flops_per_device, base.flops_per_device)
        if moved is None or abs(moved) <= FLOPS_PER_DEVICE_TOLERANCE:
            return None
        assert run.flops_per_device is not None and base.flops_per_device  # change() compared them
        shown = signed_percent(moved)
        return self.diag(
            c.span,
            f"`{scaling.id}` is declared weak scaling by model size (`per_device = flops`), but run `{run.run_id}` "
            f"does {quantity(run.flops_per_device, 'FLOP')} of model work per device per step, the baseline "
            f"`{base.run_id}` {quantity(base.flops_per_device, 'FLOP')} ({shown}, beyond the "
            f"{FLOPS_PER_DEVICE_TOLERANCE * 100:g} % a series of model sizes allows){_growth(base, run)}: "
            "weak-scaling efficiency would mix the scaling cost with the change in work per device",
            f"size `{run.run_id}`'s model or batch so that each of its {sig(run.devices)} devices does about "
            f"{quantity(base.flops_per_device, 'FLOP')} per step",
            label=f"model FLOPs per device changed by {shown} in `{run.run_id}`",
            notes=("weak-scaling efficiency = run achieved FLOP/s per device / baseline achieved FLOP/s per device; "
                   "with `per_device = flops` the model may grow with the devices, its FLOPs per device may not",),
        )

    def _tokens(self, c: Comparison) -> Diagnostic | None:
        """The default `per_device = tokens`: each device keeps the baseline's valid tokens per step."""
        scaling, base, run = c.scaling, c.base, c.run
        moved = change(run.tokens_per_device, base.tokens_per_device)
        if moved is None or abs(moved) <= WORK_TOLERANCE:
            return None
        assert run.tokens_per_device is not None and base.tokens_per_device  # change() compared them
        shown = signed_percent(moved)
        same_tokens = fixed(run.valid_tokens_per_step, base.valid_tokens_per_step)
        model_changed = (base.model is not None and run.model is not None and base.model != run.model) or (
            not fixed(run.flops_per_token, base.flops_per_token) and bool(base.flops_per_token and run.flops_per_token))
        by_size = model_changed and fixed(run.flops_per_device, base.flops_per_device, FLOPS_PER_DEVICE_TOLERANCE)
        if by_size:
            assert run.flops_per_device is not None and base.flops_per_device is not None  # fixed() compared them
            what = (f"the model changed{_growth(base, run)} while its FLOPs per device stayed within "
                    f"{FLOPS_PER_DEVICE_TOLERANCE * 100:g} % ({quantity(base.flops_per_device, 'FLOP')} → "
                    f"{quantity(run.flops_per_device, 'FLOP')}), so this is weak scaling by model size")
            help_ = f"write `per_device = flops` in `{scaling.id}`"
        elif same_tokens and not model_changed:
            what = "the global work stayed fixed, so this is strong scaling"
            help_ = f"write `kind = strong` for `{scaling.id}`"
        elif same_tokens:
            what = (f"the global token count stayed fixed but the model changed{_growth(base, run)}, so this is "
                    "neither strong scaling nor weak scaling by tokens")
            help_ = (f"compare runs of one model (strong or weak scaling), or, if the model grew with the devices, "
                     f"write `per_device = flops` in `{scaling.id}`")
        else:
            what = "weak-scaling efficiency would mix the scaling cost with the change in work per device"
            target_batch = base.tokens_per_device * run.devices
            help_ = (f"give `{run.run_id}` {tokens(base.tokens_per_device)} valid tokens per device, i.e. "
                     f"{tokens(target_batch)} valid tokens per step on its {sig(run.devices)} devices")
        return self.diag(
            c.span,
            f"`{scaling.id}` is declared weak scaling, but run `{run.run_id}` does "
            f"{tokens(run.tokens_per_device)} valid tokens per device per step, the baseline `{base.run_id}` "
            f"{tokens(base.tokens_per_device)} ({shown}): per-device work is not fixed; {what}",
            help_,
            label=f"per-device work changed by {shown} in `{run.run_id}`",
            notes=("weak-scaling efficiency = run achieved FLOP/s per device / baseline achieved FLOP/s per "
                   "device, meaningful only when every device does the same work per step",),
        )


def _growth(base: ScalingRun, run: ScalingRun) -> str:
    """` (FLOPs per token ×6.9)` when both runs' FLOPs per token are known."""
    if base.flops_per_token and run.flops_per_token:
        return f" (FLOPs per token ×{sig(run.flops_per_token / base.flops_per_token, 3)})"
    return ""
