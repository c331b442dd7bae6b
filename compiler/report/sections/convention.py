"""Section 3, the numerator convention: what counts as model work in MFU, knob by knob, and the
run counted under every standard preset.

Consecutive claims-only runs with an earlier run's knobs, each preset counted
with that run's knobs, share one table of their MFU under each preset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.display import percent, quantity, sig
from effspec.engine.flops import EXTRA_KNOBS, KNOB_DEFAULTS, recompute_text
from effspec.report.sections.views import consecutive
from effspec.report.words import clean

if TYPE_CHECKING:
    from effspec.engine.results import RunResult
    from effspec.report.sections.run import Earlier, RunView

KNOB_ORDER = ("preset", "multiply_add", "attention", "logits", "embeddings", "backward", "recompute", "padding",
              "moe", "optimizer")
KNOB_MEANING = {
    "preset": "the named convention the knobs start from",
    "multiply_add": "FLOPs counted per multiply-add",
    "attention": "attention scores and weighted sum: full, causal (half) or excluded",
    "logits": "output projection to the vocabulary, once per token",
    "embeddings": "input embedding counted as a matmul, once per token",
    "backward": "backward pass as a multiple of the forward pass",
    "recompute": "recomputed forward work counted in the numerator",
    "padding": "padded tokens counted as work",
    "moe": "MoE experts counted: the active ones or all",
    "optimizer": "optimizer FLOPs counted",
    "windows": "sliding windows counted, or every layer at full length",
    "router": "MoE router matmul counted",
    "formula": "term by term from the shape, or a framework's closed form",
}


@dataclass(frozen=True)
class KnobView:
    knob: str
    value: str
    origin: str
    meaning: str


@dataclass(frozen=True)
class ConventionRow:
    label: str
    preset: str
    attention: str
    logits: str
    embeddings: str
    recompute: str
    flops_per_token: str
    mfu: str
    declared: bool


def knobs(rr: RunResult) -> tuple[KnobView, ...]:
    k = rr.knobs
    out = []
    extra = tuple(x for x in EXTRA_KNOBS if getattr(k, x) != KNOB_DEFAULTS[x])  # shown where a preset or the spec sets them
    for knob in KNOB_ORDER + extra:
        value = getattr(k, knob)
        if knob == "recompute":
            shown = recompute_text(value) + (f" (ran: {recompute_text(k.ran)})" if value == "executed" else "")
        else:
            shown = f"{sig(value)} FLOP" if knob == "multiply_add" else (sig(value) + "×" if knob == "backward" else str(value))
        out.append(KnobView(knob, clean(shown), clean(k.origin.get(knob, "")), KNOB_MEANING[knob]))
    return tuple(out)


def conventions(rr: RunResult) -> tuple[ConventionRow, ...]:
    out = []
    for lbl, row in rr.conventions.items():
        row_knobs = row.get("knobs", {})
        fpt = row.get("flops_per_token")
        mfu = row.get("mfu")
        attention, logits, embeddings, recompute = (clean(recompute_text(row_knobs.get(x, "")))
                                                    for x in ("attention", "logits", "embeddings", "recompute"))
        out.append(ConventionRow(
            "declared (" + row.get("preset", "") + ")" if lbl == "declared" else lbl, clean(row.get("preset", "")),
            attention, logits, embeddings, recompute,
            quantity(fpt, "FLOP/token") if fpt is not None else "—",
            percent(mfu) if mfu is not None else "—", lbl == "declared"))
    return tuple(out)


def same_knobs(run: RunView, earlier: Earlier | None) -> bool:
    """Whether the run has the earlier run's knobs, each with the same value, set the same way."""
    return earlier is not None and earlier.run.knobs == run.knobs


def same_presets(run: RunView, earlier: Earlier | None) -> bool:
    """Whether the run counts each preset with the earlier run's knobs (the same rows but for FLOPs and MFU)."""
    def counted(r: RunView) -> list[tuple[str, ...]]:
        return [(c.label, c.attention, c.logits, c.embeddings, c.recompute) for c in r.conventions]
    return earlier is not None and counted(earlier.run) == counted(run)


def counted_like(run: RunView, earlier: Earlier | None) -> bool:
    """Whether the run has the earlier run's knobs and counts every preset with them: then its
    FLOPs per token and MFU under each preset are a row of one table."""
    return bool(run.conventions) and same_knobs(run, earlier) and same_presets(run, earlier)


@dataclass(frozen=True)
class PresetCell:
    row: ConventionRow
    own_flops: bool  # its FLOPs per token differ from the earlier run's under this preset: printed


@dataclass(frozen=True)
class LikeRow:
    """A run of a table of runs counted like an earlier one: its MFU (and own FLOPs) under each preset."""

    run: RunView
    cells: tuple[PresetCell, ...]


@dataclass(frozen=True)
class KnobItem:
    """A claims-only run's knob, run on in a line; its meaning is said under the first run that has it."""

    knob: KnobView
    meaning: bool


@dataclass(frozen=True)
class ConventionBlock:
    places: tuple[int, ...]  # 0-based places of its runs
    run: RunView  # the first
    earlier: Earlier | None
    like: tuple[LikeRow, ...]  # counted like the earlier run: a table, a row a run; else ()
    same_knobs: bool
    knob_items: tuple[KnobItem, ...]  # a claims-only run's knobs as a line; () for a table of knobs
    first: bool  # the report's first run
    presets_inline: bool  # a later claims-only run's presets as a line
    same_presets: bool

    @property
    def like_ids(self) -> str:
        return ", ".join(r.run.id for r in self.like)


@dataclass(frozen=True)
class ConventionView:
    first_run: str  # the run under which each knob's meaning is said
    blocks: tuple[ConventionBlock, ...]

    @property
    def groups(self) -> tuple[tuple[int, ...], ...]:
        return tuple(b.places for b in self.blocks)


def _block(runs: tuple[RunView, ...], earlier: tuple[Earlier | None, ...], places: tuple[int, ...],
           first_knobs: list[str]) -> ConventionBlock:
    index0 = places[0]
    run, sibling = runs[index0], earlier[index0]
    if counted_like(run, sibling):
        assert sibling is not None
        like = tuple(LikeRow(runs[n], tuple(PresetCell(c, c.flops_per_token != sibling.run.conventions[k].flops_per_token)
                                            for k, c in enumerate(runs[n].conventions)))
                     for n in places)
        return ConventionBlock(places, run, sibling, like, True, (), index0 == 0, False, True)
    knobs_same = same_knobs(run, sibling)
    items = tuple(KnobItem(k, index0 == 0 or k.knob not in first_knobs) for k in run.knobs) \
        if run.claims_only and not knobs_same else ()
    inline = bool(run.conventions) and run.claims_only and index0 != 0
    return ConventionBlock(places, run, sibling, (), knobs_same, items, index0 == 0, inline,
                           inline and same_presets(run, sibling))


def _place(earlier: Earlier | None) -> int:
    return earlier.place if earlier is not None else 0


def build(runs: tuple[RunView, ...], earlier: tuple[Earlier | None, ...]) -> ConventionView:
    first_knobs = [k.knob for k in runs[0].knobs] if runs else []
    groups = consecutive(len(runs), lambda before, n: counted_like(runs[before], earlier[before])
                         and counted_like(runs[n], earlier[n]) and _place(earlier[before]) == _place(earlier[n]))
    return ConventionView(runs[0].id if runs else "", tuple(_block(runs, earlier, g, first_knobs) for g in groups))
