"""The figures that follow from a step time: rates, MFU, HFU.

Shared by the evaluation (a measured or declared step) and by claim checking
(a step implied by a claimed rate), so both derive them one way.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from effspec.display import exact_operands, quantity, shown
from effspec.engine.finite import divide
from effspec.engine.results import Input, Metric, RunResult
from effspec.front.ir import Block, Value


def written_input(block: Block | None, key: str) -> Input[Value] | None:
    """A key of any kind as an input, as written (None when the block or key is absent)."""
    if block is None:
        return None
    e = block.get(key)
    if e is None:
        return None
    return Input(f"{block.name}.{key}", e.value, e.unit, e.provenance.kind, e.provenance.citation, e.span)


def entry_input(block: Block | None, key: str) -> Input[float] | None:
    """A quantity or integer key as an input to a formula (the key table fixes its kind)."""
    inp = written_input(block, key)
    assert inp is None or _numeric(inp), key
    return inp


def required_input(block: Block, key: str) -> Input[float]:
    """entry_input for a key the caller knows is written (a required key, or one checked before)."""
    inp = entry_input(block, key)
    assert inp is not None, key
    return inp


def _numeric(inp: Input[Value]) -> TypeGuard[Input[float]]:
    return isinstance(inp.value, (int, float))


def rate_metrics(result: RunResult, step: Metric, basis: str) -> dict[str, Metric]:
    """Everything that divides by the step time."""
    out: dict[str, Metric] = {"step_time": step}
    m = result.metrics
    tokens, model, executed, agg = (m.get(n) for n in ("valid_tokens_per_step", "model_flops_per_step",
                                                        "executed_flops_per_step", "aggregate_peak"))
    active = sum(p.active for p in result.pools)
    t = step.value
    if not (math.isfinite(t) and t > 0):  # an implied step time that under- or overflowed: no rates from it
        return out
    if tokens is not None:
        v = divide(tokens.value, t)
        out["valid_tokens_per_second"] = Metric(
            "valid_tokens_per_second", v, "token/s", "valid_tokens_per_step / step_time",
            "{} / {} = {}".format(*exact_operands([(tokens.value, "token"), (t, "s")], lambda x: x[0] / x[1], (v, "token/s")),
                                  quantity(v, "token/s")),
            (tokens.as_input(), step.as_input()), tokens.assumed or step.assumed, basis)
        if active > 0 and "tokens_per_second_per_device" in result.demanded:
            w = divide(tokens.value, t * active)
            out["tokens_per_second_per_device"] = Metric(
                "tokens_per_second_per_device", w, "token/s", "valid_tokens_per_step / (step_time × active devices)",
                "{} / ({} × {}) = {}".format(*exact_operands([(tokens.value, "token"), (t, "s"), (active, "")],
                                                             lambda x: x[0] / (x[1] * x[2]), (w, "token/s")),
                                             quantity(w, "token/s")),
                (tokens.as_input(), step.as_input(), Input("active devices", active, "device", "derived")),
                tokens.assumed or step.assumed, basis)
    if model is not None and active > 0:
        v = divide(model.value, t * active)  # t × active can underflow to 0
        out["achieved_flops_per_device"] = Metric(
            "achieved_flops_per_device", v, "FLOP/s", "model_flops_per_step / (step_time × active devices)",
            "{} / ({} × {}) = {}".format(*exact_operands([(model.value, "FLOP"), (t, "s"), (active, "")],
                                                         lambda x: x[0] / (x[1] * x[2]), (v, "FLOP/s")),
                                         quantity(v, "FLOP/s")),
            (model.as_input(), step.as_input(), Input("active devices", active, "device", "derived")),
            model.assumed or step.assumed, basis)
    if model is not None and active > 0 and "aggregate_flops" in result.demanded:
        v = divide(model.value, t)
        out["aggregate_flops"] = Metric(
            "aggregate_flops", v, "FLOP/s", "model_flops_per_step / step_time   (= achieved_flops_per_device × active devices)",
            "{} / {} = {} over {} devices".format(*exact_operands([(model.value, "FLOP"), (t, "s")],
                                                                   lambda x: x[0] / x[1], (v, "FLOP/s")),
                                                   quantity(v, "FLOP/s"), f"{active:g}"),
            (model.as_input(), step.as_input(), Input("active devices", active, "device", "derived")),
            model.assumed or step.assumed, basis)
    for name, flops in (("mfu", model), ("hfu", executed)):  # model FLOPs, then the FLOPs that ran
        if flops is not None and agg is not None:
            v = divide(flops.value, t * agg.value)  # a subnormal step × a subnormal peak is 0
            out[name] = Metric(
                name, v, "", f"{flops.name} / (step_time × aggregate_peak)", _ratio(flops.value, t, agg.value, v),
                (flops.as_input(), step.as_input(), agg.as_input()), flops.assumed or step.assumed or agg.assumed, basis)
    measured_pools = [p for p in result.pools if p.measured_peak is not None]
    if model is not None and result.pools and len(measured_pools) == len(result.pools):
        ref = sum(p.active * peak for p in result.pools if (peak := p.measured_peak) is not None)  # every pool has one
        v = divide(model.value, t * ref)
        inputs = [model.as_input(), step.as_input()] + [
            required_input(p.block, "measured_peak") for p in result.pools]
        out["mfu_measured_peak"] = Metric(
            "mfu_measured_peak", v, "", "model_flops_per_step / (step_time × Σ active devices × measured_peak)",
            _ratio(model.value, t, ref, v),
            tuple(inputs), model.assumed or step.assumed, basis)
    return out


def _ratio(flops: float, step: float, peak: float, value: float) -> str:
    """``flops / (step × peak) = value`` with operands printed so that it recomputes."""
    texts = exact_operands([(flops, "FLOP"), (step, "s"), (peak, "FLOP/s")], lambda x: x[0] / (x[1] * x[2]), (value, "%"))
    return "{} / ({} × {}) = {}".format(*texts, shown(value, "%"))
