"""The layers of a hybrid stack: which layer is which, from the forms published configs use.

Three forms, one per key of `model` (kind = hybrid):

- ``pattern``: a ``hybrid_override_pattern`` string, one letter a layer, as Megatron-LM's
  ``megatron/core/ssm/mamba_hybrid_layer_allocation.py`` (``Symbols``, NVIDIA/Megatron-LM at
  00caa53af30912914981c86f39db123961678bbd) and Nemotron-H's configs write it: ``M`` a Mamba-2 mixer,
  ``*`` an attention mixer, ``-`` a dense MLP, ``E`` an MoE FFN.  Each letter is one layer of its own
  (Nemotron-H 8B's 52 layers are 24 M, 4 * and 24 -).
- ``layer_types``: a list as HF configs write it (``layer_types`` / ``layers_block_type``).  Names:
  ``full_attention`` or ``attention``; ``linear_attention`` (the model's linear mixer: the one mixer
  block written, ``mamba2`` or ``gated_deltanet``; Nemotron-H's HF config calls its Mamba layers that);
  ``mamba2`` (or ``mamba``); ``gated_deltanet``; ``mlp``; ``moe``.  A list with ``mlp`` or ``moe`` in it
  names one sub-layer an entry (Nemotron-H); a list of mixers only names layers that each carry an FFN
  after the mixer (Qwen3-Next), an MoE one where the model has experts.
- ``full_attention_interval = n``: layer i (from 0) is full attention where (i + 1) is a multiple of n,
  the linear mixer elsewhere, each with its FFN: HF's Qwen3NextConfig default (``layer_types`` from
  ``full_attention_interval``, huggingface/transformers
  src/transformers/models/qwen3_next/configuration_qwen3_next.py at 008e574391258935f3ecc3035c882e73bbcac419).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from effspec.front.mixers import all_mixers

# The layer kinds beside attention and the FFNs (effspec.front.mixers), in their order.
KINDS = tuple(all_mixers())
PATTERN_LETTERS = {**{m.letter: m.name for m in all_mixers().values() if m.letter}, "*": "attention", "-": "mlp",
                   "E": "moe"}
LAYER_TYPES = {"full_attention": "attention", "attention": "attention", "linear_attention": "linear",
               **{n: m.name for m in all_mixers().values() for n in (m.name, *m.aliases)},
               "mlp": "mlp", "moe": "moe"}
MIXERS = ("attention", *KINDS)
FFNS = ("mlp", "moe")
PATTERN_KEYS = ("pattern", "layer_types", "full_attention_interval")


@dataclass(frozen=True)
class Layout:
    """How many of each kind of sub-layer the stack has, and the stack as one pattern string.  A layer
    kind's count is also an attribute of its name (``layout.mamba2``)."""

    attention: int = 0
    mlp: int = 0
    moe: int = 0
    kinds: tuple[tuple[str, int], ...] = ()  # (layer kind, count), for every kind of effspec.front.mixers
    written: str = ""  # pattern | layer_types | full_attention_interval
    letters: str = ""  # the stack in pattern letters (G for a Gated DeltaNet mixer), for display

    def count(self, kind: str) -> int:
        """How many sub-layers of ``kind`` (attention, mlp, moe or a layer kind)."""
        if kind in ("attention", "mlp", "moe"):
            return int(getattr(self, kind))
        return dict(self.kinds).get(kind, 0)

    def __getattr__(self, name: str) -> int:
        if name in all_mixers():
            return dict(self.kinds).get(name, 0)
        raise AttributeError(name)

    @property
    def mixers(self) -> int:
        return self.attention + sum(n for _, n in self.kinds)


def linear_mixer(present: set[str] | frozenset[str]) -> str | None:
    """What `linear_attention` means in this model: its one linear mixer block (of those ``present``), or
    None if not one."""
    linear = [m.name for m in all_mixers().values() if m.linear and m.name in present]
    return linear[0] if len(linear) == 1 else None


def stack(kinds: list[str], linear: str | None, moe: bool) -> list[str]:
    """The sub-layers of the stack from layer types (`linear` resolved), FFNs added where the list
    names mixers only."""
    resolved = [linear if k == "linear" else k for k in kinds]
    if any(k in FFNS for k in resolved):
        return [k for k in resolved if k is not None]
    ffn = "moe" if moe else "mlp"
    out: list[str] = []
    for k in resolved:
        if k is not None:
            out += [k, ffn]
    return out


def interval_kinds(layers: int, interval: int) -> list[str]:
    return ["attention" if (i + 1) % interval == 0 else "linear" for i in range(layers)]


_LETTER = {"attention": "*", **{m.name: m.shown or m.letter or "?" for m in all_mixers().values()}, "mlp": "-", "moe": "E"}


def layout(sublayers: list[str], written: str, moe_layers: int | None = None) -> Layout:
    """Counts of a resolved stack; `moe_layers` (when written, and the FFNs were added) turns the
    MoE FFNs beyond it into dense ones."""
    counts = Counter(sublayers)
    moe, mlp = counts["moe"], counts["mlp"]
    if moe_layers is not None and moe_layers < moe:
        moe, mlp = moe_layers, mlp + moe - moe_layers
    return Layout(counts["attention"], mlp, moe, tuple((k, counts[k]) for k in KINDS), written,
                  "".join(_LETTER[k] for k in sublayers))


def sublayers_of(pattern: str | None, layer_types: tuple[str, ...] | None, interval: int | None, layers: int,
                 present: set[str] | frozenset[str], moe: bool) -> list[str] | None:
    """The resolved stack of one of the three forms, or None when `linear_attention` has no one meaning
    (``present``: the layer kinds whose blocks the model has)."""
    if pattern is not None:
        return [PATTERN_LETTERS[c] for c in pattern]
    kinds = ([LAYER_TYPES[n] for n in layer_types] if layer_types is not None
             else interval_kinds(layers, interval) if interval is not None else None)
    if kinds is None:
        return None
    linear = linear_mixer(present)
    if "linear" in kinds and linear is None:
        return None
    return stack(kinds, linear, moe)


# `effspec explain TOPIC`: one page a layer kind or stack form, with the formula it is counted by.
_SOURCES = ("Megatron-LM num_floating_point_operations, megatron/training/training.py "
            "(NVIDIA/Megatron-LM at 001b00c2734d8f0fad096fe48a382fedf755d321)")
PAGES = {
    "hybrid": f"""kind = hybrid: a stack of mixed layers

A hybrid model names each layer of its stack in one of three forms (one per model):
  pattern = "M-M*-M-"                 hybrid_override_pattern: M mamba2, * attention, - dense MLP, E MoE;
                                      one letter a layer (Nemotron-H: 52 letters = 24 M, 4 *, 24 -)
  layer_types = [linear_attention, full_attention, ...]
                                      HF layer_types / layers_block_type; with mlp or moe entries each entry is
                                      one layer, else each layer is a mixer followed by its FFN (MoE when
                                      `experts` is written)
  full_attention_interval = 4         layer i is full attention where (i + 1) % 4 == 0, the linear mixer
                                      elsewhere, each with its FFN (Qwen3-Next)
`linear_attention` means the model's one linear mixer block: `mamba2 {{ … }}` or `gated_deltanet {{ … }}`.
Attention layers use the model's attention keys (heads, kv_heads, head_dim, MLA, sliding_window /
sliding_layers within the attention layers, attention_gate).  `layers` must equal the pattern's length.

FLOPs per token: the sum over the stack of each layer kind's count times its per-token FLOPs
(`effspec explain mamba2`, `effspec explain gated_deltanet`, `effspec explain attention`), the
logits and embeddings as the convention says, training = forward x (1 + backward).  The closed-form
presets (`formula = eq3 | megatron_lm_2023 | megatron_deepspeed_2024`) know no hybrid stack: a hybrid
is counted term by term whatever `formula` says.  `preset = megatron_lm` is the convention of the
framework that publishes Nemotron-H's and Qwen3-Next's TFLOP/s ({_SOURCES}).""",
    **{m.name: m.page for m in all_mixers().values()},
    "attention": f"""the attention layers of a stack (`*`, full_attention)

Counted as in a dense transformer, per attention layer: the projections (GQA: m·d·(H·Q + 2·G·Q) and
m·H·Q·d, or MLA's down and up projections), `attention_gate = true` adds Qwen3-Next's output gate
m·d·H·Q, and the scores m·keys·H·(Q_qk + Q_v) with keys = s (full), s/2 (causal) or the window's
average where `sliding_window` applies (`sliding_layers` of the attention layers).  This is
Megatron-LM's attn_layer_flops and its standard_self_attn_term with attention_output_gate ({_SOURCES}).""",
}
PAGES["pattern"] = PAGES["hybrid"]


def page(topic: str) -> str | None:
    """The page of a layer kind or stack form (`hybrid`, `pattern`, `mamba2`, `gated_deltanet`, `attention`)."""
    return PAGES.get(topic.lower())
