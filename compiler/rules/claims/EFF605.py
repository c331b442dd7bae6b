"""EFF605: metrics not recoverable from the declared inputs."""

from __future__ import annotations

from collections.abc import Iterable

from effspec.diagnostics import Diagnostic
from effspec.display import metric_value
from effspec.rules import AuditContext, Rule

_CALENDAR = ("calendar_efficiency", "goodput")


class EFF605(Rule):
    """## What it does

    Lists, once per run, the metrics the compiler could not reconstruct from
    the declared inputs, grouped by the input each group lacks. Where the
    run's claims imply a figure anyway (a step time from a claimed
    throughput), it shows that figure and the claim it rests on. Calendar
    metrics are listed only when the run has a `calendar` block.

    ## Why is this bad?

    It is not an error to audit a source that states little; this finding is
    informational. But a report that silently leaves out MFU or tokens per
    second reads as if they had been checked. Naming each absent metric, and
    the one input that would recover it, tells the reader exactly how far the
    audit reaches and what to ask the authors for.

    ## Example

    ```eff
    eff 1

    run partial {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
    }
    ```

    ## Use instead

    ```eff
    eff 1

    run partial {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = [4.02, 4.00, 4.05, 3.99, 4.01] s  warmup = 0 step  boundary = "optimizer step" }
    }
    ```
    """

    code = "EFF605"
    title = "metric not recoverable from the declared inputs"
    severity = "info"
    name = "metric-unrecoverable"
    nodes = ("run",)

    def check(self, ctx: AuditContext) -> Iterable[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            if result is None or not result.missing:
                continue
            has_calendar = run.block("calendar") is not None
            groups: dict[tuple[str, ...], list[str]] = {}
            for metric, needs in result.missing.items():
                if metric in _CALENDAR and not has_calendar or metric in result.nonfinite:
                    continue  # (a figure that is not finite is EFF702's)
                groups.setdefault(tuple(needs), []).append(metric)
            if not groups:
                continue
            names = [m for metrics in groups.values() for m in metrics]
            # One input lacking for all of them: the message has just listed them, so the note does not again.
            notes = ([f"all {len(names)}: missing {_inputs(next(iter(groups)))}"] if len(groups) == 1 and len(names) > 1
                     else [f"{', '.join(metrics)}: missing {_inputs(needs)}" for needs, metrics in groups.items()])
            implied = [m for name, m in result.implied.items() if name in names]
            if implied:
                basis = implied[0].basis
                notes.append(f"implied by {basis} instead: "
                             + ", ".join(f"{m.name} {metric_value(m.value, m.unit)}" for m in implied))
            first = next(iter(groups))
            yield self.diag(
                run.name_span,
                f"run `{run.id}`: {len(names)} metric{'s' if len(names) != 1 else ''} not recoverable from the "
                f"declared inputs: {', '.join(names)}",
                f"declare {_inputs(first)} to recover {', '.join(groups[first])}"
                + (" (the notes list the rest)" if len(groups) > 1 else ""),
                label="metrics not recoverable",
                notes=tuple(notes),
            )


def _inputs(needs: tuple[str, ...]) -> str:
    if not needs:
        return "their inputs"
    return ", ".join(" or ".join(f"`{alt}`" for alt in need.split(" or ")) for need in needs)
