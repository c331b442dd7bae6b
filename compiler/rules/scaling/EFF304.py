"""EFF304: a run in a scaling comparison declares no parallelism layout."""

from __future__ import annotations

import re
from collections.abc import Iterator

from effspec.diagnostics import Diagnostic, Span
from effspec.front.ir import Entry
from effspec.rules import AuditContext, Rule


def name_span(lines: list[str], entry: Entry, name: str) -> Span:
    """The span of the run id ``name`` inside a `baseline`/`runs` value, else the whole value.

    The IR keeps one span for the list; the caret is more useful under the one
    name it is about.
    """
    vs = entry.value_span
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
    for line_no in range(vs.line, min(vs.end_line, len(lines)) + 1):
        text = lines[line_no - 1]
        start = vs.column - 1 if line_no == vs.line else 0
        end = vs.end_column - 1 if line_no == vs.end_line else len(text)
        segment = text[:end].split("#", 1)[0]  # ids never contain '#': the rest is a comment
        for match in word.finditer(segment):
            if match.start() >= start:
                return Span(line_no, match.start() + 1, line_no, match.end() + 1)
    return vs


class EFF304(Rule):
    """Local shapes unknown in a scaling comparison.

    ## What it does
    Flags every run of a `scaling` (the baseline included) that declares no
    `parallelism` block.  The caret points at the run's name in the scaling's
    `baseline` or `runs`.

    ## Why is this bad?
    Adding devices changes how the work is cut: more data-parallel ranks mean
    fewer sequences per device, more tensor-parallel ranks mean narrower
    matrices.  Smaller local matrix multiplications run further from peak, so
    a drop in scaling efficiency may be the local shapes, not communication or
    imbalance.  Without the layout (`dp`, `tp`, `pp`, `micro_batch`) a reader
    cannot tell which, and cannot reproduce the local GEMM sizes.

    ## Example
    ```eff
    eff 1

    run base_8 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s }
    }

    run scaled_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.6 s }
    }

    scaling dp {
      kind     = strong
      baseline = base_8
      runs     = [scaled_64]
    }
    ```

    ## Use instead
    Declare each compared run's layout:
    ```eff
    eff 1

    run base_8 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 8  tp = 1  pp = 1  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 8 device  dtype = bf16  peak = catalog }
      timing { step_time = 4.0 s }
    }

    run scaled_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  tp = 1  pp = 1  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.6 s }
    }

    scaling dp {
      kind     = strong
      baseline = base_8
      runs     = [scaled_64]
    }
    ```
    """

    code = "EFF304"
    title = "local shapes unknown in a scaling comparison"
    severity = "warning"
    name = "scaling-local-shapes-unknown"
    nodes = ("scaling.baseline", "scaling.runs", "run.parallelism")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for scaling in ctx.spec.scalings:
            seen: set[str] = set()
            for key in ("baseline", "runs"):
                entry = scaling.get(key)
                if entry is None:
                    continue
                value = entry.value
                run_ids = (value,) if isinstance(value, str) else value  # baseline names one run, runs a tuple
                assert isinstance(run_ids, tuple)
                for run_id in run_ids:
                    run = ctx.spec.run(run_id)
                    if run is None or run_id in seen or run.block("parallelism") is not None:
                        continue
                    seen.add(run_id)
                    role = "baseline" if key == "baseline" else "compared run"
                    yield self.diag(
                        name_span(ctx.lines, entry, run_id),
                        f"run `{run_id}`, the {role} of scaling `{scaling.id}`, declares no `parallelism`: its "
                        "local GEMM shapes (sequences per device, tensor split) are unknown, so a change in "
                        "efficiency cannot be told apart from smaller per-device matrix multiplications",
                        f"add `parallelism {{ dp = …  tp = …  pp = …  micro_batch = … sequence }}` to run `{run_id}`",
                        label="no `parallelism` block",
                    )
