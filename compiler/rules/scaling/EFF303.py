"""EFF303: the problem changed between the runs a scaling compares."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic, Span
from effspec.display import sig
from effspec.front.ir import Run
from effspec.rules import AuditContext, Rule

# The model keys that fix the problem (and the GEMM shapes) of a run.
MODEL_KEYS = ("kind", "layers", "d_model", "heads", "kv_heads", "head_dim", "ffn", "d_ff", "vocab",
              "experts", "top_k", "shared_experts", "d_ff_expert", "moe_layers", "flops_per_token")


def _shown(value, unit: str = "") -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if value == int(value):
        text = f"{int(value):,}" if abs(value) >= 1e4 else str(int(value))
    else:
        text = sig(value)
    return f"{text} {unit}" if unit else text


def _model_values(run: Run) -> dict[str, tuple[object, Span | None]]:
    """Each model key's effective value (defaults filled in) and the span that wrote it."""
    model = run.block("model")
    out: dict[str, tuple[object, Span | None]] = {}
    if model is None:
        return out
    for key in MODEL_KEYS:
        entry = model.get(key)
        if entry is not None:
            out[key] = (entry.value, entry.span)
    # Defaults, so that `kv_heads = 16` written out equals it left to default to `heads = 16`.
    heads, d_model = model.integer("heads"), model.integer("d_model")
    if "kv_heads" not in out and heads is not None:
        out["kv_heads"] = (heads, None)
    if "head_dim" not in out and heads and d_model is not None:
        out["head_dim"] = (d_model / heads, None)
    if "d_ff_expert" not in out and model.value("d_ff") is not None and model.value("experts") is not None:
        out["d_ff_expert"] = (model.value("d_ff"), None)
    return {key: out[key] for key in MODEL_KEYS if key in out}


def problem(run: Run, pools) -> dict[str, tuple[object, Span | None]]:
    """What defines a run's problem: model shape, sequence length, matmul datatype."""
    values = {f"model.{k}": v for k, v in _model_values(run).items()}
    work = run.block("work")
    seq = work.get("seq_len") if work is not None else None
    if seq is not None:
        values["work.seq_len"] = (seq.value, seq.span)
    dtypes = tuple(sorted({p.dtype for p in pools}))
    if dtypes:
        span = next((d.span for b in run.blocks_named("hardware") if (d := b.get("dtype"))), None)
        values["hardware.dtype"] = ("+".join(dtypes), span)
    return values


class EFF303(Rule):
    """The compared problem changed.

    ## What it does
    For every `scaling`, compares each run with the baseline on what defines the
    problem: the model shape (`kind`, `layers`, `d_model`, `heads`, `kv_heads`,
    `head_dim`, `ffn`, `d_ff`, `vocab` and the MoE keys), `work.seq_len` and the
    matmul datatype (`hardware.dtype`).  Each difference is named with both
    values.  The diagnostic points at the first differing key of the compared run.
    In weak scaling by model size (`kind = weak`, `per_device = flops`) the
    model is meant to grow with the devices, so model keys are not compared
    (EFF302 checks that the model FLOPs per device stayed about fixed); the
    sequence length and the datatype still are.

    ## Why is this bad?
    A scaling efficiency is meant to show what adding devices costs.  If the
    larger run also trains a wider model, longer sequences or a faster datatype,
    its matrix multiplications are larger (or cheaper) and fixed overheads weigh
    less, so its efficiency can rise while the parallel system got no better.
    The comparison then measures the change of problem, not the scaling.

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

    run long_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 4096 token/sequence  global_batch = 128 sequence }   # same tokens, longer sequences
      parallelism { dp = 64  micro_batch = 2 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.62 s }
    }

    scaling dp {
      kind     = strong
      baseline = base_8
      runs     = [long_64]
    }
    ```

    ## Use instead
    Compare runs of the same model, sequence length and datatype; report a run
    with another problem on its own:
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

    run same_64 {
      model { kind = dense_transformer  layers = 24  d_model = 2048  heads = 16  ffn = gelu  d_ff = 8192  vocab = 50257 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 256 sequence }
      parallelism { dp = 64  micro_batch = 4 sequence }
      hardware { accelerator = "A100-SXM4-40GB"  count = 64 device  dtype = bf16  peak = catalog }
      timing { step_time = 0.6 s }
    }

    scaling dp {
      kind     = strong
      baseline = base_8
      runs     = [same_64]
    }
    ```
    """

    code = "EFF303"
    title = "the compared problem changed"
    severity = "warning"
    name = "compared-problem-changed"
    nodes = ("scaling.baseline", "scaling.runs", "run.model", "run.work.seq_len", "run.hardware.dtype")

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        runs = ctx.evaluation.runs
        for scaling in ctx.spec.scalings:
            base = runs.get(scaling.baseline) if scaling.baseline else None
            if base is None:
                continue
            base_problem = problem(base.run, base.pools)
            # Weak scaling by model size: the model is meant to grow with the devices
            # (EFF302 checks its FLOPs per device); sequence length and datatype still fix the problem.
            grows = scaling.kind == "weak" and scaling.per_device == "flops"
            for run_id in dict.fromkeys(scaling.runs):  # a run listed twice is reported once
                other = runs.get(run_id)
                if other is None or run_id == base.run.id:
                    continue
                run_problem = problem(other.run, other.pools)
                differences, first_span = [], None
                for name in dict.fromkeys([*base_problem, *run_problem]):
                    if grows and name.startswith("model."):
                        continue
                    before, _ = base_problem.get(name, ("not declared", None))
                    after, span = run_problem.get(name, ("not declared", None))
                    if before == after:
                        continue
                    unit = "token/sequence" if name == "work.seq_len" else ""
                    differences.append(f"{name} {_shown(before, unit)} → {_shown(after, unit)}")
                    if first_span is None:
                        first_span = span
                if not differences:
                    continue
                yield self.diag(
                    first_span or other.run.name_span,
                    f"scaling `{scaling.id}` compares different problems: `{base.run.id}` → `{run_id}`: "
                    + "; ".join(differences)
                    + ". The efficiency may reflect larger (or cheaper) GEMMs, not less parallel overhead",
                    f"compare `{run_id}` with a baseline of the same model shape, `seq_len` and `dtype`, "
                    f"or report it as its own run outside scaling `{scaling.id}`"
                    + ("; if the model grows with the devices on purpose, write `per_device = flops`"
                       if scaling.kind == "weak" and any(d.startswith("model.") for d in differences) else ""),
                    label=f"differs from `{base.run.id}`",
                )
