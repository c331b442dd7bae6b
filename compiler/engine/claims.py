"""Claims: the tolerance a written figure carries, and each claim checked against
the reconstruction or, where the inputs stop short, against the run's other claims.
"""

from __future__ import annotations

import math
import re
from functools import cache

from effspec.diagnostics import Diagnostic
from effspec.display import exact_operands, quantity
from effspec.engine.rates import rate_metrics
from effspec.engine.results import ClaimResult, Input, Metric, RunResult
from effspec.front import keys as K
from effspec.front import lexicon
from effspec.front.expr import evaluate as eval_expr
from effspec.front.expr import refs_in
from effspec.front.ir import Claim, Expr, Number, Ref
from effspec.front.units import Q, UnitError, dims_of


def _half_unit(expr: Expr) -> float | None:
    """Half a unit in the last written digit of a single literal, in base units."""
    if not isinstance(expr, Number):
        return None
    return _half(expr.text, expr.unit)


def _half(written: str, unit: str) -> float:
    """Half a unit in the last digit of the number `written`, in base units of `unit`."""
    text = written.replace("_", "").lower()
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    half = 0.5 * 10.0 ** (int(exponent or 0) - decimals)
    if unit:
        from effspec.front.units import parse_unit
        half *= parse_unit(unit)[0]
    return half


@cache
def _literal() -> re.Pattern[str]:
    """One literal: the grammar's NUMBER (effspec.front.lexicon), then a unit if any."""
    return re.compile(rf"^\s*(?P<number>{lexicon.terminal('NUMBER')})\s*(?P<unit>%|[A-Za-z][A-Za-z0-9^*/-]*)?\s*$")


def written_precision(text: str) -> float | None:
    """Half a unit in the last written digit of a value written as one literal (``"1.7e9 param"``),
    in base units; None for an expression or anything else that is not a single literal."""
    match = _literal().match(text or "")
    if match is None:
        return None
    number = match["number"]
    try:
        return _half(number, match["unit"] or "")
    except (ValueError, UnitError):
        return None


def tolerance(expr: Expr, claimed: float) -> float:
    return (_half_unit(expr) or 0.0) + 0.01 * abs(claimed)


_BASIS_ORDER = ("valid_tokens_per_second", "tokens_per_second_per_device", "achieved_flops_per_device", "aggregate_flops",
                "step_time", "mfu")


def _implied_step(result: RunResult, claimed: dict[str, tuple[ClaimResult, float]]) -> tuple[Metric, str] | None:
    """A step time implied by a claim, for runs whose timing is not declared."""
    m = result.metrics
    for name in _BASIS_ORDER:
        if name not in claimed:
            continue
        cr, value = claimed[name]
        if value <= 0:
            continue
        c = cr.claim
        where = f"claim `{c.written}` (line {c.span.line})"
        inp = Input(f"claim {c.written}", value, K.CLAIMABLE[name], c.provenance.kind, c.provenance.citation, c.span)
        active = sum(p.active for p in result.pools)
        if name == "tokens_per_second_per_device" and "valid_tokens_per_step" in m and active > 0:
            tokens = m["valid_tokens_per_step"]
            v = tokens.value / (value * active)
            return Metric("step_time", v, "s", "valid_tokens_per_step / (claimed tokens_per_second_per_device × active devices)",
                          "{} / ({} × {}) = {}".format(*exact_operands(
                              [(tokens.value, "token"), (value, "token/s"), (active, "")],
                              lambda x: x[0] / (x[1] * x[2]), (v, "s")), quantity(v, "s")),
                          (tokens.as_input(), inp), tokens.assumed, where), name
        if name == "valid_tokens_per_second" and "valid_tokens_per_step" in m:
            tokens = m["valid_tokens_per_step"]
            v = tokens.value / value
            return Metric("step_time", v, "s", "valid_tokens_per_step / claimed valid_tokens_per_second",
                          "{} / {} = {}".format(*exact_operands([(tokens.value, "token"), (value, "token/s")],
                                                                lambda x: x[0] / x[1], (v, "s")), quantity(v, "s")),
                          (tokens.as_input(), inp), tokens.assumed, where), name
        if name == "achieved_flops_per_device" and "model_flops_per_step" in m and active > 0:
            model = m["model_flops_per_step"]
            v = model.value / (value * active)
            return Metric("step_time", v, "s", "model_flops_per_step / (claimed achieved_flops_per_device × active devices)",
                          "{} / ({} × {}) = {}".format(*exact_operands(
                              [(model.value, "FLOP"), (value, "FLOP/s"), (active, "")],
                              lambda x: x[0] / (x[1] * x[2]), (v, "s")), quantity(v, "s")),
                          (model.as_input(), inp), model.assumed, where), name
        if name == "aggregate_flops" and "model_flops_per_step" in m:
            model = m["model_flops_per_step"]
            v = model.value / value
            return Metric("step_time", v, "s", "model_flops_per_step / claimed aggregate_flops",
                          "{} / {} = {}".format(*exact_operands([(model.value, "FLOP"), (value, "FLOP/s")],
                                                                lambda x: x[0] / x[1], (v, "s")), quantity(v, "s")),
                          (model.as_input(), inp), model.assumed, where), name
        if name == "step_time":
            return Metric("step_time", value, "s", "claimed step_time", quantity(value, "s"), (inp,), False, where), name
        if name == "mfu" and "model_flops_per_step" in m and "aggregate_peak" in m:
            model, agg = m["model_flops_per_step"], m["aggregate_peak"]
            v = model.value / (value * agg.value)
            return Metric("step_time", v, "s", "model_flops_per_step / (claimed mfu × aggregate_peak)",
                          "{} / ({} × {}) = {}".format(*exact_operands(
                              [(model.value, "FLOP"), (value, "%"), (agg.value, "FLOP/s")],
                              lambda x: x[0] / (x[1] * x[2]), (v, "s")), quantity(v, "s")),
                          (model.as_input(), inp, agg.as_input()), model.assumed or agg.assumed, where), name
    return None


def _claimed_value(claim: Claim, result: RunResult, results: dict[str, RunResult]) -> Q:
    """The claim's own value: literals, the run's other claims, metrics, declared values."""
    run = result.run

    def resolve(ref: Ref) -> Q:
        path = ref.path
        if path[0] == "run":
            other = results.get(path[1])
            name = K.CLAIM_ALIASES.get(path[2], path[2]) if len(path) == 3 else None
            metric = other.figure(name) if other is not None and name is not None else None
            if metric is None:
                raise LookupError(ref.dotted)
            return Q(metric.value, dims_of(metric.unit))
        if len(path) == 1:
            name = K.CLAIM_ALIASES.get(path[0], path[0])
            # A claim's own figure is what the author meant by the name.
            for c in run.claims:
                if c.name == name and c is not claim and not refs_in(c.expr):
                    return eval_expr(c.expr, resolve)
            metric = result.figure(name)
            if metric is None:
                raise LookupError(ref.dotted)
            return Q(metric.value, dims_of(metric.unit))
        block = run.block(path[0])
        entry = block.get(path[1]) if block else None
        if entry is None or not isinstance(entry.value, (int, float)) or isinstance(entry.value, bool):
            raise LookupError(ref.dotted)
        return Q(float(entry.value), dims_of(entry.unit))

    return eval_expr(claim.expr, resolve)


def _reconstructed(name: str, result: RunResult) -> Metric | None:
    if name.startswith("breakdown."):
        rec = result.breakdown
        if rec is None:
            return None
        return rec.share_metric(name.split(".", 1)[1]) if hasattr(rec, "share_metric") else None
    return result.figure(name)


def claim_keys(claims: tuple[Claim, ...] | list[Claim]) -> list[str]:
    """The key of each claim in `RunResult.claims`: its metric's name, and `NAME#2`, `NAME#3` for the same metric
    claimed again from another source (the front end allows a repeat only with a different `from`)."""
    seen: dict[str, int] = {}
    keys = []
    for claim in claims:
        n = seen[claim.name] = seen.get(claim.name, 0) + 1
        keys.append(claim.name if n == 1 else f"{claim.name}#{n}")
    return keys


def _per_device_dims(name: str, q: Q, unit: str) -> bool:
    """A per-device metric written per device (`4898 token/s/device`): the same magnitude, one device's."""
    return name in K.PER_DEVICE_CLAIMS and q.dims == dims_of(f"{unit}/device")


def check_claims(result: RunResult, results: dict[str, RunResult], diags: list[Diagnostic]) -> None:
    run = result.run
    claimed: dict[str, tuple[ClaimResult, float]] = {}
    for claim, key in zip(run.claims, claim_keys(run.claims), strict=True):
        unit = K.CLAIMABLE.get(claim.name, "")
        try:
            q = _claimed_value(claim, result, results)
        except LookupError as exc:
            result.claims[key] = ClaimResult(claim, None, None, "unrecoverable", unit, missing=(str(exc.args[0]),))
            continue
        except UnitError as exc:
            diags.append(Diagnostic("EFF010", "error", claim.value_span, f"claim `{claim.written}`: {exc}", ""))
            continue
        except ZeroDivisionError:
            diags.append(Diagnostic("EFF011", "error", claim.value_span, f"claim `{claim.written}` divides by zero", ""))
            continue
        if q.dims != dims_of(unit) and not _per_device_dims(claim.name, q, unit):
            diags.append(Diagnostic(
                "EFF010", "error", claim.value_span,
                f"claim `{claim.written}` expects {f'`{unit}`' if unit else 'a ratio or %'}, "
                f"found {f'`{q.unit}`' if q.dims else 'a plain number'}",
                f"write e.g. `claim {claim.written} = 52 %`" if unit == "" else f"write the value in `{unit}`",
                label=f"this is {q.unit or 'dimensionless'}"))
            continue
        if not math.isfinite(q.magnitude):
            diags.append(Diagnostic("EFF011", "error", claim.value_span, f"claim `{claim.written}` is not finite", ""))
            continue
        cr = ClaimResult(claim, q.magnitude, None, "unrecoverable", unit, tolerance(claim.expr, q.magnitude))
        result.claims[key] = cr
        claimed.setdefault(claim.name, (cr, q.magnitude))
    # Figures the claims imply where the inputs stop short.
    if "step_time" not in result.metrics:
        implied = _implied_step(result, claimed)
        if implied is not None:
            step, basis_name = implied
            result.implied = {k: v for k, v in rate_metrics(result, step, step.basis).items()}
            result.implied.pop(basis_name, None)
    if "valid_tokens_per_second" in claimed and "mfu" in claimed and "aggregate_peak" in result.metrics:
        (_, tp), (_, mfu) = claimed["valid_tokens_per_second"], claimed["mfu"]
        agg = result.metrics["aggregate_peak"]
        if tp > 0:
            v = mfu * agg.value / tp
            result.implied["flops_per_token_from_claims"] = Metric(
                "flops_per_token", v, "FLOP/token", "claimed mfu × aggregate_peak / claimed valid_tokens_per_second",
                "{} × {} / {} = {}".format(*exact_operands([(mfu, "%"), (agg.value, "FLOP/s"), (tp, "token/s")],
                                                         lambda x: x[0] * x[1] / x[2], (v, "FLOP/token")),
                                          quantity(v, "FLOP/token")),
                (Input("claim mfu", mfu, "", "claim"), agg.as_input(), Input("claim throughput", tp, "token/s", "claim")),
                agg.assumed, "claims `mfu` and `throughput`")
    for cr in result.claims.values():
        if cr.claimed is None:
            continue
        name = cr.claim.name
        metric = _reconstructed(name, result)
        if metric is None:
            missing = tuple(result.missing.get(name, ())) or (("breakdown",) if name.startswith("breakdown.") else ())
            if name == "valid_tokens_per_second":  # declaring the rate itself would check nothing
                missing = tuple("timing.step_time" if m == "timing.step_time or timing.throughput" else m for m in missing)
            cr.missing = missing
            continue
        cr.reconstructed = metric.value
        cr.basis = metric.basis
        assert cr.tolerance is not None  # set with every claimed value
        cr.status = "consistent" if abs(metric.value - cr.claimed) <= cr.tolerance else "mismatch"
