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
    "mamba2": f"""mamba2 {{ state_size  heads  head_dim  expand  groups  conv_kernel  chunk_size }}: a Mamba-2 (SSD) mixer

Dao & Gu 2024, "Transformers are SSMs", arXiv:2405.21060; sizes as in mamba_ssm's Mamba2 module.
d_in = heads x head_dim (heads default expand x d_model / head_dim; head_dim 64; expand 2), N = state_size,
G = groups (default 1), K = conv_kernel (default 4).

Per token, as multiply-adds (m FLOPs each), as {_SOURCES} counts them (mamba_layer_flops):
  in_proj   m·d·(2·d_in + 2·G·N + heads)     z, x, B, C and dt
  scan      3.5·m·d_in·N                     Megatron's 7·d_in·N FLOPs for the SSD scan
  out_proj  m·d_in·d
Independent of the sequence length and of chunk_size (recorded, not counted); the depthwise
convolution, norms and gating are not counted.  Megatron takes d_in = 2·d_model; every published
Nemotron-H has heads x head_dim = 2·d_model (Nemotron Nano 2 does not: there Megatron's count differs).
Parameters: in_proj + conv1d K·(d_in + 2·G·N) + out_proj (A, D, dt bias and norms left out).""",
    "gated_deltanet": f"""gated_deltanet {{ key_heads  value_heads  key_head_dim  value_head_dim  conv_kernel  chunk_size }}

Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024, arXiv:2412.06464), the linear attention of Qwen3-Next
(flash-linear-attention's chunked gated delta rule).  H_k, D_k = key heads and size; H_v, D_v = value heads
and size; K = conv_kernel (default 4).

Per token, as multiply-adds, as {_SOURCES} counts them (gated_delta_net, gdn_layer_flops):
  in_proj     m·d·(2·H_k·D_k + 2·H_v·D_v + 2·H_v)    q, k, v, the output gate z, and beta, alpha
  conv        m·K·(2·H_k·D_k + H_v·D_v)              the causal conv over q, k, v
  delta rule  4·m·H_v·D_k·D_v                        KK^T, VK^T, S(a(I - bKK^T)) and SQ (Megatron writes D_v²)
  out_proj    m·H_v·D_v·d
The recurrent form's count: independent of the sequence length and of chunk_size (recorded, not counted).
Parameters: in_proj + conv1d + out_proj.""",
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
