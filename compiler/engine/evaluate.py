"""Stage 3: reconstruct every figure from the declarations, with its derivation.

Each :class:`Metric` carries its symbolic formula, the formula with numbers and
units put in, and its inputs with provenance.  Metrics that cannot be
recovered are left out and listed, with what is missing.  Claims are checked
against the reconstruction, or, where the inputs do not reach, against each
other (a claimed MFU against the MFU a claimed throughput implies).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from effspec.diagnostics import Diagnostic
from effspec.display import exact_digits, exact_operands, metric_value, quantity
from effspec.engine import finite, flops, gap, intervals, sensitivity
from effspec.engine.claims import check_claims
from effspec.engine.pools import hardware_pools as _pools
from effspec.engine.rates import entry_input, rate_metrics, required_input, written_input
from effspec.engine.results import (
    ConventionFigures,
    Evaluation,
    ImplausibleSample,
    Input,
    Metric,
    RunResult,
)
from effspec.engine.stats import StepStats, step_statistics
from effspec.front import keys as K
from effspec.front.ir import FileRef, Run, Samples, Spec, Value

if TYPE_CHECKING:
    from effspec.ranks.stats import Diagnosis


def _step_time(run: Run, result: RunResult) -> tuple[Metric | None, tuple[str, ...]]:
    """step_time from samples, else from a declared throughput, else from declared achieved FLOP/s."""
    timing = run.block("timing")
    if timing is not None and timing.get("step_time") is not None and result.step_stats is not None:
        st = result.step_stats
        statistic = timing.text("statistic", "median")
        entry = timing.get("step_time")
        assert entry is not None and isinstance(entry.value, Samples)  # checked above; a samples key
        samples = entry.value
        where = f"{samples.file}, column {samples.column}" if samples.origin == "file" else "inline list"
        warmup = entry_input(timing, "warmup")
        # A single quoted step has no warm-up to leave out: the default cannot matter, so it is neither an
        # input nor an assumption (it would badge every figure of a one-value run "assumed" for nothing).
        quoted = st.rows == 1 and warmup is None
        inputs: tuple[Input[Value], ...] = (
            Input("timing.step_time", f"{st.rows} sample{'s' if st.rows != 1 else ''} ({where})", "s",
                  entry.provenance.kind, entry.provenance.citation, entry.span),
        ) + (() if quoted else (warmup or Input("timing.warmup", 0, "step", "default", assumed=True),))
        value = st.statistic(statistic)
        formula = f"{statistic}(step_time samples after warm-up)"
        rows = f"row {st.rows}" if st.count == 1 else f"rows {st.warmup_excluded + 1}–{st.rows}"
        if st.implausible_excluded:
            rows += f", less {len(st.implausible_excluded)} implausible (EFF505)"
        sub = (f"{statistic} of {st.count} sample{'s' if st.count != 1 else ''} ({rows})"
               f" = {quantity(value, 's', exact_digits(value))}")
        return Metric("step_time", value, "s", formula, sub, inputs, assumed=warmup is None and not quoted), ()
    tokens = result.metrics.get("valid_tokens_per_step")
    throughput = entry_input(timing, "throughput")
    if throughput is not None and tokens is not None:
        value = tokens.value / throughput.value
        return Metric("step_time", value, "s", "valid_tokens_per_step / timing.throughput",
                      "{} / {} = {}".format(*exact_operands([(tokens.value, "token"), (throughput.value, "token/s")],
                                                            lambda x: x[0] / x[1], (value, "s")), quantity(value, "s")),
                      (tokens.as_input(), throughput), tokens.assumed), ()
    achieved = entry_input(timing, "achieved_flops_per_device")
    model = result.metrics.get("model_flops_per_step")
    active = sum(p.active for p in result.pools)
    if achieved is not None and model is not None and active > 0:
        value = model.value / (achieved.value * active)
        devices = Input("active devices", active, "device", "derived")
        return Metric("step_time", value, "s", "model_flops_per_step / (timing.achieved_flops_per_device × active devices)",
                      "{} / ({} × {}) = {}".format(*exact_operands(
                          [(model.value, "FLOP"), (achieved.value, "FLOP/s"), (active, "")],
                          lambda x: x[0] / (x[1] * x[2]), (value, "s")), quantity(value, "s")),
                      (model.as_input(), achieved, devices), model.assumed), ()
    if throughput is not None and tokens is None:
        return None, ("valid_tokens_per_step",)
    if achieved is not None:
        return None, ("model_flops_per_step",) if model is None else ("hardware.count",)
    return None, ("timing.step_time or timing.throughput",)


def _flops_metric(run: Run, result: RunResult) -> tuple[Metric | None, tuple[str, ...]]:
    model = run.block("model")
    if model is None:
        return None, ("model",)
    if model.value("kind") == "custom":
        inp = entry_input(model, "flops_per_token")
        if inp is None:
            return None, ("model.flops_per_token",)
        return Metric("flops_per_token", inp.value, "FLOP/token", "model.flops_per_token (declared)",
                      quantity(inp.value, "FLOP/token"), (inp,)), ()
    count = result.flop_count
    if result.shape is None:
        return None, ("model shape",)
    if count is None:
        return None, ("work.seq_len",)
    k = result.knobs
    shape = result.shape
    inputs = [i for i in (written_input(model, key) for key in
                          ("layers", "d_model", "heads", "head_dim", "kv_heads", "ffn", "d_ff", "vocab",
                           "experts", "top_k", "shared_experts", "d_ff_expert", "moe_layers", *_SHAPE_EXTRAS)) if i is not None]
    for mixer in model.blocks:  # a hybrid stack's mixer blocks: `model.mamba2.state_size`
        inputs += [dataclasses.replace(i, name=f"model.{i.name}")
                   for i in (written_input(mixer, e.key) for e in mixer.entries) if i is not None]
    if model.get("head_dim") is None and not shape.mla:  # MLA's head sizes are its own keys
        inputs.append(Input("model.head_dim", shape.head_dim, "", "default: d_model / heads"))
    if model.get("kv_heads") is None and not shape.mla:
        inputs.append(Input("model.kv_heads", shape.kv_heads, "", "default: heads"))
    seq = entry_input(run.block("work"), "seq_len")
    if seq is not None and k.attention != "excluded":
        inputs.append(seq)
    assumed = any(v == "assumed" for v in k.origin.values())
    for knob in ("preset", "multiply_add", "attention", "logits", "embeddings", "backward", "recompute", "moe",
                 *flops.EXTRA_KNOBS):
        if knob in flops.EXTRA_KNOBS and getattr(k, knob) == flops.KNOB_DEFAULTS[knob]:
            continue
        inputs.append(Input(f"convention.{knob}", getattr(k, knob), "FLOP" if knob == "multiply_add" else "",
                            k.origin.get(knob, "written"), assumed=k.origin.get(knob) == "assumed"))
    if k.recompute == "executed":
        inputs.append(written_input(run.block("parallelism"), "recompute")
                      or Input("parallelism.recompute", "none", "", "default", assumed=True))
    sub = _flops_text(count, k)
    formula = "(1 + backward) × Σ forward terms" + (" + recompute term" if count.recompute else "") + (
        " + model.extra_flops_per_token" if count.extra else "")
    return Metric("flops_per_token", count.total, "FLOP/token", formula, sub, tuple(inputs), assumed), ()


_SHAPE_EXTRAS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "mtp_depth",
                 "sliding_window", "sliding_layers", "extra_flops_per_token",
                 "pattern", "layer_types", "full_attention_interval", "attention_gate")


def _tokens_metric(run: Run) -> tuple[Metric | None, tuple[str, ...]]:
    work = run.block("work")
    declared = entry_input(work, "valid_tokens")
    if declared is not None:
        return Metric("valid_tokens_per_step", float(declared.value), "token", "work.valid_tokens (declared)",
                      quantity(declared.value, "token"), (declared,)), ()
    seq, batch = entry_input(work, "seq_len"), entry_input(work, "global_batch")
    if seq is None or batch is None:
        return None, tuple(n for n, i in (("work.seq_len", seq), ("work.global_batch", batch)) if i is None) or ("work",)
    padded = entry_input(work, "padded_tokens") or Input("work.padded_tokens", 0.0, "token", "default", assumed=True)
    dropped = entry_input(work, "dropped_tokens") or Input("work.dropped_tokens", 0.0, "token", "default", assumed=True)
    value = seq.value * batch.value - padded.value - dropped.value
    return Metric(
        "valid_tokens_per_step", value, "token",
        "work.seq_len × work.global_batch − work.padded_tokens − work.dropped_tokens",
        "{} × {} − {} − {} = {}".format(*exact_operands(
            [(seq.value, "token/sequence"), (batch.value, "sequence"), (padded.value, "token"), (dropped.value, "token")],
            lambda x: x[0] * x[1] - x[2] - x[3], (value, "token")), quantity(value, "token")),
        (seq, batch, padded, dropped), assumed=False,
    ), ()


def _calendar(run: Run, result: RunResult) -> None:
    cal = run.block("calendar")
    if cal is None:
        return
    wall = entry_input(cal, "wall_clock")
    steps = entry_input(cal, "steps")
    step = result.metrics.get("step_time")
    tokens = result.metrics.get("valid_tokens_per_step")
    if wall is None:
        result.missing["calendar_efficiency"] = ("calendar.wall_clock",)
        result.missing["goodput"] = ("calendar.wall_clock",)
        return
    if steps is not None and step is not None:
        v = steps.value * step.value / wall.value
        result.metrics["calendar_efficiency"] = Metric(
            "calendar_efficiency", v, "", "calendar.steps × step_time / calendar.wall_clock",
            "{} × {} / {} = {}".format(*exact_operands([(steps.value, "step"), (step.value, "s"), (wall.value, "s")],
                                                       lambda x: x[0] * x[1] / x[2], (v, "%")), metric_value(v, "")),
            (steps, step.as_input(), wall), step.assumed)
    else:
        result.missing["calendar_efficiency"] = tuple(n for n, x in (("calendar.steps", steps), ("step_time", step)) if x is None)
    if steps is not None and tokens is not None:
        repeated = entry_input(cal, "repeated_tokens") or Input("calendar.repeated_tokens", 0.0, "token", "default", assumed=True)
        v = (steps.value * tokens.value - repeated.value) / wall.value
        result.metrics["goodput"] = Metric(
            "goodput", v, "token/s", "(calendar.steps × valid_tokens_per_step − calendar.repeated_tokens) / calendar.wall_clock",
            "({} × {} − {}) / {} = {}".format(*exact_operands(
                [(steps.value, "step"), (tokens.value, "token"), (repeated.value, "token"), (wall.value, "s")],
                lambda x: (x[0] * x[1] - x[2]) / x[3], (v, "token/s")), quantity(v, "token/s")),
            (steps, tokens.as_input(), repeated, wall), tokens.assumed)
    else:
        result.missing["goodput"] = tuple(n for n, x in (("calendar.steps", steps), ("valid_tokens_per_step", tokens)) if x is None)


def _check_convention(run: Run, knobs_missing: list[str], diags: list[Diagnostic]) -> None:
    """A custom convention (written, or implied by leaving out the preset) must write every knob."""
    convention = run.block("convention")
    if not knobs_missing or convention is None:
        return
    preset = convention.get("preset")
    diags.append(Diagnostic(
        "EFF003", "error", preset.value_span if preset is not None else convention.span,
        ("`preset = custom` must write every knob out" if preset is not None else
         "a `convention` without a `preset` is custom and must write every knob out")
        + ": missing " + ", ".join(f"`{k}`" for k in knobs_missing),
        "name the preset the source used (`preset = palm`, `megatron`, `kaplan`, `chinchilla`, or a framework's such as "
        "`torchtitan` or `megatron_lm`) and override single knobs, "
        "or write " + ", ".join(f"`{k}`" for k in knobs_missing) + " too"))


def _step_stats(run: Run, diags: list[Diagnostic]) -> StepStats | None:
    """Statistics of the step-time samples after warm-up, if the run gives samples."""
    timing = run.block("timing")
    if timing is None or timing.get("step_time") is None:
        return None
    warmup = int(timing.number("warmup", 0))
    samples = timing.value("step_time")
    assert isinstance(samples, Samples)  # a samples key
    stats = step_statistics(samples.values, warmup)
    if stats is None:
        e = timing.get("warmup")
        diags.append(Diagnostic("EFF011", "error", e.value_span if e else timing.span,
                                f"warm-up excludes all {len(samples.values)} samples",
                                "lower `warmup` or provide more samples"))
    return stats


def _put(result: RunResult, name: str, metric_and_missing: tuple[Metric | None, tuple[str, ...]]) -> None:
    metric, miss = metric_and_missing
    if metric is not None:
        result.metrics[name] = metric
    else:
        result.missing[name] = miss


def _reject_nonpositive_tokens(run: Run, result: RunResult, diags: list[Diagnostic]) -> None:
    """Valid tokens per step that come to zero or less are an input error, not a figure."""
    m, work = result.metrics, run.block("work")
    if "valid_tokens_per_step" not in m or m["valid_tokens_per_step"].value > 0:
        return
    bad = m.pop("valid_tokens_per_step")
    result.missing["valid_tokens_per_step"] = ("a positive valid token count",)
    culprit = (work.get("padded_tokens") or work.get("dropped_tokens") or work.get("valid_tokens")) if work is not None else None
    diags.append(Diagnostic("EFF011", "error", culprit.span if culprit else run.name_span,
                            f"valid tokens per step come to {bad.value:g}: {bad.substituted}",
                            "padded and dropped tokens cannot exceed seq_len × global_batch; check the counts"))


def _padded_input(run: Run) -> Input[float]:
    return entry_input(run.block("work"), "padded_tokens") or Input("work.padded_tokens", 0.0, "token", "default", assumed=True)


def _model_flops_per_step(run: Run, result: RunResult) -> None:
    m, missing = result.metrics, result.missing
    fpt, tokens, padded = m.get("flops_per_token"), m.get("valid_tokens_per_step"), _padded_input(run)
    if fpt is None or tokens is None:
        missing["model_flops_per_step"] = missing.get("flops_per_token", ()) + missing.get("valid_tokens_per_step", ())
    elif result.knobs.padding == "included":
        counted = tokens.value + padded.value
        m["model_flops_per_step"] = Metric(
            "model_flops_per_step", fpt.value * counted, "FLOP",
            "flops_per_token × (valid_tokens_per_step + work.padded_tokens)   [padding = included]",
            "{} × ({} + {}) = {}".format(*exact_operands(
                [(fpt.value, "FLOP/token"), (tokens.value, "token"), (padded.value, "token")],
                lambda x: x[0] * (x[1] + x[2]), (fpt.value * counted, "FLOP")), quantity(fpt.value * counted, "FLOP")),
            (fpt.as_input(), tokens.as_input(), padded), fpt.assumed)
    else:
        v = fpt.value * tokens.value
        m["model_flops_per_step"] = Metric(
            "model_flops_per_step", v, "FLOP", "flops_per_token × valid_tokens_per_step",
            "{} × {} = {}".format(*exact_operands([(fpt.value, "FLOP/token"), (tokens.value, "token")],
                                                  lambda x: x[0] * x[1], (v, "FLOP")), quantity(v, "FLOP")),
            (fpt.as_input(), tokens.as_input()), fpt.assumed)


def _executed_flops_per_step(run: Run, result: RunResult) -> None:
    m, missing = result.metrics, result.missing
    fpt, tokens, padded = m.get("flops_per_token"), m.get("valid_tokens_per_step"), _padded_input(run)
    model, par, executed_count = run.block("model"), run.block("parallelism"), result.executed_count
    declared_exec = entry_input(run.block("work"), "executed_flops")
    if declared_exec is not None:
        m["executed_flops_per_step"] = Metric("executed_flops_per_step", declared_exec.value, "FLOP",
                                              "work.executed_flops (hardware counter)",
                                              quantity(declared_exec.value, "FLOP"), (declared_exec,))
    elif tokens is not None and (executed_count is not None or (model is not None and model.value("kind") == "custom" and fpt)):
        if executed_count is not None:
            per_token = executed_count.total
        else:
            assert fpt is not None  # a custom model with flops_per_token, by the condition above
            per_token = fpt.value
        v = per_token * (tokens.value + padded.value)
        ran_input = written_input(par, "recompute") or Input("parallelism.recompute", "none", "", "default", assumed=True)
        m["executed_flops_per_step"] = Metric(
            "executed_flops_per_step", v, "FLOP",
            "executed_flops_per_token(recompute = parallelism.recompute) × (valid_tokens_per_step + work.padded_tokens)",
            "{} × ({} + {}) = {}".format(*exact_operands(
                [(per_token, "FLOP/token"), (tokens.value, "token"), (padded.value, "token")],
                lambda x: x[0] * (x[1] + x[2]), (v, "FLOP")), quantity(v, "FLOP")),
            (Input("executed_flops_per_token", per_token, "FLOP/token", "derived"), ran_input, tokens.as_input(), padded),
            ran_input.assumed or (fpt.assumed if fpt else False))
    else:
        missing["executed_flops_per_step"] = missing.get("flops_per_token", ()) + missing.get("valid_tokens_per_step", ())


def _aggregate_peak(result: RunResult) -> None:
    m, missing = result.metrics, result.missing
    # (pool, peak, its input): _pools sets the input with every peak
    pools = [(p, p.peak, p.peak_input) for p in result.pools if p.peak is not None and p.peak_input is not None]
    if result.pools and len(pools) == len(result.pools) and sum(p.active for p, _, _ in pools) <= 0:
        missing["aggregate_peak"] = ("hardware: every device is unavailable",)
    elif result.pools and len(pools) == len(result.pools):
        v = sum(p.active * peak for p, peak, _ in pools)
        inputs: list[Input[float]] = []
        for p, _, peak_input in pools:
            inputs.append(required_input(p.block, "count"))
            if p.unavailable:
                inputs.append(required_input(p.block, "unavailable"))
            inputs.append(peak_input)
        peaks = exact_operands([(peak, "FLOP/s") for _, peak, _ in pools],
                               lambda x: sum(p.active * y for (p, _, _), y in zip(pools, x, strict=False)), (v, "FLOP/s"))
        terms = " + ".join(f"({p.count:g} − {p.unavailable:g}) × {text}" for (p, _, _), text in zip(pools, peaks, strict=False))
        m["aggregate_peak"] = Metric("aggregate_peak", v, "FLOP/s", "Σ pools (hardware.count − hardware.unavailable) × hardware.peak",
                                     f"{terms} = {quantity(v, 'FLOP/s')}", tuple(inputs),
                                     any(peak_input.assumed for _, _, peak_input in pools))
    else:
        missing["aggregate_peak"] = ("hardware",) if not result.pools else ("hardware.peak",)


def _exclude_implausible(run: Run, result: RunResult) -> None:
    """Leave out the step-time samples (after warm-up) that would need more than the hardware's peak: a step's
    FLOPs (the executed count, or the model count if that is smaller: the least work the step did) divided by
    the sample above the aggregate peak.  The statistics are recomputed from the rest; EFF505 names each one.
    Only when the median sample is plausible: if the typical step already beats the peak, the peak or the FLOP
    count is wrong, not the samples (EFF604's finding), and nothing is left out."""
    st, m = result.step_stats, result.metrics
    peak = m.get("aggregate_peak")
    works = [m[name] for name in ("executed_flops_per_step", "model_flops_per_step") if name in m]
    if st is None or peak is None or not works or not peak.value > 0:
        return
    work = min(works, key=lambda w: w.value)
    if not work.value > 0:
        return
    timing = run.block("timing")
    samples = timing.value("step_time") if timing is not None else None  # step_stats implies a timing block
    if not isinstance(samples, Samples):
        return
    fastest = work.value / peak.value  # seconds: the step at 100 % of the peak
    if st.median < fastest:
        return
    found = tuple(ImplausibleSample(i, v, samples.lines[i] if i < len(samples.lines) else None,
                                    fastest / v, work.name)
                  for i, v in enumerate(samples.values) if i >= st.warmup_excluded and v < fastest)
    if not found:
        return
    result.implausible = found
    result.step_stats = step_statistics(samples.values, st.warmup_excluded, [f.index for f in found])


def _rates(run: Run, result: RunResult) -> None:
    """Everything that divides by the step time, and what each is missing otherwise."""
    m, missing = result.metrics, result.missing
    step, step_missing = _step_time(run, result)
    on_demand = tuple(n for n in ("aggregate_flops", "tokens_per_second_per_device") if n in result.demanded)
    _flops_per_device(result)
    if step is not None:
        m.update(rate_metrics(result, step, "inputs"))
    else:
        for name in ("step_time", "valid_tokens_per_second", "achieved_flops_per_device", "mfu", "hfu", *on_demand):
            missing.setdefault(name, step_missing)
    for name, deps in (("valid_tokens_per_second", ("valid_tokens_per_step",)),
                       ("achieved_flops_per_device", ("model_flops_per_step",)),
                       ("mfu", ("model_flops_per_step", "aggregate_peak")),
                       ("hfu", ("executed_flops_per_step", "aggregate_peak")),
                       ("aggregate_flops", ("model_flops_per_step",)),
                       ("tokens_per_second_per_device", ("valid_tokens_per_step",))):
        if name in ON_DEMAND and name not in on_demand:
            continue
        if name not in m and name not in missing:
            missing[name] = tuple(x for d in deps for x in missing.get(d, (d,)) if d not in m)


def _flops_per_device(result: RunResult) -> None:
    """`flops_per_device` (on demand): one device's share of a step's model FLOPs, as MaxText logs it per step."""
    if "flops_per_device" not in result.demanded:
        return
    model, active = result.metrics.get("model_flops_per_step"), sum(p.active for p in result.pools)
    if model is None:
        result.missing.setdefault("flops_per_device", result.missing.get("model_flops_per_step", ("model_flops_per_step",)))
        return
    if active <= 0:
        result.missing.setdefault("flops_per_device", ("hardware.count",))
        return
    v = model.value / active
    result.metrics["flops_per_device"] = Metric(
        "flops_per_device", v, "FLOP", "model_flops_per_step / active devices",
        "{} / {} = {}".format(*exact_operands([(model.value, "FLOP"), (active, "")], lambda x: x[0] / x[1], (v, "FLOP")),
                              quantity(v, "FLOP")),
        (model.as_input(), Input("active devices", active, "device", "derived")), model.assumed, "inputs")


def evaluate_run(run: Run, diags: list[Diagnostic], demanded: frozenset[str] = frozenset()) -> RunResult:
    """Every figure of one run that its declarations reach, each with its derivation.

    ``demanded`` names the on-demand metrics (`aggregate_flops`) that some claim uses."""
    knobs, knobs_missing = flops.knobs_for(run)
    _check_convention(run, knobs_missing, diags)
    work = run.block("work")
    shape = flops.shape_of(run.block("model"))
    seq_len = work.number("seq_len") if work is not None else None
    flop_count = flops.count(shape, knobs, seq_len) if shape else None
    executed_count = flops.count(shape, knobs, seq_len, recompute=knobs.ran) if shape else None
    stats = _step_stats(run, diags)
    result = RunResult(run, knobs, knobs_missing, shape, flop_count, executed_count,
                       flops.params_from_shape(shape) if shape else None, _pools(run, diags), stats,
                       demanded=demanded)
    _put(result, "flops_per_token", _flops_metric(run, result))
    _put(result, "valid_tokens_per_step", _tokens_metric(run))
    _reject_nonpositive_tokens(run, result, diags)
    _model_flops_per_step(run, result)
    _executed_flops_per_step(run, result)
    _aggregate_peak(result)
    _exclude_implausible(run, result)
    _rates(run, result)
    _calendar(run, result)
    drop_nonfinite(result)
    return result


# Figures that divide others: zero (an implied step time that underflowed) is no figure either.
_POSITIVE = ("step_time", "aggregate_peak", "valid_tokens_per_step")


def _finite(metric: Metric) -> bool:
    """The figure and every number it was computed from are finite (and a divisor is above zero)."""
    if metric.name in _POSITIVE and not metric.value > 0:
        return False
    return math.isfinite(metric.value) and all(
        math.isfinite(i.value) for i in metric.inputs if isinstance(i.value, float | int) and not isinstance(i.value, bool))


def drop_nonfinite(result: RunResult) -> None:
    """Take every figure that is not a finite number out of the run's figures.

    Inputs each in range can still make one: `step_time = 1e-320 s` gives an
    infinite throughput, a subnormal share a NaN.  Such a figure is no figure:
    it is kept in ``nonfinite`` with its derivation (EFF702 names it and its
    inputs), listed as not recoverable, and never reaches a claim, a chart or
    the JSON.
    """
    for table in (result.metrics, result.implied):
        for name in [n for n, m in table.items() if not _finite(m)]:
            result.nonfinite[name] = table.pop(name)
            result.missing.setdefault(name, ("finite inputs (see EFF702)",))
    for cr in result.claims.values():  # a claim rebuilt from other claims (a rate over a subnormal peak)
        if cr.reconstructed is not None and not math.isfinite(cr.reconstructed):
            cr.reconstructed, cr.status = None, "unrecoverable"
            cr.missing = cr.missing or ("finite inputs: the reconstruction overflows",)


# ----------------------------------------------------------------------------


def _convention_table(result: RunResult) -> None:
    """flops_per_token and MFU under every standard preset, side by side."""
    shape, work = result.shape, result.run.block("work")
    if shape is None:
        return
    seq_len = work.number("seq_len") if work is not None else None
    tokens = result.metrics.get("valid_tokens_per_step")
    agg = result.metrics.get("aggregate_peak")
    step = result.figure("step_time")
    padded = float(work.number("padded_tokens", 0)) if work is not None else 0.0
    rows = [("declared", result.knobs)] + [(p, result.knobs.with_preset(p)) for p in flops.STANDARD_PRESETS]
    for label, knobs in rows:
        count = flops.count(shape, knobs, seq_len)
        row: ConventionFigures = {"preset": knobs.preset, "flops_per_token": count.total if count else None, "knobs": {
            k: getattr(knobs, k) for k in ("attention", "logits", "embeddings", "recompute")}}
        if count and tokens and agg and step and step.value * agg.value > 0:
            counted = tokens.value + (padded if knobs.padding == "included" else 0.0)
            mfu = count.total * counted / (step.value * agg.value)
            if math.isfinite(mfu):  # else EFF702 already names the run's MFU
                row["mfu"] = mfu
                row["basis"] = step.basis
        result.conventions[label] = row


ON_DEMAND = ("aggregate_flops", "tokens_per_second_per_device", "flops_per_device")


def _demanded(spec: Spec) -> dict[str, frozenset[str]]:
    """Per run, the on-demand metrics it computes: those its claims name or refer to, or that
    another run's claim refers to as `run.ID.METRIC`.  Computed only then, so the output of
    specs that do not use them keeps its shape.  One pass over the claims."""
    from effspec.front.expr import refs_in

    wanted: dict[str, set[str]] = {}
    for run in spec.runs:
        for claim in run.claims:
            names = [(run.id, claim.name)]
            for ref in refs_in(claim.expr):
                if len(ref.path) == 1:
                    names.append((run.id, K.CLAIM_ALIASES.get(ref.path[0], ref.path[0])))
                elif len(ref.path) == 3 and ref.path[0] == "run":
                    names.append((ref.path[1], K.CLAIM_ALIASES.get(ref.path[2], ref.path[2])))
            for rid, name in names:
                if name in ON_DEMAND:
                    wanted.setdefault(rid, set()).add(name)
    return {rid: frozenset(names) for rid, names in wanted.items()}


def evaluate(spec: Spec) -> Evaluation:
    """Evaluate every run and scaling of a checked spec."""
    from effspec.engine import breakdown as breakdown_mod
    from effspec.engine import scaling as scaling_mod

    diags: list[Diagnostic] = []
    results: dict[str, RunResult] = {}
    demanded = _demanded(spec)
    for run in spec.runs:
        results[run.id] = evaluate_run(run, diags, demanded.get(run.id, frozenset()))
    for result in results.values():
        result.breakdown = breakdown_mod.reconcile(result)
        check_claims(result, results, diags)
        drop_nonfinite(result)  # implied figures too
        _convention_table(result)
        result.calendar_table = breakdown_mod.calendar_table(result, diags)
        result.calendar = result.calendar_table.to_json() if result.calendar_table is not None else None
        result.time_to_target = scaling_mod.time_to_target(result)
        if result.run.block("ranks") is not None:
            result.diagnosis = _rank_diagnosis(result, diags)
    spent = intervals.Budget()
    for result in results.values():  # every figure's interval, then each claim judged with it
        intervals.apply(result, results, evaluate_run, spent)
    budget = gap.Budget()
    for result in results.values():  # after every run's claims: a claim may refer to another run
        if any(cr.status == "mismatch" for cr in result.claims.values()):
            gap.explain(result, results, evaluate_run, budget=budget)
    flips = intervals.Budget()
    for result in results.values():  # which input, changed by how much, would make each claim consistent
        sensitivity.apply(result, results, evaluate_run, flips)
    scalings = {s.id: scaling_mod.evaluate_scaling(s, spec, results, diags) for s in spec.scalings}
    for sr in scalings.values():
        intervals.apply_scaling(sr, results)
        sensitivity.apply_scaling(sr)
    evaluation = Evaluation(spec, results, scalings, diags)
    with intervals.unresolved_left_out():  # the intervals are computed when an output asks for them
        finite.guard(evaluation)  # the one boundary: no figure that is not finite reaches an output (EFF702)
    return evaluation


def _rank_diagnosis(result: RunResult, diags: list[Diagnostic]) -> Diagnosis | None:
    """Load the run's `ranks` samples and diagnose them; problems go to ``diags``."""
    # Imported here: numpy only for specs that declare per-rank samples.
    from effspec.ranks.diagnose import diagnose
    from effspec.ranks.loader import load_rank_table
    from effspec.ranks.stats import ALPHA, SparseGridError

    block = result.run.block("ranks")
    entry = block.get("samples") if block is not None else None
    ref = entry.value if entry is not None else None
    if entry is None or not isinstance(ref, FileRef):
        return None
    table = load_rank_table(ref.path, ref.file, entry.value_span, diags)
    if table is None:
        return None
    mfu = result.metrics.get("mfu")
    par = result.run.block("parallelism")
    pp = par.integer("pp") if par is not None else None
    alpha = block.number("alpha", ALPHA) if block is not None else ALPHA
    try:
        return diagnose(table, mfu.value if mfu is not None else None, int(pp) if pp else None, alpha)
    except SparseGridError as exc:
        diags.append(Diagnostic("EFF030", "error", entry.value_span, f"`{ref.file}`: {exc}",
                                "one row per rank and step: a per-rank table names most ranks at most steps"))
    except ValueError as exc:
        diags.append(Diagnostic("EFF003", "error", entry.value_span, f"`{ref.file}`: {exc}",
                                "one row per rank and step"))
    return None


def _flops_text(count: flops.FlopCount, k: flops.Knobs) -> str:
    """``(1 + backward) × (terms) + recompute + extra = total``, the terms printed so that it recomputes."""
    named = [(name, v) for name, _, v in count.terms if v]
    tail = [v for v in (count.recompute, count.extra) if v]
    values = [(k.backward, "")] + [(v, "") for _, v in named] + [(v, "") for v in tail]
    n = len(named)
    texts = exact_operands(values, lambda x: (1 + x[0]) * sum(x[1:n + 1]) + sum(x[n + 1:]),
                           (count.total, "FLOP/token"))
    rest = iter(texts[n + 1:])
    parts = " + ".join(f"{name} {text}" for (name, _), text in zip(named, texts[1:n + 1], strict=False))
    shown = flops.recompute_text(k.recompute) if k.recompute != "executed" else f"executed: {flops.recompute_text(k.ran)}"
    recompute = f" + recompute({shown}) {next(rest)}" if count.recompute else ""
    extra = f" + extra_flops_per_token {next(rest)}" if count.extra else ""
    return f"(1 + {texts[0]}) × ({parts}){recompute}{extra} = {quantity(count.total, 'FLOP/token')}"
