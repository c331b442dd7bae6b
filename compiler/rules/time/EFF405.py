"""EFF405: a pipeline bubble declared on a run without pipeline stages."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.display import metric_value, quantity
from effspec.rules import AuditContext, Rule


class EFF405(Rule):
    """Pipeline bubble declared on a run without pipeline stages.

    ## What it does
    Flags a non-zero `breakdown.bubble` on a run whose `parallelism.pp` is not
    written or is 1: a run without pipeline parallelism.

    ## Why is this bad?
    The bubble is the time pipeline stages wait while the pipeline fills and
    drains; its size follows from the number of stages and micro-batches.  A
    run with a single stage has no pipeline to fill, so time booked as bubble
    belongs elsewhere: ranks waiting for a slower one (imbalance), exposed
    data-parallel communication, the input pipeline, or the unclassified
    remainder.  Booked as bubble, it points the reader at pipeline scheduling,
    where there is nothing to fix, and hides the category that does hold it.
    If the run was in fact pipelined, the layout is incomplete, and so are the
    local GEMM shapes derived from it.

    ## Example
    ```eff
    eff 1

    run dp_only {
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.60 s  warmup = 0 step  boundary = "optimizer step" }
      breakdown { model_compute = 50 %  exposed_comm = 20 %  bubble = 10 %  imbalance = 10 %  unclassified = 10 % }
    }
    ```

    ## Use instead
    Book the time in the category that holds it (or declare the stages, if
    the run was pipelined):
    ```eff
    eff 1

    run dp_only {
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.60 s  warmup = 0 step  boundary = "optimizer step" }
      breakdown { model_compute = 50 %  exposed_comm = 20 %  bubble = 0 %  imbalance = 20 %  unclassified = 10 % }
    }
    ```
    """

    code = "EFF405"
    title = "pipeline bubble declared on a run without pipeline stages"
    severity = "warning"
    name = "bubble-without-pipeline"
    nodes = ("run.breakdown.bubble", "run.parallelism.pp")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run in ctx.spec.runs:
            block = run.block("breakdown")
            entry = block.get("bubble") if block is not None else None
            if entry is None or not entry.value:
                continue
            par = run.block("parallelism")
            pp = par.get("pp") if par is not None else None
            if pp is not None and isinstance(pp.value, (int, float)) and pp.value > 1:
                continue
            stages = ("`parallelism.pp = 1` (one stage)" if pp is not None else
                      "no `parallelism.pp`" if par is not None else "no `parallelism` block")
            assert isinstance(entry.value, (int, float))  # a breakdown share or duration
            shown = quantity(float(entry.value), "s") if entry.unit == "s" else metric_value(float(entry.value), "")
            yield self.diag(
                entry.value_span,
                f"run `{run.id}` books {shown} of its step as pipeline bubble, but declares {stages}: "
                "without pipeline stages there is no fill or drain to wait for",
                "move the time to the category that holds it (`imbalance`, `exposed_comm`, `host_input`, or "
                "`unclassified` when unknown), or declare `parallelism.pp` if the run was pipelined",
                label="bubble without a pipeline",
            )
