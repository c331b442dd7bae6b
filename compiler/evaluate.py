"""Stage 3: reconstruct every figure from the declarations, with its derivation.

Each :class:`Metric` carries its symbolic formula, the formula with numbers and
units put in, and its inputs with provenance.  Metrics that cannot be
recovered are left out and listed, with what is missing.  Claims are checked
against the reconstruction, or, where the inputs do not reach, against each
other (a claimed MFU against the MFU a claimed throughput implies).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import catalog, flops, keys as K
from .build import evaluate as eval_expr, refs_in
from .diagnostics import Diagnostic, Span
from .fmt import metric_value, quantity, sig
from .ir import Block, Claim, Number, Ref, Run, Spec
from .stats import StepStats, step_statistics
from .units import Q, UnitError, dims_of


@dataclass(frozen=True)
class Input:
    name: str
    value: object
    unit: str
    provenance: str  # declared | measured | datasheet | paper | ... | catalog | derived | default
    citation: str | None = None
    span: Span | None = None
    assumed: bool = False

    def describe(self) -> str:
        shown = quantity(self.value, self.unit) if isinstance(self.value, (int, float)) and not isinstance(self.value, bool) else str(self.value)
        src = self.provenance + (f": {self.citation}" if self.citation else "")
        return f"{self.name} = {shown} ({src}{', assumed' if self.assumed else ''})"

    def to_json(self) -> dict:
        return {"name": self.name, "value": self.value, "unit": self.unit, "provenance": self.provenance,
                "citation": self.citation, "assumed": self.assumed,
                "line": self.span.line if self.span else None}


@dataclass(frozen=True)
class Metric:
    name: str
    value: float
    unit: str
    formula: str
    substituted: str
    inputs: tuple[Input, ...]
    assumed: bool = False
    basis: str = "inputs"  # inputs, or the claim an implied figure rests on

    def as_input(self) -> Input:
        return Input(self.name, self.value, self.unit, "derived", None, None, self.assumed)

    def to_json(self) -> dict:
        return {"value": self.value, "unit": self.unit, "formula": self.formula,
                "substituted": self.substituted, "inputs": [i.describe() for i in self.inputs],
                "input_details": [i.to_json() for i in self.inputs], "assumed": self.assumed, "basis": self.basis}


@dataclass(frozen=True)
class Pool:
    """One hardware block: its share of the denominator."""

    block: Block
    accelerator: str | None
    count: float
    unavailable: float
    dtype: str
    dtype_assumed: bool
    sparsity: str
    peak: float | None
    peak_input: Input | None
    catalog_row: catalog.PeakRow | None  # the row for this accelerator, dtype and sparsity
    measured_peak: float | None

    @property
    def active(self) -> float:
        return self.count - self.unavailable


@dataclass
class ClaimResult:
    claim: Claim
    claimed: float | None
    reconstructed: float | None
    status: str  # consistent | mismatch | unrecoverable
    unit: str
    tolerance: float | None = None
    basis: str = "inputs"
    missing: tuple[str, ...] = ()

    def to_json(self) -> dict:
        out = {"claimed": self.claimed, "reconstructed": self.reconstructed, "status": self.status,
               "unit": self.unit, "basis": self.basis}
        if self.tolerance is not None:
            out["tolerance"] = self.tolerance
        if self.missing:
            out["missing"] = list(self.missing)
        return out


@dataclass
class RunResult:
    run: Run
    knobs: flops.Knobs
    knobs_missing: list[str]
    shape: flops.Shape | None
    flop_count: flops.FlopCount | None
    executed_count: flops.FlopCount | None
    params_from_shape: float | None
    pools: list[Pool]
    step_stats: StepStats | None
    metrics: dict[str, Metric] = field(default_factory=dict)
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    implied: dict[str, Metric] = field(default_factory=dict)
    conventions: dict[str, dict] = field(default_factory=dict)
    claims: dict[str, ClaimResult] = field(default_factory=dict)
    breakdown: object | None = None  # breakdown.Reconciliation
    calendar: dict | None = None  # the calendar table as a dict (calendar_table.to_json())
    diagnosis: object | None = None  # ranks.Diagnosis
    calendar_table: object | None = None  # breakdown.CalendarTable
    time_to_target: Metric | None = None  # target.reached_at × step_time

    def figure(self, name: str) -> Metric | None:
        """A metric reconstructed from inputs, else one implied by a claim."""
        return self.metrics.get(name) or self.implied.get(name)


@dataclass
class Evaluation:
    spec: Spec
    runs: dict[str, RunResult]
    scalings: dict[str, object]  # id -> scaling.ScalingResult
    diagnostics: list[Diagnostic]


# ----------------------------------------------------------------------------


def _entry_input(block: Block | None, key: str) -> Input | None:
    if block is None:
        return None
    e = block.get(key)
    if e is None:
        return None
    return Input(f"{block.name}.{key}", e.value, e.unit, e.provenance.kind, e.provenance.citation, e.span)


def _pools(run: Run, diags: list[Diagnostic]) -> list[Pool]:
    pools = []
    for hw in run.blocks_named("hardware"):
        accel = hw.value("accelerator")
        dtype = hw.value("dtype")
        sparsity = hw.value("sparsity", "dense")
        count = float(hw.value("count", 0))
        unavailable = float(hw.value("unavailable", 0))
        row = catalog.lookup(accel, dtype or "bf16", sparsity) if accel else None
        peak_entry = hw.get("peak")
        peak, peak_input = None, None
        if peak_entry is not None and peak_entry.value == "catalog":
            if accel and catalog.canonical_accelerator(accel) is None:
                diags.append(Diagnostic(
                    "EFF020", "error", peak_entry.value_span, f"`{accel}` is not in the peak catalog",
                    "write the peak as a quantity with its source, e.g. `peak = 989.4 TFLOP/s from datasheet \"…\"`; "
                    "catalog names: " + ", ".join(catalog.known_accelerators()),
                ))
            elif row is None:
                diags.append(Diagnostic(
                    "EFF020", "error", peak_entry.value_span,
                    f"the catalog has no {dtype or 'bf16'} {sparsity} peak for `{accel}`",
                    "declare the peak as a quantity with its source",
                ))
            else:
                peak = row.flops
                peak_input = Input("hardware.peak", row.flops, "FLOP/s", "catalog",
                                   f"{row.accelerator} {row.dtype} {row.sparsity}: {row.citation}", peak_entry.span,
                                   assumed=dtype is None)
        elif peak_entry is not None:
            peak = float(peak_entry.value)
            peak_input = _entry_input(hw, "peak")
        if unavailable > count:
            e = hw.get("unavailable")
            diags.append(Diagnostic("EFF011", "error", e.value_span if e else hw.span,
                                    f"`unavailable` ({unavailable:g}) exceeds `count` ({count:g})", ""))
            unavailable = count
        measured = hw.value("measured_peak")
        pools.append(Pool(hw, accel, count, unavailable, dtype or "bf16", dtype is None, sparsity, peak, peak_input,
                          row, float(measured) if measured is not None else None))
    return pools


def _step_time(run: Run, result: RunResult) -> tuple[Metric | None, tuple[str, ...]]:
    """step_time from samples, else from a declared throughput, else from declared achieved FLOP/s."""
    timing = run.block("timing")
    if timing is not None and timing.get("step_time") is not None and result.step_stats is not None:
        st = result.step_stats
        statistic = timing.value("statistic", "median")
        entry = timing.get("step_time")
        samples = entry.value
        where = f"{samples.file}, column {samples.column}" if samples.origin == "file" else "inline list"
        inputs = (
            Input("timing.step_time", f"{st.rows} samples ({where})", "s", entry.provenance.kind, entry.provenance.citation, entry.span),
            _entry_input(timing, "warmup") or Input("timing.warmup", 0, "step", "default", assumed=True),
        )
        value = st.statistic(statistic)
        formula = f"{statistic}(step_time samples after warm-up)"
        sub = f"{statistic} of {st.count} samples (rows {st.warmup_excluded + 1}–{st.rows}) = {quantity(value, 's')}"
        return Metric("step_time", value, "s", formula, sub, inputs, assumed=timing.get("warmup") is None), ()
    tokens = result.metrics.get("valid_tokens_per_step")
    throughput = _entry_input(timing, "throughput")
    if throughput is not None and tokens is not None:
        value = tokens.value / throughput.value
        return Metric("step_time", value, "s", "valid_tokens_per_step / timing.throughput",
                      f"{quantity(tokens.value, 'token')} / {quantity(throughput.value, 'token/s')} = {quantity(value, 's')}",
                      (tokens.as_input(), throughput), tokens.assumed), ()
    achieved = _entry_input(timing, "achieved_flops_per_device")
    model = result.metrics.get("model_flops_per_step")
    active = sum(p.active for p in result.pools)
    if achieved is not None and model is not None and active > 0:
        value = model.value / (achieved.value * active)
        devices = Input("active devices", active, "device", "derived")
        return Metric("step_time", value, "s", "model_flops_per_step / (timing.achieved_flops_per_device × active devices)",
                      f"{quantity(model.value, 'FLOP')} / ({quantity(achieved.value, 'FLOP/s')} × {active:g}) = {quantity(value, 's')}",
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
        inp = _entry_input(model, "flops_per_token")
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
    inputs = [i for i in (_entry_input(model, key) for key in
                          ("layers", "d_model", "heads", "head_dim", "kv_heads", "ffn", "d_ff", "vocab",
                           "experts", "top_k", "shared_experts", "d_ff_expert", "moe_layers")) if i is not None]
    if model.get("head_dim") is None:
        inputs.append(Input("model.head_dim", shape.head_dim, "", "default: d_model / heads"))
    if model.get("kv_heads") is None:
        inputs.append(Input("model.kv_heads", shape.kv_heads, "", "default: heads"))
    seq = _entry_input(run.block("work"), "seq_len")
    if seq is not None and k.attention != "excluded":
        inputs.append(seq)
    assumed = any(v == "assumed" for v in k.origin.values())
    for knob in ("preset", "multiply_add", "attention", "logits", "embeddings", "backward", "recompute", "moe"):
        inputs.append(Input(f"convention.{knob}", getattr(k, knob), "FLOP" if knob == "multiply_add" else "",
                            k.origin.get(knob, "written"), assumed=k.origin.get(knob) == "assumed"))
    parts = " + ".join(f"{name} {sig(v)}" for name, _, v in count.terms if v)
    recompute = f" + recompute({k.recompute}) {sig(count.recompute)}" if count.recompute else ""
    sub = f"(1 + {sig(k.backward)}) × ({parts}){recompute} = {quantity(count.total, 'FLOP/token')}"
    formula = "(1 + backward) × Σ forward terms + recompute term" if count.recompute else "(1 + backward) × Σ forward terms"
    return Metric("flops_per_token", count.total, "FLOP/token", formula, sub, tuple(inputs), assumed), ()


def _tokens_metric(run: Run) -> tuple[Metric | None, tuple[str, ...]]:
    work = run.block("work")
    declared = _entry_input(work, "valid_tokens")
    if declared is not None:
        return Metric("valid_tokens_per_step", float(declared.value), "token", "work.valid_tokens (declared)",
                      quantity(declared.value, "token"), (declared,)), ()
    seq, batch = _entry_input(work, "seq_len"), _entry_input(work, "global_batch")
    if seq is None or batch is None:
        return None, tuple(n for n, i in (("work.seq_len", seq), ("work.global_batch", batch)) if i is None) or ("work",)
    padded = _entry_input(work, "padded_tokens") or Input("work.padded_tokens", 0.0, "token", "default", assumed=True)
    dropped = _entry_input(work, "dropped_tokens") or Input("work.dropped_tokens", 0.0, "token", "default", assumed=True)
    value = seq.value * batch.value - padded.value - dropped.value
    return Metric(
        "valid_tokens_per_step", value, "token",
        "work.seq_len × work.global_batch − work.padded_tokens − work.dropped_tokens",
        f"{quantity(seq.value, 'token/sequence')} × {quantity(batch.value, 'sequence')} − {quantity(padded.value, 'token')} − {quantity(dropped.value, 'token')} = {quantity(value, 'token')}",
        (seq, batch, padded, dropped), assumed=False,
    ), ()


def _rate_metrics(result: RunResult, step: Metric, basis: str) -> dict[str, Metric]:
    """Everything that divides by the step time."""
    out: dict[str, Metric] = {"step_time": step}
    m = result.metrics
    tokens, model, executed, agg = (m.get(n) for n in ("valid_tokens_per_step", "model_flops_per_step",
                                                        "executed_flops_per_step", "aggregate_peak"))
    active = sum(p.active for p in result.pools)
    t = step.value
    if tokens is not None:
        v = tokens.value / t
        out["valid_tokens_per_second"] = Metric(
            "valid_tokens_per_second", v, "token/s", "valid_tokens_per_step / step_time",
            f"{quantity(tokens.value, 'token')} / {quantity(t, 's')} = {quantity(v, 'token/s')}",
            (tokens.as_input(), step.as_input()), tokens.assumed or step.assumed, basis)
    if model is not None and active > 0:
        v = model.value / (t * active)
        out["achieved_flops_per_device"] = Metric(
            "achieved_flops_per_device", v, "FLOP/s", "model_flops_per_step / (step_time × active devices)",
            f"{quantity(model.value, 'FLOP')} / ({quantity(t, 's')} × {active:g}) = {quantity(v, 'FLOP/s')}",
            (model.as_input(), step.as_input(), Input("active devices", active, "device", "derived")),
            model.assumed or step.assumed, basis)
    if model is not None and agg is not None:
        v = model.value / (t * agg.value)
        out["mfu"] = Metric(
            "mfu", v, "", "model_flops_per_step / (step_time × aggregate_peak)",
            f"{quantity(model.value, 'FLOP')} / ({quantity(t, 's')} × {quantity(agg.value, 'FLOP/s')}) = {metric_value(v, '')}",
            (model.as_input(), step.as_input(), agg.as_input()), model.assumed or step.assumed or agg.assumed, basis)
    if executed is not None and agg is not None:
        v = executed.value / (t * agg.value)
        out["hfu"] = Metric(
            "hfu", v, "", "executed_flops_per_step / (step_time × aggregate_peak)",
            f"{quantity(executed.value, 'FLOP')} / ({quantity(t, 's')} × {quantity(agg.value, 'FLOP/s')}) = {metric_value(v, '')}",
            (executed.as_input(), step.as_input(), agg.as_input()), executed.assumed or step.assumed or agg.assumed, basis)
    measured_pools = [p for p in result.pools if p.measured_peak is not None]
    if model is not None and result.pools and len(measured_pools) == len(result.pools):
        ref = sum(p.active * p.measured_peak for p in result.pools)
        v = model.value / (t * ref)
        inputs = [model.as_input(), step.as_input()] + [
            _entry_input(p.block, "measured_peak") for p in result.pools]
        out["mfu_measured_peak"] = Metric(
            "mfu_measured_peak", v, "", "model_flops_per_step / (step_time × Σ active devices × measured_peak)",
            f"{quantity(model.value, 'FLOP')} / ({quantity(t, 's')} × {quantity(ref, 'FLOP/s')}) = {metric_value(v, '')}",
            tuple(inputs), model.assumed or step.assumed, basis)
    return out


def _calendar(run: Run, result: RunResult) -> None:
    cal = run.block("calendar")
    if cal is None:
        return
    wall = _entry_input(cal, "wall_clock")
    steps = _entry_input(cal, "steps")
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
            f"{quantity(steps.value, 'step')} × {quantity(step.value, 's')} / {quantity(wall.value, 's')} = {metric_value(v, '')}",
            (steps, step.as_input(), wall), step.assumed)
    else:
        result.missing["calendar_efficiency"] = tuple(n for n, x in (("calendar.steps", steps), ("step_time", step)) if x is None)
    if steps is not None and tokens is not None:
        repeated = _entry_input(cal, "repeated_tokens") or Input("calendar.repeated_tokens", 0.0, "token", "default", assumed=True)
        v = (steps.value * tokens.value - repeated.value) / wall.value
        result.metrics["goodput"] = Metric(
            "goodput", v, "token/s", "(calendar.steps × valid_tokens_per_step − calendar.repeated_tokens) / calendar.wall_clock",
            f"({quantity(steps.value, 'step')} × {quantity(tokens.value, 'token')} − {quantity(repeated.value, 'token')}) / {quantity(wall.value, 's')} = {quantity(v, 'token/s')}",
            (steps, tokens.as_input(), repeated, wall), tokens.assumed)
    else:
        result.missing["goodput"] = tuple(n for n, x in (("calendar.steps", steps), ("valid_tokens_per_step", tokens)) if x is None)


def evaluate_run(run: Run, diags: list[Diagnostic]) -> RunResult:
    knobs, knobs_missing = flops.knobs_for(run)
    convention = run.block("convention")
    if knobs_missing and convention is not None:
        written_preset = convention.get("preset") is not None
        diags.append(Diagnostic(
            "EFF003", "error", convention.get("preset").value_span if written_preset else convention.span,
            ("`preset = custom` must write every knob out" if written_preset else
             "a `convention` without a `preset` is custom and must write every knob out")
            + ": missing " + ", ".join(f"`{k}`" for k in knobs_missing),
            "name the preset the source used (`preset = palm`, `megatron`, `kaplan`, `chinchilla`) and override single knobs, "
            "or write " + ", ".join(f"`{k}`" for k in knobs_missing) + " too"))
    model = run.block("model")
    work = run.block("work")
    shape = flops.shape_of(model)
    seq_len = work.value("seq_len") if work is not None else None
    par = run.block("parallelism")
    ran = par.value("recompute") if par is not None else None
    flop_count = flops.count(shape, knobs, seq_len) if shape else None
    executed_count = flops.count(shape, knobs, seq_len, recompute=ran or "none") if shape else None
    timing = run.block("timing")
    stats = None
    if timing is not None and timing.get("step_time") is not None:
        warmup = int(timing.value("warmup", 0))
        stats = step_statistics(timing.value("step_time").values, warmup)
        if stats is None:
            e = timing.get("warmup")
            diags.append(Diagnostic("EFF011", "error", e.value_span if e else timing.span,
                                    f"warm-up excludes all {len(timing.value('step_time').values)} samples",
                                    "lower `warmup` or provide more samples"))
    result = RunResult(run, knobs, knobs_missing, shape, flop_count, executed_count,
                       flops.params_from_shape(shape) if shape else None, _pools(run, diags), stats)
    m, missing = result.metrics, result.missing

    def put(metric_and_missing, name):
        metric, miss = metric_and_missing
        if metric is not None:
            m[name] = metric
        else:
            missing[name] = miss

    put(_flops_metric(run, result), "flops_per_token")
    put(_tokens_metric(run), "valid_tokens_per_step")
    if "valid_tokens_per_step" in m and m["valid_tokens_per_step"].value <= 0:
        bad = m.pop("valid_tokens_per_step")
        missing["valid_tokens_per_step"] = ("a positive valid token count",)
        culprit = (work.get("padded_tokens") or work.get("dropped_tokens") or work.get("valid_tokens")) if work is not None else None
        diags.append(Diagnostic("EFF011", "error", culprit.span if culprit else run.name_span,
                                f"valid tokens per step come to {bad.value:g}: {bad.substituted}",
                                "padded and dropped tokens cannot exceed seq_len × global_batch; check the counts"))
    fpt, tokens = m.get("flops_per_token"), m.get("valid_tokens_per_step")
    padded = _entry_input(work, "padded_tokens") or Input("work.padded_tokens", 0.0, "token", "default", assumed=True)
    if fpt is not None and tokens is not None:
        if knobs.padding == "included":
            counted = tokens.value + padded.value
            m["model_flops_per_step"] = Metric(
                "model_flops_per_step", fpt.value * counted, "FLOP",
                "flops_per_token × (valid_tokens_per_step + work.padded_tokens)   [padding = included]",
                f"{quantity(fpt.value, 'FLOP/token')} × ({quantity(tokens.value, 'token')} + {quantity(padded.value, 'token')}) = {quantity(fpt.value * counted, 'FLOP')}",
                (fpt.as_input(), tokens.as_input(), padded), fpt.assumed)
        else:
            v = fpt.value * tokens.value
            m["model_flops_per_step"] = Metric(
                "model_flops_per_step", v, "FLOP", "flops_per_token × valid_tokens_per_step",
                f"{quantity(fpt.value, 'FLOP/token')} × {quantity(tokens.value, 'token')} = {quantity(v, 'FLOP')}",
                (fpt.as_input(), tokens.as_input()), fpt.assumed)
    else:
        missing["model_flops_per_step"] = missing.get("flops_per_token", ()) + missing.get("valid_tokens_per_step", ())
    declared_exec = _entry_input(work, "executed_flops")
    if declared_exec is not None:
        m["executed_flops_per_step"] = Metric("executed_flops_per_step", declared_exec.value, "FLOP",
                                              "work.executed_flops (hardware counter)",
                                              quantity(declared_exec.value, "FLOP"), (declared_exec,))
    elif tokens is not None and (executed_count is not None or (model is not None and model.value("kind") == "custom" and fpt)):
        per_token = executed_count.total if executed_count is not None else fpt.value
        v = per_token * (tokens.value + padded.value)
        ran_input = _entry_input(par, "recompute") or Input("parallelism.recompute", "none", "", "default", assumed=True)
        m["executed_flops_per_step"] = Metric(
            "executed_flops_per_step", v, "FLOP",
            "executed_flops_per_token(recompute = parallelism.recompute) × (valid_tokens_per_step + work.padded_tokens)",
            f"{quantity(per_token, 'FLOP/token')} × ({quantity(tokens.value, 'token')} + {quantity(padded.value, 'token')}) = {quantity(v, 'FLOP')}",
            (Input("executed_flops_per_token", per_token, "FLOP/token", "derived"), ran_input, tokens.as_input(), padded),
            ran_input.assumed or (fpt.assumed if fpt else False))
    else:
        missing["executed_flops_per_step"] = missing.get("flops_per_token", ()) + missing.get("valid_tokens_per_step", ())
    pools = [p for p in result.pools if p.peak is not None]
    if result.pools and len(pools) == len(result.pools) and sum(p.active for p in pools) <= 0:
        missing["aggregate_peak"] = ("hardware: every device is unavailable",)
    elif result.pools and len(pools) == len(result.pools):
        v = sum(p.active * p.peak for p in pools)
        inputs = []
        for p in pools:
            inputs.append(_entry_input(p.block, "count"))
            if p.unavailable:
                inputs.append(_entry_input(p.block, "unavailable"))
            inputs.append(p.peak_input)
        terms = " + ".join(f"({p.count:g} − {p.unavailable:g}) × {quantity(p.peak, 'FLOP/s')}" for p in pools)
        m["aggregate_peak"] = Metric("aggregate_peak", v, "FLOP/s", "Σ pools (hardware.count − hardware.unavailable) × hardware.peak",
                                     f"{terms} = {quantity(v, 'FLOP/s')}", tuple(inputs),
                                     any(p.peak_input.assumed for p in pools))
    else:
        missing["aggregate_peak"] = ("hardware",) if not result.pools else ("hardware.peak",)
    step, step_missing = _step_time(run, result)
    if step is not None:
        m.update(_rate_metrics(result, step, "inputs"))
    else:
        for name in ("step_time", "valid_tokens_per_second", "achieved_flops_per_device", "mfu", "hfu"):
            missing.setdefault(name, step_missing)
    for name, deps in (("valid_tokens_per_second", ("valid_tokens_per_step",)),
                       ("achieved_flops_per_device", ("model_flops_per_step",)),
                       ("mfu", ("model_flops_per_step", "aggregate_peak")),
                       ("hfu", ("executed_flops_per_step", "aggregate_peak"))):
        if name not in m and name not in missing:
            missing[name] = tuple(x for d in deps for x in missing.get(d, (d,)) if d not in m)
    _calendar(run, result)
    return result


# ----------------------------------------------------------------------------
# Claims


def _half_unit(expr) -> float | None:
    """Half a unit in the last written digit of a single literal, in base units."""
    if not isinstance(expr, Number):
        return None
    text = expr.text.replace("_", "").lower()
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    half = 0.5 * 10.0 ** (int(exponent or 0) - decimals)
    if expr.unit:
        from .units import parse_unit
        half *= parse_unit(expr.unit)[0]
    return half


def tolerance(expr, claimed: float) -> float:
    return (_half_unit(expr) or 0.0) + 0.01 * abs(claimed)


_BASIS_ORDER = ("valid_tokens_per_second", "achieved_flops_per_device", "step_time", "mfu")


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
        if name == "valid_tokens_per_second" and "valid_tokens_per_step" in m:
            tokens = m["valid_tokens_per_step"]
            v = tokens.value / value
            return Metric("step_time", v, "s", "valid_tokens_per_step / claimed valid_tokens_per_second",
                          f"{quantity(tokens.value, 'token')} / {quantity(value, 'token/s')} = {quantity(v, 's')}",
                          (tokens.as_input(), inp), tokens.assumed, where), name
        active = sum(p.active for p in result.pools)
        if name == "achieved_flops_per_device" and "model_flops_per_step" in m and active > 0:
            model = m["model_flops_per_step"]
            v = model.value / (value * active)
            return Metric("step_time", v, "s", "model_flops_per_step / (claimed achieved_flops_per_device × active devices)",
                          f"{quantity(model.value, 'FLOP')} / ({quantity(value, 'FLOP/s')} × {active:g}) = {quantity(v, 's')}",
                          (model.as_input(), inp), model.assumed, where), name
        if name == "step_time":
            return Metric("step_time", value, "s", "claimed step_time", quantity(value, "s"), (inp,), False, where), name
        if name == "mfu" and "model_flops_per_step" in m and "aggregate_peak" in m:
            model, agg = m["model_flops_per_step"], m["aggregate_peak"]
            v = model.value / (value * agg.value)
            return Metric("step_time", v, "s", "model_flops_per_step / (claimed mfu × aggregate_peak)",
                          f"{quantity(model.value, 'FLOP')} / ({metric_value(value, '')} × {quantity(agg.value, 'FLOP/s')}) = {quantity(v, 's')}",
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
            if other is None or name is None or other.figure(name) is None:
                raise LookupError(ref.dotted)
            metric = other.figure(name)
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


def check_claims(result: RunResult, results: dict[str, RunResult], diags: list[Diagnostic]) -> None:
    run = result.run
    claimed: dict[str, tuple[ClaimResult, float]] = {}
    for claim in run.claims:
        unit = K.CLAIMABLE.get(claim.name, "")
        try:
            q = _claimed_value(claim, result, results)
        except LookupError as exc:
            result.claims[claim.name] = ClaimResult(claim, None, None, "unrecoverable", unit, missing=(str(exc.args[0]),))
            continue
        except UnitError as exc:
            diags.append(Diagnostic("EFF010", "error", claim.value_span, f"claim `{claim.written}`: {exc}", ""))
            continue
        except ZeroDivisionError:
            diags.append(Diagnostic("EFF011", "error", claim.value_span, f"claim `{claim.written}` divides by zero", ""))
            continue
        if q.dims != dims_of(unit):
            diags.append(Diagnostic(
                "EFF010", "error", claim.value_span,
                f"claim `{claim.written}` expects {f'`{unit}`' if unit else 'a ratio or %'}, found {f'`{q.unit}`' if q.dims else 'a plain number'}",
                f"write e.g. `claim {claim.written} = 52 %`" if unit == "" else f"write the value in `{unit}`",
                label=f"this is {q.unit or 'dimensionless'}"))
            continue
        if not math.isfinite(q.magnitude):
            diags.append(Diagnostic("EFF011", "error", claim.value_span, f"claim `{claim.written}` is not finite", ""))
            continue
        cr = ClaimResult(claim, q.magnitude, None, "unrecoverable", unit, tolerance(claim.expr, q.magnitude))
        result.claims[claim.name] = cr
        claimed[claim.name] = (cr, q.magnitude)
    # Figures the claims imply where the inputs stop short.
    if "step_time" not in result.metrics:
        implied = _implied_step(result, claimed)
        if implied is not None:
            step, basis_name = implied
            result.implied = {k: v for k, v in _rate_metrics(result, step, step.basis).items()}
            result.implied.pop(basis_name, None)
    if "valid_tokens_per_second" in claimed and "mfu" in claimed and "aggregate_peak" in result.metrics:
        (_, tp), (_, mfu) = claimed["valid_tokens_per_second"], claimed["mfu"]
        agg = result.metrics["aggregate_peak"]
        if tp > 0:
            v = mfu * agg.value / tp
            result.implied["flops_per_token_from_claims"] = Metric(
                "flops_per_token", v, "FLOP/token", "claimed mfu × aggregate_peak / claimed valid_tokens_per_second",
                f"{metric_value(mfu, '')} × {quantity(agg.value, 'FLOP/s')} / {quantity(tp, 'token/s')} = {quantity(v, 'FLOP/token')}",
                (Input("claim mfu", mfu, "", "claim"), agg.as_input(), Input("claim throughput", tp, "token/s", "claim")),
                agg.assumed, "claims `mfu` and `throughput`")
    for name, cr in result.claims.items():
        if cr.claimed is None:
            continue
        metric = _reconstructed(name, result)
        if metric is None:
            missing = tuple(result.missing.get(name, ())) or (("breakdown",) if name.startswith("breakdown.") else ())
            if name == "valid_tokens_per_second":  # declaring the rate itself would check nothing
                missing = tuple("timing.step_time" if m == "timing.step_time or timing.throughput" else m for m in missing)
            cr.missing = missing
            continue
        cr.reconstructed = metric.value
        cr.basis = metric.basis
        cr.status = "consistent" if abs(metric.value - cr.claimed) <= cr.tolerance else "mismatch"


# ----------------------------------------------------------------------------


def _convention_table(result: RunResult) -> None:
    """flops_per_token and MFU under every standard preset, side by side."""
    shape, work = result.shape, result.run.block("work")
    if shape is None:
        return
    seq_len = work.value("seq_len") if work is not None else None
    tokens = result.metrics.get("valid_tokens_per_step")
    agg = result.metrics.get("aggregate_peak")
    step = result.figure("step_time")
    padded = float(work.value("padded_tokens", 0)) if work is not None else 0.0
    rows = [("declared", result.knobs)] + [(p, result.knobs.with_preset(p)) for p in flops.STANDARD_PRESETS]
    for label, knobs in rows:
        count = flops.count(shape, knobs, seq_len)
        row: dict = {"preset": knobs.preset, "flops_per_token": count.total if count else None, "knobs": {
            k: getattr(knobs, k) for k in ("attention", "logits", "embeddings", "recompute")}}
        if count and tokens and agg and step:
            counted = tokens.value + (padded if knobs.padding == "included" else 0.0)
            row["mfu"] = count.total * counted / (step.value * agg.value)
            row["basis"] = step.basis
        result.conventions[label] = row


def evaluate(spec: Spec) -> Evaluation:
    """Evaluate every run and scaling of a checked spec."""
    from . import breakdown as breakdown_mod, scaling as scaling_mod

    diags: list[Diagnostic] = []
    results: dict[str, RunResult] = {}
    for run in spec.runs:
        results[run.id] = evaluate_run(run, diags)
    for result in results.values():
        result.breakdown = breakdown_mod.reconcile(result)
        check_claims(result, results, diags)
        _convention_table(result)
        result.calendar_table = breakdown_mod.calendar_table(result, diags)
        result.calendar = result.calendar_table.to_json() if result.calendar_table is not None else None
        result.time_to_target = scaling_mod.time_to_target(result)
        if result.run.block("ranks") is not None:
            from . import ranks  # numpy only for specs that declare per-rank samples

            result.diagnosis = ranks.analyse(result, diags)
    scalings = {s.id: scaling_mod.evaluate_scaling(s, spec, results) for s in spec.scalings}
    return Evaluation(spec, results, scalings, diags)
