"""Explain the gap: which single change of the declared inputs reproduces a mismatched claim.

When a claim disagrees with the reconstruction (EFF601), the usual cause is one
wrong assumption on either side: the source counted attention as full, used the
sparse peak, kept its warm-up steps, quoted a per-device figure as a total, or
its framework counted at another version. This module tries each such change on
its own, computes the run's figures under it with the evaluation's own
arithmetic (:class:`Figures`, numbers only; a full ``evaluate_run`` then
``check_claims`` where that path does not follow the evaluation), and keeps the
changes under which the claim falls within its own tolerance, ranked by how
plausible a cause each is (:data:`KINDS`): the framework at another version or
a known quirk, then a known convention difference or input error, then a
numeric fit only.

The candidates are a data table, :data:`CANDIDATES`: each entry has a name, a
kind, and a function that yields ``(label, changed run)`` variants (or a triple
with the variant's own kind), or none when it does not apply (GQA ignored needs
``kv_heads < heads``; MLA counted as plain MHA needs the MLA keys). A further
check needs no re-evaluation: a figure off by exactly the device count (per
device against aggregate).

It runs only for runs with a mismatched claim, so a spec whose claims agree pays
nothing, and a spec's searches share a budget of :data:`BUDGET` candidates: a
file of thousands of mismatched runs costs a bounded time more, and the claims
past the budget say they were not searched. A run's search is remembered by its
IR object across checks (the language server's incremental parser re-uses an
unchanged run's). Breakdown claims (`breakdown.*`) are not explained: their
figure is a declared share, not a reconstruction.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from effspec.diagnostics import Diagnostic, Span
from effspec.display import numbers_only, sig
from effspec.engine import catalog, flops
from effspec.engine.claims import check_claims
from effspec.engine.finite import divide
from effspec.engine.pools import hardware_pools
from effspec.engine.results import ClaimResult, Explanation, RunResult
from effspec.engine.stats import StepStats, step_statistics
from effspec.front import keys as K
from effspec.front import presets as preset_table
from effspec.front.expr import refs_in
from effspec.front.ir import Block, Entry, Provenance, Run, Samples, Value, evolve

_GAP = Provenance("assumed", "explain the gap: one changed input")

# MLA keys (DeepSeek-V2/V3 configs). Present only once the language has them;
# the candidate below looks for `kv_lora_rank` and so applies only to MLA models.
MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
# Re-evaluations per spec: ~35 per run with a mismatch (19 of them presets), so about 110 runs' worth.
BUDGET = 4_000
# The search's re-evaluations print no derivation text (display.numbers_only): it reads their
# numbers only. False evaluates them in full, as before (tests/engine/test_gap_speed.py compares the two).
NUMBERS_ONLY = True
# Knobs a preset does not set: the run keeps its own when the preset changes.
_KEPT_KNOBS = ("multiply_add", "backward", "padding", "moe", "optimizer")


# How plausible a cause each change is, most plausible first: the search ranks what it finds by this, then
# by table order, and the notes say which each is. A change that only happens to hit the number (a
# coincidence) is listed after every known cause, and left out of the notes where a known cause reproduces.
KINDS: dict[str, str] = {
    "framework_version": "the run's framework at another version",
    "framework_quirk": "a known framework quirk",
    "convention": "a known convention difference",
    "input_error": "a known input error",
    "coincidence": "a numeric fit only",
}
_RANK = {kind: 0 if kind.startswith("framework") else 1 if kind != "coincidence" else 2 for kind in KINDS}

# A variant: (label, changed run), or (label, changed run, kind) where the kind is not the candidate's own.
Variant = tuple[str, Run] | tuple[str, Run, str]


@dataclass(frozen=True)
class Candidate:
    """One kind of single change: ``variants(run, result)`` yields (label, changed run) pairs, or
    (label, changed run, kind) triples where a variant's kind (:data:`KINDS`) is not ``kind``."""

    name: str
    variants: Callable[[Run, RunResult], Iterable[Variant]]
    kind: str = "convention"


# ----------------------------------------------------------------------------
# Changing the IR: a block's entry set, replaced or removed


def _within(value: float, cr: ClaimResult) -> bool:
    """The claim reproduced: `value` within the claim's tolerance."""
    assert cr.claimed is not None and cr.tolerance is not None  # _explainable claims only
    return abs(value - cr.claimed) <= cr.tolerance


def _entry(block_name: str, key: str, value: Value, text: str, span: Span) -> Entry:
    spec = K.BLOCKS[block_name][key]
    unit = spec.unit if spec.kind in ("quantity", "peak") else ""
    return Entry(key, spec.kind, value, unit, text, _GAP, span, span)


def with_entries(run: Run, block_name: str, values: dict[str, tuple[Value, str]],
                 drop: Iterable[str] = (), which: Block | None = None) -> Run:
    """``run`` with ``values`` (key -> (value, text)) set in its block ``block_name`` (the
    first of that name, or ``which``), ``drop`` removed; the block is created when absent."""
    target = which if which is not None else run.block(block_name)
    if target is None:
        target = Block(block_name, (), run.span)
        blocks = (*run.blocks, target)
    else:
        blocks = run.blocks
    gone = set(drop) | set(values)
    entries = [e for e in target.entries if e.key not in gone]
    entries += [_entry(block_name, k, v, t, target.span) for k, (v, t) in values.items()]
    changed = evolve(target, entries=tuple(entries))
    return evolve(run, blocks=tuple(changed if b is target else b for b in blocks))


def _convention(run: Run, values: dict[str, tuple[Value, str]]) -> Run:
    """Set convention knobs; a run without a `convention` was read under `palm`, so keep that preset."""
    if run.block("convention") is None:
        values = {"preset": ("palm", "palm"), **values}
    return with_entries(run, "convention", values)


# ----------------------------------------------------------------------------
# The candidates


def _presets(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    if result.shape is None:
        return  # `kind = custom`: the knobs do not apply
    family = {p.name for p in _family(result)}
    for preset in flops.PRESETS:
        if preset in family:
            continue  # the framework's other versions: _framework_versions
        changed = _with_preset(run, result, preset)
        if changed is not None:
            yield f"preset = {preset}", changed


def _with_preset(run: Run, result: RunResult, preset: str) -> Run | None:
    """The run under another preset, keeping the knobs a preset does not set (None: its own convention)."""
    convention = run.block("convention")
    if preset == result.knobs.preset and (convention is None or all(
            e.key in _KEPT_KNOBS or e.key == "preset" for e in convention.entries)):
        return None
    kept = {e.key: (e.value, e.text) for e in convention.entries if e.key in _KEPT_KNOBS} if convention else {}
    block = Block("convention", tuple(_entry("convention", k, v, t, run.span)
                                      for k, (v, t) in {"preset": (preset, preset), **kept}.items()), run.span)
    others = tuple(b for b in run.blocks if b.name != "convention")
    return evolve(run, blocks=(*others, block))


def _family(result: RunResult) -> tuple[preset_table.Preset, ...]:
    """The other version presets of the run's framework: the same `framework`, or a name that extends the
    run's preset's (`torchtitan_pre280` for `torchtitan`) or that it extends; newest boundary first."""
    own = preset_table.by_name(result.knobs.preset)
    if own is None or own.paper:
        return ()
    family = [p for p in preset_table.PRESETS if p is not own and not p.paper and (
        (own.framework and p.framework == own.framework)
        or p.name.startswith(own.name + "_") or own.name.startswith(p.name + "_"))]
    return tuple(sorted(family, key=lambda p: p.since or p.until, reverse=True))


def version_span(preset: preset_table.Preset) -> str:
    """When a version preset's formula was upstream's: `before 2025-03-06`, `2024-03-25 to 2025-03-06`, `since …`
    (from its framework's boundaries, or its own `since` and `until`); `at another version` where no date is known."""
    until = preset.until
    if preset.framework and not until:
        family = preset_table.family(preset.framework)  # newest boundary first
        at = family.index(preset)
        until = family[at - 1].since if at > 0 else ""
    if preset.since and until:
        return f"{preset.since} to {until}"
    if preset.since or until:
        return f"since {preset.since}" if preset.since else f"before {until}"
    return "at another version"


def _framework_versions(run: Run, result: RunResult) -> Iterator[Variant]:
    """An imported claim (the run's preset is a framework's): the same framework's other version presets,
    named as such ("megatron_lm's formula before 2025-03-06")."""
    if result.shape is None:
        return
    own = preset_table.by_name(result.knobs.preset)
    for preset in _family(result):
        changed = _with_preset(run, result, preset.name)
        if changed is not None and own is not None:
            framework = preset.framework or min(own.name, preset.name, key=len)
            # A version with a known counting quirk that a later commit fixed (AutoModel's kv_channels before
            # PR #3091, torchtitan's embedding before PR #280) is that quirk; another is the other version.
            yield (f"{framework}'s formula {version_span(preset)} (preset = {preset.name})", changed,
                   "framework_quirk" if preset.quirk else "framework_version")


def _knob(knob: str, values: tuple[str, ...]) -> Callable[[Run, RunResult], Iterator[tuple[str, Run]]]:
    """The other values of one convention knob (attention full or causal, logits in or out, …)."""
    def variants(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
        if result.shape is None:
            return
        current = getattr(result.knobs, knob)
        for value in values:
            if value != current:
                yield f"{knob} = {value}", _convention(run, {knob: (value, value)})
    return variants


def _recompute_counted(run: Run, result: RunResult) -> Iterator[Variant]:
    """Recomputation counted in the numerator (MFU), or, for HFU, more recomputation run than declared."""
    if result.shape is None:
        return
    par = run.block("parallelism")
    ran = par.value("recompute", "none") if par is not None else "none"
    if result.knobs.recompute in ("none", "excluded"):
        for mode in ("selective", "full"):
            # Counting the recomputation that ran is a known convention (Megatron's eq. 3); counting one
            # that did not run only happens to hit the number.
            yield (f"recompute = {mode} counted in the numerator", _convention(run, {"recompute": (mode, mode)}),
                   "convention" if mode == ran else "coincidence")
    for mode in ("selective", "full"):
        if mode != ran:
            yield (f"parallelism.recompute = {mode} (what ran, for HFU)",
                   with_entries(run, "parallelism", {"recompute": (mode, mode)}), "input_error")


def _gqa_ignored(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    shape = result.shape
    if shape is not None and shape.kv_heads < shape.heads:
        yield "kv_heads = heads (GQA ignored)", with_entries(run, "model", {"kv_heads": (shape.heads, str(shape.heads))})


def _mla_as_mha(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    model = run.block("model")
    if model is not None and model.get("kv_lora_rank") is not None:
        width = model.value("v_head_dim")
        if isinstance(width, int) and model.get("heads") is not None:
            # The nearest plain shape: every head with its own keys and values of the value width.
            yield (f"MLA counted as plain MHA ({model.value('heads')} heads of {width})",
                   with_entries(run, "model", {"head_dim": (width, str(width))}, drop=MLA_KEYS))
        else:
            yield "MLA counted as plain MHA (the MLA keys left out)", with_entries(run, "model", {}, drop=MLA_KEYS)


def _peaks(run: Run, result: RunResult) -> Iterator[Variant]:
    """Another catalog row of the run's accelerator: another datatype's dense peak, the sparse figure.

    Each peak is labelled by its own datatype and sparsity; of the rows with the same number (on an
    H100 the dense FP8 peak is the sparse BF16 figure), the dense peak of a float datatype names it,
    then the dense integer figure, then the sparse twin of the run's own datatype: the likelier cause
    is the datatype that ran, not a sparse figure that happens to be equal."""
    pools = run.blocks_named("hardware")
    if len(pools) != 1 or len(result.pools) != 1 or result.pools[0].peak is None:
        return
    pool = result.pools[0]
    by_figure: dict[float, list[catalog.PeakRow]] = {}
    for row in catalog.rows_for(pool.accelerator or ""):
        if row.flops != pool.peak:
            by_figure.setdefault(row.flops, []).append(row)

    def preference(row: catalog.PeakRow) -> int:
        if row.sparsity == "dense":
            return 0 if row.dtype != "int8" else 1
        return 2 if row.dtype == pool.dtype else 3

    for figure, rows in by_figure.items():
        rows.sort(key=preference)
        best = rows[0]
        unit = "TOPS" if best.dtype == "int8" else "TFLOP/s"
        label = f"peak = {sig(figure / 1e12)} {unit} (the {best.sparsity} {best.dtype} peak of {best.accelerator}"
        twin = next((r for r in rows[1:] if r.sparsity != best.sparsity and r.dtype == pool.dtype), None)
        label += f", the same number as its {twin.sparsity} {twin.dtype} figure)" if twin is not None else ")"
        # Another datatype's dense peak (the datatype that ran), or the run's own datatype's sparse figure:
        # known errors. A sparse figure of another datatype is two errors at once: a numeric fit.
        plausible = best.sparsity == "dense" or best.dtype == pool.dtype
        yield (label, with_entries(run, "hardware", {"peak": (figure, f"{figure / 1e12:g} TFLOP/s")}, which=pools[0]),
               "input_error" if plausible else "coincidence")


# The peak a framework divides by whatever the device (its MFU's denominator), by the run's convention preset.
# nanoGPT and nanochat share the `nanogpt` preset and hard-code different peaks.
FRAMEWORK_PEAKS: dict[str, tuple[tuple[float, str], ...]] = {
    "nanogpt": ((312e12, "nanoGPT's estimate_mfu hard-codes an A100's BF16 peak, karpathy/nanoGPT@3adf61e model.py L303"),
                (989e12, "nanochat's scripts/base_train.py hard-coded an H100's BF16 peak before it printed the "
                         "device's own, karpathy/nanochat#60 and #147")),
}


def _framework_peak(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    """The peak the run's framework hard-codes in its MFU (nanoGPT's 312 TFLOP/s), named as such."""
    pools = run.blocks_named("hardware")
    if len(pools) != 1 or len(result.pools) != 1 or result.pools[0].peak is None:
        return
    for assumed, why in FRAMEWORK_PEAKS.get(result.knobs.preset or "", ()):
        if assumed != result.pools[0].peak:
            yield (f"peak = {sig(assumed / 1e12)} TFLOP/s (the peak the framework assumes: {why})",
                   with_entries(run, "hardware", {"peak": (assumed, f"{assumed / 1e12:g} TFLOP/s")}, which=pools[0]))


def _padding_counted(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    work = run.block("work")
    padded = work.number("padded_tokens") if work is not None else None
    if work is not None and padded and work.get("valid_tokens") is None:
        yield (f"padding counted as work (the {int(padded):,} padded tokens per step as valid tokens)",
               with_entries(run, "work", {}, drop=("padded_tokens",)))


def _warmup_kept(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    timing = run.block("timing")
    stats = result.step_stats
    if timing is not None and stats is not None and stats.warmup_excluded > 0:
        yield (f"warm-up steps kept (warmup = 0 instead of {stats.warmup_excluded})",
               with_entries(run, "timing", {"warmup": (0.0, "0 step")}))


def _statistic(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    timing = run.block("timing")
    stats = result.step_stats
    if timing is not None and stats is not None and stats.count > 1:
        other = "mean" if timing.value("statistic", "median") == "median" else "median"
        yield f"statistic = {other} (the {other} step time)", with_entries(run, "timing", {"statistic": (other, other)})


def _mtp(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    """DeepSeek-V3's multi-token-prediction module counted or not: many published counts leave it out,
    and a spec written from a paper's table may leave it out where the source counted it."""
    shape = result.shape
    if shape is None:
        return
    if shape.mtp_depth:
        yield (f"mtp_depth = 0 (the {shape.mtp_depth} multi-token-prediction module{'s' if shape.mtp_depth > 1 else ''} "
               "not counted)", with_entries(run, "model", {}, drop=("mtp_depth",)))
    elif shape.mla or shape.moe_layers:  # the families that publish MTP (DeepSeek-V3, GLM-4.5, MiMo)
        yield "mtp_depth = 1 (one multi-token-prediction module counted)", with_entries(run, "model", {"mtp_depth": (1, "1")})


def _windows(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    """Sliding windows counted at their width, or ignored (every layer at full length, as several frameworks count)."""
    if result.shape is None or not result.shape.windowed_layers:
        return
    if result.knobs.windows == "counted":
        yield "windows = ignored (sliding-window layers counted at full length)", _convention(run, {"windows": ("ignored", "ignored")})
    else:
        yield "windows = counted (sliding-window layers counted at their width)", _convention(run, {"windows": ("counted", "counted")})


def _head_dim_from_width(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    """head_dim taken as d_model / heads where the model declares another: Megatron's `kv_channels` default,
    and AutoModel's GPT-OSS count until July 2026 (`kv_channels = hidden // heads`, 45 against 64)."""
    shape, model = result.shape, run.block("model")
    if shape is None or shape.mla or model is None or model.get("head_dim") is None or not shape.heads:
        return
    width = shape.d_model // shape.heads
    if width != shape.head_dim and width > 0:
        yield (f"head_dim = d_model // heads = {width} (instead of {shape.head_dim:g}: kv_channels = hidden // heads)",
               with_entries(run, "model", {}, drop=("head_dim",)) if shape.d_model % shape.heads == 0
               else with_entries(run, "model", {"head_dim": (width, str(width))}))


def _all_experts(run: Run, result: RunResult) -> Iterator[tuple[str, Run]]:
    shape = result.shape
    if shape is not None and shape.moe_layers and shape.experts > shape.top_k and result.knobs.moe == "active":
        yield ("moe = all (parameters in place of active parameters)", _convention(run, {"moe": ("all", "all")}))


CANDIDATES: tuple[Candidate, ...] = (
    Candidate("framework_version", _framework_versions, "framework_version"),
    Candidate("preset", _presets),
    Candidate("attention", _knob("attention", ("full", "causal"))),
    Candidate("logits", _knob("logits", ("included", "excluded"))),
    Candidate("embeddings", _knob("embeddings", ("included", "excluded"))),
    Candidate("recompute", _recompute_counted),
    Candidate("gqa", _gqa_ignored),
    Candidate("mla", _mla_as_mha),
    Candidate("mtp", _mtp),
    Candidate("windows", _windows),
    Candidate("head_dim", _head_dim_from_width, "framework_quirk"),
    Candidate("peak", _peaks, "input_error"),
    Candidate("framework_peak", _framework_peak, "framework_quirk"),
    Candidate("padding", _padding_counted, "input_error"),
    Candidate("warmup", _warmup_kept, "input_error"),
    Candidate("statistic", _statistic, "input_error"),
    Candidate("moe", _all_experts),
)


# ----------------------------------------------------------------------------
# The search


def _explainable(cr: ClaimResult) -> bool:
    return (cr.status == "mismatch" and cr.claimed is not None and cr.reconstructed is not None
            and cr.tolerance is not None and not cr.claim.name.startswith("breakdown."))


# engine.evaluate's evaluate_run, passed in: evaluate calls this module, so it cannot be imported here.
EvaluateRun = Callable[[Run, list[Diagnostic]], RunResult]


# ----------------------------------------------------------------------------
# The candidates' figures, from numbers alone

# The figures the numbers-only path computes; a claim on any other (calendar figures, goodput, the
# measured-peak MFU, an on-demand or an implied figure) sends the run's search through `reevaluate`.
FAST_FIGURES = frozenset({"flops_per_token", "valid_tokens_per_step", "model_flops_per_step",
                          "executed_flops_per_step", "aggregate_peak", "step_time", "valid_tokens_per_second",
                          "achieved_flops_per_device", "mfu", "hfu"})


class Figures:
    """A mismatching run's figures under each candidate change, computed from numbers alone.

    It follows ``evaluate_run`` step for step, with its arithmetic in its order (so each figure is
    the same float), but builds no ``Metric``, ``Input`` or text, and computes each part once for
    the blocks it reads: a candidate changes one block and shares the others, as objects, with the
    run, so a changed peak re-uses the FLOP count, the tokens and the step statistics, and a changed
    convention re-uses the tokens, the pools and the statistics. The knobs and FLOP counts are also
    kept by value for the spec's other runs (:class:`Budget` holds them). Where the evaluation
    would take a path this does not follow (a step time implied by a claim, an implausible sample
    left out, a figure that is not finite or a divisor that is not positive), :meth:`values`
    returns None and the search re-evaluates that candidate in full (:func:`reevaluate`).
    """

    def __init__(self, names: Iterable[str], budget: Budget) -> None:
        self.hfu = "hfu" in names or "executed_flops_per_step" in names
        self.fell_back = False  # a candidate re-evaluated in full: the search is not remembered
        self._budget = budget
        # By the blocks' identity (Block's equality is by value; the candidate runs, alive for the whole
        # search, keep each id unique): work -> its numbers, timing -> statistics, hardware -> pools.
        self._work: dict[int, _Work] = {}
        self._stats: dict[int, tuple[StepStats, float | None] | None] = {}
        self._pools: dict[tuple[int, ...], tuple[float, float | None]] = {}
        self._shape: dict[int, tuple[flops.Shape | None, str]] = {}  # with its repr, the FLOP counts' key
        self._shape_key = ""
        self._knobs_by_block: dict[tuple[int, int], flops.Knobs] = {}
        self._counts_by_block: dict[tuple[int, ...], flops.FlopCount | None] = {}

    @staticmethod
    def applies(result: RunResult, todo: dict[str, ClaimResult]) -> bool:
        """The claims read figures this path computes and are numbers (no reference: the candidate cannot
        change their value), and the run's own evaluation had no figure that is not finite."""
        return not result.nonfinite and all(n in FAST_FIGURES and not refs_in(cr.claim.expr) for n, cr in todo.items())

    def _knobs(self, conv: Block | None, par: Block | None, run: Run) -> flops.Knobs:
        """flops.knobs_for, by what it reads: the convention's entries and what ran (origin aside)."""
        knobs = self._knobs_by_block.get((id(conv), id(par)))
        if knobs is not None:
            return knobs
        key = (tuple((e.key, e.value) for e in conv.entries) if conv is not None else None,
               par.value("recompute", "none") if par is not None else None)
        knobs = self._budget.knobs.get(key)
        if knobs is None:
            knobs = self._budget.knobs[key] = flops.knobs_for(run)[0]
        self._knobs_by_block[id(conv), id(par)] = knobs
        return knobs

    def _count(self, blocks: tuple[int, ...], shape: flops.Shape, knobs: flops.Knobs, seq_len: float | None,
               recompute: str | float | None = None) -> flops.FlopCount | None:
        """flops.count, by the blocks it reads (``blocks``: their ids), else by value for the spec's other runs."""
        if blocks in self._counts_by_block:
            return self._counts_by_block[blocks]
        # By value, with the types: 4096 and 4096.0 are equal keys that may round differently.
        key = (self._shape_key, knobs, type(seq_len), seq_len, recompute)
        if key not in self._budget.counts:
            self._budget.counts[key] = flops.count(shape, knobs, seq_len, recompute=recompute)
        self._counts_by_block[blocks] = count = self._budget.counts[key]
        return count

    def values(self, run: Run) -> dict[str, float] | None:
        """The run's figures (those reached; a missing one absent), or None where only a full evaluation can say."""
        first, hardware = _first_blocks(run)
        model, conv, par, work, timing = (first.get(n) for n in ("model", "convention", "parallelism", "work", "timing"))
        w = self._work.get(id(work))
        if w is None:
            w = self._work[id(work)] = _Work(work)
        if w.tokens is not None and not w.tokens > 0:
            return None  # _reject_nonpositive_tokens
        knobs = self._knobs(conv, par, run)
        shape = self._shape_of(model)
        custom = model is not None and model.value("kind") == "custom"
        # _flops_metric, _model_flops_per_step
        blocks = (id(model), id(conv), id(par), id(work))
        count = self._count(blocks, shape, knobs, w.seq_len) if shape is not None else None
        fpt: float | None = None
        if custom:
            fpt = model.number("flops_per_token") if model is not None else None
        elif count is not None:
            fpt = count.total
        tokens = w.tokens
        model_flops: float | None = None
        if fpt is not None and tokens is not None:
            model_flops = fpt * (tokens + w.padded) if knobs.padding == "included" else fpt * tokens
        # _aggregate_peak
        key = hardware
        if key not in self._pools:
            self._pools[key] = _peak(run)
        active, peak = self._pools[key]
        if peak is not None and not peak > 0:
            return None  # drop_nonfinite's case
        if id(timing) not in self._stats:
            self._stats[id(timing)] = _stats(timing)
        stats = self._stats[id(timing)]
        # _executed_flops_per_step: the executed count only where a claim reads it, or where it could move the
        # plausibility check (its bound is the smaller of the two counts over the peak: a fastest sample at or
        # above the model count's bound is above any smaller one)
        executed: float | None = w.executed
        fastest = stats[1] if stats is not None else None
        if executed is None and tokens is not None and (self.hfu or (
                fastest is not None and peak is not None and (model_flops is None or fastest < model_flops / peak))):
            executed = self._executed(blocks, shape, knobs, w, custom, fpt)
        if stats is not None and _leaves_out_a_sample(stats, peak, executed, model_flops):
            return None
        t = _step_time(timing, stats[0] if stats is not None else None, tokens, model_flops, active)
        if t is None:
            return None  # no step time from the inputs (a claim may imply one), or not a positive one
        m = {name: v for name, v in (
            ("flops_per_token", fpt), ("valid_tokens_per_step", tokens), ("model_flops_per_step", model_flops),
            ("executed_flops_per_step", executed), ("aggregate_peak", peak), ("step_time", t)) if v is not None}
        _rates(m, active)
        if not all(math.isfinite(v) for v in m.values()):
            return None  # drop_nonfinite's case: the full path says what it drops
        return m

    def _shape_of(self, model: Block | None) -> flops.Shape | None:
        if id(model) not in self._shape:
            made = flops.shape_of(model)
            self._shape[id(model)] = made, repr(made)
        shape, self._shape_key = self._shape[id(model)]
        return shape

    def _executed(self, blocks: tuple[int, ...], shape: flops.Shape | None, knobs: flops.Knobs, w: _Work, custom: bool,
                  fpt: float | None) -> float | None:
        """_executed_flops_per_step without a declared count (tokens known)."""
        assert w.tokens is not None
        count = (self._count((*blocks, 1), shape, knobs, w.seq_len, recompute=knobs.ran)
                 if shape is not None else None)
        if count is not None:
            return count.total * (w.tokens + w.padded)
        if custom and fpt is not None:
            return fpt * (w.tokens + w.padded)
        return None


def _first_blocks(run: Run) -> tuple[dict[str, Block], tuple[int, ...]]:
    """Each block name's first block (what Run.block returns) and the hardware blocks' ids, in one pass."""
    first: dict[str, Block] = {}
    hardware = []
    for b in run.blocks:
        if b.name == "hardware":
            hardware.append(id(b))
        if b.name not in first:
            first[b.name] = b
    return first, tuple(hardware)


class _Work:
    """The `work` block's numbers, as _tokens_metric and the per-step counts read them."""

    def __init__(self, work: Block | None) -> None:
        self.seq_len = work.number("seq_len") if work is not None else None
        self.padded = work.number("padded_tokens", 0.0) if work is not None else 0.0
        self.executed = work.number("executed_flops") if work is not None else None
        self.tokens: float | None = None
        declared = work.number("valid_tokens") if work is not None else None
        batch = work.number("global_batch") if work is not None else None
        if declared is not None:
            self.tokens = float(declared)
        elif work is not None and self.seq_len is not None and batch is not None:
            self.tokens = self.seq_len * batch - self.padded - work.number("dropped_tokens", 0.0)


def _leaves_out_a_sample(stats: tuple[StepStats, float | None], peak: float | None, executed: float | None,
                         model_flops: float | None) -> bool:
    """_exclude_implausible would leave a sample out (which changes the statistics: the full path does that).
    ``stats``: the statistics and the fastest sample after warm-up."""
    works = [x for x in (executed, model_flops) if x is not None]
    if peak is None or not works or not min(works) > 0 or stats[1] is None:
        return False
    bound = min(works) / peak  # seconds: the step at 100 % of the peak
    return not stats[0].median < bound and stats[1] < bound


def _step_time(timing: Block | None, stats: StepStats | None, tokens: float | None, model_flops: float | None,
               active: float) -> float | None:
    """evaluate._step_time's figure from the inputs, where it is a positive finite number."""
    throughput = timing.number("throughput") if timing is not None else None
    achieved = timing.number("achieved_flops_per_device") if timing is not None else None
    if timing is not None and timing.get("step_time") is not None and stats is not None:
        t = stats.statistic(timing.text("statistic", "median"))
    elif throughput is not None and tokens is not None:
        t = tokens / throughput
    elif achieved is not None and model_flops is not None and active > 0:
        t = model_flops / (achieved * active)
    else:
        return None
    return t if math.isfinite(t) and t > 0 else None


def _rates(m: dict[str, float], active: float) -> None:
    """rate_metrics' figures (no on-demand figure: the search evaluates without them)."""
    t, tokens, model_flops, peak = (m.get(n) for n in ("step_time", "valid_tokens_per_step", "model_flops_per_step",
                                                       "aggregate_peak"))
    assert t is not None
    if tokens is not None:
        m["valid_tokens_per_second"] = divide(tokens, t)
    if model_flops is not None and active > 0:
        m["achieved_flops_per_device"] = divide(model_flops, t * active)
    for name, done in (("mfu", model_flops), ("hfu", m.get("executed_flops_per_step"))):
        if done is not None and peak is not None:
            m[name] = divide(done, t * peak)


def _peak(run: Run) -> tuple[float, float | None]:
    """The active devices and _aggregate_peak's figure (None where it has none)."""
    pools = hardware_pools(run, [])
    active = sum(p.active for p in pools)
    priced = [p for p in pools if p.peak is not None and p.peak_input is not None]
    if pools and len(priced) == len(pools) and sum(p.active for p in priced) > 0:
        return active, sum(p.active * p.peak for p in priced if p.peak is not None)
    return active, None


def _stats(timing: Block | None) -> tuple[StepStats, float | None] | None:
    """evaluate._step_stats without its diagnostic, with the fastest sample after warm-up."""
    if timing is None or timing.get("step_time") is None:
        return None
    samples = timing.value("step_time")
    assert isinstance(samples, Samples)  # a samples key
    stats = step_statistics(samples.values, int(timing.number("warmup", 0)))
    if stats is None:
        return None
    kept = samples.values[stats.warmup_excluded:]
    return stats, min(kept) if kept else None


def reevaluate(run: Run, results: dict[str, RunResult], evaluate_run: EvaluateRun) -> RunResult:
    """The run evaluated afresh, claims checked: the evaluation's own functions, diagnostics dropped;
    its figures' derivation text is left empty (:data:`NUMBERS_ONLY`): only their numbers are read."""
    sink: list[Diagnostic] = []
    if not NUMBERS_ONLY:
        changed = evaluate_run(run, sink)
        check_claims(changed, results, sink)
        return changed
    with numbers_only():
        changed = evaluate_run(run, sink)
        check_claims(changed, results, sink)
    return changed


def candidate_values(run: Run, names: Iterable[str], figures: Figures | None, results: dict[str, RunResult],
                     evaluate_run: EvaluateRun) -> dict[str, float | None]:
    """The claims' reconstructed figures under one candidate: from numbers alone where :class:`Figures`
    follows the evaluation, else from a full re-evaluation with the claims checked."""
    values = figures.values(run) if figures is not None else None
    if values is not None:
        return {name: values.get(name) for name in names}
    if figures is not None:
        figures.fell_back = True
    changed = reevaluate(run, results, evaluate_run)
    return {name: cr.reconstructed if (cr := changed.claims.get(name)) is not None else None for name in names}


# Searches remembered across checks, by the run object itself: the language server's incremental parser
# hands an unchanged run's IR back as the same object at each edit (effspec.lsp.incremental), and its search
# is the same. Only a search whose every candidate Figures computed from the run alone is remembered (a full
# re-evaluation may read the other runs); a check that builds its IR afresh never finds one. Bounded, least
# recently used first out; each entry holds its run, so an id is never another run's.
# What it holds is bounded by runs and by the step-time samples those runs hold.
MEMO_SIZE, MEMO_SAMPLES = 512, 200_000
_Saved = dict[str, tuple[list[Explanation], tuple[Explanation, ...], dict[str, float]]]
_memo: OrderedDict[int, tuple[Run, tuple[object, ...], int, _Saved, int]] = OrderedDict()
_memo_samples = [0]
_memo_lock = threading.Lock()  # checks run by a library's threads share it


_also_forget: list[Callable[[], None]] = []  # memos kept beside this one (engine.intervals registers its own)


def also_forget(forget: Callable[[], None]) -> None:
    """Have clear_memo clear another memo too (a module that imports this one registers it: no import cycle)."""
    _also_forget.append(forget)


def clear_memo() -> None:
    """Forget the remembered searches (benchmarks measure a search, tests count candidates), and the memos
    registered beside them: the intervals' and sensitivities'."""
    with _memo_lock:
        _memo.clear()
        _memo_samples[0] = 0
    for forget in _also_forget:
        forget()


def samples_held(run: Run) -> int:
    timing = run.block("timing")
    samples = timing.value("step_time") if timing is not None else None
    return len(samples.values) if isinstance(samples, Samples) else 0


def _recall(result: RunResult, signature: tuple[object, ...], todo: dict[str, ClaimResult],
            budget: Budget) -> dict[str, list[Explanation]] | None:
    """The run's remembered search, applied to its claims (None: not remembered)."""
    with _memo_lock:
        hit = _memo.get(id(result.run))
        if hit is None or hit[0] is not result.run or hit[1] != signature:
            return None
        _memo.move_to_end(id(result.run))
    spent, saved = hit[2], hit[3]
    if spent > budget.left:
        return {}  # past the spec's budget, as the search itself would be
    budget.left -= spent
    for name, cr in todo.items():
        _, explanations, by_preset = saved[name]
        cr.explanations, cr.searched = explanations, True
        cr.by_preset.clear()
        cr.by_preset.update(by_preset)
    return {name: list(saved[name][0]) for name in todo}


def _remember(result: RunResult, signature: tuple[object, ...], spent: int, todo: dict[str, ClaimResult],
              found: dict[str, list[Explanation]]) -> None:
    held = samples_held(result.run)
    saved = {name: (list(found[name]), cr.explanations, dict(cr.by_preset)) for name, cr in todo.items()}
    with _memo_lock:
        if held > MEMO_SAMPLES // 10 or id(result.run) in _memo:
            return
        _memo[id(result.run)] = (result.run, signature, spent, saved, held)
        _memo_samples[0] += held
        while len(_memo) > MEMO_SIZE or _memo_samples[0] > MEMO_SAMPLES:
            _memo_samples[0] -= _memo.popitem(last=False)[1][4]


class Budget:
    """Re-evaluations left for one spec's searches."""

    def __init__(self, left: int | None = None) -> None:
        self.left = BUDGET if left is None else left
        # Figures' knobs (by the convention's entries and what ran) and FLOP counts (by shape, knobs,
        # seq_len and recompute), shared by the spec's searches: its runs often share a model.
        self.knobs: dict[tuple[object, ...], flops.Knobs] = {}
        self.counts: dict[tuple[object, ...], flops.FlopCount | None] = {}


def explain(result: RunResult, results: dict[str, RunResult], evaluate_run: EvaluateRun,
            candidates: tuple[Candidate, ...] = CANDIDATES, budget: Budget | None = None) -> dict[str, list[Explanation]]:
    """For each mismatched claim of ``result``: the single changes that reproduce it, in table order
    (``ClaimResult.explanations`` holds them most plausible first).

    Also fills ``ClaimResult.explanations``, ``ClaimResult.searched`` and, for MFU and
    HFU claims, ``ClaimResult.by_preset`` (the claim's metric under each standard preset).
    """
    todo = {name: cr for name, cr in result.claims.items() if _explainable(cr)}
    if not todo:
        return {}
    budget = budget if budget is not None else Budget()
    fast = NUMBERS_ONLY and Figures.applies(result, todo)
    signature = tuple((n, cr.claimed, cr.reconstructed, cr.tolerance) for n, cr in todo.items())
    if fast and candidates is CANDIDATES and (recalled := _recall(result, signature, todo, budget)) is not None:
        return recalled
    variants = [(c, v[0], v[1], v[2] if len(v) == 3 else c.kind)  # a pair or a triple
                for c in candidates for v in c.variants(result.run, result)]
    if len(variants) > budget.left:
        return {}  # past the spec's budget: the claims stay unsearched (ClaimResult.searched is False)
    budget.left -= len(variants)
    found: dict[str, list[Explanation]] = {name: [] for name in todo}
    for name, cr in todo.items():
        assert cr.claimed is not None and cr.reconstructed is not None and cr.tolerance is not None  # _explainable
        if name in ("mfu", "hfu") and result.knobs.preset in flops.STANDARD_PRESETS:
            cr.by_preset[result.knobs.preset] = cr.reconstructed  # replaced below if the run overrides a knob
    figures = Figures(todo, budget) if fast else None
    for candidate, label, run, kind in variants:
        values = candidate_values(run, todo, figures, results, evaluate_run)
        for name, cr in todo.items():
            value = values.get(name)
            if value is None:
                continue
            preset = label.removeprefix("preset = ")
            if name in ("mfu", "hfu") and candidate.name == "preset" and preset in flops.STANDARD_PRESETS:
                cr.by_preset[preset] = value
            if _within(value, cr):
                found[name].append(Explanation(label, value, candidate.name, kind))
    _finish(result, todo, found)
    if figures is not None and not figures.fell_back and candidates is CANDIDATES:
        _remember(result, signature, len(variants), todo, found)
    return found


def _finish(result: RunResult, todo: dict[str, ClaimResult], found: dict[str, list[Explanation]]) -> None:
    """Add the device-count factors (no re-evaluation), and rank what was found into each claim."""
    devices = sum(p.active for p in result.pools)
    for name, cr in todo.items():
        if devices > 1:
            for factor, label in _device_factors(devices, cr.unit == ""):
                assert cr.reconstructed is not None
                value = cr.reconstructed * factor
                if _within(value, cr):
                    found[name].append(Explanation(label, value, "devices", "input_error"))
        cr.explanations = tuple(sorted(_paper_presets_first(found[name]), key=functools.partial(_plausibility, cr=cr)))
        cr.searched = True


def _plausibility(e: Explanation, *, cr: ClaimResult) -> tuple[int, float, int]:
    """The search's ranking (a stable sort: table order last): the framework's own other versions and quirks,
    then the known conventions and input errors, then numeric fits; within a rank, the closer fit first (in
    thousandths of the claim's tolerance: a change that gives the claim's figure names the cause, one that
    lands within the tolerance's 1 % may only be near it), and at the same fit one knob or input changed
    before a preset swap, which changes several knobs at once (a window ignored names the cause, a
    framework preset that also ignores windows only agrees with it)."""
    assert cr.claimed is not None and cr.tolerance is not None  # _explainable
    distance = round(abs(e.value - cr.claimed) / cr.tolerance, 3) if cr.tolerance > 0 else 0.0
    return _RANK[e.kind], distance, 1 if e.candidate == "preset" else 0


def _paper_presets_first(found: list[Explanation]) -> list[Explanation]:
    """A framework preset explains a claim only where no paper preset does: where one does,
    the frameworks that agree with it add nothing, and those that come close are a coincidence."""
    standard = {f"preset = {p}" for p in flops.STANDARD_PRESETS}
    if any(e.candidate == "preset" and e.change in standard for e in found):
        return [e for e in found if e.candidate != "preset" or e.change in standard]
    return found


def _device_factors(devices: float, ratio: bool) -> tuple[tuple[float, str], ...]:
    """A figure off by exactly the device count: per device against aggregate, either way."""
    n = f"{devices:g}"
    if ratio:  # a utilization: the denominator is one device's peak, or counted once per device too many
        return ((devices, f"one device's peak as the denominator of the {n} devices' work (× {n})"),
                (1 / devices, f"the {n} devices' peak as the denominator of one device's work (÷ {n})"))
    return ((devices, f"the figure summed over the {n} devices (× {n}, aggregate against per device)"),
            (1 / devices, f"the figure of one device (÷ {n}, per device against aggregate)"))
