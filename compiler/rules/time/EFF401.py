"""EFF401: the complement of MFU attributed to one time category."""

from __future__ import annotations

from collections.abc import Iterator

from effspec.diagnostics import Diagnostic
from effspec.display import percent
from effspec.front.ir import BinOp, Expr, Number, Ref
from effspec.rules import AuditContext, Rule

# A claimed share within this many percentage points of 1 − MFU is read as the complement.
COMPLEMENT_TOLERANCE = 0.01

_MFU_NAMES = ("mfu", "mfu_measured_peak")


def _is_whole(expr: Expr) -> bool:
    """`100 %` or `1`: the whole, as a claim writes it."""
    return isinstance(expr, Number) and ((expr.unit == "%" and expr.value == 100) or (expr.unit == "" and expr.value == 1))


def _is_mfu(expr: Expr) -> bool:
    """`mfu`, `mfu_measured_peak`, or another run's `run.<id>.mfu`."""
    return isinstance(expr, Ref) and expr.path[-1] in _MFU_NAMES and (len(expr.path) == 1 or expr.path[0] == "run")


def is_complement_expr(expr: Expr) -> bool:
    """Whether a claim is written as `100 % - mfu` or `1 - mfu`."""
    return isinstance(expr, BinOp) and expr.op == "-" and _is_whole(expr.left) and _is_mfu(expr.right)


class EFF401(Rule):
    """Complement fallacy: 100 % − MFU attributed to a time category.

    ## What it does
    Flags a claim `breakdown.<category>` (any category but `model_compute`)
    written as `100 % - mfu` or `1 - mfu`, or whose value equals 1 − MFU (the
    run's claimed or reconstructed MFU) within 1 percentage point.

    ## Why is this bad?
    MFU is a ratio of model work to peak arithmetic, not a partition of the step
    into time intervals.  The 1 − MFU that it leaves is the sum of every way a
    device falls short of its peak: kernels that run below peak even while
    computing, recomputation, padding, exposed communication, pipeline bubbles,
    rank imbalance, input stalls and checkpoints.  Attributing all of it to one
    category ("the rest is network") is a claim about time that no timing
    supports, and it is almost always wrong: communication is usually a minority
    of the gap.

    ## Example
    ```eff
    eff 1

    run vendor_claim {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = catalog }
      claim mfu = 45 %
      claim breakdown.exposed_comm = 100 % - mfu from paper "the rest is network"
    }
    ```

    ## Use instead
    Measure the step from traces and declare a reconciled `breakdown`, with an
    explicit `unclassified` share, before attributing time to a category:
    ```eff
    eff 1

    run vendor_claim {
      model { kind = dense_transformer  layers = 40  d_model = 5120  heads = 40  ffn = gelu  d_ff = 20480  vocab = 32000 }
      convention { preset = palm }
      work { seq_len = 2048 token/sequence  global_batch = 1024 sequence }
      hardware { accelerator = "A100-SXM4-80GB"  count = 256 device  dtype = bf16  peak = catalog }
      claim mfu = 45 %
      breakdown {
        model_compute = 58 %
        extra_compute = 6 %
        exposed_comm  = 17 %
        bubble        = 0 %
        imbalance     = 7 %
        host_input    = 4 %
        checkpoint    = 2 %
        unclassified  = 6 %
      }
      claim breakdown.exposed_comm = 17 % from profiler "trace of steps 200-220"
    }
    ```
    """

    code = "EFF401"
    title = "complement fallacy: 100 % - MFU attributed to a time category"
    severity = "error"
    name = "complement-fallacy"
    nodes = ("run.claim.breakdown",)

    def check(self, ctx: AuditContext) -> Iterator[Diagnostic]:
        for run in ctx.spec.runs:
            result = ctx.evaluation.runs.get(run.id)
            for claim in run.claims:
                if not claim.name.startswith("breakdown.") or claim.name == "breakdown.model_compute":
                    continue
                category = claim.name.split(".", 1)[1]
                written = is_complement_expr(claim.expr)
                mfu, source = self._mfu(result)
                share = None
                if result is not None and claim.name in result.claims:
                    share = result.claims[claim.name].claimed
                numeric = (not written and share is not None and mfu is not None
                           and abs(share - (1.0 - mfu)) <= COMPLEMENT_TOLERANCE)
                if not (written or numeric):
                    continue
                if written:
                    how = f"is written as `{claim.text}`"
                else:
                    assert share is not None and mfu is not None  # numeric
                    how = f"= {percent(share)} equals 100 % − MFU ({source} {percent(mfu)}) within 1 percentage point"
                shown = f" = {percent(share)}" if written and share is not None else ""
                yield self.diag(
                    claim.value_span,
                    f"claim `{claim.written}` {how}{shown}: MFU is a ratio of model work to peak, not a partition "
                    "of time; 100 % − MFU includes slow kernels, recomputation, padding, pipeline bubbles, "
                    f"imbalance, input stalls and checkpoints, not only {category.replace('_', ' ')}",
                    "declare a reconciled `breakdown { … }` measured from traces, whose categories including "
                    f"`unclassified` sum to 100 % of the step, and claim `{claim.written}` from it",
                    label="the complement of MFU is not a time share",
                )

    @staticmethod
    def _mfu(result) -> tuple[float | None, str]:
        """The MFU the complement would be taken of: the claimed one, else the reconstructed one."""
        if result is None:
            return None, ""
        claimed = result.claims.get("mfu")
        if claimed is not None and claimed.claimed is not None:
            return claimed.claimed, "claimed"
        metric = result.figure("mfu")
        return (metric.value, "reconstructed") if metric is not None else (None, "")
