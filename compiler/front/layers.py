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

PATTERN_LETTERS = {"M": "mamba2", "*": "attention", "-": "mlp", "E": "moe"}
LAYER_TYPES = {"full_attention": "attention", "attention": "attention", "linear_attention": "linear",
               "mamba2": "mamba2", "mamba": "mamba2", "gated_deltanet": "gated_deltanet",
               "mlp": "mlp", "moe": "moe"}
MIXERS = ("attention", "mamba2", "gated_deltanet")
FFNS = ("mlp", "moe")
PATTERN_KEYS = ("pattern", "layer_types", "full_attention_interval")


@dataclass(frozen=True)
class Layout:
    """How many of each kind of sub-layer the stack has, and the stack as one pattern string."""

    attention: int = 0
    mamba2: int = 0
    gated_deltanet: int = 0
    mlp: int = 0
    moe: int = 0
    written: str = ""  # pattern | layer_types | full_attention_interval
    letters: str = ""  # the stack in pattern letters (G for a Gated DeltaNet mixer), for display

    @property
    def mixers(self) -> int:
        return self.attention + self.mamba2 + self.gated_deltanet


def linear_mixer(has_mamba2: bool, has_gdn: bool) -> str | None:
    """What `linear_attention` means in this model: its one linear mixer block, or None if not one."""
    if has_mamba2 == has_gdn:
        return None
    return "mamba2" if has_mamba2 else "gated_deltanet"


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


_LETTER = {"attention": "*", "mamba2": "M", "gated_deltanet": "G", "mlp": "-", "moe": "E"}


def layout(sublayers: list[str], written: str, moe_layers: int | None = None) -> Layout:
    """Counts of a resolved stack; `moe_layers` (when written, and the FFNs were added) turns the
    MoE FFNs beyond it into dense ones."""
    counts = Counter(sublayers)
    moe, mlp = counts["moe"], counts["mlp"]
    if moe_layers is not None and moe_layers < moe:
        moe, mlp = moe_layers, mlp + moe - moe_layers
    return Layout(counts["attention"], counts["mamba2"], counts["gated_deltanet"], mlp, moe, written,
                  "".join(_LETTER[k] for k in sublayers))


def sublayers_of(pattern: str | None, layer_types: tuple[str, ...] | None, interval: int | None, layers: int,
                 has_mamba2: bool, has_gdn: bool, moe: bool) -> list[str] | None:
    """The resolved stack of one of the three forms, or None when `linear_attention` has no one meaning."""
    if pattern is not None:
        return [PATTERN_LETTERS[c] for c in pattern]
    kinds = ([LAYER_TYPES[n] for n in layer_types] if layer_types is not None
             else interval_kinds(layers, interval) if interval is not None else None)
    if kinds is None:
        return None
    linear = linear_mixer(has_mamba2, has_gdn)
    if "linear" in kinds and linear is None:
        return None
    return stack(kinds, linear, moe)
